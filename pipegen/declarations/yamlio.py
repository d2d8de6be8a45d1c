"""YAML reading that keeps line numbers and refuses duplicate keys.

PyYAML silently keeps the last of two equal keys in a mapping; a CI file
where `source_file_dependencies` appears twice loses half its entries
without anyone noticing, so a duplicate is an error here. Mappings and
sequences come back as `LocDict` / `LocList`, which remember where each
key and item was written, so later errors can name the line.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
from typing import Any

from pipegen.cache import cache_dir
from pipegen.declarations.yaml_values import LocDict, LocList, Mark, where
from pipegen.errors import DeclarationError
from pipegen.model import Location

__all__ = ["LocDict", "LocList", "Mark", "load_file", "load_text", "where"]

# What a cached parse holds; a change to LocDict, LocList or Mark, or to what yaml_parse builds, bumps it.
_CACHE_FORMAT = 1


def load_text(text: str, file: str, duplicates: list[str] | None = None) -> Any:
    """Parse YAML text; syntax errors become a DeclarationError naming the line. `duplicates`: a key
    written twice in a mapping is said there (the last kept) instead of being an error."""
    from pipegen.declarations.yaml_parse import parse

    return parse(text, file, duplicates)


def load_file(path: str, display: str | None = None, duplicates: list[str] | None = None) -> Any:
    """Read and parse one YAML file; `display` is the name used in messages. The parse is cached per
    file (pipegen.cache), keyed by its text: a declaration file changes far less often than it is read."""
    name = display or path
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise DeclarationError("file not found", Location(name), fix="check the path or create the file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DeclarationError(f"cannot read the file: {exc}", Location(name)) from None
    folder = cache_dir() if duplicates is None else None
    if not folder:
        return load_text(text, name, duplicates)
    slot, key = _cache_slot(folder, path, name), _cache_key(text, name)
    cached = _read_cached(slot, key)
    if cached is not None:
        return cached
    data = load_text(text, name)
    _write_cached(slot, key, data)
    return data


def _cache_slot(folder: str, path: str, name: str) -> str:
    """One cache file per file read (and name shown), replaced when its text changes: the cache stays
    as large as the declarations."""
    digest = hashlib.sha1(f"{os.path.realpath(path)}\0{name}".encode(), usedforsecurity=False).hexdigest()
    return os.path.join(folder, "yaml", digest + ".pickle")


def _cache_key(text: str, name: str) -> str:
    from pipegen import __version__

    payload = f"{__version__}\0{_CACHE_FORMAT}\0{name}\0{text}".encode("utf-8", "surrogateescape")
    return hashlib.sha1(payload, usedforsecurity=False).hexdigest()


def _read_cached(slot: str, key: str) -> Any:
    """The parse stored under `key`, or None: a missing, stale or unreadable entry is a miss, never an error."""
    try:
        with open(slot, "rb") as handle:
            stored_key, data = pickle.load(handle)
    except Exception:  # any failure to read it back (truncated, another version's classes) is only a slower run
        return None
    return data if stored_key == key else None


def _write_cached(slot: str, key: str, data: Any) -> None:
    """Store atomically (a concurrent reader sees the old entry or the new one); a failure is ignored."""
    temporary = f"{slot}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(slot), exist_ok=True)
        with open(temporary, "wb") as handle:
            pickle.dump((key, data), handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, slot)
    except OSError:
        with contextlib.suppress(OSError):
            os.remove(temporary)
