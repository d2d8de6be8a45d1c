"""Jobs on hardware -> Buildkite YAML, through Jinja templates. Pure core, I/O at the edge.

The stages:
  plan()      decisions + jobs -> what goes into the pipeline (run, block pair,
              skip step, omitted), with keys made valid and unique, every
              dependency of a selected step pulled in, and the 500-job limit kept;
  render()    the plan -> YAML text through the templates (templates/*.j2, or a
              user's --templates DIR that overrides any of them);
  check()     the text parsed back and validated against Buildkite's schema,
              unique keys, known depends_on targets and the job limit; any
              problem is an OutputError and nothing is printed (pipeline_check.py).

No user string reaches the YAML raw: every `{{ expression }}` in a template
goes out through `scalar()` unless it is explicitly marked safe, and `$` in
user text is doubled as the config asks (yamlout.py says how and why).
"""

from __future__ import annotations

import os
import sys
from typing import Any, Mapping, Sequence

from pipegen.cache import cache_dir
from pipegen.errors import OutputError, UsageError
from pipegen.model import Declarations, Selection, Step
from pipegen.render.command_step import command_item, skip_text
from pipegen.render.output_check import check
from pipegen.buildkite.limits import JOB_LIMIT
from pipegen.render.yaml_writer import Safe, block, flow, scalar
from pipegen.buildkite.dollars import Dollars
from pipegen.buildkite.keys import BLOCK_PREFIX, key_map, unique_key, valid_key

UNSELECTED = ("block", "skip", "omit")
PRESENT = frozenset({"run", "blocked", "skip-step"})  # the states a step is in the pipeline with

# --------------------------------------------------------------------------- plan


class Row:
    """One step as the annotation shows it."""

    __slots__ = ("step", "key", "hardware", "queue", "action", "reason")

    def __init__(self, step: Step, key: str, hardware: str, queue: str, action: str, reason: str):
        self.step = step
        self.key = key  # rendered key
        self.hardware = hardware
        self.queue = queue
        self.action = action  # run | blocked | skip-step | omitted | left out
        self.reason = reason


class Plan:
    """What goes into the pipeline: groups of items (dicts for the templates), and why.

    entries: top level, in order: {"group": name or None, "steps": [item, ...]};
    rows: one Row per declared step; jobs: Buildkite jobs in the upload (groups,
    blocks, commands times parallelism); folded: keys omitted to stay under the
    limit; renamed: (declared, rendered) keys.
    """

    def __init__(self, entries: list[dict[str, Any]], rows: list[Row], selection: Selection, unselected: str,
                 jobs: int = 0, limit: int = JOB_LIMIT, folded: list[str] | None = None,
                 renamed: list[tuple[str, str]] | None = None):
        self.entries = entries
        self.rows = rows
        self.selection = selection
        self.unselected = unselected
        self.jobs = jobs
        self.limit = limit
        self.folded = folded or []
        self.renamed = renamed or []
        self.notes: list[str] = []


def plan(decl: Declarations, selection: Selection, placed: Sequence[Any], *, unselected: str | None = None,
         limit: int = JOB_LIMIT) -> Plan:
    """Decide the pipeline's items. `placed`: one hardware.Job per step, in order."""
    mode = unselected or decl.settings.unselected
    if mode not in UNSELECTED:
        raise UsageError(f"--unselected must be one of {', '.join(UNSELECTED)}, got {mode!r}")
    dollars = Dollars(decl.settings.interpolate)
    keys = key_map(decl.steps)
    used = set(keys.values())
    block_keys = {s.key: unique_key(valid_key(BLOCK_PREFIX + keys[s.key]), used) for s in decl.steps}
    jobs_by_key = {job.step.key: job for job in placed}
    decisions = {d.step.key: d for d in selection.decisions}
    by_key = decl.by_key()

    # Every dependency of a selected step runs too (transitively).
    shown: dict[str, str] = {}
    needed_by: dict[str, str] = {}
    pending = [d.step.key for d in selection.decisions if d.action == "run"]
    for key in pending:
        shown[key] = "run"
    for key in pending:  # breadth first, in declaration order: the first dependent is named
        for target in by_key[key].depends_on:
            if shown.get(target) != "run":
                shown[target] = "run"
                needed_by[target] = key
                pending.append(target)
    for d in selection.decisions:
        if d.step.key in shown:
            continue
        if d.action == "skip":
            shown[d.step.key] = "left out"
        else:  # block: --unselected decides
            shown[d.step.key] = {"block": "blocked", "skip": "skip-step", "omit": "omitted"}[mode]

    folded: list[str] = []
    count = _count(decl.steps, shown)
    if count > limit:
        # Fold: omit every unselected step; fail only when the selected ones alone are too many.
        for key, state in shown.items():
            if state in ("blocked", "skip-step"):
                shown[key] = "omitted"
                folded.append(key)
        count = _count(decl.steps, shown)

    entries: list[dict[str, Any]] = []
    groups: dict[str, dict[str, Any]] = {}
    rows: list[Row] = []
    for step in decl.steps:
        job = jobs_by_key[step.key]
        decision = decisions[step.key]
        state = shown[step.key]
        reason = decision.reasons[0].text if decision.reasons else ""
        if step.key in needed_by and decision.action != "run":
            reason = f"needed by selected step '{needed_by[step.key]}' (depends_on); was: {reason}"
        if step.key in folded:
            reason = f"omitted to stay within {limit} jobs; was: {reason}"
        rows.append(Row(step, keys[step.key], job.hardware, job.queue or "", state, reason))
        if state not in PRESENT:
            continue
        depends = [keys[t] for t in step.depends_on if shown.get(t) in PRESENT]
        items = []
        if state == "blocked":
            items.append({"type": "block", "key": block_keys[step.key], "block": dollars(f"Run {step.label}"),
                          "step": step})
            depends.insert(0, block_keys[step.key])
        items.append(command_item(step, job, keys[step.key], depends, dollars,
                              skip=skip_text(reason, dollars) if state == "skip-step" else None))
        name = step.group
        if name:
            if name not in groups:
                groups[name] = {"group": dollars(name), "steps": []}
                entries.append(groups[name])
            groups[name]["steps"].extend(items)
        else:
            entries.extend({"group": None, "steps": [item]} for item in items)
    renamed = [(s.key, keys[s.key]) for s in decl.steps if keys[s.key] != s.key]
    result = Plan(entries=entries, rows=rows, selection=selection, unselected=mode, jobs=count, limit=limit,
                  folded=folded, renamed=renamed)
    if selection.skip_all:
        result.notes.append(f"No steps: {selection.skip_reason}. The pipeline is `steps: []`.")
    if count > limit:
        raise LimitError(result)
    return result


class LimitError(OutputError):
    def __init__(self, result: Plan):
        selected = sum(1 for r in result.rows if r.action == "run")
        super().__init__(
            f"the pipeline needs {result.jobs} Buildkite jobs for {selected} selected steps, more than the "
            f"{result.limit} that one upload may hold (unselected steps are already omitted)",
            fix="select fewer steps (--only KEY, a narrower change), lower 'parallelism', or split the pipeline")
        self.plan = result


def _count(steps: Sequence[Step], shown: Mapping[str, str]) -> int:
    """Jobs as Buildkite counts them: each group, block and command step; parallelism multiplies."""
    total = 0
    groups: set[str] = set()
    for step in steps:
        state = shown[step.key]
        if state not in PRESENT:
            continue
        if step.group and step.group not in groups:
            groups.add(step.group)
            total += 1
        total += (step.parallelism or 1) + (state == "blocked")
    return total


def builtin_templates() -> str:
    """The folder of the shipped templates (the wheel's pipegen/templates, or the repo's templates/).

    Found beside this file rather than through importlib.resources, whose imports (zipfile
    among them) every render would pay; Jinja's FileSystemLoader needs a real folder anyway.
    """
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    installed = os.path.join(package, "templates")
    if os.path.isfile(os.path.join(installed, "pipeline.j2")):
        return installed
    return os.path.join(os.path.dirname(package), "templates")


def environment(templates: str | None = None) -> Any:
    """The Jinja environment: a user's folder first, then the shipped templates (also as builtin/NAME)."""
    from jinja2 import ChoiceLoader, Environment, FileSystemLoader, PrefixLoader, StrictUndefined

    builtin = FileSystemLoader(builtin_templates())
    loaders: list[Any] = []
    if templates:
        if not os.path.isdir(templates):
            raise UsageError(f"--templates {templates}: not a folder", fix="pass a folder of *.j2 templates")
        loaders.append(FileSystemLoader(templates))
    loaders += [builtin, PrefixLoader({"builtin": builtin})]
    bytecode_cache = None
    folder = cache_dir()
    if folder:
        from jinja2 import FileSystemBytecodeCache

        class QuietCache(FileSystemBytecodeCache):
            """A cache that is only an optimisation: an unreadable or unwritable one is no error."""

            def load_bytecode(self, bucket: Any) -> None:
                try:
                    super().load_bytecode(bucket)
                except (OSError, ValueError, EOFError):
                    bucket.reset()

            def dump_bytecode(self, bucket: Any) -> None:
                try:
                    super().dump_bytecode(bucket)
                except OSError:
                    pass

        try:
            os.makedirs(os.path.join(folder, "jinja"), exist_ok=True)
            bytecode_cache = QuietCache(os.path.join(folder, "jinja"))
        except OSError:
            bytecode_cache = None
    env = Environment(
        loader=ChoiceLoader(loaders),
        undefined=StrictUndefined,
        autoescape=False,
        finalize=scalar,  # every {{ expression }} goes out as a safe YAML scalar unless marked Safe
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        bytecode_cache=bytecode_cache,
        auto_reload=False,
    )
    env.filters["q"] = scalar
    env.filters["flow"] = flow
    env.filters["block"] = block
    env.filters["raw"] = Safe  # deliberate opt-out: the template author vouches for the text
    return env


def render(result: Plan, templates: str | None = None) -> str:
    """The plan as YAML text (not yet validated)."""
    from jinja2 import TemplateError

    env = environment(templates)
    try:
        return env.get_template("pipeline.j2").render(entries=result.entries, plan=result)
    except TemplateError as exc:
        where = _template_frame(exc)
        raise UsageError(f"template error in {where}: {exc}",
                         fix="fix the template (see templates/ for the shipped ones)") from None


def _template_frame(exc: Exception) -> str:
    """'block.j2:3' for the innermost template line of a Jinja error (Jinja maps frames to templates)."""
    import traceback

    name = getattr(exc, "filename", None) or getattr(exc, "name", None)
    line = getattr(exc, "lineno", None)
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        filename = frame.f_code.co_filename
        if filename.endswith(".j2"):
            name, line = filename, lineno
    if not name:
        return "a template"
    shown = os.path.basename(name) if os.path.dirname(name) == builtin_templates() else name
    return f"{shown}:{line}" if line else shown


# --------------------------------------------------------------------------- the command


class Rendered:
    """The validated text of a pipeline, and the plan it came from (for the annotation)."""

    def __init__(self, text: str, plan: Plan):
        self.text = text
        self.plan = plan

    @property
    def annotation(self) -> str:
        from pipegen.render.annotate import annotation

        return annotation(self.plan)


def render_pipeline(decl: Declarations, selection: Selection, *, unselected: str | None = None,
                    templates: str | None = None, limit: int = JOB_LIMIT) -> Rendered:
    """Declarations + decisions -> validated YAML and its annotation. Pure but for reading templates."""
    from pipegen.hardware.placement import jobs
    from pipegen.hardware.inventory import load_inventory

    inventory = load_inventory(decl)
    placed = jobs(decl, inventory)
    result = plan(decl, selection, placed, unselected=unselected, limit=limit)
    text = render(result, templates)
    check(text, limit)
    return Rendered(text=text, plan=result)


def run(args: Any, *, unselected: str | None, templates: str | None, annotation_file: str | None,
        environ: Mapping[str, str] | None = None) -> int:
    """`pipegen render`: select, render, validate; print only a valid pipeline."""
    from pipegen.selection.chain import select, warn_if_untrusted

    decl, selection = select(args, environ)
    warn_if_untrusted(selection)
    try:
        rendered = render_pipeline(decl, selection, unselected=unselected, templates=templates)
    except LimitError as exc:
        if annotation_file:
            from pipegen.render.annotate import annotation

            _write(annotation_file, annotation(exc.plan, error=str(exc.message)))
        raise
    if annotation_file:
        _write(annotation_file, rendered.annotation)
    out = sys.stdout.buffer if hasattr(sys.stdout, "buffer") else None
    if out is not None:
        sys.stdout.flush()
        out.write(rendered.text.encode("utf-8"))
        out.flush()
    else:  # pragma: no cover - a text-only stream (tests)
        sys.stdout.write(rendered.text)
    return 0


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise UsageError(f"cannot write --annotation {path}: {exc.strerror}", fix="pass a writable path") from None
