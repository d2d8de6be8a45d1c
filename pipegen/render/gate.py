"""The build's gate step (hardware/build_gate.py) in the plan's items. Pure.

The gate's group goes first on the page. Every command job that depends on a step whose key
matches the gate's glob, and whose own key does not, waits for the gate too: the gate runs beside
the image builds, the tests wait for both. Block steps are left alone (a person may unblock early).
"""

from __future__ import annotations

import fnmatch
from typing import Any

from pipegen.hardware.build_gate import Gate

GATE_JOBS = 2  # its group and its command step, as Buildkite counts jobs


def add_gate(entries: list[dict[str, Any]], gate: Gate, priority: int | None) -> None:
    """`gate`'s texts are the inventory's, in Buildkite's syntax already: written as they are."""
    for entry in entries:
        for item in entry["steps"]:
            if item["type"] != "command" or fnmatch.fnmatchcase(item["key"], gate.gates):
                continue
            depends = [d if isinstance(d, str) else d["step"] for d in item["depends_on"]]
            if any(fnmatch.fnmatchcase(d, gate.gates) for d in depends) and gate.key not in depends:
                item["depends_on"] = [*item["depends_on"], gate.key]
    entries.insert(0, {"group": gate.group, "steps": [_item(gate, priority)]})


def _item(gate: Gate, priority: int | None) -> dict[str, Any]:
    """The gate's command step: no container, setup or retry; the command as it is written."""
    return {"type": "command", "label": gate.label, "key": gate.key, "depends_on": [],
            "agents": {"queue": gate.queue}, "commands": [gate.command], "env": {}, "timeout_in_minutes": None,
            "soft_fail": False, "retry": None, "parallelism": None, "concurrency": None,
            "concurrency_group": None, "skip": None, "fields": {} if priority is None else {"priority": priority},
            "plugin": None, "plugins": [], "pod_spec": None, "job": None, "step": None}
