"""What `pipegen check` finds, and how it is shown (text, JSON, Markdown)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Sequence

from pipegen.model import Location

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")

# Every code `check` can report, with what it means (also the order of the summary).
CODES = {
    "declaration-error": "the CI declarations cannot be loaded",
    "ignored-field": "a field vLLM's generator ignores",
    "ignored-file": "a file in a steps folder that is not loaded",
    "stale-entry": "a dependency entry matches no tracked file",
    "raw-prefix-only": "a dependency entry matched only under vLLM's old raw-prefix rule",
    "exclusion-unused": "an exclusion excludes nothing",
    "stale-run-all": "a run-all pattern matches no tracked file",
    "test-missing": "a command names a test path that is not in the repository",
    "test-not-selecting": "a change to a step's own test does not select the step",
    "workdir-unmapped": "a step's working dir maps to no repository folder",
    "no-dependencies": "a step with tests has no dependencies: no change ever selects it",
    "import-not-covered": "a test imports a repository file no entry of its step covers",
    "no-queue": "no hardware provides what a step asks for",
    "mirror-drift": "an AMD twin declared in two places differs",
    "upload-limit": "the worst-case pipeline exceeds one upload",
    "invalid-key": "a key Buildkite rejects",
    "orphan": "a tracked source file no step depends on",
}


@dataclass(frozen=True)
class Finding:
    code: str
    severity: Severity
    location: Location
    message: str
    fix: str = ""
    step: str = ""  # key of the step concerned, "" for repository-wide findings

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "severity": self.severity, "file": self.location.file,
                "line": self.location.line, "column": self.location.column, "step": self.step or None,
                "message": self.message, "fix": self.fix}


@dataclass(frozen=True)
class Report:
    findings: tuple[Finding, ...]
    notes: tuple[str, ...] = ()  # what could not be checked, and why
    stats: dict[str, int] = field(default_factory=dict)  # steps, files, test files ...

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
    codes = ", ".join(f"{code} {n}" for code, n in report.by_code().items())
    return f"{counts}" + (f" ({codes})" if codes else "")


def format_report(report: Report, fmt: str) -> str:
    if fmt == "json":
        return json.dumps({"findings": [f.to_json() for f in report.findings], "counts": report.by_code(),
                           "errors": report.count("error"), "warnings": report.count("warning"),
                           "notes": list(report.notes), "stats": report.stats}, indent=2) + "\n"
    if fmt == "markdown":
        return _markdown(report)
    return _text(report)


# Text and Markdown show at most this many findings of one code for one step; JSON shows all.
PER_STEP = 10


def shown(findings: Sequence[Finding]) -> list[Finding | str]:
    """The findings to print, with a line for each run of one code and step that was cut."""
    out: list[Finding | str] = []
    seen: dict[tuple[str, str], int] = {}
    for f in findings:
        group = (f.code, f.step)
        seen[group] = seen.get(group, 0) + 1
        if not f.step or seen[group] <= PER_STEP:
            out.append(f)
        elif seen[group] == PER_STEP + 1:
            total = sum(1 for g in findings if (g.code, g.step) == group)
            out.append(f"... {total - PER_STEP} more {f.code} for step '{f.step}' (--format json lists all)")
    return out


def _text(report: Report) -> str:
    lines = []
    for f in shown(report.findings):
        if isinstance(f, str):
            lines.append(f)
            continue
        lines.append(f"{f.location}: {f.severity}[{f.code}]: {f.message}")
        if f.fix:
            lines.append(f"    fix: {f.fix}")
    lines += [f"note: {note}" for note in report.notes]
    lines.append(f"pipegen check: {summary(report)}")
    return "\n".join(lines) + "\n"


def _markdown(report: Report) -> str:
    lines = [f"### pipegen check: {summary(report)}", ""]
    if report.findings:
        lines += ["| | code | where | finding | fix |", "|---|---|---|---|---|"]
        icon = {"error": ":x:", "warning": ":warning:", "info": ":information_source:"}
        for f in shown(report.findings):
            if isinstance(f, str):
                lines.append(f"| | | | {_cell(f)} | |")
                continue
            cells = [icon[f.severity], f"`{f.code}`", f"`{f.location}`", _cell(f.message), _cell(f.fix)]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    lines += [f"> {note}" for note in report.notes]
    return "\n".join(lines).rstrip("\n") + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
