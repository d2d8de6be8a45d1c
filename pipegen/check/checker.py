"""`pipegen check`: fail a pull request before one of its tests can be skipped silently.

`check()` is pure: declarations, the tracked files and a file reader in,
a Report out. commands/check.py is the I/O edge that loads them (git or a
`--tracked-files` list, the YAML files, the hardware inventory, the AMD twin
file). The findings and their codes are listed in findings.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pipegen.check import coverage, entries, platform
from pipegen.check.codes import CODES
from pipegen.check.file_index import FileIndex
from pipegen.check.findings import Finding, Report, Severity, strict
from pipegen.check.upload_text import upload_text_findings
from pipegen.frozen import frozen
from pipegen.graph.import_graph import ImportGraph, SpecReader
from pipegen.graph.modules import ModuleFiles
from pipegen.model import Declarations, Step


@frozen
class Inputs:
    """Everything `check` looks at besides the declarations."""

    tracked: Sequence[str]
    imports: SpecReader  # repo-relative path -> its import statements, None when it cannot be read
    docs: Mapping[str, Any]  # parsed YAML of the declarations' files, for entry lines
    place: Callable[[Step], Any]  # hardware.place with the repository's inventory
    amd: Declarations | None = None  # the AMD twin file's declarations, for drift
    listed: str | None = None  # the --tracked-files list, when files come from one
    read: Callable[[str], str | None] | None = None  # a tracked file's text (the scripts steps run)


def check(decl: Declarations, inputs: Inputs, *, orphans: bool = False, strict_mode: bool = False) -> Report:
    """Every finding for these declarations, sorted by file and line."""
    config = decl.files[0]  # the loader lists the config file first
    index = FileIndex([*inputs.tracked, *decl.files])  # the steps files the loader added as dependencies exist
    lines = entries.entry_lines(inputs.docs)
    found: list[Finding] = [_from_warning(w) for w in decl.warnings]
    found += entries.entry_findings(decl, index, lines)
    found += entries.run_all_findings(decl, index, lines, config)
    covers = {s.key: _cover(s, decl, index) for s in decl.steps}
    run_all = entries.run_all_mask(decl, index)
    step_tests = [coverage.resolve_tests(decl, s, index, inputs.read) for s in decl.steps]
    for item in step_tests:
        found += item.findings
        found += coverage.selection_findings(item, decl, covers[item.step.key] | run_all, index)
    graph = ImportGraph(ModuleFiles(index.paths), inputs.imports)
    found += coverage.import_findings(step_tests, decl, covers, run_all, index, graph)
    found += platform.hardware_findings(decl, inputs.place)
    if inputs.amd is not None:
        found += platform.drift_findings(decl, inputs.amd)
    found += platform.limit_findings(decl, config)
    found += upload_text_findings(decl)
    if orphans:
        found += entries.orphan_findings(decl, index, covers.values(), run_all)
    # A hardware fan-out's targets share one declaration: report its findings once.
    found = sorted(dict.fromkeys(found), key=lambda f: (f.location.file, f.location.line, f.location.column, f.code))
    test_files = {p for t in step_tests for p in t.files}
    return Report(
        findings=strict(found) if strict_mode else tuple(found),
        notes=tuple(_notes(inputs, graph, test_files)),
        stats={"steps": len(decl.steps), "tracked_files": len(index), "test_files": len(test_files),
               "python_files_read": len(graph.kids) - len(graph.unreadable)},
        tests={t.step.key: tuple(t.files) for t in step_tests},
    )


def _cover(step: Step, decl: Declarations, index: FileIndex) -> int:
    """What selects the step: its entries; everything for a step without any, when those run."""
    if not step.declares_dependencies and decl.settings.no_dependencies == "run":
        return index.prefix("")
    return entries.covered(step, index)


def _from_warning(warning: Any) -> Finding:
    # A loader warning whose code check lists as an error: what it names runs nothing of what was meant.
    severity: Severity = "error" if CODES[warning.code].severity == "error" else "warning"
    return Finding(warning.code, severity, warning.location, warning.message, warning.fix)


def _notes(inputs: Inputs, graph: ImportGraph, test_files: set[str]) -> list[str]:
    notes = []
    if inputs.listed:
        notes.append(f"checked against the {len(inputs.tracked)} paths listed in {inputs.listed}, not git")
    read = set(graph.read())
    followed = [p for p in test_files if p in read]
    unread_tests = [p for p in followed if p in graph.unreadable]
    unread_other = len(graph.unreadable) - len(unread_tests)
    if unread_tests or unread_other:
        notes.append(f"import coverage is partial: {len(unread_tests)} of {len(followed)} test file(s) and "
                     f"{unread_other} other imported file(s) are tracked but not readable here (not on disk), "
                     "so their imports were not followed")
    if inputs.amd is not None:
        notes.append(f"AMD twins compared with {inputs.amd.files[0]}")
    return notes
