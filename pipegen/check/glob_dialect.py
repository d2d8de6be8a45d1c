"""glob-dialect: an entry git would read more widely. Pure.

In git's pathspecs (and so in `git ls-files 'src/*.rs'`, CODEOWNERS-like tools built on them, many CI
path filters) `*` crosses "/": `src/*.rs` matches `src/a/b.rs`. Read as pipegen reads globs (gitignore's
rules: `*` stays in one folder) the same entry silently matches less. A project that writes globs git's
way sets `globs: pathspec`, one that means pipegen's reading says `globs: gitignore`; a config that
chooses neither gets a warning here for each glob git would read more widely.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

from pipegen.check.entries import entry_lines, where_entry, where_pattern
from pipegen.check.file_index import FileIndex
from pipegen.check.findings import Finding
from pipegen.declarations.patterns import is_glob
from pipegen.model import Declarations, Location

SHOWN = 2  # example files in a message


def glob_dialect_findings(decl: Declarations, tracked: Sequence[str],
                          docs: Mapping[str, Any] | None = None) -> list[Finding]:
    """A warning for each glob of the config and the steps files that git reads more widely, at the place
    it is written in `docs` (the parsed files; without them, at its step or in the config)."""
    if decl.settings.globs or decl.layout != "pipegen":
        return []  # a dialect chosen in the config (either way); vLLM's files keep vLLM's reading
    index, settings, lines, by_key = FileIndex(tracked), decl.settings, entry_lines(docs or {}), decl.by_key()
    config = decl.files[0] if decl.files else "(config)"
    lists: list[tuple[str, str, Iterable[str], Callable[[str], Location]]] = [  # (what, step key or "", globs, where)
        (field, "", getattr(settings, field), partial(where_pattern, config, field, lines=lines))
        for field in ("run_all", "run_all_exclude", "docs_only", "uncovered_ignore")]
    lists += [(f"rule '{rule.name}'", "", rule.changed, partial(where_pattern, config, "changed", lines=lines))
              for rule in settings.rules]
    lists += [(f"step '{step.key}'", step.key, step.dependencies, partial(where_entry, step, lines=lines,
                                                                           by_key=by_key))
              for step in decl.steps if step.dependency_kind == "entry"]
    out: list[Finding] = []
    seen: set[tuple[Location, str]] = set()  # a declaration fanned out to several steps: said once
    for owner, key, entries, place in lists:
        for entry in entries:
            body = entry.lstrip("!")
            if not is_glob(body) or "*" not in body and "?" not in body:
                continue
            where = place(entry)
            wider = index.matches(body, "pathspec") & ~index.matches(body, "entry")
            if wider and (where, body) not in seen:
                seen.add((where, body))
                out.append(_finding(owner, key, entry, index.files(wider), where))
    return out


def _finding(owner: str, key: str, entry: str, more: list[str], where: Location) -> Finding:
    examples = ", ".join(more[:SHOWN]) + (f" and {len(more) - SHOWN} more" if len(more) > SHOWN else "")
    return Finding("glob-dialect", "warning", where,
                   f"{owner}: git reads '{entry}' as matching {len(more)} more tracked file(s) than pipegen does "
                   f"({examples}): in git's pathspecs '*' crosses '/', in pipegen's globs it does not",
                   "write '**/' where folders may come between (src/**/*.rs); or set 'globs: pathspec' in the "
                   "config to read every glob git's way, or 'globs: gitignore' to keep pipegen's",
                   key, tuple(more))

