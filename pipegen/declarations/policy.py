"""The config's coverage policy (pipegen's own format): what a changed file that no entry matches does.

Kept apart from the layouts' loaders: every layout's settings take the same fields, the vLLM preset its
own values (presets.py)."""

from __future__ import annotations

from typing import Any

from pipegen.declarations.fields import Checker, choice, entry_list

POLICY_FIELDS: dict[str, Checker] = {
    "uncovered": choice("warn", "run_all", "fail"),
    "uncovered_ignore": entry_list,
}


def policy_settings(fields: dict[str, Any]) -> dict[str, Any]:
    """Settings' keyword arguments from the checked config fields."""
    return {name: fields[name] for name in POLICY_FIELDS if name in fields}
