"""Decide every step: run, block or skip, each with its reasons. Pure.

The rules, first that applies wins (vLLM's order, shared/spec/vllm-ci.md):
docs-only skip of the whole change; wait, block and input steps (always in the pipeline,
unless explicit keys leave them out); NOAUTO; explicit keys; hardware rules that override
`optional`; always-run keys; steps a pull-request label adds; nightly; optional; the other
hardware rules; run-all; dependency match; the configured action for a step without
dependencies; else block.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import replace

from pipegen.buildkite.keys import declared_keys
from pipegen.dialects.load import dialect
from pipegen.errors import UsageError
from pipegen.model import STRUCTURE, ChangeSet, Decision, Declarations, Options, Reason, Rule, Selection, Settings, Step
from pipegen.selection.derived import derived_entries, derived_text
from pipegen.selection.inputs import Input, own_inputs
from pipegen.selection.matching import StepIndex, first_match
from pipegen.selection.uncovered import run_all_reason as uncovered_reason
from pipegen.selection.uncovered import uncovered_files
from pipegen.selection.uncovered import warning as uncovered_warning
from pipegen.selection.waited_for import conditions, with_dependencies
from pipegen.shown import shown
from pipegen.states import Action


def decide(decl: Declarations, changes: ChangeSet, options: Options, inputs: Sequence[Input] = ()) -> Selection:
    """The one decision behind every command: select, why, render, run and audit all call it, so they tell
    one story. `inputs`: files pipegen reads besides the config and the inventory (render's templates)."""
    settings = decl.settings
    changed = [f for f in changes.files if f]
    files, via = _as_read(decl, changed)
    warnings: list[str] = [str(w) for w in decl.warnings] + list(changes.warnings)

    read = list(dict.fromkeys((*own_inputs(decl), *inputs)))  # pipegen's own inputs: never an uncovered change
    input_hits = _input_hits(read, files, warnings)
    everything = input_hits.pop(None, None)
    asked = _run_all(changes, options)  # --all, an untrusted diff: every step, run_all_exempt ones too
    run_all_reason = asked or _run_all_pattern(settings, files) or (
        _as_named(everything.text, everything.file, via) if everything else "")
    only = closure(decl, options.only) if options.only is not None else None
    added = _added(decl, options.added)
    skip_reason = ""
    uncovered: tuple[str, ...] = ()
    if not (options.docs_only_disable or run_all_reason or only is not None) and _docs_only(settings, files):
        skip_reason = f"docs-only change: all {len(changed)} changed file(s) match {', '.join(settings.docs_only)}"

    if skip_reason:
        decisions = [Decision(step, "skip", (Reason("docs-only", skip_reason),)) for step in decl.steps]
    else:
        index = step_index(decl.steps)
        matched = index.matches(files)
        # Which file fires each rule does not depend on the step: match once.
        rule_hits = [(rule, first_match(rule.changed, files, settings.entry_kind)) for rule in settings.rules]
        if not run_all_reason and changes.trusted:
            uncovered = uncovered_files(settings, index, files, [item.entry for item in read], via)
            if uncovered and settings.uncovered == "run_all":
                run_all_reason = uncovered_reason(uncovered)
            elif uncovered:
                warnings.append(uncovered_warning(uncovered))
        decisions = []
        for step, match in zip(decl.steps, matched, strict=True):
            run_all = _forced(step, run_all_reason, asked) if run_all_reason else None
            forced = run_all or input_hits.get(step.key)
            action, reason = _decide_step(step, match, settings, rule_hits, options, only, forced, added.get(step.key))
            if run_all_reason and run_all is None and reason.rule in ("no-match", "no-dependencies"):
                reason = Reason("run-all-exempt", f"run_all_exempt: everything else runs ({run_all_reason}); "
                                f"{reason.text}")
            if reason.file is not None and reason.file in via:  # say the path git names
                reason = replace(reason, text=_as_named(reason.text, reason.file, via), file=via[reason.file])
            decisions.append(Decision(step, action, (reason, *conditions(step, action))))
        decisions = with_dependencies(decl, decisions, options.unselected or settings.unselected)
    return Selection(
        decisions=tuple(decisions),
        changes=changes,
        run_all_reason=run_all_reason,
        skip_reason=skip_reason,
        warnings=tuple(warnings),
        uncovered=tuple(uncovered),
    )


_INDEXED: list[tuple[Sequence[Step], StepIndex]] = []  # the last steps indexed: `why` decides path by path


def step_index(steps: Sequence[Step]) -> StepIndex:
    """The entries of `steps` indexed, once for the same steps (kept alive here, so compared by identity)."""
    if not _INDEXED or _INDEXED[0][0] is not steps:
        _INDEXED[:] = [(steps, StepIndex(steps))]
    return _INDEXED[0][1]


def _as_read(decl: Declarations, files: list[str]) -> tuple[list[str], dict[str, str]]:
    """The changed files, plus the path each changed declaration file was read by where git names it otherwise
    (a steps folder reached through a symbolic link: git names the link's target, or the link itself); and
    for each such path, the changed file it stands for."""
    via: dict[str, str] = {}
    if decl.aliases:
        present = set(files)
        for path, alias in decl.aliases:
            if path in present and alias not in present:
                via.setdefault(alias, path)
    return [*files, *via], via


def _as_named(text: str, file: str | None, via: dict[str, str]) -> str:
    name = file or ""
    return text.replace(shown(name), f"{shown(via[name])} (read as {shown(name)})", 1) if name in via else text


def steps_by_key(decl: Declarations, keys: Sequence[str]) -> list[Step]:
    """The steps with these keys, in order (a fanned-out step's declared key: all its targets); an unknown
    key is a usage error."""
    by_key = decl.by_key()
    if any(k not in by_key for k in keys):  # a key as render writes it names its step too
        rendered = declared_keys(decl.steps)
        keys = [rendered.get(k, k) for k in keys]
    targets: dict[str, list[Step]] = {}
    for step in decl.steps:
        if step.origin and step.origin not in by_key:
            targets.setdefault(step.origin, []).append(step)
    unknown = [k for k in keys if k not in by_key and k not in targets]
    if unknown:
        raise UsageError(f"unknown step key(s): {', '.join(unknown)}",
                         fix="list keys with 'pipegen select --format json'")
    return [step for k in keys for step in ([by_key[k]] if k in by_key else targets[k])]


def _added(decl: Declarations, added: Sequence[tuple[str, str]]) -> dict[str, Reason]:
    """The steps pull-request labels add (a fanned-out step's own key: all its targets), with what they
    depend on, each with the label that added it. A key that names no step adds nothing (the loader warns)."""
    out: dict[str, Reason] = {}
    for key, label in added:
        targets = [s.key for s in decl.steps if s.key == key or s.origin == key]
        for target in closure(decl, targets):
            how = "adds it" if target in targets else f"adds '{key}', which depends on it"
            out.setdefault(target, Reason("label", f"pull-request label '{label}' {how}", entry=label))
    return out


def closure(decl: Declarations, keys: Sequence[str]) -> frozenset[str]:
    """The named keys and everything they transitively depend on."""
    by_key = decl.by_key()
    dialect(decl.layout).check_keys(decl, keys)
    pending = steps_by_key(decl, keys)
    selected = {step.key for step in pending}
    while pending:
        for dep in decl.needs(pending.pop()):
            if dep not in selected and dep in by_key:  # not an external step
                selected.add(dep)
                pending.append(by_key[dep])
    return frozenset(selected)


def _run_all(changes: ChangeSet, options: Options) -> str:
    """Why every step runs, as asked or failing safe ("" when not): no step is exempt from it."""
    if not changes.trusted:
        return f"the diff cannot be trusted ({changes.reason}): selecting everything"
    return options.run_all


def _forced(step: Step, run_all_reason: str, asked: str) -> Reason | None:
    """Run-all for this step; None for a run_all_exempt step when the change (CI glue) asked for it."""
    return None if step.run_all_exempt and not asked else Reason("run-all", run_all_reason)


def _run_all_pattern(settings: Settings, files: list[str]) -> str:
    """Why a changed file runs everything ("" when none does)."""
    if settings.run_all:
        entries = list(settings.run_all) + ["!" + x for x in settings.run_all_exclude]
        hit = first_match(entries, files, settings.run_all_kind)
        if hit:
            return f"{shown(hit[0])} matches run-all pattern '{hit[1]}'"
    return ""


def _input_hits(inputs: Sequence[Input], files: Sequence[str], warnings: list[str]) -> dict[str | None, Reason]:
    """Why steps run because one of pipegen's own inputs changed (key None: every step); an input
    that shapes no step is a warning, so its change is never silent."""
    hits: dict[str | None, Reason] = {}
    for item in inputs:
        # A path, never a glob: an inventory file may be called 'hw[1].yaml'.
        hit = next((f for f in files if f == item.entry or f.startswith(item.entry + "/")), None)
        if hit is None:
            continue
        if item.keys is not None and not item.keys:
            warnings.append(f"{shown(hit)} changed: it is {item.what}, which shapes no step here: no step runs for it")
            continue
        text = f"{shown(hit)} changed: it is {item.what}, which shapes {'every' if item.keys is None else 'this'} step"
        for key in (None,) if item.keys is None else sorted(item.keys):
            hits.setdefault(key, Reason("pipegen-input", text, hit, item.entry))
    return hits


def _docs_only(settings: Settings, files: list[str]) -> bool:
    """Every file matches an entry and no '!' exclusion (`!docs/conf.py`: a change to it is not docs-only)."""
    entries, kind = settings.docs_only, settings.entry_kind
    return bool(entries) and bool(files) and all(first_match(entries, (f,), kind) for f in files)


def always_run_pattern(step: Step, settings: Settings) -> str | None:
    """The always-run key glob the step (or the step it fans out from) matches (vLLM: mirrors never do,
    their key is generated)."""
    if step.mirror is not None:
        return None
    names = (step.key,) if step.origin is None else (step.key, step.origin)  # a fan-out's declared key
    return next((p for p in settings.always_run if any(fnmatch.fnmatchcase(n, p) for n in names)), None)


def _applies(rule: Rule, step: Step) -> bool:
    if rule.mirror is not None and step.mirror != rule.mirror:
        return False
    if rule.dind is not None and step.dind != rule.dind:
        return False
    device = step.device
    return not rule.devices or (device is not None and any(fnmatch.fnmatchcase(device, d) for d in rule.devices))


def _rule_hit(step: Step, rule_hits: list[tuple[Rule, tuple[str, str] | None]], overriding: bool) -> Reason | None:
    for rule, hit in rule_hits:
        if hit and rule.overrides_optional == overriding and _applies(rule, step):
            return Reason(f"rule:{rule.name}", f"rule '{rule.name}': {shown(hit[0])} changed", hit[0], hit[1])
    return None


def _decide_step(
    step: Step,
    match: tuple[str, str] | None,
    settings: Settings,
    rule_hits: list[tuple[Rule, tuple[str, str] | None]],
    options: Options,
    only: frozenset[str] | None,
    forced: Reason | None,
    label: Reason | None = None,
) -> tuple[Action, Reason]:
    if step.dialect_skip is not None:
        return "skip", step.dialect_skip
    if step.kind in STRUCTURE and (only is None or step.key in only):
        article = "an" if step.kind == "input" else "a"
        return "run", Reason("structure", f"{article} {step.kind} step: part of the pipeline's order, always in it")
    if options.noauto:
        return "block", Reason("noauto", "NOAUTO=1: every step waits to be unblocked")
    if only is not None:
        if step.key in only:
            return "run", Reason("only", "explicitly requested (or a dependency of one)")
        return "skip", Reason("only", "not in the explicit key list")
    rule = _rule_hit(step, rule_hits, overriding=True)
    if rule:
        return "run", rule
    pattern = always_run_pattern(step, settings)
    if pattern:
        return "run", Reason("always-run", f"key matches always-run '{pattern}'", entry=pattern)
    if label:  # a pull-request label adds it: it runs, optional or not
        return "run", label
    if options.nightly:
        return "run", Reason("nightly", f"{options.nightly_reason or 'nightly build'}: every step runs, optional "
                             "ones too")
    if step.optional:
        return "block", Reason("optional", "optional step: runs only when unblocked or nightly")
    rule = _rule_hit(step, rule_hits, overriding=False)
    if rule:
        return "run", rule
    if forced:  # run-all, or one of pipegen's own inputs that shapes this step changed
        return "run", forced
    if match and step.derivation and match[1] in derived_entries(step):
        return "run", Reason("derived", derived_text(step, *match), match[0], match[1])
    if match:
        return "run", Reason("dependency", f"{shown(match[0])} matches '{match[1]}'", match[0], match[1])
    if not step.declares_dependencies:
        action = settings.no_dependencies
        return action, Reason("no-dependencies", f"no source_file_dependencies: {action} by configuration")
    return "block", Reason("no-match", f"no changed file matches its {len(step.dependencies)} dependency entries")
