"""`pipegen run`: select, plan onto this machine, run, report (the I/O edge).

Running goes through `run/process.py`: one `bash -e -c` process per step in
a session of its own (so a timeout or Ctrl-C can stop everything it
started), output to a log file; then a summary table and optional JUnit XML.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import TextIO

from pipegen import atomic
from pipegen.commands.options import RunOptions
from pipegen.commands.selecting import load_declarations, select, warn_if_untrusted
from pipegen.commands.terminal import painted
from pipegen.errors import UsageError
from pipegen.hardware.detect import machine as this_machine
from pipegen.hardware.inventory import load_inventory
from pipegen.json_output import dumps
from pipegen.run.junit import Case, junit_xml
from pipegen.run.local_plan import DEFAULT_LOG_DIR, FAILED, Candidates, RunPlan, buildkite_only, named, selected
from pipegen.run.output import exit_status, junit_cases, machine_line, plan_text, summary_text
from pipegen.run.run_json import Outcome, run_json
from pipegen.run.steps import plan_jobs
from pipegen.selection.decision_formats import banner, summary

JUNIT_LOG_LINES = 200  # of a failed step's log, with its JUnit failure (whole logs can be huge)



def main(args: RunOptions, out: TextIO) -> int:
    check_output_paths(args)  # before anything runs: a bad path found after an hour of tests helps no one
    if args.step_keys:
        decl = load_declarations(args)
        candidates = named(decl, args.step_keys)
        header = [f"Steps asked for: {', '.join(args.step_keys)}"]
    else:
        decl, selection = select(args)
        warn_if_untrusted(selection, args.terminal)  # an untrusted diff, an uncovered file: said as select says them
        candidates = selected(decl, selection)
        others = buildkite_only([d.step for d in selection.decisions if d.action == "run"])
        header = [*banner(selection), f"Selected: {summary(selection)}", *([others] if others else [])]
    if not candidates:
        nothing = "Nothing to run: no step is selected for this change (use --step KEY to run one anyway)."
        if args.junit:  # first: a failure to write it leaves stdout empty, as every error does
            write_junit(args.junit, [])
        out.write(dumps(run_json(None, [], args.step_keys, [*header, nothing])) if args.fmt == "json"
                  else "\n".join([*header, nothing]) + "\n")
        return 0
    machine = this_machine(args.hardware, args.environ)
    args, moved = log_folder(args, decl.root)
    branch = current_branch(decl.root, args.environ, candidates)
    the_plan = plan_jobs(decl, candidates, machine, load_inventory(decl), step_keys=args.step_keys,
                         log_dir=args.log_dir, timeout_scale=args.timeout_scale, environ=args.environ,
                         header=[*header, *moved], branch=branch)
    keys = [key for key, _ in candidates]
    if args.dry_run:
        out.write(dumps(run_json(the_plan, keys, args.step_keys, the_plan.header)) if args.fmt == "json"
                  else plan_text(the_plan))
        return 0
    return execute(args, decl.root, the_plan, keys, out)


def execute(args: RunOptions, root: str, the_plan: RunPlan, keys: list[str], out: TextIO) -> int:
    """Run the plan. With --format json, stdout gets the JSON only: progress and failed steps' logs go to
    stderr, and the summary table is the JSON."""
    import time

    from pipegen.run.process import Progress, read_log, run_all
    from pipegen.run.worktree import changed_since, tracked_state

    shown = sys.stderr if args.fmt == "json" else out
    if args.fmt != "json":
        out.write("\n".join([machine_line(the_plan.machine), *the_plan.header]) + "\n")
    progress = Progress.for_stream(shown, len(the_plan.runs), quiet=args.terminal.verbosity < 0)
    before, start = tracked_state(root, args.environ), time.monotonic()
    results = run_all(the_plan.runs, progress, args.keep_going, local_env(args.environ))
    seconds, changed = time.monotonic() - start, changed_since(before, root, args.environ)
    code = exit_status(results, the_plan.unrunnable)
    if args.fmt != "json":
        failed = tuple((rf"^{re.escape(r.planned.key)}  ", "red") for r in results if r.status in FAILED)
        out.write(painted(args.terminal, summary_text(results, the_plan.unrunnable, changed), failed))
    if args.junit:  # before the JSON: a failure here leaves stdout empty, as every error does
        write_junit(args.junit, junit_cases(results, the_plan.unrunnable, partial(read_log, lines=JUNIT_LOG_LINES)))
    if args.fmt == "json":
        outcome = Outcome(tuple(results), seconds, code, tuple(changed), args.junit)
        out.write(dumps(run_json(the_plan, keys, args.step_keys, the_plan.header, outcome)))
    elif args.junit:
        out.write(f"JUnit XML: {args.junit}\n")
    return code


def local_env(environ: Mapping[str, str]) -> dict[str, str]:
    """This process's environment, with its Python's scripts (pytest, torchrun) first on PATH."""
    env = dict(environ)
    bin_dir = os.path.dirname(sys.executable)
    env["PATH"] = os.pathsep.join(p for p in (bin_dir, env.get("PATH", "")) if p)
    return env


def write_junit(path: str, cases: list[Case]) -> None:
    try:
        atomic.write_bytes(path, junit_xml("pipegen run", cases))  # whole or not at all, a link not followed
    except OSError as exc:
        raise UsageError(f"cannot write --junit {path}: {exc.strerror}") from None


def current_branch(root: str, environ: Mapping[str, str], candidates: Sequence[Candidates]) -> str | None:
    """The branch `branches:` filters are checked against: Buildkite's, else git's (None when detached);
    asked only where a candidate step has such a filter."""
    if not any(step.field("branches") is not None for _, steps in candidates for step in steps):
        return None
    if environ.get("BUILDKITE_BRANCH"):
        return environ["BUILDKITE_BRANCH"]
    from pipegen.git import Git

    try:  # through Git: its environment drops GIT_DIR/GIT_INDEX_FILE, which would name another repository's branch
        name = Git(root, environ)("rev-parse", "--abbrev-ref", "HEAD").strip()
    except (UsageError, OSError):  # GitFailed is a UsageError
        return None
    return name if name and name != "HEAD" else None


def log_folder(options: RunOptions, root: str) -> tuple[RunOptions, list[str]]:
    """The default log folder, or one under the temporary folder where the checkout cannot be written
    (a read-only mount): said in the header, never a traceback halfway through the run."""
    if options.log_dir:
        return options, []
    folder = os.path.join(os.path.abspath(root), DEFAULT_LOG_DIR)
    if not _blocked_at(folder):
        return options, []
    import tempfile

    try:  # a new private (0700) folder: never one another user made, nor a planted link (mkdtemp)
        elsewhere = tempfile.mkdtemp(prefix="pipegen-logs-")
    except OSError as exc:
        raise UsageError(f"cannot write logs in {folder} (read-only checkout?) nor in {tempfile.gettempdir()}: "
                         f"{exc.strerror}", fix="pass --log-dir DIR, a folder you can write") from None
    return replace(options, log_dir=elsewhere), [f"Logs: {elsewhere} ({folder} cannot be written: a read-only "
                                                 "checkout?)"]


def _blocked_at(folder: str) -> str:
    """The existing folder (or file) that keeps `folder` from being made or written; "" when nothing does
    (access() knows read-only mounts)."""
    parent = os.path.abspath(folder)
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    return "" if os.path.isdir(parent) and os.access(parent, os.W_OK | os.X_OK) else parent


def check_output_paths(options: RunOptions) -> None:
    """--log-dir must be a folder or creatable as one, --junit a file that can be written: said before
    anything runs (a bad path found after an hour of tests helps no one)."""
    import errno

    if options.log_dir:
        if os.path.exists(options.log_dir) and not os.path.isdir(options.log_dir):
            raise UsageError(f"--log-dir {options.log_dir} is a file, not a folder", fix="pass a folder path")
        blocked = _blocked_at(options.log_dir)
        if blocked:
            raise UsageError(f"--log-dir {options.log_dir}: cannot create folders in {blocked}",
                             fix="pass a folder you can write")
    if options.junit:
        path, parent = options.junit, os.path.dirname(os.path.abspath(options.junit))
        code = (errno.EISDIR if os.path.isdir(path) else errno.ENOENT if not os.path.exists(parent)
                else errno.ENOTDIR if not os.path.isdir(parent)
                else errno.EACCES if not os.access(path if os.path.exists(path) else parent, os.W_OK) else 0)
        if code:
            raise UsageError(f"cannot write --junit {path}: {os.strerror(code)}",
                             fix="pass a file path in an existing folder you can write")
