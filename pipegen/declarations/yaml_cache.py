"""The declarations' parse cache (yamlio.load_file): each file's parse kept as JSON data under the cache
folder, keyed by the file's text (pipegen.cache says what makes an entry trusted).

An entry is `[tree, marks]`: the parse as plain JSON (mappings, lists, scalars) and the marks of every
mapping, key, list and item, in the order a walk of the tree meets them. Decoding is json's C parser plus
one walk over the containers, as fast as the pickle it replaces, and it builds nothing but data.
A mapping whose keys are not all text is kept as its list of pairs; a parse JSON cannot hold (a date,
bytes) is not cached.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from typing import Any

from pipegen import __version__, cache
from pipegen.declarations.yaml_values import LocDict, LocList, Mark

# What an entry holds; a change to LocDict, LocList or Mark, to yaml_parse or to the format here bumps it.
FORMAT = 3
_SCALARS = (str, int, float, bool, type(None))
MAX_SLOTS = 2000  # entries kept (vLLM's declarations are about 100 files); more: the oldest written go
PAIRS = "\0pairs"  # a mapping with a key that is not text (`queues: {1: q}`): {PAIRS: [[key, value], ...]}


def read(path: str, name: str, text: str) -> tuple[str | None, str, Any]:
    """(the entry's path, its key, the cached parse or None); the path is None when there is no usable
    cache folder. One entry per file read and name shown, replaced when its text changes."""
    digest = hashlib.sha256(f"{os.path.realpath(path)}\0{name}".encode("utf-8", "surrogateescape")).hexdigest()
    slot = cache.entry_path("yaml", digest + ".json")
    if slot is None:
        return None, "", None
    key = _key(name, text)
    stored = cache.load(slot, key)
    return slot, key, _decode(stored, name) if stored is not None else None


def write(slot: str, key: str, data: Any) -> None:
    """Keep the parse; one that JSON cannot hold as it is goes uncached. A new slot (a file not read before:
    each test's or checkout's temporary folder makes some) may push the oldest ones out: MAX_SLOTS at most."""
    marks: list[int] = []
    try:
        tree = _encode(data, marks)
    except (TypeError, ValueError, KeyError, AttributeError):  # a date, bytes: read with PyYAML each time
        return
    new = not os.path.lexists(slot)
    cache.store(slot, key, json.dumps([tree, marks], separators=(",", ":"), ensure_ascii=False).encode())
    if new:
        _added(os.path.dirname(slot))


_HELD: dict[str, int] = {}  # cache folder -> its entries when this process last listed it, plus those it added


def _added(folder: str) -> None:
    """A new entry: the folder is listed and pruned (cache.prune) at this process's first new entry and when
    its count passes MAX_SLOTS, not at each one (a cold `check` on vLLM writes 40: 40 listings of up to 40)."""
    held = _HELD.get(folder)
    _HELD[folder] = cache.prune(folder, MAX_SLOTS) if held is None or held >= MAX_SLOTS else held + 1


def _key(name: str, text: str) -> str:
    """One entry per file and name shown, for this text and this pipegen."""

    payload = f"{__version__}\0{FORMAT}\0{name}\0{text}".encode("utf-8", "surrogateescape")
    return f"yaml {FORMAT} {hashlib.sha256(payload).hexdigest()}"


def _encode(value: Any, marks: list[int]) -> Any:
    kind = type(value)
    if kind is LocDict:
        marks += value.mark
        plain = all(type(key) is str for key in value) and PAIRS not in value
        pairs = []
        for key, item in value.items():
            if type(key) not in _SCALARS:
                raise TypeError("a key JSON cannot hold")
            marks += value.key_marks[key]
            pairs.append((key, _encode(item, marks)))
        return dict(pairs) if plain else {PAIRS: [list(pair) for pair in pairs]}
    if kind is LocList:
        marks += value.mark
        out = []
        for mark, item in zip(value.item_marks, value, strict=True):  # ValueError: marks missing
            marks += mark
            out.append(_encode(item, marks))
        return out
    if kind not in _SCALARS:
        raise TypeError(f"{kind.__name__} is not JSON")
    return value


def _decode(content: bytes, file: str) -> Any:
    """The parse an entry holds; None when it does not decode as one (a miss)."""
    try:
        tree, marks = json.loads(content)
        marks_left = iter(marks)
        data = _build(tree, file, marks_left) if type(tree) in (dict, list) else tree
        if next(marks_left, None) is not None:
            return None
        return data
    except (ValueError, TypeError, StopIteration, RecursionError):
        return None


def _build(tree: Any, file: str, marks: Iterator[int]) -> Any:
    """LocDict and LocList in place of the JSON containers, their marks taken in encoding order."""
    if type(tree) is dict:
        items = tree[PAIRS] if len(tree) == 1 and PAIRS in tree else tree.items()
        mapping = LocDict(items)
        mapping.file, mapping.mark = file, Mark(next(marks), next(marks))
        key_marks = {}
        for key, item in items:
            key_marks[key] = Mark(next(marks), next(marks))
            if type(item) in (dict, list):
                mapping[key] = _build(item, file, marks)
        mapping.key_marks = key_marks
        return mapping
    sequence = LocList(tree)
    sequence.file, sequence.mark = file, Mark(next(marks), next(marks))
    item_marks = []
    for index, item in enumerate(tree):
        item_marks.append(Mark(next(marks), next(marks)))
        if type(item) in (dict, list):
            sequence[index] = _build(item, file, marks)
    sequence.item_marks = item_marks
    return sequence
