"""The build context: facts of one build (branch, commit, ...) applied to an inventory. Pure.

An inventory's `build:` section says how a build changes the jobs:

    build:
      values: {registry: r.example, repository: test-repo}   # named text; may use {other}
      variants:                     # applied in order when the build matches
        - {name: postmerge, branch: main, values: {repository: prod-repo},
           docker_options: {mount-buildkite-agent: true}}
        - {name: torch-nightly, env: {TORCH_NIGHTLY: "1"}, values: {suffix: -nightly}}
        - {name: urgent, env: {PRIORITY: HIGH}, job: {priority: 1000}}       # jobs whose template sets none
        - {name: no-timeouts, env: {SKIP_TIMEOUT: "1"}, job: {omit: [timeout_in_minutes]}}
        - {name: pull-request, pull_request: true, gate: {...}}   # a step jobs wait for (build_gate.py)
        - {name: timed, env: {TIME_IT: "1"}, wrap: {...}}        # lines around every command (build_wrap.py)
      variables:                    # $NAME in a job's commands -> text, in this order
        - [REGISTRY, "{registry}"]
      variables_when: {config_name: ci}   # only where these values are so (vLLM: its main pipeline)
      branch_pattern: "^[a-zA-Z0-9._/:-]+$"   # a BUILDKITE_BRANCH outside it is refused
      quotes: double                # ' in commands becomes " (not in multi-node jobs)
      preview: delete               # the banner drops quotes and $ instead of blanking them

`{name}` in the inventory's strings (queues, images, options, pod specs,
setup, env) becomes the value; the build itself gives `branch`, `commit` and
`pull_request`; the config may give more (vLLM's ci_config.yaml `registries`
and `repositories.*`). A value that comes out empty leaves its variable alone.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from pipegen.declarations.fields import anything, boolean, check_fields, env_map, require_mapping, string, string_list
from pipegen.errors import DeclarationError, UsageError
from pipegen.frozen import frozen
from pipegen.hardware.build_gate import Gate, parse_gate
from pipegen.hardware.build_keyed import filled as keyed_fields
from pipegen.hardware.build_keyed import parse_keyed
from pipegen.hardware.build_spec import BuildInfo, BuildSpec, Variant
from pipegen.hardware.build_wrap import Wrap, filled, parse_wrap
from pipegen.hardware.types import Inventory, Template

_PLACEHOLDER = re.compile(r"(?<!\$)\{([A-Za-z_][\w.]*)\}")


@frozen
class BuildContext:
    """A BuildSpec resolved for one build: values, variables and variants in force."""

    values: Mapping[str, str]
    variables: tuple[tuple[str, re.Pattern[str], str], ...] = ()  # ($NAME, its pattern, value)
    variants: tuple[str, ...] = ()
    docker_options: tuple[tuple[str, Any], ...] = ()
    quotes: str | None = None
    preview: str = "blank"
    priority: int | None = None
    omit: tuple[str, ...] = ()
    gate: Gate | None = None  # its {value}s filled
    # a step's declared key -> its env and timeout
    keyed: Mapping[str, tuple[dict[str, str], int | None]] = dataclasses.field(default_factory=dict)
    wraps: tuple[Wrap, ...] = ()  # innermost first, their {value}s filled

    def fill(self, value: Any) -> Any:
        """`{name}` placeholders in a string, list or mapping -> the values (unknown names stay)."""
        if isinstance(value, str):
            return _PLACEHOLDER.sub(lambda m: self.values.get(m[1], m[0]), value)
        if isinstance(value, dict):
            return {k: self.fill(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self.fill(v) for v in value)
        return value

    def substitute(self, command: str) -> str:
        """The build's variables in one command, replaced in order (whole names only)."""
        if "$" not in command:  # most commands name none
            return command
        for name, pattern, value in self.variables:
            if name in command:  # skip the regex
                command = pattern.sub(value.replace("\\", "\\\\"), command)  # the value as written
        return command


def resolve(spec: BuildSpec | None, info: BuildInfo, given: tuple[tuple[str, str], ...] = ()) -> BuildContext:
    """The context of one build; `given`: values from the repository's config (override the spec's)."""
    if spec is None:
        return BuildContext(values={})
    if spec.branch_pattern and info.branch and not re.fullmatch(spec.branch_pattern, info.branch):
        raise UsageError(f"BUILDKITE_BRANCH {info.branch!r} has characters outside {spec.branch_pattern}",
                         fix="rename the branch (letters, digits and . _ / : - only)")
    raw = dict(spec.values)
    raw.update(given)
    raw.update(branch=info.branch, commit=info.commit, pull_request=info.pull_request)
    raw.update((f"env.{name}", info.env.get(name, default)) for name, default in spec.environment)
    variants = [v for v in spec.variants if v.matches(info)]
    options: dict[str, Any] = {}
    priority, omit, gate = None, [], None
    for variant in variants:
        raw.update(variant.values)
        options.update(variant.docker_options)
        priority = variant.priority if variant.priority is not None else priority
        omit += [name for name in variant.omit if name not in omit]
        gate = variant.gate or gate
    values = _expand(raw)
    context = BuildContext(values=values, variants=tuple(v.name for v in variants),
                           docker_options=tuple(options.items()), quotes=spec.quotes, preview=spec.preview,
                           priority=priority, omit=tuple(omit))
    if gate is not None:
        context = dataclasses.replace(context, gate=Gate(**{f.name: context.fill(getattr(gate, f.name))
                                                            for f in dataclasses.fields(Gate)}))
    wraps = tuple(filled(v.wrap, context.fill) for v in variants if v.wrap is not None)
    keyed = {key: keyed_fields(item, context.fill, key) for key, item in spec.keys}
    context = dataclasses.replace(context, wraps=wraps, keyed=keyed)
    variables = []
    in_force = all(values.get(k) == v for k, v in spec.variables_when)
    for name, template in spec.variables if in_force else ():
        value = context.fill(template)
        if value:
            variables.append(("$" + name, re.compile(r"(?<!\$)\$" + re.escape(name) + r"\b"), value))
    return dataclasses.replace(context, variables=tuple(variables))


def _filled(text: str, values: Mapping[str, str]) -> str:
    """`text` with each {name} that `values` holds replaced by its value."""
    return _PLACEHOLDER.sub(lambda m: values.get(m[1], m[0]), text)


def _expand(raw: dict[str, str]) -> dict[str, str]:
    """Values may name other values: expand until nothing changes (a cycle stops after a few rounds)."""
    values = dict(raw)
    for _ in range(5):
        changed = {k: _filled(v, values) for k, v in values.items()}
        if changed == values:
            break
        values = changed
    return values


# --------------------------------------------------------------------------- reading the section

BUILD_FIELDS = ("values", "variants", "variables", "variables_when", "branch_pattern", "quotes", "preview",
                "environment", "keys")
VARIANT_FIELDS = ("name", "branch", "branch_env", "env", "values", "docker_options", "job", "pull_request", "gate",
                  "wrap")
VARIANT_JOB_FIELDS = ("priority", "omit")
OMITTABLE = ("timeout_in_minutes", "priority", "artifact_paths", "soft_fail")


def parse_build(raw: Any, where: Any) -> BuildSpec:
    """An inventory's `build:` mapping (as yamlio reads it) -> BuildSpec; errors name the line."""

    top = check_fields(require_mapping(raw, where, "'build'"), dict.fromkeys(BUILD_FIELDS, anything), "build")
    variants = []
    for index, item in enumerate(_list(top.get("variants"), raw, "variants")):
        at = raw["variants"].loc(index)
        variant = check_fields(require_mapping(item, at, "a variant"), dict.fromkeys(VARIANT_FIELDS, anything),
                               "variant")
        if not variant.get("name"):
            raise DeclarationError("a build variant needs a 'name'", at, "add e.g. 'name: postmerge'")
        options = variant.get("docker_options")
        options = require_mapping(options, at, "'docker_options'") if options is not None else {}
        job = variant.get("job")
        job = check_fields(require_mapping(job, at, "a variant's 'job'"),
                           dict.fromkeys(VARIANT_JOB_FIELDS, anything), "variant job") if job is not None else {}
        variants.append(Variant(name=string(variant["name"], at), branch=variant.get("branch"),
                                branch_env=string(variant["branch_env"], at) if "branch_env" in variant else None,
                                env=env_map(variant.get("env") or {}, at),
                                values=env_map(variant.get("values") or {}, at),
                                docker_options=tuple((str(k), v) for k, v in options.items()),
                                priority=_priority(job.get("priority"), at), omit=_omit(job.get("omit"), at),
                                pull_request=boolean(variant["pull_request"], at) if "pull_request" in variant
                                else None,
                                gate=parse_gate(variant["gate"], at) if "gate" in variant else None,
                                wrap=parse_wrap(variant["wrap"], at) if "wrap" in variant else None))
    variables = []
    for index, item in enumerate(_list(top.get("variables"), raw, "variables")):
        if not (isinstance(item, list) and len(item) == 2):
            raise DeclarationError("a build variable is [NAME, value]", raw["variables"].loc(index),
                                   "write e.g. '[REGISTRY, \"{registry}\"]'")
        variables.append((string(item[0], where), string(item[1], where)))
    quotes, preview = top.get("quotes"), top.get("preview", "blank")
    if quotes not in (None, "double") or preview not in ("blank", "delete"):
        raise DeclarationError("build 'quotes' may be 'double', 'preview' 'blank' or 'delete'", where)
    return BuildSpec(values=env_map(top.get("values") or {}, where), variants=tuple(variants),
                     variables=tuple(variables), variables_when=env_map(top.get("variables_when") or {}, where),
                     branch_pattern=top.get("branch_pattern"), quotes=quotes, preview=preview,
                     environment=env_map(top.get("environment") or {}, where),
                     keys=parse_keyed(raw["keys"], raw.loc("keys")) if "keys" in top else ())


def _priority(value: Any, where: Any) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise DeclarationError(f"a variant's job priority must be a whole number, got {value!r}", where)
    return value


def _omit(value: Any, where: Any) -> tuple[str, ...]:
    names = string_list(value or [], where)
    unknown = [name for name in names if name not in OMITTABLE]
    if unknown:
        raise DeclarationError(f"a variant's job cannot omit {', '.join(unknown)}", where,
                               f"omit one of {', '.join(OMITTABLE)}")
    return names


def _list(value: Any, raw: Any, name: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise DeclarationError(f"build '{name}' must be a list", raw.loc(name))
    return value


# --------------------------------------------------------------------------- applying it


def apply(inventory: Inventory, context: BuildContext) -> Inventory:
    """The inventory with the build's values in its strings and its variants' docker options."""
    if not context.values:
        return inventory
    done: dict[int, Template] = {}

    def template(t: Template) -> Template:
        if id(t) not in done:
            options = dict(context.fill(dict(t.options)))
            if t.kind == "docker":
                options.update(context.docker_options)
            job = dataclasses.replace(t.job, env=context.fill(t.job.env), runner=context.fill(t.job.runner),
                                      artifact_paths=context.fill(t.job.artifact_paths))
            done[id(t)] = dataclasses.replace(
                t, image=context.fill(t.image), volumes=context.fill(t.volumes),
                environment=context.fill(t.environment),
                options=tuple(options.items()), pod_spec=context.fill(t.pod_spec), wrap=context.fill(t.wrap),
                setup=tuple(dataclasses.replace(c, run=context.fill(c.run)) for c in t.setup), job=job)
        return done[id(t)]

    families = tuple(dataclasses.replace(f, queues=tuple((n, context.fill(q)) for n, q in f.queues),
                                         agents=context.fill(f.agents), template=template(f.template),
                                         native=template(f.native) if f.native else None)
                     for f in inventory.families)
    return dataclasses.replace(inventory, families=families)
