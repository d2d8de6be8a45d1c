"""`pipegen import --format json` (pure): what was written, what was said, and the proof's verdict.

Its fields are pipegen/json_output.py's IMPORT schema. The notes and what could not be carried over are
sentences that start with where they were read (`file:line:column: `, or `file: ` where no line is known):
that place is split into `file`, `line` and `column`, so a tool can point at it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pipegen.importer.convert import Imported
from pipegen.importer.nodes import Node, Pipeline
from pipegen.importer.upload_model.verdict import Finding, shown_data
from pipegen.model import Location

# A model.Location as str() writes it at the start of a sentence; a file without a line is a pipeline file.
_AT_LINE = re.compile(r"(?P<file>[^\n]+?):(?P<line>[0-9]+):(?P<column>[0-9]+): (?P<message>.*)", re.DOTALL)
_AT_FILE = re.compile(r"(?P<file>[^\n:]+?\.(?:ya?ml|json)): (?P<message>.*)", re.DOTALL)


def said(text: str) -> dict[str, Any]:
    """A note as {file, line, column, message}: null where the sentence names no place."""
    match = _AT_LINE.fullmatch(text)
    if match:
        return {"file": match["file"], "line": int(match["line"]), "column": int(match["column"]),
                "message": match["message"]}
    match = _AT_FILE.fullmatch(text)
    if match:
        return {"file": match["file"], "line": None, "column": None, "message": match["message"]}
    return {"file": None, "line": None, "column": None, "message": text}


def places(pipelines: Sequence[Pipeline]) -> dict[str, Location]:
    """Each step's name as the proof names it (its key, else its label) -> where it is written (the first)."""
    out: dict[str, Location] = {}
    todo: list[Node] = [node for pipeline in pipelines for node in pipeline.steps]
    while todo:
        node = todo.pop(0)
        name = node.key or node.label
        if name is not None:
            out.setdefault(name, node.where)
        todo[:0] = node.children
    return out


def import_json(result: Imported, differences: Sequence[Finding], out_dir: str, inputs: Sequence[str],
                exit_code: int, where: Mapping[str, Location]) -> dict[str, Any]:
    """`where`: the input's steps by name (places()), for the place of each difference."""
    return {
        "inputs": list(inputs),
        "out_dir": out_dir,
        "config": f"{out_dir}/pipegen.yaml",
        "files": sorted(result.files),
        "steps": result.steps,
        "families": dict(sorted(result.families.items())),
        "selecting": sorted(result.selecting),
        "notes": [said(note) for note in result.notes],
        "not_carried": [said(item) for item in result.missing],
        "differences": [{"step": d.step, "field": d.field, **_place(where.get(d.step)), "expected": _data(d.expected),
                         "got": _data(d.got)} for d in differences],
        "proven": not (result.missing or differences),
        "exit_code": exit_code,
    }


def _place(location: Location | None) -> dict[str, Any]:
    if location is None:
        return {"file": None, "line": None, "column": None}
    return {"file": location.file, "line": location.line or None, "column": location.column or None}


def _data(value: object) -> object:
    """A value of the model as JSON data: symbolic values as the interpolation text that means them."""
    return json.loads(json.dumps(shown_data(value), default=repr))
