"""Tracked files as a sorted list, and path sets as bit masks over it.

Sorting makes every folder (and every raw prefix) one contiguous range, so
"which tracked files does this entry match" is two binary searches and a
shift, and set algebra over thousands of files (a step's coverage minus an
import closure) is a handful of integer operations.
"""

from __future__ import annotations

import bisect
import fnmatch
import posixpath
import re
from collections.abc import Iterable

from pipegen.graph.bitmask import bits
from pipegen.model import PatternKind
from pipegen.selection.matching import entry_matches, is_glob

REGEX_META = re.compile(r"[.^$*+?{}\[\]\\|()]")
SHELL_META = re.compile(r"[*?[]")  # what fnmatch reads as a wildcard
OPTIONAL = frozenset("*?{")  # quantifiers that let the character before them be absent


class FileIndex:
    def __init__(self, paths: Iterable[str]):
        self.paths = sorted(set(paths))
        self.bit = {p: i for i, p in enumerate(self.paths)}
        self._cache: dict[tuple[str, str], int] = {}
        self._children: dict[str, set[str]] | None = None
        self._named: dict[str, list[str]] | None = None
        self._lineage: dict[str, list[tuple[str, int]]] = {"": []}

    def __len__(self) -> int:
        return len(self.paths)

    def prefix(self, prefix: str) -> int:
        """Files whose path starts with `prefix` (raw string prefix)."""
        if not prefix:
            return (1 << len(self.paths)) - 1
        low = bisect.bisect_left(self.paths, prefix)
        high = bisect.bisect_left(self.paths, prefix[:-1] + chr(ord(prefix[-1]) + 1), low)
        return ((1 << (high - low)) - 1) << low

    def lineage(self, folder: str) -> list[tuple[str, int]]:
        """`a/b` -> [("a", the files under a/), ("a/b", the files under a/b/)]; [] for the root."""
        up = [folder]  # the folders up to one looked up before: a loop, as a path may lie 1,000s of folders deep
        while up[-1] not in self._lineage:
            up.append(up[-1].rpartition("/")[0])
        found = self._lineage[up.pop()]
        for name in reversed(up):
            found = self._lineage[name] = [*found, (name, self.prefix(name + "/"))]
        return found

    def matches(self, entry: str, kind: PatternKind = "entry") -> int:
        """Files matched by one (non-negated) entry, vLLM's semantics for `kind`."""
        key = (entry, kind)
        if key not in self._cache:
            self._cache[key] = self._match(entry, kind)
        return self._cache[key]

    def _match(self, entry: str, kind: PatternKind) -> int:
        if kind == "raw":
            return self.prefix(entry)
        if kind == "regex":
            return self._scan(self.prefix(regex_prefix(entry)), entry, kind)
        if is_glob(entry):
            return self._scan(self.prefix(""), entry, kind)
        base = entry.rstrip("/")
        if not base:
            return 0
        exact = 1 << self.bit[base] if base in self.bit else 0
        return exact | self.prefix(base + "/")

    def _scan(self, candidates: int, entry: str, kind: PatternKind) -> int:
        mask = 0
        for index in bits(candidates):
            if entry_matches(entry, self.paths[index], kind):
                mask |= 1 << index
        return mask

    def mask(self, paths: Iterable[str]) -> int:
        out = 0
        for path in paths:
            if path in self.bit:
                out |= 1 << self.bit[path]
        return out

    def files(self, mask: int) -> list[str]:
        """The files of `mask`, sorted: a slice of `paths` per run of set bits (a folder's files are one)."""
        digits = bin(mask)[:1:-1]  # bit 0 first
        out: list[str] = []
        start = digits.find("1")
        while start >= 0:
            end = digits.find("0", start)
            end = len(digits) if end < 0 else end
            out += self.paths[start:end]
            start = digits.find("1", end)
        return out

    def children(self, folder: str) -> set[str]:
        """Names directly inside `folder` ("" = the root), files and folders alike."""
        return self._tree().get(folder, set())

    def _tree(self) -> dict[str, set[str]]:
        if self._children is None:
            tree: dict[str, set[str]] = {}
            for path in self.paths:
                parent, name = posixpath.split(path)
                while True:
                    names = tree.setdefault(parent, set())
                    if name in names:
                        break
                    names.add(name)
                    if not parent:
                        break
                    parent, name = posixpath.split(parent)
            self._children = tree
        return self._children

    def named(self, name: str) -> list[str]:
        """Every file and folder (folders end in "/") whose last component is `name`."""
        if self._named is None:
            table: dict[str, list[str]] = {}
            for parent, names in self._tree().items():
                for child in names:
                    path = posixpath.join(parent, child) if parent else child
                    table.setdefault(child, []).append(path if path in self.bit else path + "/")
            self._named = table
        return self._named.get(name, [])

    def shell_glob(self, pattern: str) -> list[str]:
        """Tracked files a shell glob matches (`*` stays within one folder): once per pattern and index, among
        the files under its literal start (a command's `tests/x/test_*.py` repeats across steps)."""
        key = (pattern, "shell")
        if key not in self._cache:
            depth, start = pattern.count("/"), SHELL_META.split(pattern, 1)[0]
            self._cache[key] = self.mask(p for p in self.files(self.prefix(start))
                                         if p.count("/") == depth and fnmatch.fnmatchcase(p, pattern))
        return self.files(self._cache[key])

    def is_dir(self, path: str) -> bool:
        return bool(path) and bool(self.prefix(path.rstrip("/") + "/"))


def regex_prefix(pattern: str) -> str:
    """A literal prefix every path `re.match(pattern, path)` accepts starts with ("" when unsure)."""
    if "|" in pattern:  # an alternative may start anywhere
        return ""
    m = REGEX_META.search(pattern)
    if m is None:
        return pattern
    end = m.start()
    return pattern[: max(end - 1, 0)] if pattern[end] in OPTIONAL else pattern[:end]

