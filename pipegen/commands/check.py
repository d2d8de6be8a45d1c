"""`pipegen check`: load everything the checks need from the repository, check, report (the I/O edge)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, TextIO

from pipegen.bounded_read import read_bytes
from pipegen.check.findings import Finding, Report, format_report
from pipegen.commands.check_cache import Kept
from pipegen.commands.options import CheckOptions
from pipegen.commands.terminal import painted
from pipegen.errors import EXIT_FINDINGS, EXIT_USAGE, DeclarationError
from pipegen.git import Index, IndexReading
from pipegen.model import Declarations, Location

if TYPE_CHECKING:
    from pipegen.graph.scan_cache import ScanCache

AMD_TWIN_FILE = "test-amd.yaml"  # next to vLLM's ci_config.yaml
# A finding's line in the text report (LOCATION: SEVERITY[CODE]: ...), in colour on a terminal.
SEVERITY_COLORS = ((r": error\[[\w-]+\]: ", "red"), (r": warning\[[\w-]+\]: ", "yellow"))


def main(args: CheckOptions, out: TextIO) -> int:
    """Write the report in `fmt`; the exit code: 0 clean, 1 errors, 2 unreadable declarations."""
    options = {"config": args.config, "amd_file": args.amd_file, "orphans": args.orphans,
               "strict_mode": args.strict_mode, "fmt": args.fmt, "detail": args.detail}
    index = IndexReading(args.root, args.environ) if not args.tracked_files else None
    kept = Kept(args.root, options, args.environ, index) if index else None
    stored = kept.report() if kept else None
    if stored is not None:
        _write(out, stored[0], args)
        return stored[1]
    read: list[str] = []
    try:
        report = check_repository(args.root, args.config, tracked_files=args.tracked_files, amd_file=args.amd_file,
                                  environ=args.environ, orphans=args.orphans, strict_mode=args.strict_mode, read=read,
                                  index=kept.taken if kept else None)
    except DeclarationError as exc:
        _write(out, format_report(declaration_error(exc), args.fmt), args)
        return EXIT_USAGE
    text = format_report(report, args.fmt, args.detail)
    code = EXIT_FINDINGS if report.count("error") else 0
    if kept:
        kept.keep(args.root, read, text, code)  # kept without colour: painted as it is written
    _write(out, text, args)
    return code


def _write(out: TextIO, text: str, args: CheckOptions) -> None:
    out.write(painted(args.terminal, text, SEVERITY_COLORS) if args.fmt == "text" else text)


def declaration_error(exc: DeclarationError) -> Report:
    """Loader errors (every file's) as the findings of a report (check exits 2: the input is unreadable)."""
    errors = getattr(exc, "errors", (exc,))
    return Report(findings=tuple(Finding("declaration-error", "error", e.location or Location("(config)"), e.message,
                                         e.fix) for e in errors))


def check_repository(root: str, config: str | None, *, tracked_files: str | None, amd_file: str | None,
                     environ: Mapping[str, str], orphans: bool = False, strict_mode: bool = False,
                     read: list[str] | None = None, index: Callable[[], Index] | None = None) -> Report:
    """Load everything `check` needs from the repository at `root`, and check it (`read`: gets the
    declaration files it read; `index`: takes git's index, when its reading was started already)."""
    from pipegen.check.checker import Inputs, check
    from pipegen.dialects.load import load, load_documents
    from pipegen.hardware.inventory import load_inventory
    from pipegen.hardware.placement import place

    decl, docs = load_documents(root, config, environ)
    scans = _scans(root, tracked_files, environ, index)
    listed = sorted(scans.tracked) if tracked_files else None  # derived from the files on disk (expand.py)
    if any(step.derive for step in decl.steps):
        from pipegen.graph.expand import expand

        decl = expand(decl, environ, listed)
    amd_path = amd_file or _twin_file(root, decl)
    amd = load(root, amd_path, environ) if amd_path else None
    inventory = load_inventory(decl)
    if read is not None:
        read += [*decl.files, *(amd.files if amd else ()), *filter(None, [decl.settings.hardware_file])]
    inputs = Inputs(
        tracked=sorted(scans.tracked),
        imports=scans.specs,
        docs=docs,
        place=lambda step: place(step, inventory),
        amd=amd,
        listed=tracked_files,
        read=lambda path: _text(root, path) if path in scans.tracked else None,
    )
    report = check(decl, inputs, orphans=orphans, strict_mode=strict_mode)
    scans.save()
    from pipegen.check.findings import strict
    from pipegen.check.glob_dialect import glob_dialect_findings

    extra = glob_dialect_findings(decl, inputs.tracked, docs)
    if any(("use", "check") in step.derive for step in decl.steps):
        extra += _drift(decl, environ, listed)
    return replace(report, findings=(*report.findings, *(strict(extra) if strict_mode else extra))) if extra else report


def _drift(decl: Declarations, environ: Mapping[str, str], listed: list[str] | None) -> list[Finding]:
    """derived-drift for each step whose derive: checks its hand-written list (check/drift.py)."""
    from pipegen.check.drift import drift_findings
    from pipegen.graph.expand import Store, Tree, derive_links

    tree, store = Tree(decl.root, environ, listed), Store()
    out = [f for step in decl.steps if ("use", "check") in step.derive
           for f in drift_findings(step, derive_links(step, tree, store))]
    store.save()
    tree.save()
    return out


def _scans(root: str, tracked_files: str | None, environ: Mapping[str, str],
           taken: Callable[[], Index] | None) -> ScanCache:
    """The tracked files and their import scans: git's index and the cache, or the --tracked-files list."""
    from pipegen.graph.scan_cache import ScanCache

    if tracked_files:
        from pipegen.commands.selecting import read_file_list

        return ScanCache(root, set(read_file_list(tracked_files, "--tracked-files")))
    from pipegen.git import read_index

    index = taken() if taken else read_index(root, environ)
    blobs = index.blobs()
    return ScanCache(root, set(blobs), blobs, set(index.dirty))


def _text(root: str, path: str) -> str | None:
    """A script a step runs, within the read bound (a tracked link to /dev/zero reads as nothing)."""
    try:
        return read_bytes(os.path.join(root, path)).decode("utf-8")
    except (OSError, UnicodeDecodeError):  # bounded_read.Refused is an OSError
        return None


def _twin_file(root: str, decl: Declarations) -> str | None:
    """vLLM's test-amd.yaml, when it sits next to the ci_config.yaml being checked and that config
    has AMD mirrors to compare (ci_config_intel.yaml has none)."""
    if decl.layout != "vllm" or not any(step.mirror == "amd" for step in decl.steps):
        return None
    path = os.path.join(os.path.dirname(decl.files[0]), AMD_TWIN_FILE)
    return path if os.path.isfile(os.path.join(root, path)) else None
