"""YAML built straight from libyaml's events: yaml_parse's first try at a text, the loaders' values and marks
in less than half their time (no PyYAML nodes, no constructor dispatch per node).

It reads plain text, anchors and aliases (vLLM's steps files, test-amd.yaml, the presets); what the loaders
would read differently or refuse (a tag, a merge key `<<`, a duplicate key, an alias used as a key, too deep,
too many aliased nodes, any YAML error) raises Irregular or the YAML error, and yaml_parse hands the text to
the loaders, which word it.
"""

from __future__ import annotations

from typing import Any

import yaml

from pipegen.declarations.yaml_values import LocDict, LocList, Mark


class Irregular(Exception):
    """A text left to the loaders: one they would build differently, or an error to word."""


_STR = "tag:yaml.org,2002:str"
_OPENS = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSES = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
_NO_KEY: Any = object()  # a mapping's next value is a key
_OPEN: Any = object()  # an anchored collection not closed yet: an alias to it is recursive


def build(loader: Any, file: str, tags: dict[Any, str], max_depth: int, max_repeated: int) -> Any:
    """The document of a libyaml loader not read yet; `tags`: the loaders' tag cache, the limits theirs."""
    get = loader.get_event
    get()  # the stream's start
    if type(get()) is yaml.StreamEndEvent:  # else the document's start
        return None
    stack: list[tuple[Any, Any, Any]] = []  # the open collections above `into`: each with its key and anchor
    top = into = anchor = None
    key = _NO_KEY
    anchors: dict[str, Any] = {}
    sizes: dict[int, int] = {}  # id of an aliased collection -> the nodes it expands to
    repeated = 0
    while True:
        event = get()
        kind = type(event)
        if kind is yaml.ScalarEvent:
            value, implicit = event.value, event.implicit
            tag = tags.get((yaml.ScalarNode, value, implicit)) or loader.resolve(yaml.ScalarNode, value, implicit)
            if tag != _STR or event.tag is not None:
                value = _scalar(loader, tag, event)
            if event.anchor is not None:
                _anchor(anchors, event.anchor, value)
        elif kind in _OPENS:
            value = _collection(event, file, len(stack), max_depth)
            if event.anchor is not None:
                _anchor(anchors, event.anchor, _OPEN)
        elif kind in _CLOSES:
            if anchor is not None:
                anchors[anchor] = into
            into, key, anchor = stack.pop()
            continue
        elif kind is yaml.AliasEvent and into is not None and (key is not _NO_KEY or type(into) is LocList):
            value = anchors.get(event.anchor, _OPEN)
            repeated += _size(value, sizes)  # counted as the loaders count it (MAX_ALIAS_NODES)
            if value is _OPEN or repeated > max_repeated:
                raise Irregular
        else:  # the document's end (an alias as a key, a second document: Irregular)
            if kind is not yaml.DocumentEndEvent or type(get()) is not yaml.StreamEndEvent:
                raise Irregular
            return top
        if into is None:
            top = value
        elif type(into) is LocList:
            into.append(value)
            into.item_marks.append(Mark(event.start_mark.line, event.start_mark.column))
        elif key is _NO_KEY:
            try:
                if value in into:  # a duplicate, or 1 and true: the loaders word it
                    raise Irregular
            except TypeError:  # a collection as a key
                raise Irregular from None
            into.key_marks[value] = Mark(event.start_mark.line, event.start_mark.column)
            key = value
            continue
        else:
            into[key] = value
            key = _NO_KEY
        if kind in _OPENS:
            stack.append((into, key, anchor))
            into, key, anchor = value, _NO_KEY, event.anchor


def _scalar(loader: Any, tag: str, event: Any) -> Any:
    """A scalar other than a plain string, as PyYAML's constructor makes it (a merge key: Irregular)."""
    constructor = loader.yaml_constructors.get(tag) if tag != "tag:yaml.org,2002:merge" else None
    if constructor is None or event.tag is not None:
        raise Irregular
    return constructor(loader, yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark))


def _collection(event: Any, file: str, depth: int, max_depth: int) -> LocDict | LocList:
    """An empty LocDict or LocList for a collection's start, its items to come."""
    if event.tag is not None or depth >= max_depth - 1:
        raise Irregular
    value: LocDict | LocList
    if type(event) is yaml.MappingStartEvent:
        value = LocDict()
        value.key_marks = {}
    else:
        value = LocList()
        value.item_marks = []
    value.file, value.mark = file, Mark(event.start_mark.line, event.start_mark.column)
    return value


def _anchor(anchors: dict[str, Any], name: str, value: Any) -> None:
    if name in anchors:  # a duplicate anchor: the loaders refuse it
        raise Irregular
    anchors[name] = value


def _size(value: Any, sizes: dict[int, int]) -> int:
    """The nodes a value expands to, as the loaders count an alias (a mapping's keys one each); an aliased
    collection's count is kept, so a chain of aliases is walked once."""
    if type(value) is not LocDict and type(value) is not LocList:
        return 1
    known = sizes.get(id(value))
    if known is None:
        items = value.values() if type(value) is LocDict else value
        known = sizes[id(value)] = 1 + len(value) * (type(value) is LocDict) + sum(_size(v, sizes) for v in items)
    return known
