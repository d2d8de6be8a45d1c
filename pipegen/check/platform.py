"""Checks against the platform: hardware queues, AMD twins, Buildkite's limits. Pure.

- Every step must land on a queue for its GPU count (hardware.place).
- A vLLM step's `mirror.amd` twin and the step of the same label in
  `test-amd.yaml` describe one test twice; when their dependencies or
  commands differ, one of them is stale (the "mirror drift" pain).
- The worst case (every step rendered, every one blocked first) must fit
  one `pipeline upload` (the agent refuses more than 500 jobs: groups,
  blocks and each parallel command job count), and every key must be one
  render writes as declared (buildkite/keys.py's valid_key states Buildkite's rules).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pipegen.buildkite.keys import BLOCK_PREFIX, KEY_BAD, KEY_MAX, UUID_KEY, valid_key
from pipegen.buildkite.limits import JOB_LIMIT as UPLOAD_LIMIT
from pipegen.buildkite.limits import command_jobs
from pipegen.check.coverage import always_runs
from pipegen.check.findings import Finding
from pipegen.errors import DeclarationError
from pipegen.model import Declarations, Location, Step


def hardware_findings(decl: Declarations, place: Callable[[Step], Any]) -> list[Finding]:
    """no-queue: steps that no family of the inventory can run."""
    out = []
    for step in rendered(decl):
        try:
            place(step)
        except DeclarationError as exc:
            out.append(Finding("no-queue", "error", exc.location or step.location, exc.message, exc.fix, step.key))
    return out


def rendered(decl: Declarations) -> list[Step]:
    """The steps a pipeline can contain (not those their dialect leaves out: legacy AMD, not mirrored to the
    current tag)."""
    return [s for s in decl.steps if s.dialect_skip is None]


def drift_findings(decl: Declarations, amd: Declarations) -> list[Finding]:
    """mirror-drift: each `mirror.amd` step against the test-amd.yaml steps of its label."""
    by_key = decl.by_key()
    twins: dict[str, list[Step]] = {}
    for step in amd.steps:
        twins.setdefault(step.label, []).append(step)
    own_files = set(decl.files) | set(amd.files)
    out = []
    for mirror in (s for s in decl.steps if s.mirror == "amd"):
        origin = by_key.get(mirror.origin or "")
        for twin in twins.get(origin.label if origin else mirror.label, []):
            diff = differences(mirror, twin, own_files)
            if diff:
                out.append(Finding(
                    "mirror-drift", "warning", mirror.location,
                    f"AMD twin '{twin.label}' differs between {mirror.location} ('{mirror.key}') and "
                    f"{twin.location} ({twin.device}): {'; '.join(diff)}",
                    "declare the AMD variant once (mirror.amd) and delete the other, or make them agree",
                    mirror.key))
    return out


def differences(mirror: Step, twin: Step, own_files: set[str]) -> list[str]:
    out = []
    ours = {d.rstrip("/") for d in mirror.dependencies if d not in own_files}
    theirs = {d.rstrip("/") for d in twin.dependencies if d not in own_files}
    if ours != theirs:
        parts = []
        if ours - theirs:
            parts.append(f"only mirror.amd: {', '.join(sorted(ours - theirs))}")
        if theirs - ours:
            parts.append(f"only test-amd.yaml: {', '.join(sorted(theirs - ours))}")
        out.append("dependencies differ (" + "; ".join(parts) + ")")
    if mirror.commands != twin.commands:
        out.append(f"commands differ ({_first_difference(mirror.commands, twin.commands)})")
    return out


def _first_difference(ours: Sequence[str], theirs: Sequence[str]) -> str:
    only_ours = [c for c in ours if c not in theirs]
    only_theirs = [c for c in theirs if c not in ours]
    more = f" and {len(only_ours) - 1} more" if len(only_ours) > 1 else ""
    parts = [f"only mirror.amd: '{_short(only_ours[0])}'{more}"] if only_ours else []
    if only_theirs:
        parts.append(f"only test-amd.yaml: '{_short(only_theirs[0])}'"
                     + (f" and {len(only_theirs) - 1} more" if len(only_theirs) > 1 else ""))
    return "; ".join(parts) or "same commands in another order"


def _short(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def limit_findings(decl: Declarations, config: str) -> list[Finding]:
    """upload-limit for the worst case, invalid-key for every key and block key."""
    steps = rendered(decl)
    blocks = {s.key for s in steps if decl.settings.unselected == "block" and not always_runs(s, decl)}
    groups = {s.group for s in steps if s.group}
    commands = sum(command_jobs(s.parallelism, s.field("matrix")) for s in steps)  # each parallel and matrix job
    total = commands + len(blocks) + len(groups)
    out = []
    if total > UPLOAD_LIMIT:
        out.append(Finding(
            "upload-limit", "error", Location(config),
            f"the worst case renders {total} jobs ({commands} command jobs, {len(blocks)} blocks, {len(groups)} "
            f"groups), more than the {UPLOAD_LIMIT} one 'buildkite-agent pipeline upload' accepts",
            "set 'unselected: skip' (no block steps), lower 'parallelism', or split the steps over several uploads"))
    for step in steps:
        key = step.key
        problem = key_problem(key)
        if not problem and key in blocks:
            key = BLOCK_PREFIX + key
            problem = key_problem(key)
        if problem:
            out.append(Finding("invalid-key", "error", step.location, f"key '{key}' {problem}",
                               f"render writes '{valid_key(key)}' instead; set an explicit 'key:' of letters, digits "
                               f"and - _ : (at most {KEY_MAX - len(BLOCK_PREFIX)} characters, so that its block key "
                               "fits too)", step.key))
    return out


def key_problem(key: str) -> str:
    """Why render would not write `key` as declared (buildkite/keys.py's valid_key rewrites it); "" when it would."""
    if valid_key(key) == key:
        return ""
    if len(key) > KEY_MAX:
        return f"is {len(key)} characters long (Buildkite's limit is {KEY_MAX})"
    bad = sorted({c for c in key if KEY_BAD.match(c)})
    if bad:
        return f"contains characters other than letters, digits and - _ : ({' '.join(repr(c) for c in bad)})"
    if UUID_KEY.match(key):
        return "looks like a UUID, which Buildkite reserves for step ids"
    return "starts or ends with '-'" if key else "is empty"
