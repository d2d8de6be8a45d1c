"""`pipegen run`: select, plan onto this machine, run, report (the I/O edge).

Running goes through `run/process.py`: one `bash -e -c` process per step in
a session of its own (so a timeout or Ctrl-C can stop everything it
started), output to a log file; then a summary table and optional JUnit XML.
"""

from __future__ import annotations

import os
import sys
from functools import partial
from typing import Mapping, TextIO

from pipegen.errors import UsageError
from pipegen.hardware.detect import machine as this_machine
from pipegen.hardware.inventory import load_inventory
from pipegen.run.junit import Case, junit_xml
from pipegen.run.output import exit_status, junit_cases, machine_line, plan_text, summary_text
from pipegen.run.plan import RunOptions, named, plan_runs, selected
from pipegen.selection import report
from pipegen.selection.chain import SelectArgs, load_declarations, select

JUNIT_LOG_LINES = 200  # of a failed step's log, with its JUnit failure (whole logs can be huge)



def main(args: SelectArgs, options: RunOptions, environ: Mapping[str, str], out: TextIO) -> int:
    if options.step_keys:
        decl = load_declarations(args, environ)
        candidates = named(decl, options.step_keys)
        header = [f"Steps asked for: {', '.join(options.step_keys)}"]
    else:
        decl, selection = select(args, environ)
        candidates = selected(decl, selection)
        header = [*report.banner(selection), f"Selected: {report.summary(selection)}"]
    if not candidates:
        out.write("\n".join(header) + "\nNothing to run: no step is selected for this change "
                  "(use --step KEY to run one anyway).\n")
        if options.junit:
            write_junit(options.junit, [])
        return 0
    machine = this_machine(options.hardware, environ)
    the_plan = plan_runs(decl, candidates, machine, load_inventory(decl), options, header)
    if options.dry_run:
        out.write(plan_text(the_plan))
        return 0
    from pipegen.run.process import Progress, read_log, run_all

    out.write("\n".join([machine_line(machine), *header]) + "\n")
    progress = Progress.for_stream(out, len(the_plan.runs))
    results = run_all(the_plan.runs, progress, options.keep_going, local_env(environ))
    out.write(summary_text(results, the_plan.unrunnable))
    if options.junit:
        write_junit(options.junit, junit_cases(results, the_plan.unrunnable, partial(read_log, lines=JUNIT_LOG_LINES)))
        out.write(f"JUnit XML: {options.junit}\n")
    return exit_status(results, the_plan.unrunnable)


def local_env(environ: Mapping[str, str]) -> dict[str, str]:
    """This process's environment, with its Python's scripts (pytest, torchrun) first on PATH."""
    env = dict(environ)
    bin_dir = os.path.dirname(sys.executable)
    env["PATH"] = os.pathsep.join(p for p in (bin_dir, env.get("PATH", "")) if p)
    return env


def write_junit(path: str, cases: list[Case]) -> None:
    try:
        with open(path, "wb") as f:
            f.write(junit_xml("pipegen run", cases))
    except OSError as exc:
        raise UsageError(f"cannot write --junit {path}: {exc.strerror}") from None
