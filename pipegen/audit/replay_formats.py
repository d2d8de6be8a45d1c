"""`pipegen audit` as text, JSON or Markdown (for `buildkite-agent annotate`). Pure.

Losses come first and loudly: a step that ran on a commit before a declaration change
and would not after it is a test that stops running; gains only cost machine time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipegen.audit.replay import Audit, Change, Outcome
from pipegen.frozen import frozen
from pipegen.json_output import dumps
from pipegen.markdown import cell

SHOWN_KEYS = 6  # run keys listed per commit in text (JSON lists all)
SHOWN_COMMITS = 3  # commits listed per gain or loss in text and Markdown (JSON lists all)


@frozen
class AuditReport:
    audit: Audit  # the working tree's declarations
    range: str  # what was replayed, as asked ("--last 500", "A..B")
    before: Audit | None = None  # the declarations at --compare REF
    ref: str = ""
    changes: tuple[Change, ...] = ()
    notes: tuple[str, ...] = ()  # what the replay leaves out (replay.branch_notes)

    @property
    def losses(self) -> list[Change]:
        return [c for c in self.changes if c.lost]


def format_audit(report: AuditReport, fmt: str) -> str:
    if fmt == "json":
        return dumps(_json(report))
    return _markdown(report) if fmt == "markdown" else _text(report)


def _unit(audit: Audit) -> str:
    return "jobs" if audit.minutes is None else "machine-minutes"


def _share(part: float, whole: float, unit: str) -> str:
    return f"{part:,.0f} of {whole:,.0f} {unit}" + (f" ({100 * part / whole:.1f}%)" if whole else "")


def _why(outcome: Outcome) -> str:
    if outcome.docs_only:
        return outcome.docs_only  # "docs-only change: ..."
    return f"run-all: {outcome.run_all}" if outcome.run_all else ""


def _headline(report: AuditReport) -> list[str]:
    audit = report.audit
    ran, every = audit.totals()
    lines = [f"pipegen audit: {len(audit.outcomes)} first-parent commits ({report.range}), "
             f"{len(audit.steps)} steps, declarations of the working tree",
             f"the selection ran {_share(ran, every, _unit(audit))}; every step on every commit would run {every:,.0f}"]
    if report.before is not None:
        old_ran, old_every = report.before.totals()
        lines.append(f"with the declarations at {report.ref}: {_share(old_ran, old_every, _unit(audit))}")
    run_all = sum(1 for o in audit.outcomes if o.run_all)
    docs = sum(1 for o in audit.outcomes if o.docs_only)
    lines.append(f"run-all: {run_all} commit(s); docs-only: {docs} commit(s)")
    lines += report.notes
    missing = audit.without_duration()
    if missing:
        lines.append(f"no duration for {len(missing)} step(s), counted as 0 minutes: {', '.join(missing[:10])}"
                     + (" ..." if len(missing) > 10 else ""))
    return lines


def _commits(commits: Sequence[Any]) -> str:
    shown = "; ".join(f"{c.short} {c.subject[:60]}" for c in commits[:SHOWN_COMMITS])
    return shown + (f"; and {len(commits) - SHOWN_COMMITS} more" if len(commits) > SHOWN_COMMITS else "")


def _change_line(change: Change, report: AuditReport) -> str:
    where = {"before": f" (gone since {report.ref})", "after": f" (new since {report.ref})", "both": ""}[change.where]
    if change.lost:
        return f"LOSS: step '{change.key}'{where} would not run on {len(change.lost)} commit(s) it ran on: " \
               f"{_commits(change.lost)}"
    if change.gained:
        return f"gain: step '{change.key}'{where} would run on {len(change.gained)} more commit(s): " \
               f"{_commits(change.gained)}"
    return f"step '{change.key}'{where}: ran on no commit either way"


def _text(report: AuditReport) -> str:
    lines = _headline(report)
    if report.before is not None:
        losses = report.losses
        lines.append("")
        lines.append(f"!!! {len(losses)} step(s) LOSE commits: tests that ran before would not run now"
                     if losses else f"no step loses a commit against {report.ref}")
        lines += [_change_line(c, report) for c in report.changes]
    audit = report.audit
    lines += ["", f"{'commit':<12}  {'run':>4} {'wait':>4} {'skip':>4}  steps run / why"]
    for o in audit.outcomes:
        keys = sorted(o.run)
        shown = ", ".join(keys[:SHOWN_KEYS]) + (f" (+{len(keys) - SHOWN_KEYS})" if len(keys) > SHOWN_KEYS else "")
        why = _why(o)
        needed = f" ({len(o.needed)} of them needed by a step that runs: {o.needed_how})" if o.needed else ""
        lines.append(f"{o.commit.short:<12}  {len(o.run):>4} {len(o.waiting):>4} {len(o.skipped):>4}  "
                     + (why or shown + needed))
    never, optional = audit.never_run(), audit.never_run(optional=True)
    lines += ["", f"never run in these commits ({len(never)} step(s)): {', '.join(never) or 'none'}",
              *([f"optional, so never run without a click or nightly ({len(optional)} step(s)): {', '.join(optional)}"]
                if optional else []), "", f"{'step':<50} {'runs':>5}  {_unit(audit)} ran / every commit"]
    for key, n in audit.runs().items():
        lines.append(f"{key:<50} {n:>5}  {audit.cost(key) * n:,.0f} / {audit.cost(key) * len(audit.outcomes):,.0f}")
    return "\n".join(lines) + "\n"


def _markdown(report: AuditReport) -> str:
    head = _headline(report)
    lines = [f"### {head[0]}", "", *[f"- {line}" for line in head[1:]], ""]
    if report.before is not None:
        losses = report.losses
        lines.append(f":rotating_light: **{len(losses)} step(s) lose commits against `{report.ref}`**: tests that "
                     "ran before would not run now" if losses else f":white_check_mark: no step loses a commit "
                     f"against `{report.ref}`")
        if report.changes:
            lines += ["", "| | step | commits | e.g. |", "|---|---|---|---|"]
            for c in report.changes:
                sign, commits = (":x: lost", c.lost) if c.lost else ("gained", c.gained)
                lines.append(f"| {sign} | `{c.key}`{'' if c.where == 'both' else f' ({c.where} only)'} | "
                             f"{len(commits)} | {cell(_commits(commits))} |")
        lines.append("")
    never, optional = report.audit.never_run(), report.audit.never_run(optional=True)
    lines += [f"**Never run** in these commits: {', '.join(f'`{k}`' for k in never) or 'none'}", "",
              *([f"Optional, so never run without a click or nightly: {', '.join(f'`{k}`' for k in optional)}", ""]
                if optional else []),
              "<details><summary>Per commit</summary>", "", "| commit | run | wait | skip | why |",
              "|---|---|---|---|---|"]
    for o in report.audit.outcomes:
        lines.append(f"| `{o.commit.short}` {cell(o.commit.subject[:60])} | {len(o.run)} | {len(o.waiting)} | "
                     f"{len(o.skipped)} | {cell(_why(o))} |")
    return "\n".join([*lines, "", "</details>"]) + "\n"



def _json(report: AuditReport) -> dict[str, Any]:
    audit = report.audit
    ran, every = audit.totals()
    out: dict[str, Any] = {
        "range": report.range, "unit": _unit(audit), "ran": ran, "every": every,
        "commits": [{"sha": o.commit.sha, "subject": o.commit.subject, "files": len(o.commit.files),
                     "run": sorted(o.run), "needed": sorted(o.needed), "waiting": sorted(o.waiting),
                     "skipped": sorted(o.skipped), "run_all": o.run_all,
                     "docs_only": o.docs_only} for o in audit.outcomes],
        "steps": [{"key": key, "runs": n, "ran": audit.cost(key) * n, "every": audit.cost(key) * len(audit.outcomes)}
                  for key, n in audit.runs().items()],
        "never_run": audit.never_run(), "never_run_optional": audit.never_run(optional=True),
        "without_duration": audit.without_duration(), "notes": list(report.notes),
    }
    if report.before is not None:
        old_ran, old_every = report.before.totals()
        out["compare"] = {"ref": report.ref, "ran": old_ran, "every": old_every, "losses": len(report.losses),
                          "changes": [{"key": c.key, "where": c.where, "lost": [x.sha for x in c.lost],
                                       "gained": [x.sha for x in c.gained]} for c in report.changes]}
    return out
