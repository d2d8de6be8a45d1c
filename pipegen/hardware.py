"""Jobs on hardware: which agent queue and which wrapper each Step gets. Pure.

An *inventory* names hardware families. A family has a vendor (nvidia, amd,
cpu, other), an architecture (sm_90, gfx942, ...), one agent queue per GPU
count it offers (CPU families: count 0) and the template that wraps its jobs
(a docker plugin, a Kubernetes podSpec, or plain). `place(step, inventory)`
turns one Step into one Job; `jobs(decl, inventory)` places every step and
fails with one DeclarationError naming the step and what is missing.

A step names its hardware with `device` (a family, or FAMILY_N / FAMILY:N
for "family with N GPUs", which is how vLLM writes AMD pools such as
`mi300_2`) and `num_devices`; `no_gpu` asks for the family's machine
without GPUs. A step without a device goes to a route that matches its
label or key, else the inventory's `default` family.

The inventory file (default `.buildkite/hardware.yaml`, or `hardware:` in
the pipegen config, a path or an inline mapping):

    default: gpu            # family for steps that name none (optional)
    no_gpu: cpu             # family for `no_gpu` steps that name none (optional)
    templates:              # named wrappers, reusable by families (optional)
      rocm: {kind: docker, image: "rocm/vllm-ci:$BUILDKITE_COMMIT", devices: [/dev/kfd, /dev/dri]}
    families:
      cpu:   {vendor: cpu, queue: cpu-queue, template: plain}
      mi355: {vendor: amd, arch: gfx950, template: rocm,
              queues: {1: amd-mi355-1, 2: amd-mi355-2, 4: amd-mi355-4, 8: amd-mi355-8}}
    routes:                 # steps without a device, by label/key glob (optional)
      - {label: ":docker:*", family: cpu}

Values of templates (images, volumes, podSpecs) are written in Buildkite's
syntax: a `$VAR` there is interpolated by `buildkite-agent pipeline upload`.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from typing import Any, Iterable, Literal, Mapping, Sequence

from pipegen.errors import DeclarationError
from pipegen.model import Declarations, Location, Step

Vendor = Literal["nvidia", "amd", "cpu", "other"]
VENDORS: tuple[str, ...] = ("nvidia", "amd", "cpu", "other")
TemplateKind = Literal["docker", "kubernetes", "plain"]
TEMPLATE_KINDS: tuple[str, ...] = ("docker", "kubernetes", "plain")

DEFAULT_FILE = ".buildkite/hardware.yaml"
PRESET_FILE = "vllm-hardware.yaml"  # in pipegen/data
_COUNT_SUFFIX = re.compile(r"^(?P<family>.+?)[_:](?P<count>[0-9]+)$")


@dataclass(frozen=True)
class Template:
    """How a family's jobs are wrapped.

    kind "docker": the docker plugin (`plugin`, e.g. "docker#v5.12.0") with
    `image`, `gpus` (only for jobs that use GPUs), `volumes`, `environment`,
    `devices` and any further plugin options in `options` (verbatim).
    kind "kubernetes": a `kubernetes:` plugin with `pod_spec` (verbatim); the
    job's GPU count is filled into the first container's resource limits.
    kind "plain": no plugin; commands run on the agent.
    `setup`: commands run before the step's own (e.g. nvidia-smi).
    `wrap`: a shell command with `{commands}`, which receives the step's
    commands joined by ' && ' as one quoted argument (vLLM's AMD runner).
    `file`: the Jinja template that renders the plugin (default `<kind>.j2`).
    """

    name: str
    kind: TemplateKind = "plain"
    plugin: str = "docker#v5.12.0"
    image: str | None = None
    gpus: str | None = None
    volumes: tuple[str, ...] = ()
    environment: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()
    options: tuple[tuple[str, Any], ...] = ()
    pod_spec: Any = None
    setup: tuple[str, ...] = ()
    wrap: str | None = None
    file: str | None = None

    @property
    def template_file(self) -> str:
        return self.file or f"{self.kind}.j2"


PLAIN = Template(name="plain")


@dataclass(frozen=True)
class Family:
    """A kind of machine: vendor, architecture, one queue per GPU count."""

    name: str
    vendor: Vendor
    queues: tuple[tuple[int, str], ...]  # (GPU count, queue), sorted by count; CPU: ((0, queue),)
    template: Template = PLAIN
    arch: str | None = None
    agents: tuple[tuple[str, str], ...] = ()  # extra agent tags besides the queue
    aliases: tuple[str, ...] = ()  # other device names meaning this family (vLLM: "b200-k8s")
    location: Location | None = None

    @property
    def queue_map(self) -> dict[int, str]:
        return dict(self.queues)

    @property
    def gpu_counts(self) -> tuple[int, ...]:
        return tuple(n for n, _ in self.queues if n > 0)

    @property
    def has_gpus(self) -> bool:
        return bool(self.gpu_counts)

    def queue(self, gpus: int) -> str | None:
        """The queue for `gpus` GPUs; 0 GPUs on a GPU family = its smallest queue."""
        table = self.queue_map
        if gpus in table:
            return table[gpus]
        if gpus == 0 and self.queues:
            return self.queues[0][1]
        return None


@dataclass(frozen=True)
class Route:
    """Steps without a device whose label or key matches go to `family`."""

    family: str
    label: str | None = None  # fnmatch glob
    key: str | None = None  # fnmatch glob

    def matches(self, step: Step) -> bool:
        if self.label is not None and not fnmatch.fnmatchcase(step.label, self.label):
            return False
        if self.key is not None and not fnmatch.fnmatchcase(step.key, self.key):
            return False
        return self.label is not None or self.key is not None


@dataclass(frozen=True)
class Inventory:
    families: tuple[Family, ...]
    default: str | None = None  # family of steps that name no hardware
    no_gpu: str | None = None  # family of no_gpu steps that name no hardware
    routes: tuple[Route, ...] = ()
    source: str = ""  # the file it came from, or "preset:vllm"

    def family(self, name: str) -> Family | None:
        for family in self.families:
            if family.name == name or name in family.aliases:
                return family
        return None

    def names(self) -> list[str]:
        return [f.name for f in self.families] + [a for f in self.families for a in f.aliases]

    def resolve(self, device: str) -> tuple[Family, int | None] | None:
        """A device name -> (family, GPU count fixed by the name, or None)."""
        family = self.family(device)
        if family is not None:
            return family, None
        match = _COUNT_SUFFIX.match(device)
        if match:
            family = self.family(match["family"])
            if family is not None:
                return family, int(match["count"])
        return None


@dataclass(frozen=True)
class Job:
    """One step placed on one family: what render and run need to know."""

    step: Step
    family: Family
    gpus: int  # GPUs the job uses (0: none)
    queue: str | None  # None: Buildkite's default queue (no inventory)
    agents: tuple[tuple[str, str], ...] = ()  # all agent tags, queue first
    nodes: int = 1

    @property
    def template(self) -> Template:
        return self.family.template

    @property
    def vendor(self) -> str:
        return self.family.vendor

    @property
    def arch(self) -> str | None:
        return self.family.arch

    @property
    def hardware(self) -> str:
        """Short description, e.g. "mi355 x2" or "cpu"."""
        text = self.family.name
        if self.gpus:
            text += f" x{self.gpus}"
        if self.nodes > 1:
            text += f" ({self.nodes} nodes)"
        return text


# --------------------------------------------------------------------------- placing


def place(step: Step, inventory: Inventory) -> Job:
    """The job of one step: its family, GPU count and queue, or a DeclarationError."""
    family, fixed = _family_of(step, inventory)
    requested = step.num_devices
    if fixed is not None and requested is not None and requested != fixed:
        raise _missing(step, f"device '{step.device}' means {fixed} GPU(s) but num_devices is {requested}",
                       f"set num_devices: {fixed}, or use device '{family.name}_{requested}'")
    if not family.has_gpus:
        if (fixed or requested) and not step.no_gpu:
            raise _missing(step, f"asks for {fixed or requested} GPU(s) on '{family.name}', which has no GPUs",
                           f"drop num_devices, or pick a GPU family ({_gpu_families(inventory)})")
        gpus = 0
    elif step.no_gpu:
        gpus = 0
    else:
        gpus = fixed or requested or 1
    queue = family.queue(gpus)
    if queue is None and family.queues:
        offered = ", ".join(str(n) for n in family.gpu_counts) or "none"
        raise _missing(step, f"asks for {gpus} GPU(s) on '{family.name}', which has queues for {offered} GPU(s)",
                       f"use one of those counts, or add a queue for {gpus} GPUs to '{family.name}' in {inventory.source}")
    agents = [("queue", queue)] if queue is not None else []
    agents += [(k, v) for k, v in family.agents if k != "queue"]
    agents += [(k, v) for k, v in step.agent_tags if k != "queue" and k not in dict(family.agents)]
    return Job(step=step, family=family, gpus=gpus, queue=queue, agents=tuple(agents), nodes=step.num_nodes or 1)


def jobs(decl: Declarations, inventory: Inventory, steps: Iterable[Step] | None = None) -> list[Job]:
    """Place every step (or the given ones), in order."""
    return [place(step, inventory) for step in (decl.steps if steps is None else steps)]


def _family_of(step: Step, inventory: Inventory) -> tuple[Family, int | None]:
    if step.device is None:
        name = None
        for route in inventory.routes:
            if route.matches(step):
                name = route.family
                break
        if name is None:
            name = inventory.no_gpu if step.no_gpu and inventory.no_gpu else inventory.default
        if name is None:
            raise _missing(step, "names no hardware and the inventory has no default family",
                           f"add 'hardware: [FAMILY]' to the step, or 'default: FAMILY' to {inventory.source or DEFAULT_FILE}")
        family = inventory.family(name)
        assert family is not None, name  # checked when the inventory loads
        return family, None
    resolved = inventory.resolve(step.device)
    if resolved is None:
        from pipegen.schema import suggest

        known = inventory.names()
        hint = suggest(step.device, known) if known else f"create {DEFAULT_FILE}"
        if hint.startswith("known fields"):
            hint = "known families: " + ", ".join(sorted(known))
        raise _missing(step, f"asks for hardware '{step.device}', which no family in {inventory.source or DEFAULT_FILE} provides",
                       hint)
    return resolved


def _gpu_families(inventory: Inventory) -> str:
    return ", ".join(f.name for f in inventory.families if f.has_gpus) or "the inventory has none"


def _missing(step: Step, what: str, fix: str) -> DeclarationError:
    return DeclarationError(f"step '{step.key}' {what}", step.location, fix)


# --------------------------------------------------------------------------- loading


def load_inventory(decl: Declarations) -> Inventory:
    """The inventory of a repository: its config's, its file, or the vLLM preset."""
    settings = decl.settings
    if settings.hardware_inline is not None:
        where = getattr(settings.hardware_inline, "file", None) or "the pipegen config"
        return parse_inventory(settings.hardware_inline, where)
    if settings.hardware_file:
        return load_inventory_file(os.path.join(decl.root, settings.hardware_file), settings.hardware_file)
    if settings.preset == "vllm" or decl.layout in ("vllm", "legacy"):
        return vllm_inventory()
    path = os.path.join(decl.root, DEFAULT_FILE)
    if os.path.isfile(path):
        return load_inventory_file(path, DEFAULT_FILE)
    # No inventory: every step without hardware runs on Buildkite's default queue.
    return Inventory(families=(Family(name="default", vendor="cpu", queues=()),), default="default",
                     source=f"{DEFAULT_FILE} (absent)")


def load_inventory_file(path: str, display: str | None = None) -> Inventory:
    from pipegen.yamlio import load_file

    name = display or path
    return parse_inventory(load_file(path, name), name)


_VLLM_CACHE: list[Inventory] = []


def vllm_inventory() -> Inventory:
    """vLLM's queue table (ci-infra constants.py / get_agent_queue), shipped as data."""
    if not _VLLM_CACHE:
        from importlib import resources

        import yaml

        text = resources.files("pipegen").joinpath("data", PRESET_FILE).read_text(encoding="utf-8")
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506 - shipped file
        _VLLM_CACHE.append(parse_inventory(data, "preset:vllm"))
    return _VLLM_CACHE[0]


def parse_inventory(data: Any, source: str) -> Inventory:
    """Validate a parsed inventory mapping (LocDict from yamlio, or a plain dict)."""
    from pipegen import schema as s

    top = _mapping(data, _loc(data, None, source), "the hardware inventory")
    fields = s.check_fields(top, {
        "default": s.string, "no_gpu": s.string, "templates": s.anything,
        "families": s.anything, "routes": s.anything,
    }, "hardware inventory") if hasattr(top, "loc") else dict(top)
    raw_templates = fields.get("templates") or {}
    templates: dict[str, Template] = {"plain": PLAIN}
    for name, raw in _mapping(raw_templates, _loc(top, "templates", source), "'templates'").items():
        templates[str(name)] = _template(str(name), raw, _loc(raw_templates, name, source))
    raw_families = fields.get("families")
    if not raw_families:
        raise DeclarationError("the hardware inventory has no 'families'", _loc(top, None, source),
                               "add 'families:' with at least one family (e.g. 'cpu: {vendor: cpu, queue: cpu-queue}')")
    families = []
    for name, raw in _mapping(raw_families, _loc(top, "families", source), "'families'").items():
        families.append(_family(str(name), raw, _loc(raw_families, name, source), templates))
    seen: dict[str, Family] = {}
    for family in families:
        for name in (family.name, *family.aliases):
            if name in seen:
                raise DeclarationError(f"hardware name '{name}' is used by two families ('{seen[name].name}' and "
                                       f"'{family.name}')", family.location, "rename one of them")
            seen[name] = family
    inventory = Inventory(families=tuple(families), source=source)
    for field_name in ("default", "no_gpu"):
        name = fields.get(field_name)
        if name is not None and inventory.family(name) is None:
            raise DeclarationError(f"'{field_name}' names unknown family '{name}'", _loc(top, field_name, source),
                                   "known families: " + ", ".join(sorted(seen)))
    routes = []
    raw_routes = fields.get("routes") or []
    if not isinstance(raw_routes, list):
        raise DeclarationError("'routes' must be a list", _loc(top, "routes", source))
    for index, raw in enumerate(raw_routes):
        where = raw_routes.loc(index) if hasattr(raw_routes, "loc") else Location(source)
        item = _mapping(raw, where, "a route")
        route = s.check_fields(item, {"label": s.string, "key": s.string, "family": s.string}, "route") \
            if hasattr(item, "loc") else dict(item)
        if not route.get("family") or not (route.get("label") or route.get("key")):
            raise DeclarationError("a route needs 'family' and 'label' or 'key'", where)
        if inventory.family(route["family"]) is None:
            raise DeclarationError(f"route names unknown family '{route['family']}'", where,
                                   "known families: " + ", ".join(sorted(seen)))
        routes.append(Route(family=route["family"], label=route.get("label"), key=route.get("key")))
    return Inventory(families=inventory.families, default=fields.get("default"), no_gpu=fields.get("no_gpu"),
                     routes=tuple(routes), source=source)


FAMILY_FIELDS = ("vendor", "arch", "queue", "queues", "template", "agents", "aliases", "description")
TEMPLATE_FIELDS = ("kind", "plugin", "image", "gpus", "volumes", "environment", "devices", "options",
                   "pod_spec", "podSpec", "setup", "wrap", "file", "description")


def _family(name: str, raw: Any, where: Location, templates: Mapping[str, Template]) -> Family:
    from pipegen import schema as s

    item = _mapping(raw, where, f"family '{name}'")
    _known(item, FAMILY_FIELDS, f"family '{name}'", where)
    vendor = item.get("vendor")
    if vendor not in VENDORS:
        raise DeclarationError(f"family '{name}' needs 'vendor' (one of {', '.join(VENDORS)}), got {vendor!r}",
                               _loc(item, "vendor", where.file) if "vendor" in item else where, "add e.g. 'vendor: nvidia'")
    if "queue" in item and "queues" in item:
        raise DeclarationError(f"family '{name}' has both 'queue' and 'queues'", where, "keep one")
    queues: list[tuple[int, str]] = []
    if "queue" in item:
        queue = s.string(item["queue"], _loc(item, "queue", where.file))
        queues = [(0 if vendor == "cpu" else 1, queue)]
    elif "queues" in item:
        table = _mapping(item["queues"], _loc(item, "queues", where.file), f"'queues' of family '{name}'")
        for count, queue in table.items():
            qwhere = _loc(table, count, where.file)
            if isinstance(count, str) and count.isdigit():
                count = int(count)
            if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                raise DeclarationError(f"queue GPU count must be a whole number >= 0, got {count!r}", qwhere,
                                       "write e.g. '2: my-queue-2gpu'")
            if vendor == "cpu" and count != 0:
                raise DeclarationError(f"CPU family '{name}' cannot have a queue for {count} GPUs", qwhere,
                                       "use 0 as the count, or another vendor")
            queues.append((count, s.string(queue, qwhere)))
    else:
        raise DeclarationError(f"family '{name}' has no 'queue' or 'queues'", where,
                               "add 'queues: {1: QUEUE, 2: QUEUE, ...}' (CPU: 'queue: QUEUE')")
    template_raw = item.get("template", "plain")
    if isinstance(template_raw, str):
        template = templates.get(template_raw)
        if template is None:
            raise DeclarationError(f"family '{name}' uses unknown template '{template_raw}'",
                                   _loc(item, "template", where.file),
                                   "known templates: " + ", ".join(sorted(templates)))
    else:
        template = _template(name, template_raw, _loc(item, "template", where.file))
    return Family(
        name=name,
        vendor=vendor,
        queues=tuple(sorted(queues)),
        template=template,
        arch=s.string(item["arch"], _loc(item, "arch", where.file)) if item.get("arch") is not None else None,
        agents=s.tag_map(item.get("agents"), _loc(item, "agents", where.file)) if item.get("agents") else (),
        aliases=s.string_list(item.get("aliases"), _loc(item, "aliases", where.file)),
        location=where,
    )


def _template(name: str, raw: Any, where: Location) -> Template:
    from pipegen import schema as s

    item = _mapping(raw, where, f"template '{name}'")
    _known(item, TEMPLATE_FIELDS, f"template '{name}'", where)
    kind = item.get("kind", "plain")
    if kind not in TEMPLATE_KINDS:
        raise DeclarationError(f"template '{name}' has unknown kind {kind!r}", _loc(item, "kind", where.file),
                               f"use one of {', '.join(TEMPLATE_KINDS)}")

    def strings(field_name: str) -> tuple[str, ...]:
        return s.string_list(item.get(field_name), _loc(item, field_name, where.file))

    def text(field_name: str) -> str | None:
        value = item.get(field_name)
        return None if value is None else s.string(value, _loc(item, field_name, where.file))

    pod_spec = item.get("pod_spec", item.get("podSpec"))
    if kind == "kubernetes" and not isinstance(pod_spec, dict):
        raise DeclarationError(f"kubernetes template '{name}' needs a 'pod_spec' mapping", where,
                               "add 'pod_spec: {containers: [{image: ...}]}'")
    if kind == "docker" and not item.get("image"):
        raise DeclarationError(f"docker template '{name}' needs an 'image'", where, "add 'image: REPO:TAG'")
    options = item.get("options") or {}
    if not isinstance(options, dict):
        raise DeclarationError(f"'options' of template '{name}' must be a mapping", _loc(item, "options", where.file))
    wrap = text("wrap")
    if wrap is not None and "{commands}" not in wrap:
        raise DeclarationError(f"'wrap' of template '{name}' must contain {{commands}}", _loc(item, "wrap", where.file),
                               "write e.g. 'bash run-in-container.sh {commands}'")
    return Template(
        name=name,
        kind=kind,
        plugin=text("plugin") or "docker#v5.12.0",
        image=text("image"),
        gpus=text("gpus"),
        volumes=strings("volumes"),
        environment=strings("environment"),
        devices=strings("devices"),
        options=tuple((str(k), _plain(v)) for k, v in options.items()),
        pod_spec=_plain(pod_spec),
        setup=strings("setup"),
        wrap=wrap,
        file=text("file"),
    )


def _known(item: Mapping[str, Any], allowed: Sequence[str], what: str, where: Location) -> None:
    from pipegen.schema import suggest

    for name in item:
        if name not in allowed:
            raise DeclarationError(f"unknown {what} field '{name}'", _loc(item, name, where.file),
                                   suggest(str(name), allowed))


def _mapping(value: Any, where: Location, what: str) -> Mapping[Any, Any]:
    if isinstance(value, dict):
        return value
    raise DeclarationError(f"{what} must be a mapping", where)


def _loc(data: Any, key: Any, file: str) -> Location:
    if hasattr(data, "loc"):
        try:
            return data.loc(key)
        except TypeError:
            return data.loc()
    return Location(file)


def _plain(value: Any) -> Any:
    """LocDict/LocList -> dict/list (hashable-free plain data for templates)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


__all__ = [
    "DEFAULT_FILE", "Family", "Inventory", "Job", "PLAIN", "Route", "Template",
    "jobs", "load_inventory", "load_inventory_file", "parse_inventory", "place", "vllm_inventory",
]
