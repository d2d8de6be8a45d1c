"""The build's gate step (hardware/build_gate.py) on the page (page.py). Pure.

The gate's group goes first on the page. Every command job that depends on a step whose key
matches the gate's glob, and whose own key does not, waits for the gate too: the gate runs beside
the image builds, the tests wait for both. Block steps are left alone (a person may unblock early).
"""

from __future__ import annotations

import fnmatch

from pipegen.hardware.build_gate import Gate
from pipegen.render.buildkite_steps import CommandStep, Entry, GroupStep

GATE_JOBS = 2  # its group and its command step, as Buildkite counts jobs


def add_gate(entries: list[Entry], gate: Gate, priority: int | None) -> None:
    """`gate`'s texts are the inventory's, in Buildkite's syntax already: written as they are."""
    for entry in entries:
        for item in entry.steps if isinstance(entry, GroupStep) else [entry]:
            if not isinstance(item, CommandStep) or item.depends_on is None \
                    or fnmatch.fnmatchcase(item.key, gate.gates):
                continue
            depends = [d if isinstance(d, str) else d["step"] for d in item.depends_on]
            if any(fnmatch.fnmatchcase(d, gate.gates) for d in depends) and gate.key not in depends:
                item.depends_on = [*item.depends_on, gate.key]
    entries.insert(0, GroupStep(gate.group, [_gate_step(gate, priority)]))


def _gate_step(gate: Gate, priority: int | None) -> CommandStep:
    """The gate's command step: no container, setup or retry; the command as it is written."""
    return CommandStep(label=gate.label, key=gate.key, depends_on=None, agents={"queue": gate.queue},
                       commands=[gate.command], env={}, soft_fail=False,
                       fields={} if priority is None else {"priority": priority})
