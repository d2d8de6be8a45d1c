"""The task chain every command shares: declarations -> changes -> decisions.

Each link is a small function of explicit inputs (the environment is
passed in, never read behind the caller's back), so the chain is easy to
test and the commands stay thin.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from pipegen.errors import EXIT_FINDINGS, PipegenError, UsageError
from pipegen.frozen import frozen
from pipegen.model import ChangeSet, Declarations, LabelRule, Options, Selection, Settings

if TYPE_CHECKING:
    from pipegen.selection.inputs import Input


class DiffError(PipegenError):
    """--strict-diff and the diff cannot be trusted."""

    exit_code = EXIT_FINDINGS


@frozen
class SelectArgs:
    """What the selection options of the CLI ask for."""

    root: str = "."
    config: str | None = None
    base: str | None = None
    files_from: str | None = None
    committed_only: bool = False
    fetch_base: bool = False
    strict_diff: bool = False
    only: tuple[str, ...] = ()
    run_all: bool = False
    nightly: bool = False
    unselected: str | None = None  # block, skip or omit; None: the config's


def load_declarations(args: SelectArgs, environ: Mapping[str, str]) -> Declarations:
    """The declarations, each step's derived entries computed from the tree as it is (graph/expand.py)."""
    from pipegen.dialects.load import load

    decl = load(args.root, args.config, environ)
    if not any(step.derive for step in decl.steps):
        return decl  # nothing to derive: render's path imports nothing of graph/ (hashlib, json)
    from pipegen.graph.expand import expand

    return expand(decl, environ)


def options_from(args: SelectArgs, decl: Declarations, environ: Mapping[str, str]) -> Options:
    only: tuple[str, ...] | None = tuple(args.only) or None
    if only is None:
        for name in ("PIPEGEN_ONLY_STEP_KEYS", "VLLM_CI_ONLY_STEP_KEYS"):
            if name in environ:  # set but empty is refused below, as vLLM's generator refuses it
                only = _json_keys(name, environ[name])
                break
    run_all = "--all" if args.run_all else ""
    for name in decl.settings.run_all_env:
        if not run_all and environ.get(name) == "1":
            run_all = f"{name}=1"
    label_all, label_nightly, label_only = label_selection(decl.settings.labels, environ)
    if label_only and only is None:
        only = label_only
    branch_all, branch_nightly = branch_policy(decl.settings, environ)
    nightly = args.nightly or environ.get("NIGHTLY") == "1" or label_nightly
    return Options(
        only=only,
        nightly=nightly or bool(branch_nightly),
        nightly_reason="" if nightly else branch_nightly,
        run_all=run_all or label_all or branch_all,
        noauto=environ.get("NOAUTO") == "1",
        # vLLM's generator skips a docs-only change only where DOCS_ONLY_DISABLE is unset or 0.
        docs_only_disable=environ.get("DOCS_ONLY_DISABLE", "0") != "0",
        added=label_additions(decl.settings.labels, environ),
        unselected=args.unselected,
    )


def build_branch(environ: Mapping[str, str]) -> str | None:
    """The branch of a Buildkite build that is not a pull request ($BUILDKITE_BRANCH); None elsewhere: a
    pull request, or a run outside Buildkite, is decided by its change."""
    branch = environ.get("BUILDKITE_BRANCH", "")
    if not branch or environ.get("BUILDKITE_PULL_REQUEST", "false") not in ("", "false"):
        return None
    return branch


def branch_policy(settings: Settings, environ: Mapping[str, str]) -> tuple[str, str]:
    """Why this build runs everything, and why it is a nightly build, by the config's branch lists ("" = not)."""
    branch = build_branch(environ)
    if branch is None or not (settings.run_all_branches or settings.nightly_branches):
        return "", ""
    from pipegen.buildkite.branches import includes

    def says(patterns: tuple[str, ...], name: str, what: str) -> str:
        if not patterns or not includes(patterns, branch):
            return ""
        return f"builds of branch {branch} {what} ({name}: {' '.join(patterns)})"

    return (says(settings.run_all_branches, "run_all_branches", "run everything"),
            says(settings.nightly_branches, "nightly_branches", "are nightly builds"))


# vLLM's generator refuses a key outside this pattern (ci-infra global_config.STEP_KEY_PATTERN).
VLLM_KEY = re.compile(r"[a-zA-Z0-9_-]+")


def label_selection(rules: tuple[LabelRule, ...],
                    environ: Mapping[str, str]) -> tuple[str, bool, tuple[str, ...] | None]:
    """What the pull request's labels ($BUILDKITE_PULL_REQUEST_LABELS) ask for: run-all reason, nightly, keys."""
    labels = {label.strip() for label in environ.get("BUILDKITE_PULL_REQUEST_LABELS", "").split(",")}
    run_all, nightly, only = "", False, []
    for rule in rules:
        if rule.label in labels:
            run_all = run_all or (f"pull-request label {rule.label}" if rule.run_all else "")
            nightly = nightly or rule.nightly
            only += [key for key in rule.only if key not in only]
    return run_all, nightly, tuple(only) or None


def label_additions(rules: tuple[LabelRule, ...], environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The steps the pull request's labels add: (key, label), each key once (its first label)."""
    labels = {label.strip() for label in environ.get("BUILDKITE_PULL_REQUEST_LABELS", "").split(",")}
    out: dict[str, str] = {}
    for rule in rules:
        if rule.label in labels:
            for key in rule.add:
                out.setdefault(key, rule.label)
    return tuple(out.items())


def _json_keys(name: str, text: str) -> tuple[str, ...]:
    """A non-empty JSON array of distinct keys, refused like vLLM's generator does: an empty list
    would otherwise skip every step without a word."""
    fix = f'write {name}=\'["key-1", "key-2"]\' (unset it to select by the change)'
    try:
        keys = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{name} is not valid JSON: {exc}", fix=fix) from None
    if not isinstance(keys, list) or not keys:
        raise UsageError(f"{name} must be a non-empty JSON array of step keys", fix=fix)
    pattern = VLLM_KEY if name.startswith("VLLM_") else None
    for key in keys:
        if not isinstance(key, str) or not key.strip() or (pattern and not pattern.fullmatch(key)):
            raise UsageError(f"{name} contains an invalid step key: {json.dumps(key)}", fix=fix)
    duplicates = sorted({k for k in keys if keys.count(k) > 1})
    if duplicates:
        raise UsageError(f"{name} contains duplicate step keys: {', '.join(duplicates)}", fix="list each key once")
    return tuple(keys)


def read_changes(args: SelectArgs, decl: Declarations, environ: Mapping[str, str]) -> ChangeSet:
    if args.files_from:
        return _listed_changes(args, decl, environ)
    from pipegen.selection.changes import changed_files

    changes = changed_files(
        args.root,
        base=args.base,
        base_branch=decl.settings.base_branch,
        environ=environ,
        committed_only=args.committed_only,
        fetch_base=args.fetch_base,
        base_env=decl.settings.base_env,
    )
    if not changes.trusted and args.strict_diff:
        raise DiffError(f"the diff cannot be trusted: {changes.reason}",
                        fix="fetch the base branch, or drop --strict-diff")
    return changes


def _listed_changes(args: SelectArgs, decl: Declarations, environ: Mapping[str, str]) -> ChangeSet:
    """--files-from: the listed paths (selection/file_list.py), repository-relative. An empty list is said
    out loud (a failed `git diff` piped in gives one), and so is a path that names nothing."""
    from pipegen.selection.file_list import read_list

    source = args.files_from or "-"
    listed = read_list(_read_source(source, "--files-from"), source)
    each = repository_paths([item.path for item in listed], args.root, unique=False)
    files = tuple(dict.fromkeys(each))
    if not files:
        warnings: tuple[str, ...] = (f"no changed files given ({source} is empty): nothing is selected by a change",)
    else:
        given: dict[str, str] = {}
        for path, item in zip(each, listed, strict=True):
            given.setdefault(path, item.given)
        warnings = _unknown_paths(files, given, args, decl, environ)
    return ChangeSet(files, reason=f"file list from {source}", warnings=warnings)


def _unknown_paths(files: Sequence[str], given: Mapping[str, str], args: SelectArgs, decl: Declarations,
                   environ: Mapping[str, str]) -> tuple[str, ...]:
    """The warning for listed paths that name no file here, in HEAD or the base, and that no step's entry
    matches (cheapest test first: git runs only when a path is neither on disk nor matched). `given`: each
    path as the list wrote it."""
    from pipegen.git import known_paths
    from pipegen.selection.file_list import unknown

    root = os.path.realpath(decl.root)
    missing = unknown([p for p in files if not os.path.lexists(os.path.join(root, p))], (), decl.steps)
    if missing:
        missing = unknown(missing, known_paths(root, decl.settings.base_branch, environ), ())
    if not missing:
        return ()
    shown = ", ".join(repr(given.get(p, p)) for p in missing[:5]) + (f" and {len(missing) - 5} more"
                                                                     if len(missing) > 5 else "")
    return (f"--files-from {args.files_from}: {shown} names no tracked file, no file of HEAD or the base "
            f"branch ({decl.settings.base_branch}) and no step's dependency entry, so it selects nothing "
            "(a typo, or a path of another checkout?)",)


def repository_paths(paths: Sequence[str], root: str, option: str = "--files-from", unique: bool = True) -> list[str]:
    """Paths as a user gives them, repository-relative (selection/relative_paths.py); a UsageError for one outside.
    `unique`: each once; else one per path given, in order."""
    from pipegen.selection.relative_paths import repo_relative

    # Only the folder is resolved: a symlink inside the repository is a changed file of its own.
    listed = [os.path.join(os.path.realpath(os.path.dirname(p)), os.path.basename(p)) if os.path.isabs(p) else p
              for p in paths]
    return repo_relative(listed, os.path.realpath(root), option, unique)


def read_file_list(source: str, option: str = "--files-from") -> list[str]:
    """Paths from a file (or '-' for stdin) as tools write them (selection/file_list.py); `option` names it."""
    from pipegen.selection.file_list import read_list

    return [item.path for item in read_list(_read_source(source, option), source, option)]


def _read_source(source: str, option: str) -> bytes:
    import sys

    try:
        if source == "-":
            return sys.stdin.buffer.read()
        with open(source, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise UsageError(f"cannot read {option} {source}: {exc.strerror}", fix="pass an existing file or '-'") from None


def select(args: SelectArgs, environ: Mapping[str, str] | None = None) -> tuple[Declarations, Selection]:
    """Declarations, changes and decisions: the chain behind select, why and run."""
    environ = os.environ if environ is None else environ
    decl = load_declarations(args, environ)
    return decl, select_for(decl, args, environ)


def select_for(decl: Declarations, args: SelectArgs, environ: Mapping[str, str],
               more_inputs: Sequence[Input] = ()) -> Selection:
    """Changes and decisions for declarations already loaded (render places their steps first).

    `more_inputs`: files besides the config and inventory that the command reads (render's templates)."""
    from pipegen.selection.decide import decide
    from pipegen.selection.uncovered import refuse

    options = options_from(args, decl, environ)
    changes = read_changes(args, decl, environ)
    selection = decide(decl, changes, options, more_inputs)
    refuse(selection, decl.settings)  # `uncovered: fail`
    return selection


def warn_if_untrusted(selection: Selection) -> None:
    """Fail safe, never quiet: say on stderr why everything was selected."""
    import sys

    if not selection.changes.trusted:
        sys.stderr.write(f"pipegen: WARNING: {selection.run_all_reason}\n")
    for warning in selection.changes.warnings:
        sys.stderr.write(f"pipegen: WARNING: {warning}\n")
    if selection.uncovered:  # no silent uncovered change (selection/uncovered.py)
        from pipegen.selection.uncovered import warning as uncovered

        text = selection.run_all_reason if selection.run_all else uncovered(selection.uncovered)
        sys.stderr.write(f"pipegen: WARNING: {text}\n")
