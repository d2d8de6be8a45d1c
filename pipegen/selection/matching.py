"""Does a changed path match a dependency entry? Fast, for many steps at once.

Entry syntax (kind "entry", vLLM's rule): a path matches itself and
everything below it (a prefix at a path boundary; a trailing "/" is
optional); an entry with glob characters is a gitignore-style glob (`**`
crosses folders); a leading "!" excludes: a file that matches an exclusion
never counts for that list, even if an include matches it.
Kind "raw" is the legacy raw string prefix, kind "regex" is `re.match`.

`StepIndex` answers "which steps does this change select" with an index
over the entries: each changed file looks up its own ancestors, so the cost
grows with files x path depth, not files x entries.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pipegen.declarations.patterns import glob_regex as _glob_regex
from pipegen.declarations.patterns import is_glob, pathspec_regex
from pipegen.declarations.patterns import regex as _regex
from pipegen.model import DependencyKind, PatternKind, Step

__all__ = ["StepIndex", "entry_matches", "explain", "first_match", "is_glob", "split"]


def entry_matches(entry: str, path: str, kind: PatternKind = "entry") -> bool:
    """True if `path` matches the (non-negated) `entry`."""
    if kind == "raw":
        return path.startswith(entry)
    if kind == "regex":
        return _regex(entry).match(path) is not None
    if kind == "pathspec" and is_glob(entry):
        return pathspec_regex(entry).match(path) is not None
    if is_glob(entry):
        return bool(_glob_regex(entry).match(path))
    base = entry.rstrip("/")
    return bool(base) and (path == base or path.startswith(base + "/"))


def split(entries: Iterable[str]) -> tuple[list[str], list[str]]:
    """Includes and exclusions ("!x" -> "x") of an entry list."""
    includes: list[str] = []
    excludes: list[str] = []
    for entry in entries:
        (excludes if entry.startswith("!") else includes).append(entry[1:] if entry.startswith("!") else entry)
    return includes, excludes


def first_match(entries: Sequence[str], files: Sequence[str], kind: PatternKind = "entry") -> tuple[str, str] | None:
    """The first (file, include entry) that counts, vLLM's semantics; None if none does."""
    includes, excludes = split(entries)
    for path in files:
        for entry in includes:
            if entry_matches(entry, path, kind):
                if not any(entry_matches(x, path, kind) for x in excludes):
                    return path, entry
                break
    return None


def explain(entries: Sequence[str], path: str, kind: PatternKind = "entry") -> tuple[str | None, str | None]:
    """(the include entry that matches `path`, the exclusion that drops it)."""
    includes, excludes = split(entries)
    hit = next((e for e in includes if entry_matches(e, path, kind)), None)
    dropped = next((e for e in excludes if entry_matches(e, path, kind)), None) if hit else None
    return hit, dropped


def _boundary_prefixes(path: str) -> Iterable[str]:
    start = 0
    while True:
        slash = path.find("/", start)
        if slash < 0:
            yield path
            return
        yield path[:slash]
        start = slash + 1


class StepIndex:
    """All steps' dependency entries, indexed for matching many changed files."""

    def __init__(self, steps: Sequence[Step]):
        self._plain: dict[str, int] = {}  # normalised entry -> slot ("entry" kind)
        self._raw: dict[str, int] = {}  # raw prefix -> slot
        self._globs: dict[str, int] = {}
        self._pathspecs: dict[str, int] = {}  # globs read as git's pathspec (`globs: pathspec`)
        self._slot_entries: list[str] = []
        # per step: (include slots with their entry text, exclusion entries, kind)
        self._wiring: list[tuple[list[tuple[int, str]], list[str], DependencyKind]] = []
        for step in steps:
            includes, excludes = split(step.dependencies)
            slots = [(self._slot(entry, step.dependency_kind), entry) for entry in includes]
            self._wiring.append(([s for s in slots if s[0] >= 0], excludes, step.dependency_kind))
        self._raw_lengths = sorted({len(e) for e in self._raw})

    def _slot(self, entry: str, kind: DependencyKind) -> int:
        if kind == "pathspec" and is_glob(entry):
            table, key = self._pathspecs, entry
        elif kind in ("entry", "pathspec") and is_glob(entry):
            table, key = self._globs, entry
        elif kind in ("entry", "pathspec"):
            table, key = self._plain, entry.rstrip("/")
            if not key:
                return -1  # vLLM: an empty entry matches nothing
        else:  # "raw"
            table, key = self._raw, entry
        if key not in table:
            table[key] = len(self._slot_entries)
            self._slot_entries.append(key)
        return table[key]

    def _hits(self, files: Sequence[str]) -> list[list[int]]:
        """For every slot, the indices of the files it matches, in change order."""
        hits: list[list[int]] = [[] for _ in self._slot_entries]
        plain, raw, lengths = self._plain, self._raw, self._raw_lengths
        for index, path in enumerate(files):
            if plain:
                for prefix in _boundary_prefixes(path):
                    slot = plain.get(prefix)
                    if slot is not None:
                        hits[slot].append(index)
            for length in lengths:
                if length > len(path):
                    break
                slot = raw.get(path[:length])
                if slot is not None:
                    hits[slot].append(index)
        for entry, slot in self._globs.items():
            regex = _glob_regex(entry)
            hits[slot] = [i for i, path in enumerate(files) if regex.match(path)]
        for entry, slot in self._pathspecs.items():
            spec = pathspec_regex(entry)
            hits[slot] = [i for i, path in enumerate(files) if spec.match(path)]
        return hits

    def slots(self, files: Sequence[str]) -> list[tuple[int, ...]]:
        """For every file, the include entries (as slots) that match it: files with the same slots are
        matched alike by every step (exclusions aside)."""
        per_file: list[list[int]] = [[] for _ in files]
        for slot, indices in enumerate(self._hits(files)):
            for index in indices:
                per_file[index].append(slot)
        return [tuple(slots) for slots in per_file]

    def touched(self, files: Sequence[str]) -> set[str]:
        """The files that some step's include entry matches (exclusions aside)."""
        return {files[index] for hits in self._hits(files) for index in hits}

    def matches(self, files: Sequence[str]) -> list[tuple[str, str] | None]:
        """Per step (in order): the first (file, entry) that selects it, or None."""
        hits = self._hits(files)
        out: list[tuple[str, str] | None] = []
        for slots, excludes, kind in self._wiring:
            best: tuple[int, str] | None = None
            for slot, entry in slots:
                for index in hits[slot]:
                    if best is not None and index >= best[0]:
                        break
                    if excludes and any(entry_matches(x, files[index], kind) for x in excludes):
                        continue
                    best = (index, entry)
                    break
            out.append((files[best[0]], best[1]) if best else None)
        return out
