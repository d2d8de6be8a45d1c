"""Import scans (check, derived entries), kept under the cache dir by git blob SHA (the I/O around import_scan.py).

A blob's import statements never change, so a file is scanned again only when
its content is new: `git ls-files -s` names the blob of every tracked file, and
a file edited, deleted or unmerged in the work tree (`git diff-files`) is read
from disk and never stored under its index SHA. One cache file (pipegen.cache:
$PIPEGEN_CACHE_DIR, '' for none) holds scans by blob, shared by every
repository: a run that scanned something new rewrites it (whole, pipegen.atomic),
the current tree's blobs first, then older ones up to LIMIT. JSON data, verified
before use (pipegen.cache); a missing, untrusted or corrupt cache is rebuilt.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Container, Mapping, Sequence

from pipegen import cache
from pipegen.bounded_read import read_bytes
from pipegen.graph.import_scan import ImportSpec, scan_imports

VERSION = 1  # bump when import_scan.py reads differently
KEY = f"import-scans {VERSION}"
LIMIT = 10_000  # scans kept: vLLM has 3,300 Python files; loading 10,000 takes about 40 ms


class ScanCache:
    """path -> its import statements, from the cache when its blob was scanned before."""

    def __init__(self, root: str, tracked: set[str], blobs: Mapping[str, str] | None = None,
                 dirty: set[str] | None = None):
        self.root = root
        self.tracked = tracked
        self.blobs = {p: s for p, s in (blobs or {}).items() if p not in (dirty or set())}
        self.file = cache.entry_path("import-scans.json") if self.blobs else None
        self.stored: dict[str, Sequence[ImportSpec]] = _load(self.file) if self.file else {}
        self.added = 0  # scans of blobs the cache did not hold

    def specs(self, path: str) -> Sequence[ImportSpec] | None:
        sha = self.blobs.get(path)
        if sha is not None and _well_formed(self.stored.get(sha)):
            return self.stored[sha]
        text = self._read(path)
        if text is None:
            return None
        found = scan_imports(text)
        if sha is not None:
            self.stored[sha] = found
            self.added += 1
        return found

    def save(self) -> None:
        """Store the scans, the current tree's first; nothing to do when nothing was scanned."""
        if not self.file or not self.added:
            return
        current = {sha: self.stored[sha] for sha in self.blobs.values() if sha in self.stored}
        older = (item for item in self.stored.items() if item[0] not in current)
        keep = dict([*current.items(), *itertools.islice(older, max(0, LIMIT - len(current)))])
        # Lists of strings, nothing that could hold itself: check_circular=False, a third less time (vLLM: 26 -> 17 ms)
        content = json.dumps({"version": VERSION, "scans": keep}, separators=(",", ":"), check_circular=False)
        cache.store(self.file, KEY, content.encode())

    def _read(self, path: str) -> str | None:
        return read_tracked(self.root, path, self.tracked)


def read_tracked(root: str, path: str, tracked: Container[str]) -> str | None:
    """The text of a tracked file (newlines as open() reads them); None for an untracked one, or one that is
    absent, not UTF-8, or not a regular file within the read bound (a tracked link to /dev/zero, a FIFO)."""
    if path not in tracked:
        return None
    try:
        text = read_bytes(os.path.join(root, path)).decode("utf-8")
    except (OSError, UnicodeDecodeError):  # bounded_read.Refused is an OSError
        return None
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text  # two copies of 38 MB saved


def _well_formed(specs: object) -> bool:
    """A stored scan that can be used as one (a corrupt cache is scanned again, not trusted)."""
    # lists as read back from JSON, tuples as scan_imports returns them within this run
    return isinstance(specs, list) and all(isinstance(s, (list, tuple)) and len(s) == 3 for s in specs)


def _load(file: str) -> dict[str, Sequence[ImportSpec]]:
    content = cache.load(file, KEY)
    try:
        data = json.loads(content) if content is not None else None
    except ValueError:
        return {}
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("scans"), dict):
        return {}
    scans: dict[str, Sequence[ImportSpec]] = data["scans"]
    return scans
