"""YAML reading that keeps line numbers and refuses duplicate keys.

PyYAML silently keeps the last of two equal keys in a mapping; a CI file
where `source_file_dependencies` appears twice loses half its entries
without anyone noticing, so a duplicate is an error here. Mappings and
sequences come back as `LocDict` / `LocList`, which remember where each
key and item was written, so later errors can name the line.
"""

from __future__ import annotations

from typing import Any

from pipegen.bounded_read import declaration_text
from pipegen.declarations import yaml_cache
from pipegen.declarations.yaml_values import LocDict, LocList, Mark, where

__all__ = ["LocDict", "LocList", "Mark", "load_file", "load_text", "where"]


def load_text(text: str, file: str, duplicates: list[str] | None = None) -> Any:
    """Parse YAML text; syntax errors become a DeclarationError naming the line. `duplicates`: a key
    written twice in a mapping is said there (the last kept) instead of being an error."""
    from pipegen.declarations.yaml_parse import parse

    return parse(text, file, duplicates)


def load_file(path: str, display: str | None = None, duplicates: list[str] | None = None) -> Any:
    """Read and parse one YAML file; `display` is the name used in messages. The parse is cached per
    file (yaml_cache), keyed by its text: a declaration file changes far less often than it is read."""
    name = display or path
    text = declaration_text(path, name)  # a regular file of bounded size (a FIFO, /dev/zero: an error)
    if duplicates is not None:  # a lenient read (import) is not cached
        return load_text(text, name, duplicates)
    slot, key, cached = yaml_cache.read(path, name, text)
    if cached is not None:
        return cached
    data = load_text(text, name)
    if slot is not None:
        yaml_cache.write(slot, key, data)
    return data
