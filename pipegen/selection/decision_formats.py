"""Selections as text, JSON or Markdown (the output edge of `select` and `why`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipegen.json_output import dumps
from pipegen.markdown import cell
from pipegen.model import Decision, Selection, Step
from pipegen.selection.matching import explain
from pipegen.selection.waited_for import NEEDED, needed_how
from pipegen.shown import shown
from pipegen.states import ACTIONS

HEADINGS = {"run": "Run", "block": "Blocked (wait to be unblocked)", "skip": "Skipped"}


def selection_json(sel: Selection) -> dict[str, Any]:
    changes = sel.changes
    return {
        "base": changes.base,
        "merge_base": changes.merge_base,
        "changed_files": list(changes.files),
        "run_all": sel.run_all,
        "run_all_reason": sel.run_all_reason,
        "skip_all": sel.skip_all,
        "skip_reason": sel.skip_reason,
        "warnings": list(sel.warnings),
        "uncovered": list(sel.uncovered),
        "steps": [
            {
                "key": d.step.key,
                "label": d.step.label,
                "group": d.step.group,
                "action": d.action,
                "reasons": [r.to_json() for r in d.reasons],
            }
            for d in sel.decisions
        ],
    }


def summary(sel: Selection) -> str:
    counts = sel.counts()
    parts = [f"{counts[a]} {a}" for a in ACTIONS]
    needed = needed_count(sel)
    if needed:
        parts[0] += f" ({needed} of them needed by a step that runs: {needed_how(sel.decisions)})"
    return f"{', '.join(parts)} of {len(sel.decisions)} steps; {_changes_text(sel)}"


def needed_count(sel: Selection) -> int:
    """Steps that run only because a step that runs waits for them (render runs them too)."""
    return sum(1 for d in sel.decisions if d.reasons[0].rule == NEEDED)


def _changes_text(sel: Selection) -> str:
    text = f"{len(sel.changes.files)} changed file(s)"
    if sel.changes.base:
        text += f" against {sel.changes.base}"
        if sel.changes.merge_base:
            text += f" (merge base {sel.changes.merge_base[:12]})"
    return text


def banner(sel: Selection) -> list[str]:
    lines = []
    if not sel.changes.trusted:
        lines.append(f"WARNING: {sel.run_all_reason}")
    elif sel.run_all:
        overridden = run_all_overridden(sel)
        lines.append(f"Not running everything, though {sel.run_all_reason}: {overridden}" if overridden
                     else f"Running everything: {sel.run_all_reason}")
    if sel.skip_all:
        lines.append(f"Skipping everything: {sel.skip_reason}")
    return lines


def run_all_overridden(sel: Selection) -> str:
    """What keeps a run-all change from running everything ("" when nothing does): explicit keys and NOAUTO
    come before run-all, so the change would run everything and this build does not; a run_all_exempt step
    runs only when its own entries match."""
    first = {d.reasons[0].rule for d in sel.decisions}
    exempt = [d.step.key for d in sel.decisions if d.reasons[0].rule == "run-all-exempt"]
    return ("the explicit keys decide first" if "only" in first else
            "NOAUTO=1 blocks every step" if "noauto" in first else
            f"run_all_exempt keeps {', '.join(exempt)} to its own entries" if exempt else "")


def selection_text(sel: Selection) -> str:
    lines = [*banner(sel), summary(sel)]
    for action in ACTIONS:
        chosen = [d for d in sel.decisions if d.action == action]
        if not chosen:
            continue
        lines += ["", f"{HEADINGS[action]} ({len(chosen)}):"]
        width = min(60, max(len(d.step.key) for d in chosen))
        for d in chosen:
            lines.append(f"  {d.step.key:<{width}}  {reason_text(d)}")
    lines += [f"warning: {w}" for w in sel.warnings]
    return "\n".join(lines) + "\n"


def reason_text(d: Decision) -> str:
    """The deciding reason, and the note that Buildkite's own `if`/`branches` may still skip the step."""
    notes = [r.text for r in d.reasons[1:] if r.rule == "buildkite-condition"]
    return "; ".join([d.reasons[0].text, *notes])



def warnings_markdown(warnings: Sequence[str]) -> list[str]:
    """The folded Warnings block that ends a Markdown report; nothing when there are none."""
    if not warnings:
        return []
    return ["", "<details><summary>Warnings</summary>", ""] + [f"- {cell(w)}" for w in warnings] + ["", "</details>"]


def selection_markdown(sel: Selection) -> str:
    counts = sel.counts()
    notes = banner(sel)
    lines = ["### pipegen: test selection", ""]
    lines += [f"> {line}" for line in notes] + ([""] if notes else [])
    needed = needed_count(sel)
    lines += [f"**{counts['run']} run**{f' ({needed} needed by a step that runs)' if needed else ''}, "
              f"{counts['block']} blocked, {counts['skip']} skipped "
              f"of {len(sel.decisions)} steps; {_changes_text(sel)}.", ""]
    lines += ["| step | group | action | reason |", "| --- | --- | --- | --- |"]
    order = {a: i for i, a in enumerate(ACTIONS)}
    for d in sorted(sel.decisions, key=lambda d: order[d.action]):
        lines.append(f"| {cell(d.step.label)} (`{d.step.key}`) | {cell(d.step.group)} | {d.action} "
                     f"| {cell(reason_text(d))} |")
    lines += warnings_markdown(sel.warnings)
    return "\n".join(lines) + "\n"


def render_selection(sel: Selection, fmt: str) -> str:
    if fmt == "json":
        return dumps(selection_json(sel))
    if fmt == "markdown":
        return selection_markdown(sel)
    return selection_text(sel)


# Reasons a single changed path gives a step (the others do not depend on the change).
PATH_RULES = ("dependency", "derived", "pipegen-input")


def why_path(verdict: Selection) -> dict[str, Any]:
    """What a change of one path does, from `decide` itself (`verdict`), so `why` and `select` agree:
    run-all (and what overrides it) or docs-only for every step, else the steps it selects, the ones it
    matches that do not run, the ones it matches that run whatever changes, the ones it excludes."""
    path = verdict.changes.files[0]
    row: dict[str, Any] = {"path": path, "verdict": "steps", "reason": "", "selects": [], "needed": [], "blocked": [],
                           "regardless": [], "excluded": [], "warnings": list(verdict.warnings)}
    if verdict.skip_all or verdict.run_all:
        row["verdict"] = "docs-only" if verdict.skip_all else "run-all"
        row["reason"] = verdict.skip_reason or verdict.run_all_reason
        row["overridden"] = "" if verdict.skip_all else run_all_overridden(verdict)
        return row
    for decision in verdict.decisions:
        step, reason = decision.step, decision.reasons[0]
        if decision.action == "run" and (reason.rule in PATH_RULES or reason.rule.startswith("rule:")):
            row["selects"].append({"key": step.key, "rule": reason.rule, "entry": reason.entry, "text": reason.text})
            continue
        if reason.rule == NEEDED:  # what render runs with the steps it selects
            row["needed"].append({"key": step.key, "reason": reason.text})
            continue
        if reason.rule == "no-match" and not any(e.startswith("!") for e in step.dependencies):
            continue  # no entry matched it, and none was excluded
        hit, exclusion = explain(step.dependencies, path, step.dependency_kind)
        if hit and exclusion:
            row["excluded"].append({"key": step.key, "entry": hit, "excluded_by": "!" + exclusion})
        elif hit and decision.action == "run":  # always-run, nightly, explicit keys: not this path's doing
            row["regardless"].append({"key": step.key, "entry": hit, "reason": reason.text})
        elif hit:
            row["blocked"].append({"key": step.key, "entry": hit, "action": decision.action, "reason": reason.text})
    return row


def why_paths_text(rows: list[dict[str, Any]]) -> str:
    lines = []
    for row in rows:
        lines.append(f"{shown(row['path'])}:")
        if row["verdict"] == "docs-only":
            lines.append(f"  docs-only: every step is skipped ({row['reason']})")
            continue
        if row["verdict"] == "run-all":
            lines.append(f"  run-all: everything would run ({row['reason']}), but {row['overridden']}"
                         if row["overridden"] else f"  run-all: everything runs ({row['reason']})")
            continue
        if not any(row[name] for name in ("selects", "needed", "blocked", "regardless", "excluded", "warnings")):
            lines.append("  selects no step (no dependency entry matches it)")
        for hit in row["selects"]:
            how = f"entry '{hit['entry']}'" if hit["rule"] == "dependency" else hit["text"]
            lines.append(f"  selects {hit['key']}  ({how})")
        for hit in row["needed"]:
            lines.append(f"  runs {hit['key']} too: {hit['reason']}")
        for hit in row["blocked"]:
            lines.append(f"  matches {hit['key']} (entry '{hit['entry']}') but it does not run: {hit['action']}, "
                         f"{hit['reason']}")
        for hit in row["regardless"]:
            lines.append(f"  matches {hit['key']} (entry '{hit['entry']}'), which runs whatever changes: "
                         f"{hit['reason']}")
        for hit in row["excluded"]:
            lines.append(f"  not {hit['key']}: entry '{hit['entry']}' matches but '{hit['excluded_by']}' excludes it")
        lines += [f"  warning: {w}" for w in row["warnings"]]
    return "\n".join(lines) + "\n"


def why_step(step: Step, sel: Selection) -> dict[str, Any]:
    decision = next(d for d in sel.decisions if d.step.key == step.key)
    return {
        "key": step.key,
        "label": step.label,
        "declared_at": str(step.location),
        "action": decision.action,
        "reasons": [r.to_json() for r in decision.reasons],
        "dependencies": list(step.dependencies),
        "depends_on": list(step.depends_on),
    }


def why_step_text(info: dict[str, Any]) -> str:
    lines = [f"{info['key']} ({info['label']}), declared at {info['declared_at']}",
             f"  action: {info['action']}: {'; '.join(r['text'] for r in info['reasons'])}"]
    deps = info["dependencies"]
    lines.append("  source_file_dependencies: " + (", ".join(deps) if deps else "(none)"))
    if info["depends_on"]:
        lines.append("  depends_on: " + ", ".join(info["depends_on"]))
    return "\n".join(lines) + "\n"


def render_why(rows: Sequence[dict[str, Any]], steps: Sequence[Step], sel: Selection | None, fmt: str) -> str:
    """`pipegen why`: what each path does (`rows`: why_path of the decisions for a change of that path alone),
    then each step's decision (`sel` is needed only for steps)."""
    assert sel is not None or not steps, "a step's decision needs the selection"
    infos = [why_step(step, sel) for step in steps] if sel is not None else []
    if fmt == "json":
        out = {**({"paths": list(rows)} if rows else {}), **({"steps": infos} if steps else {})}
        return dumps(out)
    return (why_paths_text(list(rows)) if rows else "") + "".join(why_step_text(i) for i in infos)
