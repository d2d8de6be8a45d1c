"""The build-page annotation of a rendered pipeline (`pipegen render --annotation FILE`).

Markdown for `buildkite-agent annotate`: the counts, why everything runs or
nothing does, and one row per step with its hardware, action and reason.
"""

from __future__ import annotations

from pipegen.markdown import cell
from pipegen.render.page import Page, Row
from pipegen.selection.decision_formats import banner, summary, warnings_markdown

ACTION_ORDER = ("run", "blocked", "skip-step", "omitted", "left out")
ACTION_TEXT = {
    "run": "run",
    "blocked": "blocked (click to run)",
    "skip-step": "skipped (shown)",
    "omitted": "omitted",
    "left out": "left out",
}


def annotation(page: Page, error: str = "") -> str:
    rows = page.rows
    counts = {a: sum(1 for r in rows if r.action == a) for a in ACTION_ORDER}
    lines = ["### pipegen: why these steps", ""]
    if error:
        lines += [f"> **Not uploaded:** {cell(error)}", ""]
    notes = [*banner(page.selection), *page.notes]
    lines += [f"> {cell(note)}" for note in notes]
    if notes:
        lines.append("")
    parts = [f"**{counts['run']} run**", f"{counts['blocked']} blocked"]
    if counts["skip-step"]:
        parts.append(f"{counts['skip-step']} shown as skipped")
    parts += [f"{counts['omitted']} omitted", f"{counts['left out']} left out"]
    lines.append(f"{', '.join(parts)}; {page.jobs} of {page.limit} jobs in this upload "
                 f"(unselected steps: {page.unselected}).")
    lines += ["", f"Decisions: {cell(summary(page.selection))}.", ""]
    if page.over_limit:
        lines += [f"More than {page.limit} jobs: {len(page.over_limit)} unselected steps were omitted "
                  "(marked below); only selected steps were uploaded.", ""]
    if page.renamed:
        lines.append("Keys changed to be valid Buildkite keys: "
                     + ", ".join(f"`{cell(a)}` -> `{cell(b)}`" for a, b in page.renamed[:20])
                     + (f" and {len(page.renamed) - 20} more" if len(page.renamed) > 20 else "") + ".")
        lines.append("")
    header = ["| step | group | hardware | action | reason |", "| --- | --- | --- | --- | --- |"]
    order = {a: i for i, a in enumerate(ACTION_ORDER)}
    ordered = sorted(rows, key=lambda r: order[r.action])
    shown = [r for r in ordered if r.action == "run"]
    rest = [r for r in ordered if r.action != "run"]
    if shown:
        lines += header + [_row(r) for r in shown]
    if rest:
        lines += ["", f"<details><summary>{len(rest)} steps not run</summary>", ""] + header
        lines += [_row(r) for r in rest] + ["", "</details>"]
    lines += warnings_markdown(page.selection.warnings)
    return "\n".join(lines) + "\n"


def _row(row: Row) -> str:
    hardware = f"{row.hardware} (`{cell(row.queue)}`)" if row.queue else row.hardware
    return (f"| {cell(row.step.label)} (`{cell(row.key)}`) | {cell(row.step.group)} | {cell(hardware)} "
            f"| {ACTION_TEXT[row.action]} | {cell(row.reason)} |")
