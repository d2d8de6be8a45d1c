"""vLLM's key rule for the keys a build names (--only, $VLLM_CI_ONLY_STEP_KEYS, a label's): the vLLM
dialect's check_keys (dialects/interface.py).

vLLM's generator knows a step by its declared `key:` only: a key derived from a label, or an AMD
mirror's (the generator renders no mirror under explicit keys), is an unknown key, and so is a
depends_on target of a named step that has no declared key.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipegen.errors import UsageError
from pipegen.model import Declarations, Step


def refuse_undeclared(decl: Declarations, keys: Sequence[str]) -> None:
    declared = {s.key: s for s in decl.steps if not s.derived_key}
    by_key = decl.by_key()
    unknown = sorted(set(keys) - set(declared))
    if unknown:
        fixes = [_undeclared_fix(by_key.get(k), k) for k in unknown]
        raise UsageError(f"Unknown CI step key(s): {', '.join(unknown)} (vLLM's generator refuses them too)",
                         fix="; ".join(fixes))
    pending, seen = list(keys), set(keys)
    while pending:
        step = declared[pending.pop()]
        for dep in step.depends_on:
            if dep not in declared:
                raise UsageError(f"CI step {step.key} depends on unknown step {dep} (vLLM's generator refuses it too)",
                                 step.location, _undeclared_fix(by_key.get(dep), dep))
            if dep not in seen:
                seen.add(dep)
                pending.append(dep)


def _undeclared_fix(step: Step | None, key: str) -> str:
    if step is None:
        return f"'{key}' names no step: list keys with 'pipegen select --format json'"
    if step.mirror is not None:
        return f"'{key}' is an AMD mirror, which only runs by the change: name '{step.origin}' or unset the keys"
    return f"give the step '{step.label}' ({step.location}) 'key: {key}'"
