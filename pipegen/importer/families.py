"""Agents -> hardware families: one family per distinct agent queue, named after it.

pipegen's inventory owns queues (a step's `agents` may not name one); the step keeps its other tags
as `agents`. A pipeline whose steps name no queue gets no inventory: each job then goes where
Buildkite sends a job without one, as before.
"""

from __future__ import annotations

import re
from typing import Any


def slug(text: str, limit: int = 60) -> str:
    """A readable name made of [a-z0-9-]: ':pipeline: Upload (x86)' -> 'pipeline-upload-x86'."""
    words = re.sub(r":[a-z0-9_+-]+:", " ", text.lower())  # emoji codes say nothing
    out = re.sub(r"[^a-z0-9]+", "-", words).strip("-")[:limit].strip("-")
    return out or "step"


def tags(value: Any) -> dict[str, Any]:
    """Agent tags as a mapping (Buildkite also takes a list of 'k=v')."""
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, list):
        return dict(str(t).split("=", 1) if "=" in str(t) else (str(t), "true") for t in value)
    return {}


class Families:
    """The families an import makes, by queue, and each step's target and remaining tags."""

    def __init__(self) -> None:
        self.by_queue: dict[str, str] = {}
        self.unqueued = 0

    def place(self, agents: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
        """(family name or None for no queue, the tags left on the step)."""
        rest = {k: v for k, v in agents.items() if k != "queue"}
        queue = agents.get("queue")
        if queue is None:
            self.unqueued += 1
            return None, rest
        queue = str(queue)
        if queue not in self.by_queue:
            name = slug(queue, 40)
            while name in self.by_queue.values():
                name += "-2"
            self.by_queue[queue] = name
        return self.by_queue[queue], rest

    def inventory(self) -> dict[str, Any] | None:
        """hardware.yaml's data, or None when no step names a queue."""
        if not self.by_queue:
            return None
        families = {name: {"vendor": "cpu", "queue": queue, "template": "plain"}
                    for queue, name in self.by_queue.items()}
        data: dict[str, Any] = {"families": families, "templates": {"plain": {"kind": "plain"}}}
        if self.unqueued:  # pipegen's own format gives every job a family's queue
            data["default"] = next(iter(families))
        return data

    def default(self) -> str | None:
        return next(iter(self.by_queue.values())) if self.by_queue and self.unqueued else None
