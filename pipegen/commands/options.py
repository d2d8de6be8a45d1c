"""Every command's options, declared once: what the command line gave and the environment it runs in.

cli.py builds them by keyword from click's options (one that a class does not declare is a TypeError,
never dropped). Only commands/ reads them; the stages behind receive values: the selection its
`model.Options` (selection/requested.py resolves the flags with the CI environment), `run`'s plan a
log folder and a timeout scale.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import TextIO

from pipegen.frozen import frozen
from pipegen.states import Unselected


@frozen
class TerminalOptions:
    """-q/-v and --color as they apply to this run (commands/terminal.py decides the colour): every command's."""

    verbosity: int = 0  # each -v adds one, each -q takes one away
    color_out: bool = False  # colour in stdout's text reports (never in YAML, JSON or Markdown)
    color_err: bool = False  # colour in stderr's errors and warnings


@frozen
class RepoOptions:
    """Where the repository and its CI config are, and the environment the command runs in."""

    root: str = "."
    config: str | None = None
    environ: Mapping[str, str] = field(default_factory=dict)
    terminal: TerminalOptions = field(default_factory=TerminalOptions)


@frozen
class SelectionOptions(RepoOptions):
    """Which change to look at and what to force: the options select, why, render and run share."""

    base: str | None = None
    files_from: str | None = None
    committed_only: bool = False
    fetch_base: bool = False
    strict_diff: bool = False
    only: tuple[str, ...] = ()
    run_all: bool = False
    nightly: bool = False
    unselected: Unselected | None = None  # None: the config's


@frozen
class SelectOptions(SelectionOptions):
    fmt: str = "text"


@frozen
class WhyOptions(SelectionOptions):
    """The paths and steps to explain."""

    paths: tuple[str, ...] = ()
    step_keys: tuple[str, ...] = ()
    fmt: str = "text"


@frozen
class RenderOptions(SelectionOptions):
    templates: str | None = None  # a folder of templates overriding the shipped ones
    annotation_file: str | None = None
    annotate: str | None = None  # post the annotation under this context (buildkite-agent annotate)
    annotate_timeout: float = 30.0  # seconds the agent may take


@frozen
class RunOptions(SelectionOptions):
    """The selection's options, and how to run."""

    step_keys: tuple[str, ...] = ()  # run exactly these, whatever changed
    hardware: str | None = None  # --hardware; overrides detection
    dry_run: bool = False
    keep_going: bool = False
    log_dir: str | None = None
    junit: str | None = None
    timeout_scale: float = 1.0  # multiplies timeout_in_minutes (tests use small values)
    fmt: str = "text"


@frozen
class CheckOptions(RepoOptions):
    tracked_files: str | None = None  # the tracked paths, instead of git's index
    amd_file: str | None = None  # the legacy AMD file to compare mirrors with
    strict_mode: bool = False
    orphans: bool = False
    fmt: str = "text"
    detail: bool = False


@frozen
class AuditOptions(RepoOptions):
    last: int | None = None  # the last N first-parent commits (default: commands/audit.py's DEFAULT_LAST)
    rev_range: str | None = None  # A..B
    durations: str | None = None  # a file of minutes per job
    compare_ref: str | None = None
    fail_on_loss: bool = False
    fmt: str = "text"
    progress: TextIO | None = None  # where a progress bar goes, when it is a terminal


@frozen
class ImportOptions:
    files: tuple[str, ...]
    out_dir: str | None = None
    force: bool = False
    paths_field: str | None = None  # another selector's path list, read as source_file_dependencies
    environ: Mapping[str, str] = field(default_factory=dict)  # git's environment (the tracked folders)
    fmt: str = "text"
    terminal: TerminalOptions = field(default_factory=TerminalOptions)
