"""`pipegen import --format json` (pure): what was written, what was said, and the proof's verdict.

Its fields are pipegen/json_output.py's IMPORT schema. Each note and each thing not carried over carries
the place it was made with (importer/said.py): its `file`, `line` and `column`, so a tool can point at it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pipegen.importer.convert import Imported
from pipegen.importer.nodes import Node, Pipeline
from pipegen.importer.said import place
from pipegen.importer.upload_model.verdict import Finding, shown_data
from pipegen.model import Location


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
        "notes": [note.as_json() for note in result.notes],
        "not_carried": [item.as_json() for item in result.missing],
        "differences": [{"step": d.step, "field": d.field, **place(where.get(d.step)), "expected": _data(d.expected),
                         "got": _data(d.got)} for d in differences],
        "proven": not (result.missing or differences),
        "exit_code": exit_code,
    }


def _data(value: object) -> object:
    """A value of the model as JSON data: symbolic values as the interpolation text that means them."""
    return json.loads(json.dumps(shown_data(value), default=repr))
