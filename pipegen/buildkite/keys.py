"""Buildkite's step keys: the characters and length it accepts, never UUID-like, unique in a pipeline."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pipegen.buildkite.interpolation import InterpolationError, placeheld

if TYPE_CHECKING:
    from pipegen.model import Step

KEY_MAX = 100  # Buildkite: a key is at most 100 characters
BLOCK_PREFIX = "block-"  # a step's block step is keyed "block-<its key>"
KEY_BAD = re.compile(r"[^A-Za-z0-9_:\-]+")
UUID_KEY = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def valid_key(key: str) -> str:
    """A Buildkite key for `key`: same text when valid, else a deterministic valid one.

    Allowed: letters, digits, `_`, `-`, `:`; a key with upload-time variables
    (`build_${TRIPLET?}`) is kept as written when the rest of it is such text, for
    Buildkite to interpolate (the schema allows `$`, `{`, `}` for that).
    At most 100 characters (long keys keep a hash of the whole), never UUID-like.
    """
    if interpolated_key(key):
        return key
    out = KEY_BAD.sub("-", key).strip("-") or "step"
    if len(out) > KEY_MAX or out != key and len(out) > KEY_MAX - 9:
        import hashlib

        digest = hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        out = out[: KEY_MAX - 9].rstrip("-") + "-" + digest
    if UUID_KEY.match(out):
        out += "-k"
    return out


def interpolated_key(key: str) -> bool:
    """Whether `key` is valid key text around upload-time variables (`build_${TRIPLET?}`, `$PREFIX-test`), as
    Buildkite's upload reads them (interpolation.py): not `$_X` or `$$X` (text), nor `${X:?x}` (it fails)."""
    if "$" not in key or len(key) > KEY_MAX:
        return False
    try:
        rest = placeheld(key)
    except InterpolationError:
        return False
    return KEY_BAD.search(rest) is None  # a `$` no variable took is left in it (KEY_BAD), so one did


def key_map(steps: Sequence[Step]) -> dict[str, str]:
    """Declared key -> unique valid key, in declaration order (deterministic)."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for step in steps:
        out[step.key] = unique_key(valid_key(step.key), used)
    return out


def unique_key(key: str, used: set[str]) -> str:
    """`key`, or `key-2`, `key-3`, ... (cut to fit KEY_MAX): the first not in `used`, which it joins."""
    final, n = key, 2
    while final in used:
        final = f"{key[: KEY_MAX - len(str(n)) - 1]}-{n}"
        n += 1
    used.add(final)
    return final


def declared_keys(steps: Sequence[Step]) -> dict[str, str]:
    """Rendered key -> declared key, for the keys `key_map` rewrites (and fanned-out steps' own keys),
    so that a key copied from the pipeline names its step too."""
    out = {rendered: declared for declared, rendered in key_map(steps).items() if rendered != declared}
    for origin in dict.fromkeys(s.origin for s in steps if s.origin):
        out.setdefault(valid_key(origin), origin)
    return out
