"""`pipegen check`: load everything the checks need from the repository, check, report (the I/O edge)."""

from __future__ import annotations

import os
from typing import Mapping

from pipegen.check.checker import Inputs, check
from pipegen.check.findings import Finding, Report, format_report
from pipegen.check.import_graph import Reader
from pipegen.errors import EXIT_FINDINGS, EXIT_USAGE, DeclarationError
from pipegen.model import Declarations, Location

AMD_TWIN_FILE = "test-amd.yaml"  # next to vLLM's ci_config.yaml


def main(root: str, config: str | None, *, tracked_files: str | None, amd_file: str | None,
         environ: Mapping[str, str], orphans: bool, strict_mode: bool, fmt: str) -> tuple[str, int]:
    """The report in `fmt` and the exit code: 0 clean, 1 errors, 2 unreadable declarations."""
    try:
        report = check_repository(root, config, tracked_files=tracked_files, amd_file=amd_file, environ=environ,
                                  orphans=orphans, strict_mode=strict_mode)
    except DeclarationError as exc:
        return format_report(declaration_error(exc), fmt), EXIT_USAGE
    return format_report(report, fmt), EXIT_FINDINGS if report.count("error") else 0




def declaration_error(exc: DeclarationError) -> Report:
    """Loader errors (every file's) as the findings of a report (check exits 2: the input is unreadable)."""
    errors = getattr(exc, "errors", (exc,))
    return Report(findings=tuple(Finding("declaration-error", "error", e.location or Location("(config)"), e.message,
                                         e.fix) for e in errors))


def check_repository(root: str, config: str | None, *, tracked_files: str | None, amd_file: str | None,
                     environ: Mapping[str, str], orphans: bool = False, strict_mode: bool = False) -> Report:
    """Load everything `check` needs from the repository at `root`, and check it."""
    from pipegen.declarations.load import load, load_documents
    from pipegen.hardware.placement import place
    from pipegen.hardware.inventory import load_inventory

    decl, docs = load_documents(root, config, environ)
    amd_path = amd_file or _twin_file(root, decl)
    amd = load(root, amd_path, environ) if amd_path else None
    inventory = load_inventory(decl)
    if tracked_files:
        from pipegen.selection.chain import read_file_list

        tracked = read_file_list(tracked_files, "--tracked-files")
    else:
        from pipegen.selection.git import tracked_files as git_tracked

        tracked = git_tracked(root, environ)
    inputs = Inputs(
        tracked=tracked,
        read=_reader(root, set(tracked)),
        docs=docs,
        place=lambda step: place(step, inventory),
        amd=amd,
        listed=tracked_files,
    )
    return check(decl, inputs, orphans=orphans, strict_mode=strict_mode)


def _twin_file(root: str, decl: Declarations) -> str | None:
    """vLLM's test-amd.yaml, when it sits next to the ci_config.yaml being checked."""
    if decl.layout != "vllm":
        return None
    path = os.path.join(os.path.dirname(decl.files[0]), AMD_TWIN_FILE)
    return path if os.path.isfile(os.path.join(root, path)) else None


def _reader(root: str, tracked: set[str]) -> Reader:
    """Read tracked files only; a file that is listed but absent reads as None."""

    def read(path: str) -> str | None:
        if path not in tracked:
            return None
        try:
            with open(os.path.join(root, path), encoding="utf-8") as handle:
                return handle.read()
        except (OSError, UnicodeDecodeError):
            return None

    return read
