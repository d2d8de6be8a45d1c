"""A dialect's preset inventory with a repository's own over it (vLLM's preset and .buildkite/hardware.yaml). Pure.

The repository's templates and families replace or add those of the same name, its routes come first,
its `default`/`no_gpu` replace the preset's, its `build:` values are merged, its build variants replace
the preset's of the same name in place or follow them (other build keys replace). Every value keeps
where it was written.
"""

from __future__ import annotations

from typing import Any


def extended(preset: Any, own: Any) -> Any:
    """The parsed preset with the parsed repository inventory `own` over it."""
    merged = _merge(preset, own)
    for name in ("templates", "families"):
        if isinstance(own.get(name), dict):
            merged[name] = _merge(preset[name], own[name])
    if isinstance(own.get("routes"), list):
        merged["routes"] = _join(own["routes"], preset.get("routes") or [])
    build = own.get("build")
    if isinstance(build, dict):
        merged["build"] = _merge(preset["build"], build)
        if isinstance(build.get("values"), dict):
            merged["build"]["values"] = _merge(preset["build"]["values"], build["values"])
        if isinstance(build.get("variants"), list):
            merged["build"]["variants"] = _by_name(preset["build"]["variants"], build["variants"])
    return merged


def _by_name(base: Any, over: Any) -> Any:
    """Two yamlio lists of named items as one: an item of `over` replaces `base`'s of the same name
    where it stands (a variant keeps its place among the others), the others follow."""
    names = {item.get("name"): i for i, item in enumerate(over) if isinstance(item, dict)}
    items, marks, used = [], [], set()
    for i, item in enumerate(base):
        j = names.get(item.get("name")) if isinstance(item, dict) else None
        items.append(base[i] if j is None else over[j])
        marks.append(base.item_marks[i] if j is None else over.item_marks[j])
        used.add(j)
    for j, item in enumerate(over):
        if j not in used:
            items.append(item)
            marks.append(over.item_marks[j])
    out = type(over)(items)
    out.file, out.mark, out.item_marks = over.file, over.mark, marks
    return out


def _merge(base: Any, over: Any) -> Any:
    """Two yamlio mappings as one (`over` wins), keeping where each key was written."""
    out = type(over)()
    out.file, out.mark, out.key_marks = over.file, over.mark, {**base.key_marks, **over.key_marks}
    out.update(base)
    out.update(over)
    return out


def _join(first: Any, then: Any) -> Any:
    out = type(first)([*first, *then])
    out.file, out.mark, out.item_marks = first.file, first.mark, [*first.item_marks, *getattr(then, "item_marks", [])]
    return out
