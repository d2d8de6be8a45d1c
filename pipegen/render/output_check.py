"""The rendered pipeline checked after rendering, before anything is printed.

`check()` parses the text back and validates it against Buildkite's schema,
unique keys, known depends_on targets and the job limit; any problem is an
OutputError, so that `pipegen render` never prints a pipeline that
`buildkite-agent pipeline upload` would refuse.
"""

from __future__ import annotations

from typing import Any

from pipegen.buildkite.interpolation import InterpolationError, placeheld
from pipegen.buildkite.limits import JOB_LIMIT, count_jobs
from pipegen.buildkite.schema import validator
from pipegen.buildkite.schema_errors import validate
from pipegen.buildkite.upload_escape import upload_variable
from pipegen.errors import DeclarationError, OutputError
from pipegen.render.fastyaml import load


def check(text: str, limit: int = JOB_LIMIT, external: tuple[str, ...] = ()) -> dict[str, Any]:
    """Parse the rendered text back and validate it; an OutputError when Buildkite would refuse it.

    `external`: keys of steps uploaded elsewhere, which depends_on may name."""

    try:
        data = load(text)
    except DeclarationError as exc:
        line = exc.location.line if exc.location else 0
        at = f" (line {line})" if line else ""
        error = OutputError(f"the rendered pipeline is not valid YAML: {exc.message}{at}",
                            fix="check the --templates override (every value must go through a filter)")
        error.line = line
        raise error from None
    if not isinstance(data, dict):
        raise OutputError("the rendered pipeline is not a mapping with 'steps'")
    import fastjsonschema

    try:
        validator()(data)
    except fastjsonschema.JsonSchemaException:  # once more as uploaded (upload-time variables filled in), then say why
        validate(_as_uploaded(data))
    _check_graph(data, limit, external)
    return data


def _as_uploaded(data: dict[str, Any]) -> dict[str, Any]:
    """The pipeline as far as can be known before upload, where Buildkite fills in upload-time variables: a
    `timeout_in_minutes` that is one is validated as its default (else 1), and each one in a key or a
    depends_on target as a letter (an unset `?` variable fails the upload, which no check here can see; text
    the upload fails on is left as it is, for the schema to refuse)."""

    def key(value: Any) -> Any:
        if isinstance(value, dict):
            return {**value, "step": key(value.get("step"))}
        if isinstance(value, str) and "$" in value:
            try:
                return placeheld(value)
            except InterpolationError:
                return value
        return value

    def fill(step: Any) -> Any:
        if not isinstance(step, dict):
            return step
        step = dict(step)
        if isinstance(step.get("steps"), list):
            step["steps"] = [fill(s) for s in step["steps"]]
        if "key" in step:
            step["key"] = key(step["key"])
        depends = step.get("depends_on")
        if depends is not None:
            step["depends_on"] = [key(d) for d in depends] if isinstance(depends, list) else key(depends)
        minutes = step.get("timeout_in_minutes")
        match = upload_variable(minutes) if isinstance(minutes, str) else None
        if match is not None:
            arg = match["arg"] or ""
            step["timeout_in_minutes"] = int(arg) if match["op"] in (":-", "-") and arg.isdigit() else 1
        return step

    steps = data.get("steps")
    return {**data, "steps": [fill(s) for s in steps]} if isinstance(steps, list) else data


def _check_graph(data: dict[str, Any], limit: int, external: tuple[str, ...]) -> None:
    keys: dict[str, str] = {}
    depends: list[tuple[str, str]] = []

    def visit(steps: Any) -> None:
        for step in steps or ():
            if not isinstance(step, dict):
                continue
            name = str(step.get("label") or step.get("block") or step.get("group") or step.get("key"))
            key = step.get("key")
            if key is not None:
                if key in keys:
                    raise OutputError(f"the rendered pipeline has two steps with key '{key}' "
                                      f"('{keys[key]}' and '{name}')", fix="give the steps different keys")
                keys[key] = name
            targets = step.get("depends_on")
            targets = [targets] if isinstance(targets, str) else targets or []
            for target in targets:
                target = target.get("step") if isinstance(target, dict) else target
                if isinstance(target, str):
                    depends.append((name, target))
            if "group" in step:  # the schema has refused a group without steps
                visit(step.get("steps"))

    visit(data.get("steps"))
    for name, target in depends:
        if target not in keys and target not in external:
            raise OutputError(f"step '{name}' depends on '{target}', which is not in the pipeline",
                              fix="the upload would fail; this is a bug in pipegen or a template override")
    jobs = count_jobs(data.get("steps"))
    if jobs > limit:
        raise OutputError(f"the rendered pipeline has {jobs} jobs, more than the {limit} one upload may hold",
                          fix="select fewer steps or split the pipeline")
