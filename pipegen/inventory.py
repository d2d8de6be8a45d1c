"""Reading a hardware inventory: the file, the config's inline mapping, or the vLLM preset.

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
    routes:                 # steps without a device, by label/key glob (optional)
      - {label: ":docker:*", family: cpu}

Values of templates (images, volumes, podSpecs) are written in Buildkite's
syntax: a `$VAR` there is interpolated by `buildkite-agent pipeline upload`.
"""

from __future__ import annotations

import functools
import os
from typing import Any, Mapping, Sequence

from pipegen.errors import DeclarationError
from pipegen.hardware import DEFAULT_FILE, PLAIN, TEMPLATE_KINDS, VENDORS, Family, Inventory, Route, Template
from pipegen.model import Declarations, Location

PRESET_FILE = "vllm-hardware.yaml"  # in pipegen/data


def load_inventory(decl: Declarations) -> Inventory:
    """The inventory of a repository: its config's, its file, or the vLLM preset."""
    settings = decl.settings
    if settings.hardware_inline is not None:
        where = getattr(settings.hardware_inline, "file", None) or "the pipegen config"
        return parse_inventory(settings.hardware_inline, where)
    if settings.hardware_file:
        return load_inventory_file(os.path.join(decl.root, settings.hardware_file), settings.hardware_file)
    if settings.preset == "vllm":  # vLLM's current and legacy files
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


@functools.cache
def vllm_inventory() -> Inventory:
    """vLLM's queue table (ci-infra constants.py / get_agent_queue), shipped as data."""
    import yaml

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", PRESET_FILE)
    with open(path, encoding="utf-8") as handle:  # beside this file, like render.builtin_templates()
        text = handle.read()
    data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506 - shipped file
    return parse_inventory(data, "preset:vllm")


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
    for field_name in ("default", "no_gpu"):
        name = fields.get(field_name)
        if name is not None and name not in seen:
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
        if route["family"] not in seen:
            raise DeclarationError(f"route names unknown family '{route['family']}'", where,
                                   "known families: " + ", ".join(sorted(seen)))
        routes.append(Route(family=route["family"], label=route.get("label"), key=route.get("key")))
    return Inventory(families=tuple(families), default=fields.get("default"), no_gpu=fields.get("no_gpu"),
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


__all__ = ["DEFAULT_FILE", "PRESET_FILE", "load_inventory", "load_inventory_file", "parse_inventory", "vllm_inventory"]
