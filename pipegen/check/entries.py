"""Checks of dependency entries and run-all patterns against the tracked files. Pure.

An include entry that matches no tracked file can never select its step
(vLLM's `tests/test_config`, meant for `tests/test_config.py`, stopped
matching when the matcher moved to path boundaries); an exclusion that
excludes nothing is dead weight. Suggestions name the nearest real paths.
"""

from __future__ import annotations

import difflib
import posixpath
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pipegen.check.file_index import FileIndex
from pipegen.check.findings import Finding
from pipegen.declarations.patterns import normal_entry
from pipegen.declarations.yamlio import LocDict, LocList
from pipegen.model import Declarations, Location, PatternKind, Step
from pipegen.selection.matching import is_glob, split

ENTRY_FIELDS = ("source_file_dependencies", "run_all_patterns", "run_all_exclude_patterns", "run_all",
                "run_all_exclude", "docs_only", "uncovered_ignore", "changed")  # changed: a rule's
# Sources identify (pre-commit's file-type library) does not name: GPU kernel languages.
SOURCE_SUFFIXES = (".hip", ".cl", ".mojo", ".ptx")
# identify's tags that name prose, data or repository metadata rather than a language the code is written in.
NOT_SOURCE = frozenset({"plain-text", "markdown", "rst", "asciidoc", "tex", "mdx", "myst", "quarto", "bib", "csv",
                        "tsv", "json", "json5", "jsonld", "geojson", "yaml", "yamlld", "toml", "xml", "ini", "svg",
                        "diff", "pofile", "gitignore", "gitattributes", "gitmodules", "dotenv", "text", "map"})

# (file, line of the mapping) -> field -> entry -> where the entry is written
EntryLines = dict[tuple[str, int], dict[str, dict[str, Location]]]


def entry_lines(docs: Mapping[str, Any]) -> EntryLines:
    """Where every dependency entry and run-all pattern is written, from the parsed YAML files."""
    out: EntryLines = {}
    stack = list(docs.values())
    while stack:
        node = stack.pop()
        if isinstance(node, LocDict):
            for name in ENTRY_FIELDS:
                items = node.get(name)
                if isinstance(items, LocList):
                    # A steps file's defaults also go under line 0: where its steps' inherited entries are.
                    line = 0 if node is _defaults(docs.get(node.file)) else node.line
                    spots = out.setdefault((node.file, line), {}).setdefault(name, {})
                    for index, item in enumerate(items):
                        spots.setdefault(str(item), items.loc(index))
                        spots.setdefault(normal_entry(str(item)), items.loc(index))  # as pipegen's format loads it
            stack.extend(node.values())
        elif isinstance(node, LocList):
            stack.extend(node)
    return out


def _defaults(doc: Any) -> Any:
    return doc.get("defaults") if isinstance(doc, LocDict) else None


def where_entry(step: Step, entry: str, lines: EntryLines, by_key: Mapping[str, Step]) -> Location:
    """The line of `entry` in the step (a mirror looks in its own mapping, then its origin's), else in its
    file's defaults (line 0 of `lines`)."""
    origin = by_key.get(step.origin or "")
    for file, line in ((s.location.file, s.location.line) for s in (step, origin) if s is not None):
        spots = lines.get((file, line), {}).get("source_file_dependencies", {})
        if entry in spots:
            return spots[entry]
    return lines.get((step.location.file, 0), {}).get("source_file_dependencies", {}).get(entry, step.location)


def where_pattern(config: str, field: str, pattern: str, lines: EntryLines) -> Location:
    for (file, _line), fields in lines.items():
        if file == config and pattern in fields.get(field, {}):
            return fields[field][pattern]
    return Location(config)


def covered(step: Step, index: FileIndex) -> int:
    """The tracked files whose change selects `step` by its dependencies."""
    return _selected(*split(step.dependencies), step.dependency_kind, index)


def run_all_mask(decl: Declarations, index: FileIndex) -> int:
    """The tracked files whose change runs everything."""
    settings = decl.settings
    return _selected(settings.run_all, settings.run_all_exclude, settings.run_all_kind, index)


def _selected(includes: Iterable[str], excludes: Iterable[str], kind: PatternKind, index: FileIndex) -> int:
    """Files an include matches and no exclusion drops."""
    mask = 0
    for entry in includes:
        mask |= index.matches(entry, kind)
    for entry in excludes:
        mask &= ~index.matches(entry, kind)
    return mask


def _idle(includes: Iterable[str], excludes: Iterable[str], kind: PatternKind, index: FileIndex,
          whose: str) -> Iterator[tuple[str, bool, str]]:
    """Includes that match nothing and exclusions that drop nothing: (pattern, is an exclusion, why)."""
    included = 0
    for entry in includes:
        mask = index.matches(entry, kind)
        included |= mask
        if not mask:
            yield entry, False, "matches no tracked file"
    for entry in excludes:
        mask = index.matches(entry, kind)
        if not mask & included:
            yield entry, True, f"excludes nothing {whose} match" if mask else "matches no tracked file"


def entry_findings(decl: Declarations, index: FileIndex, lines: EntryLines) -> list[Finding]:
    """stale-entry, raw-prefix-only and exclusion-unused, once per written entry."""
    by_key = decl.by_key()
    seen: set[tuple[Location, str]] = set()
    out: list[Finding] = []
    for step in decl.steps:
        for entry, excluded, why in _idle(*split(step.dependencies), step.dependency_kind, index, "its includes"):
            written = "!" + entry if excluded else entry
            where = where_entry(step, written, lines, by_key)
            if (where, written) in seen:  # a mirror or fan-out target repeats its origin's entries
                continue
            seen.add((where, written))
            if excluded:
                out.append(Finding("exclusion-unused", "warning", where, f"exclusion '{written}' of step "
                                   f"'{declared(step)}' {why}", "remove the exclusion or fix the path", declared(step)))
            else:
                out.append(_stale(entry, step.dependency_kind, step, where, index))
    return out


def _stale(entry: str, kind: PatternKind, step: Step, where: Location, index: FileIndex) -> Finding:
    raw = index.prefix(entry) if kind == "entry" and not is_glob(entry) else 0
    if raw:
        near = completions(entry, raw, index)
        return Finding("raw-prefix-only", "error", where,
                       f"entry '{entry}' of step '{declared(step)}' matches no tracked file; it only matched "
                       "under vLLM's "
                       f"old raw-prefix rule ({', '.join(near)})",
                       f"write {either(near)}", declared(step))
    near = nearest(entry, index)
    return Finding("stale-entry", "error", where, f"entry '{entry}' of step '{declared(step)}' matches no tracked file",
                   f"did you mean {either(near)}?" if near else "remove the entry or fix the path", declared(step))


def run_all_findings(decl: Declarations, index: FileIndex, lines: EntryLines, config: str) -> list[Finding]:
    """stale-run-all for include patterns, exclusion-unused for exclude patterns."""
    settings = decl.settings
    fields = settings.run_all_fields
    out: list[Finding] = []
    for pattern, excluded, why in _idle(settings.run_all, settings.run_all_exclude, settings.run_all_kind, index,
                                        "the run-all patterns"):
        where = where_pattern(config, fields[excluded], pattern, lines)
        if excluded:
            out.append(Finding("exclusion-unused", "warning", where, f"run-all exclude pattern '{pattern}' {why}",
                               "remove the pattern or fix it"))
        else:
            near = nearest(pattern, index)
            out.append(Finding("stale-run-all", "error", where, f"run-all pattern '{pattern}' {why}",
                               f"did you mean {either(near)}?" if near else "remove the pattern or fix it"))
    return out


def orphan_findings(decl: Declarations, index: FileIndex, masks: Iterable[int], run_all: int) -> list[Finding]:
    """Source files that no step depends on and that trigger no run-all: their changes run nothing."""
    watched = run_all
    for mask in masks:
        watched |= mask
    for entry in decl.settings.docs_only:
        watched |= index.matches(entry)
    return [Finding("orphan", "info", Location(path), f"no step depends on {path}: changing it runs no test",
                    "add it (or its folder) to the source_file_dependencies of the steps that test it")
            for path in index.files(~watched & _sources(index))]


def _sources(index: FileIndex) -> int:
    return index.mask(p for p in index.paths if is_source(p))


def is_source(path: str) -> bool:
    """A file in a programming (or build) language, whichever: identify's tags by its name (`.jl` julia,
    `.go`, `.f90` fortran, `CMakeLists.txt` cmake, `Dockerfile`), not prose or data (Markdown, YAML, JSON)."""
    from identify.identify import tags_from_filename

    tags = tags_from_filename(posixpath.basename(path))
    return ("text" in tags and not tags <= NOT_SOURCE) or path.endswith(SOURCE_SUFFIXES)


def completions(entry: str, raw: int, index: FileIndex, limit: int = 3) -> list[str]:
    """The real paths a raw prefix was completing: `tests/test_config` -> `tests/test_config.py`."""
    out: list[str] = []
    for path in index.files(raw):
        slash = path.find("/", len(entry))
        name = path if slash < 0 else path[: slash + 1]
        if name not in out:
            out.append(name)
            if len(out) == limit:
                break
    return out


def nearest(entry: str, index: FileIndex, limit: int = 3) -> list[str]:
    """Real paths close to a path that does not exist: the same name under another
    folder (a move; the longest shared tail first), then similar names in the
    nearest folder that exists."""
    path = entry.lstrip("!").rstrip("/")
    if is_glob(path):
        path = path[: min(path.find(c) for c in "*?[" if c in path)].rstrip("/")
    parts = path.split("/")
    moved = sorted(index.named(parts[-1]), key=lambda p: _closeness(parts, p.rstrip("/").split("/")), reverse=True)
    if moved and _closeness(parts, moved[0].rstrip("/").split("/"))[0] >= 2:
        return [m for m in moved if _closeness(parts, m.rstrip("/").split("/"))[0] >= 2][:limit]
    folder, rest = _deepest_folder(path, index)
    names = sorted(index.children(folder))
    similar = [_display(posixpath.join(folder, n) if folder else n, index)
               for n in difflib.get_close_matches(rest.split("/", 1)[0], names, n=limit, cutoff=0.6)]
    return list(dict.fromkeys(moved + similar))[:limit]


def _closeness(ours: list[str], theirs: list[str]) -> tuple[int, int]:
    """(shared trailing components, shared leading components) of two split paths."""
    tail = 0
    while tail < min(len(ours), len(theirs)) and ours[-1 - tail] == theirs[-1 - tail]:
        tail += 1
    head = 0
    while head < min(len(ours), len(theirs)) - tail and ours[head] == theirs[head]:
        head += 1
    return tail, head


def _deepest_folder(path: str, index: FileIndex) -> tuple[str, str]:
    folder = posixpath.dirname(path)
    while folder and not index.is_dir(folder):
        folder = posixpath.dirname(folder)
    return folder, path[len(folder):].lstrip("/")


def _display(path: str, index: FileIndex) -> str:
    return path + "/" if index.is_dir(path) and path not in index.bit else path


def either(paths: list[str]) -> str:
    """'a' or 'b', 'a', 'b' or 'c'."""
    quoted = [f"'{p}'" for p in paths]
    return " or ".join(quoted) if len(quoted) <= 2 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def declared(step: Step) -> str:
    """The key a finding names: a hardware fan-out's declared key (its targets share one declaration)."""
    return step.origin if step.origin and step.mirror is None else step.key
