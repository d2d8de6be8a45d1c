"""pipegen's block steps hold back their own step only (pure).

Buildkite gives a step without `depends_on` an implicit dependency on the last wait or block step
before it in its list (the pipeline's or its group's; a group placed after one waits for it too), and
none to a step with `depends_on`, even `[]` (docs: pipelines/configure/depends-on, "Implicit
dependencies with wait and block" and the note on `depends_on` and `block`/`wait`). The block step
render adds for an unselected step would so hold back every step after it until someone unblocks it.
Each item after such a block that has no `depends_on` gets, written out, the dependency it has
without pipegen's blocks: the declared wait or block steps it follows (named by a key, given where
none was declared), or `[]`. Declared waits and blocks are left as written.
"""

from __future__ import annotations

from typing import Any

CONDITIONS = ("if", "branches")  # a wait or block that may be left out of the build


def hold_own_steps_only(entries: list[dict[str, Any]]) -> list[str]:
    """Rewrite the plan's entries (pipeline.j2's) in place; notes on the declared waits and blocks that hold
    back the steps after them until blocked steps before them are unblocked (the wait as written)."""
    notes = _one_list([entry if entry["group"] is not None else entry["steps"][0] for entry in entries])
    for entry in entries:
        if entry["group"] is not None:
            notes += _one_list(entry["steps"])
    return notes


def _one_list(items: list[dict[str, Any]]) -> list[str]:
    declared: list[dict[str, Any]] = []  # the declared waits and blocks the next item follows
    gated = False  # a block step of pipegen's since the last declared wait or block
    held: list[str] = []  # pipegen's block steps so far (a group's too): a declared wait waits for them
    notes = []
    for index, item in enumerate(items):
        kind = _kind(item)
        if kind == "input":  # Buildkite: an input step depends on nothing and holds back nothing
            continue
        if kind in ("wait", "block"):  # declared: as written (it waits for every step before it)
            if held and not _explicit(item) and any(_kind(i) not in ("input", "gate") for i in items[index + 1:]):
                notes.append(f"The {kind} step at {item['step'].location} waits for every step before it, blocked "
                             f"ones included ({', '.join(held)}): the steps after it start once those are unblocked "
                             "and pass.")
            # a conditional one may be left out: then what follows waits for the one before it
            declared = [*declared, item] if any(c in item["fields"] for c in CONDITIONS) else [item]
            gated = False
            continue
        if gated and not _explicit(item):
            _set_depends(item, [_named(d) for d in declared])
        gated = gated or kind == "gate"
        held += [item["key"]] if kind == "gate" else [i["key"] for i in item.get("steps", ()) if i["type"] == "block"]
    return notes


def _kind(item: dict[str, Any]) -> str:
    if "group" in item:
        return "group"
    if item["type"] == "block":
        return "gate"
    return item["step"].kind if item["type"] == "step" else "command"


def _explicit(item: dict[str, Any]) -> bool:
    """Whether Buildkite reads a depends_on on the item (which takes the place of the implicit ones)."""
    if "group" in item or item["type"] == "step":
        return "depends_on" in (item.get("fields") or {})
    return bool(item["depends_on"]) or bool(item.get("no_implicit"))


def _set_depends(item: dict[str, Any], keys: list[str]) -> None:
    if "group" in item or item["type"] == "step":
        item.setdefault("fields", {})["depends_on"] = keys
    elif keys:
        item["depends_on"] = keys
    else:
        item["no_implicit"] = True  # written `depends_on: []`


def _named(step_item: dict[str, Any]) -> str:
    """The key of a declared wait or block, written out where it was not (to name it in a depends_on)."""
    fields = step_item["fields"]
    if not any(name in fields for name in ("key", "identifier", "id")):
        fields["key"] = step_item["key"]
    return str(step_item["key"])
