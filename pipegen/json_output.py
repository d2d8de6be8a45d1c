"""What every command prints with `--format json`: one object, `version` first, and its JSON Schema.

The schemas are the documented fields (docs/reference/json-output.md is tested against them, and every
command's output in the tests against its schema): a field added to an output without its schema fails a test.
`version` changes only when a field is removed or changes meaning; new fields keep it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

VERSION = 1


def dumps(data: Mapping[str, Any]) -> str:
    """The document as printed: indented, `version` first, a newline at the end."""
    return json.dumps({"version": VERSION, **data}, indent=2) + "\n"


# --------------------------------------------------------------------------- the schemas (draft 2020-12)

STR: dict[str, Any] = {"type": "string"}
INT: dict[str, Any] = {"type": "integer"}
NUM: dict[str, Any] = {"type": "number"}
BOOL: dict[str, Any] = {"type": "boolean"}
STRS: dict[str, Any] = {"type": "array", "items": STR}


def _obj(required: Mapping[str, Any], optional: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """An object with exactly these fields (`optional`: present only where the documentation says when)."""
    return {"type": "object", "required": list(required), "additionalProperties": False,
            "properties": {**required, **(optional or {})}}


def _list(item: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": dict(item)}


def _or_null(schema: Mapping[str, Any]) -> dict[str, Any]:
    return {"anyOf": [dict(schema), {"type": "null"}]}


def _enum(*values: str) -> dict[str, Any]:
    return {"enum": list(values)}


def _document(command: str, fields: Mapping[str, Any], optional: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": f"pipegen {command} --format json",
            **_obj({"version": {"const": VERSION}, **fields}, optional)}


ACTION = _enum("run", "block", "skip")
REASON = _obj({"rule": STR, "text": STR}, {"file": STR, "entry": STR})
LOCATION = _obj({"file": STR, "line": _or_null(INT)})

SELECT = _document("select", {
    "base": _or_null(STR), "merge_base": _or_null(STR), "changed_files": STRS, "run_all": BOOL,
    "run_all_reason": STR, "skip_all": BOOL, "skip_reason": STR, "warnings": STRS, "uncovered": STRS,
    "steps": _list(_obj({"key": STR, "label": STR, "group": STR, "action": ACTION, "reasons": _list(REASON)})),
})

WHY = _document("why", {}, {
    "paths": _list(_obj({
        "path": STR, "verdict": _enum("steps", "run-all", "docs-only"), "reason": STR,
        "selects": _list(_obj({"key": STR, "rule": STR, "entry": _or_null(STR), "text": STR})),
        "needed": _list(_obj({"key": STR, "reason": STR})),
        "blocked": _list(_obj({"key": STR, "entry": STR, "action": ACTION, "reason": STR})),
        "regardless": _list(_obj({"key": STR, "entry": STR, "reason": STR})),
        "excluded": _list(_obj({"key": STR, "entry": STR, "excluded_by": STR})),
        "warnings": STRS}, {"overridden": STR})),
    "steps": _list(_obj({"key": STR, "label": STR, "declared_at": STR, "action": ACTION, "reasons": _list(REASON),
                         "dependencies": STRS, "depends_on": STRS})),
})

CHECK = _document("check", {
    "findings": _list(_obj({"code": STR, "severity": _enum("error", "warning", "info"), "file": STR, "line": INT,
                            "column": INT, "step": _or_null(STR), "message": STR, "fix": STR}, {"files": STRS})),
    "counts": {"type": "object", "additionalProperties": INT}, "errors": INT, "warnings": INT, "notes": STRS,
    "stats": {"type": "object", "additionalProperties": INT}, "tests": {"type": "object", "additionalProperties": STRS},
})

AUDIT = _document("audit", {
    "range": STR, "unit": _enum("jobs", "machine-minutes"), "ran": NUM, "every": NUM,
    "commits": _list(_obj({"sha": STR, "subject": STR, "files": INT, "run": STRS, "needed": STRS, "waiting": STRS,
                           "skipped": STRS, "run_all": STR, "docs_only": STR})),
    "steps": _list(_obj({"key": STR, "runs": INT, "ran": NUM, "every": NUM})),
    "never_run": STRS, "never_run_optional": STRS, "without_duration": STRS, "notes": STRS,
}, {"compare": _obj({"ref": STR, "ran": NUM, "every": NUM, "losses": INT,
                     "changes": _list(_obj({"key": STR, "where": _enum("before", "after", "both"), "lost": STRS,
                                            "gained": STRS}))})})

STATUS = _enum("passed", "failed", "soft failed", "timed out", "interrupted", "not run", "skipped", "incomplete")
RUN = _document("run", {
    "dry_run": BOOL, "asked": STRS, "notes": STRS, "selected": STRS,
    "machine": _or_null(_obj({"description": STR, "vendor": STR, "arch": _or_null(STR), "gpus": INT, "name": STR,
                              "source": STR, "note": STR})),
    "jobs": _list(_obj({
        "key": STR, "step": STR, "target": STR, "matrix": _or_null(STR), "label": STR, "group": STR,
        "declared_at": LOCATION, "hardware": STR, "working_dir": STR, "env": {"type": "object",
                                                                              "additionalProperties": STR},
        "timeout_seconds": _or_null(NUM), "log": STR, "commands": STRS,
        "after": _list(_obj({"key": STR, "allow_failure": BOOL})), "skip": STR, "plugins": STR,
        "status": _or_null(STATUS), "detail": STR, "seconds": _or_null(NUM), "artifacts": STRS})),
    "unrunnable": _list(_obj({"step": STR, "reasons": STRS, "asked": BOOL, "declared_at": LOCATION})),
    "counts": {"type": "object", "additionalProperties": INT}, "changed_files": STRS, "junit": _or_null(STR),
    "duration_seconds": _or_null(NUM), "exit_code": INT,
})

SAID = _obj({"file": _or_null(STR), "line": _or_null(INT), "column": _or_null(INT), "message": STR})
IMPORT = _document("import", {
    "inputs": STRS, "out_dir": STR, "config": STR, "files": STRS, "steps": INT,
    "families": {"type": "object", "additionalProperties": STR}, "selecting": STRS, "notes": _list(SAID),
    "not_carried": _list(SAID),
    "differences": _list(_obj({"step": STR, "field": STR, "file": _or_null(STR), "line": _or_null(INT),
                               "column": _or_null(INT), "expected": {}, "got": {}})),
    "proven": BOOL, "exit_code": INT,
})

SCHEMAS = {"select": SELECT, "why": WHY, "check": CHECK, "audit": AUDIT, "run": RUN, "import": IMPORT}
