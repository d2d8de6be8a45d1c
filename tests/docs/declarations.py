"""A page's pipegen declarations, checked as pipegen reads them: each file-marked `yaml` block that is a config
(a file named pipegen.yaml), a steps file (under a path a config block's `steps:` names) or a hardware inventory
(hardware.yaml) is validated against pipegen's JSON Schema of it, and each config is loaded by pipegen as the
page left it. An unmarked block whose first line names such a file (`# .buildkite/pipegen.yaml`,
`# .buildkite/steps/unit.yaml: ...`) is validated too.

A deliberately broken declaration (to show pipegen's message) is written by a file-marked `text` block.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

import fastjsonschema
import yaml

from pipegen.buildkite.schema import prepared
from pipegen.dialects.load import load
from pipegen.dialects.own.schema import own_format_problem
from pipegen.errors import PipegenError
from pipegen.hardware.schema import inventory_schema
from tests.docs.blocks import Block

CONFIG_NAME = "pipegen.yaml"
INVENTORY_NAME = "hardware.yaml"
HEADER = re.compile(r"#\s*(\S+\.ya?ml)\b")  # a first line naming the file the block shows


def _root(config: PurePosixPath) -> PurePosixPath:
    """The repository a config belongs to: the folder holding its .buildkite/, else its own folder's parent."""
    parts = config.parts
    return PurePosixPath(*parts[: parts.index(".buildkite")]) if ".buildkite" in parts[:-1] else config.parent


def _entries(data: Any) -> list[str]:
    steps = data.get("steps") if isinstance(data, dict) else None
    return [steps] if isinstance(steps, str) else [e for e in steps if isinstance(e, str)] \
        if isinstance(steps, list) else []


def kinds(blocks: list[Block]) -> dict[str, str]:
    """Each declaration block's file -> "config" or "steps"."""
    written = [b for b in blocks if b.file and b.lang in ("yaml", "yml") and b.not_run is None]
    found = {b.file: "config" for b in written if PurePosixPath(b.file).name == CONFIG_NAME and b.file}
    found.update({b.file: "hardware" for b in written if PurePosixPath(b.file).name == INVENTORY_NAME and b.file})
    steps_paths = [_root(PurePosixPath(b.file)) / entry.rstrip("/") for b in written if b.file in found
                   for entry in _entries(yaml.safe_load(b.text))]
    for block in written:
        path = PurePosixPath(block.file or "")
        if block.file not in found and any(path == p or p in path.parents for p in steps_paths):
            found[block.file or ""] = "steps"
    return found


def _problem(kind: str, data: Any) -> str | None:
    if kind != "hardware":
        return own_format_problem(kind, data)
    try:
        _inventory_validator()(data)
    except fastjsonschema.JsonSchemaValueException as error:
        return str(error.message)
    return None


@functools.cache
def _inventory_validator() -> Callable[[Any], Any]:
    return fastjsonschema.compile(prepared(inventory_schema()), use_default=False)


def _header_kind(block: Block) -> tuple[str, str] | None:
    """An unmarked yaml block that names its file in a first-line comment (`# .buildkite/steps/unit.yaml`)."""
    named = HEADER.match(block.text) if block.lang in ("yaml", "yml") and not block.file else None
    if named is None:
        return None
    path = PurePosixPath(named[1])
    kind = "config" if path.name == CONFIG_NAME else "hardware" if path.name == INVENTORY_NAME \
        else "steps" if "steps" in path.parent.parts else None
    return (kind, named[1]) if kind else None


def problems(blocks: list[Block], folder: Path) -> str | None:
    """The first declaration block the schema refuses, or the first config pipegen cannot load; None when fine."""
    found = kinds(blocks)
    for block in blocks:
        marked = found.get(block.file or "")
        kind, name = (marked, block.file or "") if marked else _header_kind(block) or ("", "")
        if kind and block.not_run is None:
            why = _problem(kind, yaml.safe_load(block.text))
            if why:
                return f"{block.where}: {name} is refused by pipegen's JSON Schema of a {kind} file: {why}"
    for block in blocks:
        path = folder / (block.file or "")
        if found.get(block.file or "") == "config" and path.is_file() and path.read_text() == block.text:
            root = folder.joinpath(*_root(PurePosixPath(block.file or "")).parts)
            try:
                load(str(root), str(path), environ={})
            except PipegenError as error:
                return f"{block.where}: pipegen cannot load {block.file}: {error}"
    return None
