"""Command line: parse options, call pipegen/commands/<name>.py, map errors to exit codes.

Each command's work lives in its own module, imported only when the
command runs, so `pipegen render` pays for nothing else. Every command is
`main(options, out) -> exit code`, its options built by keyword from click's:
an option that the command's options do not declare is a TypeError, never dropped.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import click

from pipegen.commands.guard import guard
from pipegen.commands.output import output_failed
from pipegen.errors import EXIT_INTERRUPTED
from pipegen.states import UNSELECTED

# The commands with a --format json schema: json_output.SCHEMAS' keys (a test holds them equal), named here so
# that start-up does not import json_output and json.
SCHEMA_OUTPUTS = ("select", "why", "check", "audit", "run", "import")


def _root(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str:
    from pipegen.declarations.discover import repository_root

    return value if value else repository_root()


def _repo_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Where the repository and its CI config are."""
    func = click.option("--root", metavar="DIR", callback=_root, help="Repository root (default: the nearest "
                        "of the current folder and its parents with .git or a CI config, as git finds it).")(func)
    return click.option("--config", "config", metavar="PATH", help="CI config (default: $PIPEGEN_CONFIG, "
                        ".buildkite/pipegen.yaml, then .buildkite/ci_config.yaml).")(func)


def _selection_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options that say which change to look at and what to force."""
    options = [
        click.option("--base", metavar="REF", help="Diff against the merge base with REF (default: $PIPEGEN_BASE, "
                     "Buildkite's base branch, origin/<base_branch>). A REF here or in $PIPEGEN_BASE that does not "
                     "resolve is an error (exit 2); a base from the CI environment that does not resolve selects "
                     "everything, with a WARNING."),
        click.option("--files-from", metavar="FILE", help="Read changed paths from FILE ('-' = stdin; newline- or "
                     "NUL-separated) instead of git."),
        click.option("--committed-only", is_flag=True, help="Ignore staged, unstaged and untracked work "
                     "(the default in CI)."),
        click.option("--fetch-base", is_flag=True, help="Fetch a pull request's missing base branch and deepen a "
                     "shallow clone until the merge base (on a push: HEAD's parent) is found."),
        click.option("--strict-diff", is_flag=True, help="Fail (exit 1) instead of selecting everything when "
                     "the diff cannot be trusted."),
        click.option("--only", multiple=True, metavar="KEY", help="Run only these steps and what they depend on "
                     "(also $PIPEGEN_ONLY_STEP_KEYS / $VLLM_CI_ONLY_STEP_KEYS, a JSON array)."),
        click.option("--all", "run_all", is_flag=True, help="Run every step (also RUN_ALL=1)."),
        click.option("--nightly", is_flag=True, help="Nightly: optional steps run too (also NIGHTLY=1)."),
        click.option("--unselected", type=click.Choice(UNSELECTED), default=None,
                     help="Steps the change does not select: a block step to click (block), shown as skipped "
                     "(skip), or left out (omit). Default: the config's 'unselected' (vLLM: block). With block, a "
                     "step before a declared wait or block that a running step follows runs too."),
    ]
    for option in reversed(options):
        func = option(func)
    return _repo_options(func)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="pipegen")
def cli() -> None:
    """Decide which CI steps a change needs and schedule them on the right hardware.

    \b
    Example:
      pipegen select                      # what would CI run for my change?
      pipegen render | buildkite-agent pipeline upload
    """


@cli.command()
@_selection_options
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
@guard
def select(**options: Any) -> int:
    """Decide every step: run, block or skip, with the reason.

    \b
    Example:
      pipegen select --base origin/main --format json
      git diff --name-only --no-renames main...HEAD | pipegen select --files-from -

    --no-renames makes git list a moved file under its old path too, so a file
    moved out of a watched folder still selects that folder's steps.
    """
    from pipegen.commands.options import SelectOptions
    from pipegen.commands.select import main

    return main(SelectOptions(**options, environ=os.environ), sys.stdout)


@cli.command()
@_selection_options
@click.argument("paths", nargs=-1)
@click.option("--step", "step_keys", multiple=True, metavar="KEY", help="Explain the decision for this step.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@guard
def why(**options: Any) -> int:
    """Explain what a change of each PATH would do, or why a step got its decision.

    Each PATH is decided as 'pipegen select' decides a change of that path alone:
    run-all, docs-only, or the steps it selects (through which entry or rule), the
    steps it matches that still do not run, and the exclusions that drop it.

    \b
    Example: (this repository's own pipeline)
      pipegen why pipegen/selection/decide.py qr_tests/quick_reduce/reference.py
      pipegen why --step quick-reduce-cpu
    """
    from pipegen.commands.options import WhyOptions
    from pipegen.commands.why import main

    if not options["paths"] and not options["step_keys"]:
        raise click.UsageError("give PATH... or --step KEY")
    return main(WhyOptions(**options, environ=os.environ), sys.stdout)


@cli.command()
@_selection_options
@click.option("--templates", metavar="DIR", help="Templates that override the shipped ones (pipeline.j2, command.j2, "
              "block.j2, docker.j2, kubernetes.j2, plain.j2); see templates/ in pipegen's source. A change to a "
              "file in DIR selects the steps rendered through it.")
@click.option("--annotation", "annotation_file", metavar="FILE", help="Write Markdown for 'buildkite-agent annotate': "
              "counts, reasons, hardware of every step.")
@click.option("--annotate", is_flag=False, flag_value="pipegen", metavar="[CONTEXT]", help="Post that Markdown "
              "with 'buildkite-agent annotate --context CONTEXT' (default context: pipegen), style error when "
              "nothing can be uploaded, warning after a WARNING (an untrusted diff), else info; cut to 1 MiB. A "
              "failed annotate is a WARNING, never a failed render.")
@click.option("--annotate-timeout", type=click.FloatRange(min=0, min_open=True), default=30.0, show_default=True,
              metavar="SECONDS", envvar="PIPEGEN_ANNOTATE_TIMEOUT", help="Stop 'buildkite-agent annotate' after "
              "this long (also $PIPEGEN_ANNOTATE_TIMEOUT).")
@guard
def render(**options: Any) -> int:
    """Print the Buildkite pipeline for the change: each step on its hardware's queue.

    The output is validated against Buildkite's schema (and the 500-job upload
    limit) before anything is printed.

    \b
    Example:
      pipegen render --annotate | buildkite-agent pipeline upload
      pipegen render --annotation why.md > pipeline.yml
    """
    from pipegen.commands.options import RenderOptions
    from pipegen.commands.render import main

    return main(RenderOptions(**options, environ=os.environ), sys.stdout)


@cli.command()
@_selection_options
@click.option("--step", "step_keys", multiple=True, metavar="KEY", help="Run this step whatever changed (a fanned-out "
              "step's own key: all its hardware targets); repeatable.")
@click.option("--hardware", metavar="SPEC", help="This machine's hardware instead of detecting it: 'cpu', "
              "'nvidia:sm_90:2', 'amd:gfx942:8', 'intel:pvc', 'apple:m2' (also $PIPEGEN_HARDWARE).")
@click.option("--dry-run", is_flag=True, help="Print the plan (hardware, working directory, env, commands); "
              "run nothing.")
@click.option("--keep-going", is_flag=True, help="Run the remaining steps after one fails.")
@click.option("--log-dir", metavar="DIR", help="Where each step's log goes (default: .pipegen/logs in the repository).")
@click.option("--junit", metavar="FILE", help="Write JUnit XML (one testcase per step) to FILE.")
@click.option("--timeout-scale", type=click.FloatRange(min=0, min_open=True), default=1.0, show_default=True,
              envvar="PIPEGEN_TIMEOUT_SCALE", help="Multiply every timeout_in_minutes (also $PIPEGEN_TIMEOUT_SCALE).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="json: the plan and each job's outcome as one object on stdout; progress and failed steps' "
              "logs go to stderr.")
@guard
def run(**options: Any) -> int:
    """Run the selected steps here, on the first hardware target this machine has.

    Exit 0 when every step that ran passed, 1 when one failed or timed out
    (or a --step cannot run here), 2 on a usage or declaration error, 130 on Ctrl-C.

    \b
    Example:
      pipegen run --dry-run               # what would run here for my change?
      pipegen run --step quick-reduce-cpu --junit out/junit.xml
    """
    from pipegen.commands.options import RunOptions
    from pipegen.commands.run import main

    return main(RunOptions(**options, environ=os.environ), sys.stdout)


@cli.command()
@_repo_options
@click.option("--tracked-files", metavar="FILE", help="Check against the paths listed in FILE ('-' = stdin) "
              "instead of 'git ls-files' (imports are followed only where the files are on disk).")
@click.option("--amd-file", metavar="PATH", help="Compare mirror.amd steps with this legacy AMD file (default: "
              "test-amd.yaml next to a vLLM ci_config.yaml, when there is one).")
@click.option("--strict", "strict_mode", is_flag=True, help="Warnings are errors (e.g. uncovered imports).")
@click.option("--orphans", is_flag=True, help="Also list tracked source files no step depends on (information).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
@click.option("--detail", is_flag=True, help="Text and Markdown: every finding and every file of a grouped one "
              "(default: at most 200 lines, errors first; JSON always lists everything).")
@guard
def check(**options: Any) -> int:
    """Find what would let a test be skipped silently: stale dependencies, tests that do not
    select their step, uncovered imports, unknown hardware, drifted AMD twins, upload limits.

    Exit 0 when clean (warnings allowed), 1 when there are errors, 2 when the
    declarations cannot be read.

    \b
    Example:
      pipegen check --strict
      pipegen check --tracked-files tracked-files.txt --format json
    """
    from pipegen.commands.check import main
    from pipegen.commands.options import CheckOptions

    return main(CheckOptions(**options, environ=os.environ), sys.stdout)


@cli.command()
@_repo_options
@click.option("--last", type=click.IntRange(min=1), metavar="N", help="Replay the last N first-parent commits of "
              "HEAD (default: 100).")
@click.option("--range", "rev_range", metavar="A..B", help="Replay the first-parent commits after A up to B.")
@click.option("--durations", metavar="FILE", help="Minutes per job of each step (CSV 'key,minutes' or JSON "
              "{key: minutes}): report machine-minutes (a job counts its GPUs) instead of job counts.")
@click.option("--compare", "compare_ref", metavar="REF", help="Also replay with the declarations as they are at REF; "
              "list per step the commits it would gain and lose (losses first).")
@click.option("--fail-on-loss", is_flag=True, help="Exit 1 when a step would lose a commit against --compare REF.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
@guard
def audit(**options: Any) -> int:
    """Replay history through the declarations: what each commit ran, which steps never ran,
    what selection saved, and (--compare REF) which commits a declaration change would stop
    running a step on.

    Exit 0 when done, 1 when --fail-on-loss finds a loss, 2 on a usage error.

    \b
    Example:
      pipegen audit --last 500 --durations durations.csv
      pipegen audit --last 200 --compare origin/main --fail-on-loss --format markdown
    """
    from pipegen.commands.audit import main
    from pipegen.commands.options import AuditOptions

    return main(AuditOptions(**options, environ=os.environ, progress=sys.stderr), sys.stdout)


@cli.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--out", "out_dir", metavar="DIR", help="The folder to write the declarations in, pipegen's own "
              "(default: .buildkite/pipegen/ beside the first FILE).")
@click.option("--force", is_flag=True, help="Replace DIR when it holds only files pipegen import wrote.")
@click.option("--paths-field", metavar="NAME", help="A step field of another selector's (a list of paths, such as "
              "Materialize's 'inputs') to read as the step's source_file_dependencies.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@guard
def import_(**options: Any) -> int:
    """Convert hand-written Buildkite pipelines into pipegen's declarations and prove them equal.

    Renders the result with --all and compares it with the input as Buildkite reads
    both. Exit 0 when equal, 1 listing what could not be carried over (the files are
    still written), 2 on bad input.

    \b
    Example:
      pipegen import .buildkite/pipeline.yml
      pipegen import .buildkite/pipeline.yml .buildkite/release.yml --out ci/pipegen --force
    """
    from pipegen.commands.import_ import main
    from pipegen.commands.options import ImportOptions

    return main(ImportOptions(**options, environ=os.environ), sys.stdout)


@cli.command()
@click.argument("kind", type=click.Choice(["config", "steps", "hardware", *(f"{c}-output" for c in SCHEMA_OUTPUTS)]),
                default="config")
@guard
def schema(kind: str, **_terminal: Any) -> int:  # JSON only: -q/-v/--color change nothing but errors
    """Print the JSON Schema of pipegen's config (default), steps files or hardware inventory, or of a command's
    --format json output."""
    from pipegen.commands.schema import main

    return main(kind, sys.stdout)


def main() -> None:
    if sys.stdout is None:  # started with stdout closed (`>&-`): Python gives no stream at all
        output_failed("standard output is closed")
    try:
        cli(prog_name="pipegen")
    except KeyboardInterrupt:
        click.echo("pipegen: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)

