"""No silent uncovered change: the changed files that no step's entry, no rule, no input of pipegen and no
declared ignore list (`uncovered_ignore`, `docs_only`) account for. Pure.

Without this, a new `newdir/new_module.py` runs only the always-run steps, without a word. The config's
`uncovered` says what such a file does: `warn` (named on stderr and in the output), `run_all`, or `fail`
(the command edge: commands/selecting.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from pipegen.errors import EXIT_FINDINGS, PipegenError
from pipegen.model import Selection, Settings
from pipegen.selection.matching import StepIndex, first_match
from pipegen.shown import shown

SHOWN = 10  # files named in one message; the JSON output lists every one


class UncoveredError(PipegenError):
    """`uncovered: fail` and a changed file nothing accounts for."""

    exit_code = EXIT_FINDINGS


def uncovered_files(settings: Settings, index: StepIndex, files: Sequence[str], inputs: Iterable[str],
                    via: Mapping[str, str]) -> tuple[str, ...]:
    """The files of `files` that no step's include entry matches, that no hardware rule names, that are not one
    of pipegen's own `inputs` (paths: the config, the inventory, templates) and that no ignore list holds.
    `via`: the path a declaration file was read by -> the changed path git names (a linked steps folder)."""
    covered = index.touched(files)
    covered |= {via[path] for path in covered if path in via}
    candidates = [f for f in files if f not in covered and f not in via]
    if not candidates:
        return ()
    lists = [rule.changed for rule in settings.rules] + [(*settings.uncovered_ignore, *settings.docs_only)]
    accounted = [*inputs]
    return tuple(f for f in candidates if not any(f == a or f.startswith(a + "/") for a in accounted)
                 and not any(entries and first_match(entries, (f,), settings.entry_kind) for entries in lists))


def describe(files: Sequence[str]) -> str:
    listed = ", ".join(shown(f) for f in files[:SHOWN]) + (f" and {len(files) - SHOWN} more" if len(files) > SHOWN
                                                            else "")
    return f"{len(files)} changed file(s) no step's dependency entry matches and no ignore list excludes: {listed}"


def run_all_reason(files: Sequence[str]) -> str:
    return f"{describe(files)} (uncovered: run_all): an unknown change runs everything"


def warning(files: Sequence[str]) -> str:
    return (f"{describe(files)}: it runs no step of its own (add an entry that covers it, or list it under "
            "uncovered_ignore)")


def refuse(selection: Selection, settings: Settings) -> None:
    """`uncovered: fail`: a change nothing accounts for stops the command (exit 1)."""
    if selection.uncovered and settings.uncovered == "fail":
        raise UncoveredError(f"{describe(selection.uncovered)} (uncovered: fail)",
                             fix="add a dependency entry that covers it to the steps it affects, or list it under "
                                 "uncovered_ignore in the config")
