"""Agents -> hardware families: one family per distinct set of agent tags (queue and tags), named readably.

A family chosen by tags gives its jobs exactly those tags, the queue only where one was written, so a
step keeps the agents it had. A step with no agents of its own gets none (the default family has no
tags). The vendor is read off the tags and queue, for `pipegen run` (cuda -> nvidia, rocm -> amd,
oneapi -> intel, metal -> apple, another `gpu` -> other; the rest cpu).
"""

from __future__ import annotations

import re
from typing import Any

VENDORS = (("cuda", "nvidia"), ("nvidia", "nvidia"), ("rocm", "amd"), ("amdgpu", "amd"), ("oneapi", "intel"),
           ("intel", "intel"), ("metal", "apple"), ("gpu", "other"))
DEFAULT = "default"


def slug(text: str, limit: int = 60) -> str:
    """A readable name made of [a-z0-9-]: ':pipeline: Upload (x86)' -> 'pipeline-upload-x86'."""
    words = re.sub(r":[a-z0-9_+-]+:", " ", text.lower())  # emoji codes say nothing
    out = re.sub(r"[^a-z0-9]+", "-", words).strip("-")[:limit].strip("-")
    return out or "step"


def tags(value: object) -> dict[str, Any]:
    """Agent tags (or env) as a mapping (Buildkite also takes a list of 'k=v'; a bare 'k' is 'k=true')."""
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, list):
        return dict(_tag(str(t)) for t in value)
    return {}


def _tag(item: str) -> tuple[str, str]:
    name, equals, value = item.partition("=")
    return (name, value) if equals else (item, "true")


def _name(agents: dict[str, Any]) -> str:
    parts = [str(agents["queue"])] if "queue" in agents else []
    parts += [k if str(v) in ("*", "true") else f"{k}-{v}" for k, v in agents.items() if k != "queue"]
    return slug(" ".join(parts), 40)


def _vendor(agents: dict[str, Any]) -> str:
    text = " ".join(f"{k} {v}" for k, v in agents.items()).lower()
    return next((vendor for word, vendor in VENDORS if word in text), "cpu")


class Families:
    """The families an import makes, by agent tags, and each step's."""

    def __init__(self) -> None:
        self.by_tags: dict[tuple[tuple[str, str], ...], tuple[str, dict[str, Any]]] = {}
        self.untagged = 0

    def place(self, agents: dict[str, Any]) -> str | None:
        """The family of a step with these agents (None: no agents, the default family)."""
        if not agents:
            self.untagged += 1
            return None
        identity = tuple(sorted((str(k), str(v)) for k, v in agents.items()))
        if identity not in self.by_tags:
            name, taken = _name(agents), {n for n, _ in self.by_tags.values()} | {DEFAULT}
            base, number = name, 2
            while name in taken:
                name, number = f"{base}-{number}", number + 1
            self.by_tags[identity] = (name, dict(agents))
        return self.by_tags[identity][0]

    def inventory(self) -> dict[str, Any] | None:
        """hardware.yaml's data, or None when no step names agents."""
        if not self.by_tags:
            return None
        families = {name: {"vendor": _vendor(agents), "agents": agents, "template": "plain"}
                    for name, agents in self.by_tags.values()}
        data: dict[str, Any] = {"families": families, "templates": {"plain": {"kind": "plain"}}}
        if self.untagged:
            data["families"] = {DEFAULT: {"vendor": "cpu", "template": "plain"}, **families}
            data["default"] = DEFAULT
        return data

    def described(self) -> dict[str, str]:
        return {name: ", ".join(f"{k}: {v}" for k, v in agents.items()) for name, agents in self.by_tags.values()}
