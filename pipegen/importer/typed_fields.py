"""A command step's fields as pipegen's declarations take them: Buildkite's schema fields, typed values.

Two things a hand-written pipeline holds that a declaration cannot:
- a field no Buildkite step has (another tool's, read and removed before the upload, such as Materialize's
  `inputs:` path lists): with `--paths-field NAME` that field is the step's `source_file_dependencies`,
  otherwise it is left out and named, with the option when it is a list of paths;
- an upload-time variable in a field the schema types (`soft_fail: ${ALLOW_FAIL?}`): Buildkite reads the
  value after interpolating it, pipegen's loader before, so the field is left out and named (a declaration
  that does not load is never written).
"""

from __future__ import annotations

from typing import Any

from pipegen.buildkite.interpolation import variables
from pipegen.buildkite.step_fields import expects, field_names, field_schemas, problems
from pipegen.importer.said import About, Said

OWN = ("hardware", "source_file_dependencies")  # pipegen's fields the import writes
TEXT = ("command", "commands", "label", "name", "if", "branches", "concurrency_group", "artifact_paths")  # any text


def typed_fields(out: dict[str, Any], where: About, paths_field: str | None, missing: list[Said]) -> bool:
    """Moves or drops what does not load (saying so in `missing`); True when a path field now selects."""
    known = field_names() | set(OWN)
    selects = False
    for name in [n for n in out if n not in known]:
        value = out.pop(name)
        paths = isinstance(value, list) and all(isinstance(v, str) for v in value)
        if name == paths_field and paths:
            out["source_file_dependencies"] = [*out.get("source_file_dependencies", []), *value]
            selects = True
            continue
        hint = f"; a list of paths: pass --paths-field {name} to read it as source_file_dependencies" if paths else ""
        missing.append(where(f"its '{name}' is no field of a Buildkite step (another tool's, read before the "
                             f"upload?); left out{hint}"))
    for name, value in list(out.items()):
        if name not in TEXT and _upload_time(value) and name in field_schemas() and problems({name: value}):
            del out[name]
            missing.append(where(f"its {name} '{value}' takes its value when Buildkite interpolates the upload; "
                                 f"a declaration needs {expects(field_schemas()[name])} there: left out"))
    return selects


def _upload_time(value: object) -> bool:
    """A variable Buildkite's upload expands (not `$$`, `\\$`, `$(` or a `$` before no name)."""
    return isinstance(value, str) and "$" in value and bool(variables(value))
