"""The build-page annotation of a rendered pipeline (`pipegen render --annotation FILE`, `--annotate`).

Markdown for `buildkite-agent annotate`: the counts, why everything runs or
nothing does, and one row per step with its hardware, action and reason;
cut to fit Buildkite's 1 MiB limit on an annotation's body.
"""

from __future__ import annotations

from pipegen.markdown import cell
from pipegen.render.page import Page, Row
from pipegen.selection.decision_formats import banner, summary, warnings_markdown
from pipegen.states import StepState

ACTION_TEXT = {  # in the table's order
    StepState.RUN: "run",
    StepState.BLOCKED: "blocked (click to run)",
    StepState.SHOWN_SKIPPED: "skipped (shown)",
    StepState.OMITTED: "omitted",
    StepState.LEFT_OUT: "left out",
}


TITLE = "### pipegen: why these steps"
MAX_BYTES = 1024 * 1024  # Buildkite refuses an annotation body over 1 MiB
CUT_NOTE = ("\n\n_Annotation cut at 1 MiB (Buildkite's limit): {shown:,} of {total:,} bytes shown; "
            "`pipegen why --step KEY` tells each step's reason._\n")


def annotation(page: Page, error: str = "") -> str:
    rows = page.rows
    counts = {a: sum(1 for r in rows if r.state == a) for a in StepState}
    lines = [TITLE, ""]
    if error:
        lines += [f"> **Not uploaded:** {cell(error)}", ""]
    notes = [*banner(page.selection), *page.notes]
    lines += [f"> {cell(note)}" for note in notes]
    if notes:
        lines.append("")
    parts = [f"**{counts[StepState.RUN]} run**", f"{counts[StepState.BLOCKED]} blocked"]
    if counts[StepState.SHOWN_SKIPPED]:
        parts.append(f"{counts[StepState.SHOWN_SKIPPED]} shown as skipped")
    parts += [f"{counts[StepState.OMITTED]} omitted", f"{counts[StepState.LEFT_OUT]} left out"]
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
    order = {a: i for i, a in enumerate(ACTION_TEXT)}
    ordered = sorted(rows, key=lambda r: order[r.state])
    shown = [r for r in ordered if r.state is StepState.RUN]
    rest = [r for r in ordered if r.state is not StepState.RUN]
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
            f"| {ACTION_TEXT[row.state]} | {cell(row.reason)} |")


def failure(error: str) -> str:
    """The annotation of a render that failed before any page existed (declarations, the diff, a usage error)."""
    return f"{TITLE}\n\n> **Not uploaded:** {cell(error)}\n"


def fit(markdown: str, limit: int = MAX_BYTES) -> str:
    """`markdown` whole when its UTF-8 bytes fit in `limit`; else its head, cut at a line end (or at a
    character, never inside one), an open <details> closed, and a visible note of the cut."""
    data = markdown.encode("utf-8")
    if len(data) <= limit:
        return markdown
    room = limit - len(CUT_NOTE.format(shown=len(data), total=len(data)).encode("utf-8")) - len("\n</details>\n")
    head = data[:room].decode("utf-8", "ignore")  # a character cut in two is dropped whole
    head = head[: head.rfind("\n") + 1] or head
    closing = "\n</details>\n" if head.count("<details>") > head.count("</details>") else ""
    return head + closing + CUT_NOTE.format(shown=len(head.encode("utf-8")), total=len(data))
