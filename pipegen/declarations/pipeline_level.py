"""The config's `pipeline:` section: Buildkite's pipeline-level fields (env, agents, notify, ...).

The accepted fields are the top-level properties of Buildkite's published
schema but `steps` (pipegen writes those); each value is checked against its
own definition, and an error names the file, line and column of the field.
"""

from __future__ import annotations

from typing import Any

from pipegen.declarations.fields import require_mapping
from pipegen.errors import DeclarationError, suggest
from pipegen.model import Location


def pipeline_fields(raw: Any, where: Location) -> tuple[tuple[str, Any], ...]:
    if raw is None:
        return ()
    data = require_mapping(raw, where, "'pipeline'")
    if not data:
        return ()
    from pipegen.buildkite.schema import load_schema, validator

    schema = load_schema()
    known = set(schema["properties"]) - {"steps"}
    for name in data:
        if name not in known:
            raise DeclarationError(f"unknown pipeline field '{name}' (Buildkite's pipeline-level fields: "
                                   f"{', '.join(sorted(known))})", data.loc(name), suggest(name, known))
    import fastjsonschema

    try:
        validator()({"steps": [], **data})
    except fastjsonschema.JsonSchemaException:
        from pipegen.buildkite.schema_errors import refusal

        for name, value in data.items():
            best = refusal(("properties", name), value)
            if best is not None:
                from pipegen.buildkite.step_fields import expects

                raise DeclarationError(f"pipeline field '{name}': {best.message}; Buildkite's schema expects "
                                       f"{expects(schema['properties'][name])}", data.loc(name),
                                       f"write it as a Buildkite pipeline's top-level '{name}'") from None
    return tuple((str(name), value) for name, value in data.items())
