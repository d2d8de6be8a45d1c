"""The chain behind select, why, render and run (the I/O edge they share): the declarations read, the
change read (git, or a --files-from list: a file or stdin), decided with what the command line and the
environment ask for; an untrusted diff said on stderr.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from pipegen.commands.options import SelectionOptions, TerminalOptions
from pipegen.commands.terminal import detail, warn
from pipegen.errors import EXIT_FINDINGS, PipegenError, UsageError
from pipegen.model import ChangeSet, Declarations, Options, Selection
from pipegen.selection.requested import requested

if TYPE_CHECKING:
    from pipegen.selection.inputs import Input


class DiffError(PipegenError):
    """--strict-diff and the diff cannot be trusted."""

    exit_code = EXIT_FINDINGS


def load_declarations(args: SelectionOptions) -> Declarations:
    """The declarations, each step's derived entries computed from the tree as it is (graph/expand.py)."""
    from pipegen.dialects.load import load

    decl = load(args.root, args.config, args.environ)
    files = ", ".join(decl.files[:3]) + (f" and {len(decl.files) - 3} more files" if len(decl.files) > 3 else "")
    detail(args.terminal, f"declarations: {len(decl.steps)} step{'s' * (len(decl.steps) != 1)} from {files}")
    if not any(step.derive for step in decl.steps):
        return decl  # nothing to derive: render's path imports nothing of graph/ (hashlib, json)
    from pipegen.graph.expand import expand

    return expand(decl, args.environ)


def options_from(args: SelectionOptions, decl: Declarations) -> Options:
    """What this build asks for: the command line's flags and the environment's, resolved."""
    asked = Options(only=tuple(args.only) or None, run_all="--all" if args.run_all else "", nightly=args.nightly,
                    unselected=args.unselected)
    return requested(asked, decl.settings, args.environ)


def read_changes(args: SelectionOptions, decl: Declarations) -> ChangeSet:
    if args.files_from:
        return _listed_changes(args, decl)
    from pipegen.selection.changes import changed_files

    changes = changed_files(
        args.root,
        base=args.base,
        base_branch=decl.settings.base_branch,
        environ=args.environ,
        committed_only=args.committed_only,
        fetch_base=args.fetch_base,
        base_env=decl.settings.base_env,
    )
    if not changes.trusted and args.strict_diff:
        raise DiffError(f"the diff cannot be trusted: {changes.reason}",
                        fix="fetch the base branch, or drop --strict-diff")
    return changes


def _listed_changes(args: SelectionOptions, decl: Declarations) -> ChangeSet:
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
        warnings = _unknown_paths(files, given, args, decl)
    return ChangeSet(files, reason=f"file list from {source}", warnings=warnings)


def _unknown_paths(files: Sequence[str], given: Mapping[str, str], args: SelectionOptions,
                   decl: Declarations) -> tuple[str, ...]:
    """The warning for listed paths that name no file here, in HEAD or the base, and that no step's entry
    matches (cheapest test first: git runs only when a path is neither on disk nor matched). `given`: each
    path as the list wrote it."""
    from pipegen.git import known_paths
    from pipegen.selection.file_list import unknown

    root = os.path.realpath(decl.root)
    missing = unknown([p for p in files if not os.path.lexists(os.path.join(root, p))], (), decl.steps)
    if missing:
        missing = unknown(missing, known_paths(root, decl.settings.base_branch, args.environ), ())
    if not missing:
        return ()
    from pipegen.shown import cut  # a path may be 300 MB long (repr escapes a newline)

    shown = ", ".join(repr(cut(given.get(p, p))) for p in missing[:5]) + (f" and {len(missing) - 5} more"
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
    from pipegen.bounded_read import MAX_LIST_BYTES, read_stream

    try:  # a pipe is fine (`<(git diff ...)`), a list without end (/dev/zero) is not
        if source == "-":
            return read_stream(sys.stdin.buffer, MAX_LIST_BYTES)
        with open(source, "rb") as handle:
            return read_stream(handle, MAX_LIST_BYTES)
    except OSError as exc:
        raise UsageError(f"cannot read {option} {source}: {exc.strerror}", fix="pass an existing file or '-'") from None


def select(args: SelectionOptions) -> tuple[Declarations, Selection]:
    """Declarations, changes and decisions: the chain behind select, why and run."""
    decl = load_declarations(args)
    return decl, select_for(decl, args)


def select_for(decl: Declarations, args: SelectionOptions, more_inputs: Sequence[Input] = ()) -> Selection:
    """Changes and decisions for declarations already loaded (render places their steps first).

    `more_inputs`: files besides the config and inventory that the command reads (render's templates)."""
    from pipegen.selection.decide import decide
    from pipegen.selection.uncovered import refuse

    changes = read_changes(args, decl)
    detail(args.terminal, f"change: {len(changes.files)} changed file{'s' * (len(changes.files) != 1)} "
           f"({changes.reason or 'from git'})"
           + ("; the diff cannot be trusted" if not changes.trusted else ""))
    selection = decide(decl, changes, options_from(args, decl), more_inputs)
    refuse(selection, decl.settings)  # `uncovered: fail`
    return selection


def warn_if_untrusted(selection: Selection, terminal: TerminalOptions) -> list[str]:
    """Fail safe, never quiet (not even with -q): say on stderr why everything was selected; the warnings said."""
    said = warnings_of(selection)
    for warning in said:
        warn(terminal, warning)
    return said


def warnings_of(selection: Selection) -> list[str]:
    """What a selection must say out loud: an untrusted diff, the change's warnings, uncovered files."""
    out = [selection.run_all_reason] if not selection.changes.trusted else []
    out += selection.changes.warnings
    if selection.uncovered:  # no silent uncovered change (selection/uncovered.py)
        from pipegen.selection.uncovered import warning as uncovered

        out.append(selection.run_all_reason if selection.run_all else uncovered(selection.uncovered))
    return out
