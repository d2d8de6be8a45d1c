"""Reading a hardware inventory: the file, the config's inline mapping, or a dialect's preset (vLLM's).

`load_inventory(decl)` finds a repository's inventory; `parse_inventory`
validates a parsed mapping into hardware.Inventory, with a DeclarationError
at the line of the first problem. The types and the placing of steps are in
hardware.py.

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
      cuda:  {vendor: nvidia, agents: {queue: juliagpu, cuda: "*"}}   # chosen by agent tags, any GPU count
    routes:                 # steps without a device, by label/key glob (optional)
      - {label: ":docker:*", family: cpu}

Values of templates (images, volumes, podSpecs) are written in Buildkite's
syntax: a `$VAR` there is interpolated by `buildkite-agent pipeline upload`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from typing import Any

from pipegen.declarations.discover import DEFAULT_INVENTORY
from pipegen.declarations.fields import check_fields, require_mapping, string
from pipegen.declarations.yamlio import LocList, load_file
from pipegen.errors import DeclarationError
from pipegen.hardware.build_context import apply, parse_build, resolve
from pipegen.hardware.build_spec import BuildInfo
from pipegen.hardware.inventory_fields import FAMILY_FIELDS, INVENTORY_FIELDS, ROUTE_FIELDS, TEMPLATE_FIELDS
from pipegen.hardware.preset_merge import extended
from pipegen.hardware.template_fields import job_fields, plain, setup_commands
from pipegen.hardware.types import DOCKER_PLUGIN, PLAIN, TEMPLATE_KINDS, VENDORS, Family, Inventory, Route, Template
from pipegen.model import Declarations, Location

PRESET_FILE = "hardware.yaml"  # a dialect's inventory, in its folder (pipegen/dialects/NAME/)


def load_inventory(decl: Declarations, build: Any = None) -> Inventory:
    """The inventory of a repository for one build (build_spec.BuildInfo; None: a build of
    no branch), with the build's values in its strings."""
    return load_for_build(decl, build)[0]


def load_for_build(decl: Declarations, build: Any = None) -> tuple[Inventory, Any]:
    """The inventory for one build and its build context (build_context.BuildContext)."""

    inventory = _inventory(decl)
    context = resolve(inventory.build, build or BuildInfo(), decl.settings.build_values)
    return apply(inventory, context), context


def _inventory(decl: Declarations) -> Inventory:
    """The inventory of a repository: its config's, its file, or the vLLM preset (which a
    repository's .buildkite/hardware.yaml extends)."""
    settings = decl.settings
    if settings.hardware_inline is not None:
        where = getattr(settings.hardware_inline, "file", None) or "the pipegen config"
        return parse_inventory(settings.hardware_inline, where)
    if settings.hardware_file:
        return load_inventory_file(os.path.join(decl.root, settings.hardware_file), settings.hardware_file)
    path = os.path.join(decl.root, DEFAULT_INVENTORY)
    if settings.hardware_preset:  # a dialect's (vLLM's current and legacy files)
        preset = settings.hardware_preset
        return _extended_preset(path, preset) if os.path.isfile(path) else preset_inventory(preset)
    if os.path.isfile(path):
        return load_inventory_file(path, DEFAULT_INVENTORY)
    # No inventory: every step without hardware runs on Buildkite's default queue.
    return Inventory(families=(Family(name="default", vendor="cpu", queues=()),), default="default",
                     source=f"{DEFAULT_INVENTORY} (absent)")


def load_inventory_file(path: str, display: str | None = None) -> Inventory:
    name = display or path
    return parse_inventory(load_file(path, name), name)


@functools.cache
def preset_inventory(name: str) -> Inventory:
    """The inventory of the dialect `name`, shipped in its folder."""
    return parse_inventory(_preset_data(name), _preset_source(name))


def _preset_source(name: str) -> str:
    return f"preset:{name}"


def _preset_data(name: str) -> Any:
    # in the package, like render.builtin_templates(): a path, not an import (hardware comes after dialects)
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "dialects", name, PRESET_FILE)
    return load_file(path, f"{name}-{PRESET_FILE}")


def _extended_preset(path: str, preset_name: str) -> Inventory:
    """A dialect's preset (vLLM's) with a repository's own inventory over it (hardware/preset_merge.py)."""

    own = load_file(path, DEFAULT_INVENTORY)
    require_mapping(own, Location(DEFAULT_INVENTORY, 1, 1), "the hardware inventory")
    return parse_inventory(extended(_preset_data(preset_name), own),
                           f"{_preset_source(preset_name)} + {DEFAULT_INVENTORY}")


def parse_inventory(data: Any, source: str) -> Inventory:
    """Validate an inventory as yamlio reads it (LocDict: every error names its line)."""
    top = require_mapping(data, Location(source, 1, 1), "the hardware inventory")
    fields = check_fields(top, INVENTORY_FIELDS, "hardware inventory")
    templates: dict[str, Template] = {"plain": PLAIN}
    if fields.get("templates") is not None:
        raw_templates = require_mapping(fields["templates"], top.loc("templates"), "'templates'")
        for name, raw in raw_templates.items():
            templates[str(name)] = _template(str(name), raw, raw_templates.loc(name))
    if not fields.get("families"):
        raise DeclarationError("the hardware inventory has no 'families'", top.loc(),
                               "add 'families:' with at least one family (e.g. 'cpu: {vendor: cpu, queue: cpu-queue}')")
    raw_families = require_mapping(fields["families"], top.loc("families"), "'families'")
    families = [_family(str(name), raw, raw_families.loc(name), templates) for name, raw in raw_families.items()]
    known = sorted(f.name for f in families)
    for field_name in ("default", "no_gpu"):
        name = fields.get(field_name)
        if name is not None and name not in known:
            raise DeclarationError(f"'{field_name}' names unknown family '{name}'", top.loc(field_name),
                                   "known families: " + ", ".join(known))
    routes = []
    raw_routes = fields.get("routes") or []
    if not isinstance(raw_routes, list):
        raise DeclarationError("'routes' must be a list", top.loc("routes"))
    for index, raw in enumerate(raw_routes):
        where = raw_routes.loc(index) if isinstance(raw_routes, LocList) else top.loc("routes")
        route = check_fields(require_mapping(raw, where, "a route"), ROUTE_FIELDS, "route")
        if not route.get("family") or not (route.get("label") or route.get("key")):
            raise DeclarationError("a route needs 'family' and 'label' or 'key'", where)
        if route["family"] not in known:
            raise DeclarationError(f"route names unknown family '{route['family']}'", where,
                                   "known families: " + ", ".join(known))
        routes.append(Route(family=route["family"], label=route.get("label"), key=route.get("key")))
    build = None
    if fields.get("build") is not None:
        build = parse_build(fields["build"], top.loc("build"))
    return Inventory(families=tuple(families), default=fields.get("default"), no_gpu=fields.get("no_gpu"),
                     routes=tuple(routes), source=source, build=build)


def _family(name: str, raw: Any, where: Location, templates: Mapping[str, Template]) -> Family:
    raw = require_mapping(raw, where, f"family '{name}'")
    item = check_fields(raw, FAMILY_FIELDS, f"family '{name}'")
    vendor = item.get("vendor")
    if vendor not in VENDORS:
        raise DeclarationError(f"family '{name}' needs 'vendor' (one of {', '.join(VENDORS)}), got {vendor!r}",
                               raw.loc("vendor"), "add e.g. 'vendor: nvidia'")
    if "queue" in item and "queues" in item:
        raise DeclarationError(f"family '{name}' has both 'queue' and 'queues'", where, "keep one")
    if "queue" in dict(item.get("agents", ())) and ("queue" in item or "queues" in item):
        field = "queue" if "queue" in item else "queues"
        raise DeclarationError(f"family '{name}' names a queue in 'agents' and in '{field}'",
                               raw.loc("agents"), "keep one: the queue of a family chosen by tags goes in 'agents'")
    queues: list[tuple[int, str]] = []
    if "queue" in item:
        queues = [(0 if vendor == "cpu" else 1, item["queue"])]
    elif "queues" in item:
        table = require_mapping(item["queues"], raw.loc("queues"), f"'queues' of family '{name}'")
        for count, queue in table.items():
            qwhere = table.loc(count)
            if isinstance(count, str) and count.isdigit():
                count = int(count)
            if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                raise DeclarationError(f"queue GPU count must be a whole number >= 0, got {count!r}", qwhere,
                                       "write e.g. '2: my-queue-2gpu'")
            if vendor == "cpu" and count != 0:
                raise DeclarationError(f"CPU family '{name}' cannot have a queue for {count} GPUs", qwhere,
                                       "use 0 as the count, or another vendor")
            queues.append((count, string(queue, qwhere)))
    # Neither: the family's machines are chosen by its agent tags alone (a queue among them, or the agents'
    # default queue), with as many GPUs as a step asks for.
    template_raw = item.get("template", "plain")
    if isinstance(template_raw, str):
        template = templates.get(template_raw)
        if template is None:
            raise DeclarationError(f"family '{name}' uses unknown template '{template_raw}'", raw.loc("template"),
                                   "known templates: " + ", ".join(sorted(templates)))
    else:
        template = _template(name, template_raw, raw.loc("template"))
    native = templates.get(item["native"]) if "native" in item else None
    if "native" in item and native is None:
        raise DeclarationError(f"family '{name}' uses unknown template '{item['native']}'", raw.loc("native"),
                               "known templates: " + ", ".join(sorted(templates)))
    return Family(
        name=name,
        vendor=vendor,
        queues=tuple(sorted(queues)),
        template=template,
        arch=item.get("arch"),
        agents=item.get("agents", ()),
        location=where,
        native=native,
    )


def _template(name: str, raw: Any, where: Location) -> Template:
    raw = require_mapping(raw, where, f"template '{name}'")
    item = check_fields(raw, TEMPLATE_FIELDS, f"template '{name}'")
    kind = item.get("kind", "plain")
    if kind not in TEMPLATE_KINDS:
        raise DeclarationError(f"template '{name}' has unknown kind {kind!r}", raw.loc("kind"),
                               f"use one of {', '.join(TEMPLATE_KINDS)}")
    pod_spec = item.get("pod_spec", item.get("podSpec"))
    if kind == "kubernetes" and not isinstance(pod_spec, dict):
        raise DeclarationError(f"kubernetes template '{name}' needs a 'pod_spec' mapping", where,
                               "add 'pod_spec: {containers: [{image: ...}]}'")
    if kind == "docker" and not item.get("image"):
        raise DeclarationError(f"docker template '{name}' needs an 'image'", where, "add 'image: REPO:TAG'")
    options = item.get("options") or {}
    if not isinstance(options, dict):
        raise DeclarationError(f"'options' of template '{name}' must be a mapping", raw.loc("options"))
    wrap = item.get("wrap")
    if wrap is not None and "{commands}" not in wrap:
        raise DeclarationError(f"'wrap' of template '{name}' must contain {{commands}}", raw.loc("wrap"),
                               "write e.g. 'bash run-in-container.sh {commands}'")
    return Template(
        name=name,
        kind=kind,
        plugin=item.get("plugin") or DOCKER_PLUGIN,
        image=item.get("image"),
        gpus=item.get("gpus"),
        volumes=item.get("volumes", ()),
        environment=item.get("environment", ()),
        devices=item.get("devices", ()),
        options=tuple((str(k), plain(v)) for k, v in options.items()),
        pod_spec=plain(pod_spec),
        setup=setup_commands(item.get("setup"), raw.loc("setup")),
        wrap=wrap,
        file=item.get("file"),
        job=job_fields(item.get("job"), raw.loc("job"), name),
    )


__all__ = ["PRESET_FILE", "load_inventory", "load_inventory_file", "parse_inventory", "preset_inventory"]
