"""Derived entries at select time (the I/O around derived.py and cargo.py): the tree's files from git's
index, import scans by blob (scan_cache.py), manifests from disk, and the closures cached by content.

A closure depends only on the roots and the content of the files it reads (every tracked .py file for
`python`, every Cargo.toml and Cargo.lock for `cargo`), so its key is a hash of those blobs: a warm
`select` reads `git ls-files -s` and one small JSON file. The cache holds data only, each entry with
the SHA-256 of its links: anything else is a miss (an optimisation, never trusted blindly).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from pipegen import cache
from pipegen.errors import DeclarationError
from pipegen.git import index_blobs
from pipegen.graph.cargo import cargo_closure
from pipegen.graph.derived import Link, python_closure, python_starts
from pipegen.graph.import_graph import ImportGraph
from pipegen.graph.modules import ModuleFiles
from pipegen.graph.scan_cache import ScanCache, read_tracked
from pipegen.model import Declarations, Step

VERSION = 1
STORE_KEY = f"derived {VERSION}"
KEEP = 64  # closures kept: one per (roots, tree) pair


class Tree:
    """The tracked files of the repository at `root`, their blobs, and what reading them costs."""

    def __init__(self, root: str, environ: Mapping[str, str], listed: Sequence[str] | None = None):
        """`listed`: the tracked files as `check --tracked-files` gives them, read from disk (no blobs: each
        counts as edited, so its content, not a blob name, keys the cache); else git's index."""
        self.root = root
        if listed is None:
            self.blobs, self.dirty = index_blobs(root, environ)
        else:
            self.blobs, self.dirty = dict.fromkeys(listed, ""), set(listed)
        self._scans: ScanCache | None = None

    def read(self, path: str) -> str | None:
        return read_tracked(self.root, path, self.blobs)

    def signature(self, wanted: Sequence[str]) -> str:
        """A hash of the content of the tracked files whose names end with one of `wanted`."""
        digest = hashlib.sha256()
        for path in sorted(p for p in self.blobs if p.endswith(tuple(wanted))):
            sha = self.blobs[path]
            if path in self.dirty:  # the index's blob is not what is on disk
                sha = hashlib.sha256((self.read(path) or "\0deleted").encode()).hexdigest()
            digest.update(f"{path}\0{sha}\n".encode())
        return digest.hexdigest()

    def python(self, roots: Sequence[str], where: Step) -> list[Link]:
        starts = [p for root in roots for p in python_starts(root, self.blobs)]
        missing = [root for root in roots if not python_starts(root, self.blobs)]
        if missing:
            raise DeclarationError(f"derive: python root '{missing[0]}' of step '{where.key}' holds no tracked "
                                   ".py file", where.location, "name a test file or a folder of tests that git tracks")
        if self._scans is None:
            self._scans = ScanCache(self.root, set(self.blobs), self.blobs, self.dirty)
        return python_closure(roots, starts, ImportGraph(ModuleFiles(self.blobs), self._scans.specs))

    def save(self) -> None:
        if self._scans is not None:
            self._scans.save()


def expand(decl: Declarations, environ: Mapping[str, str], listed: Sequence[str] | None = None) -> Declarations:
    """The declarations with every `derive:` (use: select) step's derived entries added to its dependencies,
    each with the link that reached it; `decl` itself when no step derives."""
    if not any(step.derive for step in decl.steps):
        return decl
    tree = Tree(decl.root, environ, listed)
    store = Store()
    steps = []
    for step in decl.steps:
        if not step.derive or ("use", "check") in step.derive:
            steps.append(step)
            continue
        links = derive_links(step, tree, store)
        entries = [entry for entry, _, _ in links if entry not in step.dependencies]
        steps.append(replace(step, dependencies=(*step.dependencies, *entries), derivation=tuple(links)))
    store.save()
    tree.save()
    return replace(decl, steps=tuple(steps))


def expanded_like(other: Declarations, decl: Declarations) -> Declarations:
    """`other` (the declarations at another commit: audit --compare) with the derived entries `decl` computed for
    the same derive: of the same step, so that both sides of a comparison derive from one tree."""
    done = {(step.key, step.derive): step for step in decl.steps if step.derivation}
    steps = []
    for step in other.steps:
        same = done.get((step.key, step.derive))
        extra = [entry for entry, _, _ in same.derivation if entry not in step.dependencies] if same else []
        steps.append(replace(step, dependencies=(*step.dependencies, *extra), derivation=same.derivation)
                     if same else step)
    return replace(other, steps=tuple(steps)) if done else other


def derive_links(step: Step, tree: Tree, store: Store) -> list[Link]:
    """Every link the step's roots derive (python roots as one closure, each crate its own), cached."""
    out: list[Link] = []
    python = [root for kind, root in step.derive if kind == "python"]
    if python:
        key = _key("python", python, tree.signature([".py"]))
        out += store.get(key) or store.put(key, tree.python(python, step))
    for kind, root in step.derive:
        if kind == "cargo":
            key = _key("cargo", [root], tree.signature(["Cargo.toml", "Cargo.lock"]))
            out += store.get(key) or store.put(key, _cargo(root, tree, step))
    return out


def _cargo(root: str, tree: Tree, step: Step) -> list[Link]:
    return cargo_closure(root, tree.read, step.location)


def _key(kind: str, roots: Sequence[str], signature: str) -> str:
    return hashlib.sha256(json.dumps([VERSION, kind, list(roots), signature]).encode()).hexdigest()


def _digest(links: Any) -> str:
    return hashlib.sha256(json.dumps(links, separators=(",", ":")).encode()).hexdigest()


class Store:
    """derived.json under the cache dir: key -> {links, sha256 of the links}."""

    def __init__(self) -> None:
        self.file = cache.entry_path("derived.json")
        self.entries: dict[str, Any] = self._load()
        self.changed = False

    def _load(self) -> dict[str, Any]:
        """The stored entries; none when the file is absent or untrusted (pipegen.cache) or not this format."""
        content = cache.load(self.file, STORE_KEY) if self.file else None
        try:
            data = json.loads(content) if content is not None else None
        except ValueError:
            return {}
        if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("entries"), dict):
            return {}
        entries: dict[str, Any] = data["entries"]
        return entries

    def get(self, key: str) -> list[Link] | None:
        entry = self.entries.get(key)
        if not isinstance(entry, dict) or entry.get("sha256") != _digest(entry.get("links")):
            return None  # absent, altered or corrupt: computed again
        links = entry["links"]
        if not isinstance(links, list) or not all(isinstance(x, list) and len(x) == 3 and all(
                isinstance(p, str) for p in x) for x in links):
            return None
        return [(a, b, c) for a, b, c in links]

    def put(self, key: str, links: list[Link]) -> list[Link]:
        stored = [list(link) for link in links]
        self.entries = {key: {"links": stored, "sha256": _digest(stored)},
                        **{k: v for k, v in list(self.entries.items())[:KEEP - 1] if k != key}}
        self.changed = True
        return links

    def save(self) -> None:
        if not self.file or not self.changed:
            return
        text = json.dumps({"version": VERSION, "entries": self.entries}, separators=(",", ":"))
        cache.store(self.file, STORE_KEY, text.encode())  # whole, 0600; a failure costs speed, not correctness
