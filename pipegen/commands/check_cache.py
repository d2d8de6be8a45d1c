"""`check`'s whole report, kept by what it was computed from (the I/O edge around commands/check.py).

A repeated `check` on vLLM's tree re-derived the same 199 lines in about 1 s (import scans cached);
with this cache it runs three git commands and hashes what the report was read from:
- git's index (`git ls-files -s`: every tracked path and its blob) and the content of every tracked
  file the work tree changed (`git diff-files`): the sources, scripts and steps files git knows;
- each declaration file's content (config, steps files, the AMD twin, the hardware inventory and
  the config names pipegen looks for, absent ones too), untracked ones included, and the listing of
  every folder below the declarations' folders (a new steps file is read next time);
- pipegen's version and its own files (size and time of each), the interpreter and its module path, the
  options, the current folder and the environment variables pipegen reads (KEYED: PATH, HOME or any
  other variable leaves the entry good; git's own environment shows in what git reports, above).
One entry per repository and options, JSON data verified before use (pipegen.cache); any difference
is a miss: check runs and the entry is written again. `--tracked-files` runs are not kept.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterable, Mapping
from typing import Any

import pipegen
from pipegen import cache
from pipegen.bounded_read import read_bytes
from pipegen.declarations.discover import DEFAULT_CONFIGS, DEFAULT_INVENTORY
from pipegen.errors import UsageError
from pipegen.git import Index, IndexReading

VERSION = 1
# The variables pipegen reads, each and by family (tests/check/test_check_cache_environ.py reads pipegen's
# source for every lookup, and runs check watching which it makes): a variable missing here would serve a
# report made under another value. pipegen's and Buildkite's families, vLLM's (its presets read VLLM_*),
# the interpreter's (PYTHONPATH: other libraries) and the locale's.
KEYED = frozenset({"AMD_MIRROR_HW", "CI", "BUILDKITE", "NIGHTLY", "NOAUTO", "DOCS_ONLY_DISABLE", "RUN_ALL",
                   "TORCH_NIGHTLY", "MERGE_BASE_COMMIT", "LANG"})
KEYED_FAMILIES = ("PIPEGEN_", "BUILDKITE_", "VLLM_", "PYTHON", "LC_")
# Read by pipegen, yet no part of the report (the test holds each read to KEYED or here).
NOT_KEYED = {
    "NO_COLOR": "colour: the report is kept plain and painted as it is written",
    "FORCE_COLOR": "colour: the report is kept plain and painted as it is written",
    "TERM": "colour: the report is kept plain and painted as it is written",
    "XDG_CACHE_HOME": "where the caches are: another folder holds other entries",
}
FOLDER_LIMIT = 2_000  # names listed below the declarations' folders; a larger tree is not kept

State = dict[str, Any]


class Kept:
    """The entry of one repository and set of options: what the tree is now, and the stored report."""

    def __init__(self, root: str, options: Mapping[str, object], environ: Mapping[str, str],
                 index: IndexReading):
        name = _digest(json.dumps([VERSION, os.path.realpath(root), sorted(options.items())]).encode())
        self.key = f"check-report {VERSION} {name}"
        self.file = cache.entry_path("check", name[:32] + ".json")
        self._index, self._environ = index, environ
        self._state: State | None = None

    @property
    def state(self) -> State | None:
        """What the tree is now (None: git cannot tell), taken once git's index is read."""
        if self._state is None and self.file:
            try:
                self._state = _state(self._index.index(), self._environ)
            except (UsageError, OSError):
                return None
        return self._state

    def taken(self) -> Index:
        """git's index for the import scans, the tree's state taken with it: before check reads the sources (an
        edit made while check runs is then a difference next time, not part of the kept state)."""
        index = self._index.index()
        _ = self.state
        return index

    def report(self) -> tuple[str, int] | None:
        """The stored (output, exit code) when everything it was computed from is unchanged (with no entry
        stored, git's index is not waited for)."""
        if not self.file:
            return None
        data = _load(self.file, self.key)
        if data is None or self.state is None or data["state"] != self.state:
            return None
        files, folders = data["files"], data["folders"]
        if any(_file_digest(path) != digest for path, digest in files.items()):
            return None
        if _listings(folders) != folders:
            return None
        return data["output"], data["exit"]

    def keep(self, root: str, read: Iterable[str], output: str, code: int) -> None:
        """Store the report, with the declaration files it read (relative to `root` or absolute)."""
        if not self.file or self.state is None:
            return
        paths = {os.path.join(root, p) for p in (*read, *DEFAULT_CONFIGS, DEFAULT_INVENTORY)}
        tops = _tops({os.path.dirname(p) for p in paths})
        folders = _listings(tops, walk=True)
        if folders is None:
            return
        data = {"state": self.state, "files": {p: _file_digest(p) for p in sorted(paths)}, "folders": folders,
                "output": output, "exit": code}
        cache.store(self.file, self.key, json.dumps(data, separators=(",", ":")).encode())


def _state(index: Index, environ: Mapping[str, str]) -> State:
    """git's index, the work tree's changes to it, pipegen's code, the interpreter, the folder and the
    variables pipegen reads."""
    env = sorted((k, v) for k, v in environ.items() if k in KEYED or k.startswith(KEYED_FAMILIES))
    return {"index": _digest(index.listing),
            "dirty": {p: _file_digest(os.path.join(index.top, p)) for p in sorted(index.dirty)},
            "code": _code(), "python": [sys.version, *sys.path], "cwd": os.getcwd(),
            "environ": _digest(json.dumps(env).encode("utf-8", "replace"))}


def _code() -> str:
    """pipegen's version and the size and time of each of its files: an edited pipegen is another one."""
    top = os.path.dirname(pipegen.__file__)
    seen = [pipegen.__version__]
    for folder, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            info = os.stat(os.path.join(folder, name))
            seen.append(f"{folder[len(top):]}/{name} {info.st_size} {info.st_mtime_ns}")
    return _digest("\n".join(seen).encode("utf-8", "surrogateescape"))


def _tops(folders: set[str]) -> list[str]:
    """The folders none of the others lies inside."""
    real = sorted({os.path.normpath(f) for f in folders})
    return [f for f in real if not any(f.startswith(o.rstrip(os.sep) + os.sep) for o in real if o != f)]


def _listings(folders: Iterable[str], walk: bool = False) -> dict[str, list[str]] | None:
    """Each folder's names (a folder's with a trailing '/'), and with `walk` every folder below; None when
    there are more than FOLDER_LIMIT names."""
    out: dict[str, list[str]] = {}
    pending = list(folders)
    count = 0
    while pending:
        folder = pending.pop()
        if folder in out:
            continue
        try:
            with os.scandir(folder) as found:
                names = sorted(e.name + "/" if e.is_dir() else e.name for e in found)
        except OSError:
            names = []
        out[folder] = names
        count += len(names)
        if count > FOLDER_LIMIT:
            return None
        if walk:
            pending += [os.path.join(folder, n[:-1]) for n in names if n.endswith("/")]
    return out


def _file_digest(path: str) -> str | None:
    try:
        return _digest(read_bytes(path))
    except OSError:  # absent, a folder, or past the read bound
        return None


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _load(file: str, key: str) -> dict[str, Any] | None:
    """The entry, when it is the data this module writes."""
    content = cache.load(file, key)
    try:
        data = json.loads(content) if content is not None else None
    except ValueError:
        return None
    shapes = {"state": dict, "files": dict, "folders": dict, "output": str, "exit": int}
    if not isinstance(data, dict) or any(not isinstance(data.get(k), t) for k, t in shapes.items()):
        return None
    if not all(isinstance(v, list) and all(isinstance(n, str) for n in v) for v in data["folders"].values()):
        return None
    return data
