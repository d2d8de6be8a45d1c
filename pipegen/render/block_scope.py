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

from collections.abc import Sequence

from pipegen.render.buildkite_steps import BlockStep, DeclaredStep, Entry, GroupStep

CONDITIONS = ("if", "branches")  # a wait or block that may be left out of the build
NOTE_KEYS = 10  # block keys a note names, and notes told one by one


def hold_own_steps_only(entries: list[Entry]) -> list[str]:
    """Add depends_on to the page's steps in place; notes on the declared waits and blocks that hold back
    the steps after them until blocked steps before them are unblocked (the wait as written)."""
    notes = _one_list(entries)
    for entry in entries:
        if isinstance(entry, GroupStep):
            notes += _one_list(entry.steps)
    return notes


def _one_list(items: Sequence[Entry]) -> list[str]:
    """One pass (a wait's note needs to know whether a step follows it: `follows`, computed once, backwards)."""
    declared: list[DeclaredStep] = []  # the declared waits and blocks the next item follows
    gated = False  # a block step of pipegen's since the last declared wait or block
    held: list[str] = []  # pipegen's block steps so far (a group's too): a declared wait waits for them
    notes: list[str] = []
    unnoted = 0  # waits past the first NOTE_KEYS noted: counted, not each told
    follows = [False] * len(items)  # an item after this one that a wait holds back (not an input or a gate)
    for index in range(len(items) - 2, -1, -1):
        follows[index] = follows[index + 1] or _kind(items[index + 1]) not in ("input", "gate")
    for index, item in enumerate(items):
        kind = _kind(item)
        if kind == "input":  # Buildkite: an input step depends on nothing and holds back nothing
            continue
        if isinstance(item, DeclaredStep) and kind in ("wait", "block"):  # as written: it waits for all before it
            if held and item.depends_on is None and follows[index]:
                unnoted += len(notes) >= NOTE_KEYS
                if len(notes) < NOTE_KEYS:
                    notes.append(f"The {kind} step at {item.step.location} waits for every step before it, "
                                 f"blocked ones included ({_listed(held)}): the steps after it start once those "
                                 "are unblocked and pass.")
            # a conditional one may be left out: then what follows waits for the one before it
            if any(c in item.fields for c in CONDITIONS):
                declared.append(item)  # each depends_on below is a new list: none shares this one
            else:
                declared = [item]
            gated = False
            continue
        if gated and item.depends_on is None:  # Buildkite reads no implicit dependency beside a depends_on
            item.depends_on = [d.name_key() for d in declared]
            if isinstance(item, GroupStep):
                item.added_depends = True
        gated = gated or kind == "gate"
        held += [i.key for i in (item, *_steps(item)) if isinstance(i, BlockStep)]
    if unnoted:
        notes.append(f"{unnoted} more declared wait or block steps wait for blocked steps before them too.")
    return notes


def _listed(keys: Sequence[str]) -> str:
    """The first NOTE_KEYS keys, and how many more: a note stays short with thousands of blocks."""
    more = f" and {len(keys) - NOTE_KEYS} more" if len(keys) > NOTE_KEYS else ""
    return ", ".join(keys[:NOTE_KEYS]) + more


def _kind(item: Entry) -> str:
    if isinstance(item, GroupStep):
        return "group"
    if isinstance(item, BlockStep):
        return "gate"
    return item.kind if isinstance(item, DeclaredStep) else "command"


def _steps(item: Entry) -> Sequence[Entry]:
    return item.steps if isinstance(item, GroupStep) else ()
