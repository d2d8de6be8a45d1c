"""YAML reading that keeps line numbers and refuses duplicate keys.

PyYAML silently keeps the last of two equal keys in a mapping; a CI file
where `source_file_dependencies` appears twice loses half its entries
without anyone noticing, so a duplicate is an error here. Mappings and
sequences come back as `LocDict` / `LocList`, which remember where each
key and item was written, so later errors can name the line.
"""

from __future__ import annotations

from typing import Any

import yaml

from pipegen.errors import DeclarationError
from pipegen.model import Location

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class LocDict(dict):
    """A dict that knows the 1-based line and column of itself and each key."""

    __slots__ = ("file", "line", "column", "key_lines")

    def loc(self, key: str | None = None) -> Location:
        if key is not None and key in self.key_lines:
            line, column = self.key_lines[key]
            return Location(self.file, line, column)
        return Location(self.file, self.line, self.column)


class LocList(list):
    __slots__ = ("file", "line", "column", "item_lines")

    def loc(self, index: int | None = None) -> Location:
        if index is not None and index < len(self.item_lines):
            line, column = self.item_lines[index]
            return Location(self.file, line, column)
        return Location(self.file, self.line, self.column)


def _make_loader(file: str) -> type:
    class Loader(_Loader):  # type: ignore[misc, valid-type]
        def construct_mapping(self, node, deep=False):  # noqa: ANN001
            explicit = sum(1 for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge")
            self.flatten_mapping(node)
            # flatten_mapping puts `<<: *anchor` keys first; explicit keys may override them.
            merged = len(node.value) - explicit
            explicit_seen: set = set()
            out = LocDict()
            out.file = file
            out.line = node.start_mark.line + 1
            out.column = node.start_mark.column + 1
            out.key_lines = {}
            for index, (key_node, value_node) in enumerate(node.value):
                key = self.construct_object(key_node, deep=True)
                try:
                    hash(key)
                except TypeError:
                    raise DeclarationError(
                        "a mapping key must be a plain value",
                        Location(file, key_node.start_mark.line + 1, key_node.start_mark.column + 1),
                    ) from None
                if index >= merged and key in explicit_seen:
                    first = out.key_lines[key][0]
                    raise DeclarationError(
                        f"duplicate key {key!r} (first written on line {first}; YAML keeps only the last)",
                        Location(file, key_node.start_mark.line + 1, key_node.start_mark.column + 1),
                        fix=f"merge the two {key!r} entries into one",
                    )
                if index >= merged:
                    explicit_seen.add(key)
                out[key] = self.construct_object(value_node, deep=True)
                out.key_lines[key] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            return out

        def construct_sequence(self, node, deep=False):  # noqa: ANN001
            out = LocList(self.construct_object(child, deep=True) for child in node.value)
            out.file = file
            out.line = node.start_mark.line + 1
            out.column = node.start_mark.column + 1
            out.item_lines = [(c.start_mark.line + 1, c.start_mark.column + 1) for c in node.value]
            return out

    Loader.add_constructor("tag:yaml.org,2002:map", Loader.construct_mapping)
    Loader.add_constructor("tag:yaml.org,2002:seq", Loader.construct_sequence)
    return Loader


def load_text(text: str, file: str) -> Any:
    """Parse YAML text; syntax errors become a DeclarationError naming the line."""
    try:
        return yaml.load(text, Loader=_make_loader(file))  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = Location(file, mark.line + 1, mark.column + 1) if mark else Location(file)
        problem = exc.problem or exc.context or "invalid YAML"
        if exc.context and exc.context_mark and exc.problem_mark and exc.context_mark.line != exc.problem_mark.line:
            start = exc.context_mark
            problem += f" ({exc.context} started at line {start.line + 1}, column {start.column + 1})"
        raise DeclarationError(f"YAML syntax error: {problem}", where, fix="correct the YAML syntax at that position") from None
    except yaml.YAMLError as exc:
        raise DeclarationError(f"YAML error: {exc}", Location(file)) from None


def load_file(path: str, display: str | None = None) -> Any:
    """Read and parse one YAML file; `display` is the name used in messages."""
    name = display or path
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise DeclarationError("file not found", Location(name), fix="check the path or create the file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DeclarationError(f"cannot read the file: {exc}", Location(name)) from None
    return load_text(text, name)
