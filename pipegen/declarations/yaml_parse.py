"""PyYAML behind yamlio: the loader that records where each value was written, refuses duplicate keys,
and bounds hostile input. Imported only when a file is not in the parse cache (yamlio.load_file)."""

from __future__ import annotations

import re
from typing import Any

import yaml

from pipegen.declarations.yaml_events import Irregular, build
from pipegen.declarations.yaml_values import LocDict, LocList, Mark, where
from pipegen.errors import DeclarationError
from pipegen.model import Location

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# Bounds that refuse hostile YAML in milliseconds instead of failing after minutes: a "billion laughs"
# alias bomb (each alias repeats an anchored collection) and nesting deep enough for a RecursionError.
MAX_DEPTH = 100  # collections inside collections; real CI files nest about 10 deep
MAX_ALIAS_NODES = 100_000  # nodes that aliases repeat, counted as expanded


# Where an alias could be: a '*' starting a node (after a line's indent, a space or a flow indicator) and
# followed by a name. A '*' in a glob or after `ls ` is not one: such a text (vLLM's test-amd.yaml, 0.3 s
# in PyYAML's own parser) keeps libyaml's.
_ALIAS = re.compile(r"(?:^|[\s\[{,:?-])\*[^\s\[\]{},]", re.M)

_TAGS: dict[tuple[Any, Any, Any], str] = {}  # (node kind, scalar text, implicit) -> tag: see _Located.resolve


_Base: Any = object  # the loaders below put a PyYAML loader after it


class _Located(_Base):  # type: ignore[misc]
    file = "<yaml>"
    _depth = 0
    _repeated = 0
    _duplicates: list[str] | None = None  # given: a duplicate key is recorded here, the last one kept

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        """PyYAML's tag for a node, remembered: without path resolvers it depends on these three alone,
        and the parser asks for every scalar (a steps file repeats its keys and values on every step)."""
        if self.yaml_path_resolvers:
            return super().resolve(kind, value, implicit)
        key = (kind, value, implicit)
        tag = _TAGS.get(key)
        if tag is None:
            tag = _TAGS[key] = super().resolve(kind, value, implicit)
        return tag

    def _construct(self, node: Any) -> Any:
        """construct_object for a child node; a scalar of a known tag straight from its constructor
        (what construct_object would call, without its bookkeeping for collections and aliases)."""
        constructor = self.yaml_constructors.get(node.tag) if type(node) is yaml.ScalarNode else None
        return constructor(self, node) if constructor is not None else self.construct_object(node, deep=True)

    def _too_deep(self, node: Any) -> None:
        raise DeclarationError(f"YAML nested deeper than {MAX_DEPTH} levels", where(self.file, node.start_mark),
                               fix="flatten the structure (no CI declaration needs this depth)")

    def _count(self, node: Any, children: list[Any]) -> None:
        """Record the expanded size of `node`; a child seen before is an alias: its size counts again.
        Only a text with an anchor ('&') can hold aliases: the others skip the counting."""
        sizes, seen = self._sizes, self._seen
        size = 1
        for child in children:
            grown = sizes.get(child, 1)
            size += grown
            if child in seen:
                self._repeated += grown
                if self._repeated > MAX_ALIAS_NODES:
                    raise DeclarationError(f"YAML aliases expand to more than {MAX_ALIAS_NODES} nodes",
                                           where(self.file, child.start_mark),
                                           fix="write the values out, or use fewer nested aliases (*name)")
            seen.add(child)
        sizes[node] = size

    def construct_mapping(self, node: Any, deep: bool = False) -> LocDict:
        self._depth += 1
        if self._depth > MAX_DEPTH:
            self._too_deep(node)
        explicit = sum(1 for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge")
        self.flatten_mapping(node)
        # flatten_mapping puts `<<: *anchor` keys first; explicit keys may override them.
        merged = len(node.value) - explicit
        out = LocDict()
        out.file, out.mark = self.file, _mark(node.start_mark)
        marks: dict[Any, Mark | None] = {}  # None: a key merged in (`<<:`), shown at the mapping's mark
        for index, (key_node, value_node) in enumerate(node.value):
            key = self._construct(key_node)
            try:
                seen = key in marks
            except TypeError:
                raise DeclarationError("a mapping key must be a plain value",
                                       where(self.file, key_node.start_mark)) from None
            earlier = marks[key] if seen else None
            prior = next((k for k in marks if k == key), key) if seen else key
            if type(prior) is not type(key):  # 1 and true are one key to Python: "duplicate key True" misleads
                raise DeclarationError(f"keys {prior!r} and {key!r} are one key once read (an unquoted true is the "
                                       "boolean True, equal to the number 1)", where(self.file, key_node.start_mark),
                                       fix="quote the keys ('1', 'true'): a name is a string")
            if earlier is not None and index >= merged:
                first = earlier.line + 1
                if self._duplicates is not None:  # read as Buildkite reads it (go-pipeline keeps the last)
                    self._duplicates.append(f"{where(self.file, key_node.start_mark)}: key {key!r} is written "
                                            f"twice (first on line {first}): the last one counts, as in Buildkite")
                    del out[key]
                    out[key] = self.construct_object(value_node, deep=True)
                    continue
                raise DeclarationError(
                    f"duplicate key {key!r} (first written on line {first}; YAML keeps only the last)",
                    where(self.file, key_node.start_mark),
                    fix=f"merge the two {key!r} entries into one",
                )
            out[key] = self._construct(value_node)
            marks[key] = _mark(key_node.start_mark) if index >= merged else None
        out.key_marks = {key: mark or out.mark for key, mark in marks.items()}
        self._depth -= 1
        if self._anchors:
            self._count(node, [n for pair in node.value for n in pair])
        return out

    def compose_node(self, parent: Any, index: Any) -> Any:
        """An alias item of a list (`[*core, x]`) keeps where it was used: an error in what it brings is
        said there, not at the anchor."""
        if self._anchors and isinstance(index, int) and self.check_event(yaml.AliasEvent):
            self._alias_marks[(id(parent), index)] = _mark(self.peek_event().start_mark)
        return super().compose_node(parent, index)

    def construct_sequence(self, node: Any, deep: bool = False) -> LocList:
        self._depth += 1
        if self._depth > MAX_DEPTH:
            self._too_deep(node)
        out = LocList([self._construct(child) for child in node.value])
        out.file, out.mark = self.file, _mark(node.start_mark)
        used = self._alias_marks
        out.item_marks = [used.get((id(node), i)) or _mark(c.start_mark) for i, c in enumerate(node.value)]
        self._depth -= 1
        if self._anchors:
            self._count(node, node.value)
        return out


def _mark(mark: Any) -> Mark:
    return Mark(mark.line, mark.column)


class _LocLoader(_Located, _Loader):  # type: ignore[misc]
    """libyaml's parser where PyYAML has it."""


class _AliasLoader(_Located, yaml.composer.Composer, _Loader):  # type: ignore[misc]
    """A text that uses an alias: PyYAML's own composer, which says where each alias is used (libyaml's
    gives only the anchored node), over libyaml's events where PyYAML has them (its own parser in Python
    took 0.1 s of a `check` on vLLM, for the preset inventory)."""

    def __init__(self, stream: str):
        _Loader.__init__(self, stream)
        yaml.composer.Composer.__init__(self)


for _loader in (_LocLoader, _AliasLoader):
    _loader.add_constructor("tag:yaml.org,2002:map", _loader.construct_mapping)
    _loader.add_constructor("tag:yaml.org,2002:seq", _loader.construct_sequence)


def _plain(text: str, file: str) -> Any:
    """The parse built straight from libyaml's events (yaml_events.build), or Irregular."""
    loader = _LocLoader(text)
    try:
        return build(loader, file, _TAGS, MAX_DEPTH, MAX_ALIAS_NODES)
    finally:
        loader.dispose()


def parse(text: str, file: str, duplicates: list[str] | None = None) -> Any:
    """Parse YAML text; syntax errors become a DeclarationError naming the line. `duplicates`: a key
    written twice in a mapping is said there (the last kept) instead of being an error."""
    if duplicates is None:
        try:
            return _plain(text, file)
        except (Irregular, yaml.YAMLError, ValueError):  # an error is worded by the loaders below, which meet it again
            pass
    loader = (_AliasLoader if "&" in text and _ALIAS.search(text) else _LocLoader)(text)
    loader.file = file
    loader._duplicates = duplicates
    loader._sizes, loader._seen, loader._anchors, loader._alias_marks = {}, set(), "&" in text, {}
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        at = where(file, mark) if mark else Location(file)
        problem = exc.problem or exc.context or "invalid YAML"
        if exc.context and exc.context_mark and exc.problem_mark and exc.context_mark.line != exc.problem_mark.line:
            start = exc.context_mark
            problem += f" ({exc.context} started at line {start.line + 1}, column {start.column + 1})"
        if "recursive node" in problem:  # PyYAML's words for `a: &x [*x]`
            raise DeclarationError("a YAML alias (*name) refers to a mapping or list that contains it", at,
                                   fix="write the values out instead of the alias") from None
        raise DeclarationError(f"YAML syntax error: {problem}", at,
                               fix="correct the YAML syntax at that position") from None
    except yaml.reader.ReaderError as exc:  # a control character: PyYAML says "position N" of the whole text
        at = Location(file, text.count("\n", 0, exc.position) + 1, exc.position - text.rfind("\n", 0, exc.position))
        raise DeclarationError(f"a control character YAML does not allow (U+{exc.character:04X})", at,
                               fix="remove it, or write it escaped in a double-quoted string (\"\\x07\")") from None
    except yaml.YAMLError as exc:
        raise DeclarationError(f"YAML error: {exc}", Location(file)) from None
    except ValueError as exc:  # PyYAML's constructor: a plain 2001-13-45 or 0b_ matches a date's or number's form
        raise DeclarationError(f"a value YAML reads as a date or number is not one ({exc})", Location(file),
                               fix="quote it if it is text ('2001-13-45'), else correct it") from None
    except RecursionError:  # nesting through tags that bypass the depth bound (!!omap, !!pairs)
        raise DeclarationError(f"YAML nested deeper than {MAX_DEPTH} levels", Location(file),
                               fix="flatten the structure (no CI declaration needs this depth)") from None
    finally:
        loader.dispose()


