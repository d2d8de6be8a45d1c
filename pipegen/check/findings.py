"""What `pipegen check` finds, and how it is shown (text, JSON, Markdown)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import field, replace
from typing import Any, Literal

from pipegen.check.codes import CODES
from pipegen.frozen import frozen
from pipegen.json_output import dumps
from pipegen.markdown import cell
from pipegen.model import Location

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")


@frozen
class Finding:
    code: str
    severity: Severity
    location: Location
    message: str
    fix: str = ""
    step: str = ""  # key of the step concerned, "" for repository-wide findings
    files: tuple[str, ...] = ()  # every file a grouped finding stands for (import-not-covered)

    def to_json(self) -> dict[str, Any]:
        out = {"code": self.code, "severity": self.severity, "file": self.location.file,
               "line": self.location.line, "column": self.location.column, "step": self.step or None,
               "message": self.message, "fix": self.fix}
        return {**out, "files": list(self.files)} if self.files else out


@frozen
class Report:
    findings: tuple[Finding, ...]
    notes: tuple[str, ...] = ()  # what could not be checked, and why
    stats: dict[str, int] = field(default_factory=dict)  # steps, files, test files ...
    tests: dict[str, tuple[str, ...]] = field(default_factory=dict)  # step key -> the test files found it runs

    def count(self, severity: Severity) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    def by_code(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for finding in self.findings:
            out[finding.code] = out.get(finding.code, 0) + 1
        return dict(sorted(out.items(), key=lambda kv: list(CODES).index(kv[0]) if kv[0] in CODES else len(CODES)))


def strict(findings: Sequence[Finding]) -> tuple[Finding, ...]:
    """--strict: every warning is an error."""
    return tuple(replace(f, severity="error") if f.severity == "warning" else f for f in findings)


def summary(report: Report) -> str:
    counts = ", ".join(f"{report.count(s)} {s}{'s' if report.count(s) != 1 else ''}" for s in SEVERITIES)
    files: dict[str, int] = {}
    for finding in report.findings:
        files[finding.code] = files.get(finding.code, 0) + len(finding.files)
    codes = ", ".join(f"{code} {n}" + (f" ({files[code]} files)" if files[code] else "")
                      for code, n in report.by_code().items())
    return f"{counts}" + (f" ({codes})" if codes else "")


def format_report(report: Report, fmt: str, detail: bool = False) -> str:
    """JSON lists every finding; text and Markdown fit MAX_LINES, errors first, unless `detail`."""
    if fmt == "json":
        return dumps({"findings": [f.to_json() for f in report.findings], "counts": report.by_code(),
                      "errors": report.count("error"), "warnings": report.count("warning"),
                      "notes": list(report.notes), "stats": report.stats,
                      "tests": {key: list(files) for key, files in report.tests.items()}})
    if fmt == "markdown":
        return _markdown(report, detail)
    return _text(report, detail)


# Text and Markdown stop here (a screen or two); --detail and JSON show everything.
MAX_LINES = 200


def by_severity(findings: Sequence[Finding]) -> list[Finding]:
    """Errors first, then warnings, then information; each in file order."""
    return sorted(findings, key=lambda f: SEVERITIES.index(f.severity))


def cut(report: Report, lines_each: Callable[[Finding], int], reserved: int) -> tuple[list[Finding], str]:
    """The findings that fit MAX_LINES (less `reserved`), errors first, and a line for the rest ("" when none)."""
    shown: list[Finding] = []
    used = reserved + 1  # the line saying what was left out
    ordered = by_severity(report.findings)
    for finding in ordered:
        used += lines_each(finding)
        if used > MAX_LINES:
            break
        shown.append(finding)
    rest = ordered[len(shown):]
    if not rest:
        return shown, ""
    counts = ", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s in SEVERITIES
                       if (n := sum(1 for f in rest if f.severity == s)))
    return shown, f"... {len(rest)} more findings ({counts}): --detail prints them all, --format json lists them all"


def _text(report: Report, detail: bool) -> str:
    tail = [f"note: {note}" for note in report.notes] + [f"pipegen check: {summary(report)}"]
    if detail:
        shown, more = by_severity(report.findings), ""
    else:
        shown, more = cut(report, lambda f: 2 if f.fix else 1, len(tail))
    lines = []
    for f in shown:
        lines.append(f"{f.location}: {f.severity}[{f.code}]: {f.message}")
        if f.fix:
            lines.append(f"    fix: {f.fix}")
        if detail and len(f.files) > 1:
            lines += [f"    - {path}" for path in f.files]
    lines += [more] if more else []
    return "\n".join(lines + tail) + "\n"


def _markdown(report: Report, detail: bool) -> str:
    head = [f"### pipegen check: {summary(report)}", "", "| | code | where | finding | fix |", "|---|---|---|---|---|"]
    tail = ["", *[f"> {note}" for note in report.notes]]
    if detail:
        shown, more = by_severity(report.findings), ""
    else:
        shown, more = cut(report, lambda f: 1, len(head) + len(tail))
    icon = {"error": ":x:", "warning": ":warning:", "info": ":information_source:"}
    lines = head[:2]
    if shown:
        lines += head[2:]
        for f in shown:
            message = f.message + (" (" + ", ".join(f.files) + ")" if detail and len(f.files) > 1 else "")
            cells = [icon[f.severity], f"`{f.code}`", f"`{f.location}`", cell(message), cell(f.fix)]
            lines.append("| " + " | ".join(cells) + " |")
    lines += [f"| | | | {cell(more)} | |"] if more else []
    return "\n".join(lines + tail).rstrip("\n") + "\n"

