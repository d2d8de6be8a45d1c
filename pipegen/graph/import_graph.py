"""The repository-internal import closure of Python files, statically (import_scan.py).

A module name resolves against the repository's tracked files only: the
importing file's pytest base dir (the first folder up without an
`__init__.py`, which pytest puts on sys.path), the repository root and
`src/`. Anything that does not resolve there (the standard library,
third-party packages) is ignored. A resolved module brings its packages'
`__init__.py` files; `from pkg import name` brings `pkg/name.py` when that
is a module; `pytest_plugins = [...]` counts as imports. Imports under
`if TYPE_CHECKING:` never run, so they do not count.

Each file is read and scanned once (scan_cache.py keeps the scans). Closures are bit masks over a caller's
file numbering: strongly connected components (import cycles) are found
once, and each component's closure is the union of its successors'.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence

from pipegen.graph.import_scan import ImportSpec

# A tracked file -> its import statements (import_scan.py), None when it cannot be read.
SpecReader = Callable[[str], "Sequence[ImportSpec] | None"]

GLOBAL_ROOTS = ("", "src")
UNSEEN, START = -2, -1  # a breadth-first search's parent of a file not reached yet, of a start file


class ModuleFiles:
    """Tracked Python files, and the folders they make up, for resolving module names."""

    def __init__(self, tracked: Iterable[str]):
        self.files = frozenset(p for p in tracked if p.endswith(".py"))
        dirs: set[str] = set()
        for path in self.files:
            folder = posixpath.dirname(path)
            while folder and folder not in dirs:
                dirs.add(folder)
                folder = posixpath.dirname(folder)
        self.dirs = frozenset(dirs)
        self._packages: dict[str, list[str]] = {}
        # resolve()'s memos: thousands of files import the same modules
        self.resolved: dict[tuple[str | None, tuple[str, ...], str], list[str]] = {}
        self.roots: dict[tuple[str, str], str | None] = {}

    def module(self, path: str) -> str | None:
        """`a/b` -> "a/b.py" or "a/b/__init__.py", whichever is tracked."""
        for candidate in (path + ".py", path + "/__init__.py"):
            if candidate in self.files:
                return candidate
        return None

    def exists(self, path: str) -> bool:
        """A module file, or a folder holding Python files (a namespace package)."""
        return self.module(path) is not None or path in self.dirs

    def packages(self, path: str) -> list[str]:
        """The `__init__.py` files of the packages holding `path`, innermost first."""
        if path in self._packages:
            return self._packages[path]
        out = self._packages[path] = []
        folder = posixpath.dirname(path)
        while folder:
            init = folder + "/__init__.py"
            if init not in self.files:
                break
            if init != path:
                out.append(init)
            folder = posixpath.dirname(folder)
        return out

    def base_dir(self, path: str) -> str:
        """pytest's rootdir-relative base dir: the first folder up without `__init__.py`."""
        folder = posixpath.dirname(path)
        while folder and folder + "/__init__.py" in self.files:
            folder = posixpath.dirname(folder)
        return folder


def _join(*parts: str) -> str:
    return "/".join(p for p in parts if p)


def resolve(specs: Iterable[ImportSpec], importer: str, mods: ModuleFiles) -> list[str]:
    """The tracked files the import statements `specs` of `importer` execute, in order (repeats kept)."""
    roots = (mods.base_dir(importer), *GLOBAL_ROOTS)  # a walk up the folders: once per file, not per statement
    folder = posixpath.dirname(importer)
    out: list[str] = []
    for module, names, level in specs:
        if level:
            floor = folder
            for _ in range(level - 1):
                floor = posixpath.dirname(floor)
        else:
            root = _root_of(module or "", roots, mods)
            if root is None:
                continue  # the standard library, a third-party package
            floor = root
        # A statement means the same wherever it resolves against the same folder: thousands
        # of files import the same modules.
        key = (module, tuple(names), floor)
        found = mods.resolved.get(key)
        if found is None:
            found = mods.resolved[key] = _resolve(module, names, floor, mods)
        out += found
    return out


def _resolve(module: str | None, names: Sequence[str], floor: str, mods: ModuleFiles) -> list[str]:
    """`from <floor>/<module> import <names>`: the modules it executes, with their packages."""
    base = _join(floor, (module or "").replace(".", "/"))
    out: list[str] = []
    found = _nearest_module(base, floor, mods)
    if found:
        out += [found, *mods.packages(found)]
    for name in names:
        sub = mods.module(_join(base, name)) if name != "*" else None
        if sub:
            out += [sub, *mods.packages(sub)]
    return out


def _nearest_module(path: str, floor: str, mods: ModuleFiles) -> str | None:
    """The module `path` names, else its nearest enclosing one below `floor` (`import a.b` of an attribute)."""
    while len(path) > len(floor) or path == floor:
        found = mods.module(path) if path else None
        if found or path == floor:
            return found
        path = posixpath.dirname(path)
    return None


def _root_of(module: str, roots: Sequence[str], mods: ModuleFiles) -> str | None:
    """The first root holding the module's top-level package; None = not the repository's."""
    top = module.split(".", 1)[0]
    key = (top, roots[0])  # the other roots are GLOBAL_ROOTS
    if key not in mods.roots:
        mods.roots[key] = next((root for root in roots if top and mods.exists(_join(root, top))), None)
    return mods.roots[key]


class ImportGraph:
    """Files -> the files they import, read lazily and once each."""

    def __init__(self, mods: ModuleFiles, specs: SpecReader):
        self.mods = mods
        self._specs = specs
        self.edges: dict[str, tuple[str, ...]] = {}
        self.unreadable: set[str] = set()
        # start files -> a breadth-first search over the numbered files: parents, queue, how far the queue is done
        self._searches: dict[tuple[str, ...], tuple[list[int], list[int], list[int]]] = {}
        self._numbers: tuple[list[str], dict[str, int], list[list[int]], int] | None = None

    def imports(self, path: str) -> tuple[str, ...]:
        if path not in self.edges:
            specs = self._specs(path) if path in self.mods.files else None
            if specs is None:
                self.unreadable.add(path)
                self.edges[path] = ()
            else:
                found = resolve(specs, path, self.mods)
                self.edges[path] = tuple(dict.fromkeys(f for f in found if f != path))
        return self.edges[path]

    def closures(self, roots: Sequence[str], bit: Mapping[str, int]) -> dict[str, int]:
        """For each file reachable from `roots`: the mask of its closure (itself included).

        Tarjan's algorithm, iterative: a component is finished only after every
        component it reaches, so its closure is its own bits plus theirs.
        """
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        on_stack: set[str] = set()
        stack: list[str] = []
        closure: dict[str, int] = {}
        for root in roots:
            if root in index:
                continue
            work = [(root, iter(self.imports(root)))]
            index[root] = low[root] = len(index)
            stack.append(root)
            on_stack.add(root)
            while work:
                node, children = work[-1]
                child = next(children, None)
                if child is not None:
                    if child not in index:
                        index[child] = low[child] = len(index)
                        stack.append(child)
                        on_stack.add(child)
                        work.append((child, iter(self.imports(child))))
                    elif child in on_stack:
                        low[node] = min(low[node], index[child])
                    continue
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    self._finish_component(node, stack, on_stack, closure, bit)
        return closure

    def _finish_component(self, head: str, stack: list[str], on_stack: set[str], closure: dict[str, int],
                          bit: Mapping[str, int]) -> None:
        members = []
        while True:
            member = stack.pop()
            on_stack.discard(member)
            members.append(member)
            if member == head:
                break
        mask = 0
        for member in members:
            mask |= 1 << bit[member] if member in bit else 0
            for child in self.edges[member]:
                mask |= closure.get(child, 0)  # members are not finished yet: they add nothing here
        for member in members:
            closure[member] = mask

    def chain(self, start: Sequence[str], target: str) -> list[str]:
        """One shortest import path from a start file to `target`, for messages ([] when none).

        Breadth first, and only as far as `target`: the search is kept and resumed for the
        next target from the same start (a step's tests reach thousands of files; a message
        needs the path to a few). Over the files numbered, lists for dicts: thousands of searches."""
        if target in start:
            return [target]
        names, ids, children = self._numbered()
        goal = ids.get(target)
        if goal is None:
            return []
        key = tuple(start)
        if key not in self._searches:
            parent = [UNSEEN] * len(names)
            queue = []
            for node in (ids[s] for s in key if s in ids):
                if parent[node] == UNSEEN:
                    parent[node] = START
                    queue.append(node)
            self._searches[key] = (parent, queue, [0])
        parent, queue, done = self._searches[key]
        position = done[0]
        while parent[goal] == UNSEEN and position < len(queue):
            node = queue[position]
            position += 1
            for child in children[node]:
                if parent[child] == UNSEEN:
                    parent[child] = node
                    queue.append(child)
        done[0] = position
        if parent[goal] == UNSEEN:
            return []
        path = [goal]
        while parent[path[-1]] != START:
            path.append(parent[path[-1]])
        return [names[node] for node in reversed(path)]

    def _numbered(self) -> tuple[list[str], dict[str, int], list[list[int]]]:
        """The files read so far numbered, with their imports as numbers (again when more were read)."""
        if self._numbers is None or self._numbers[3] != len(self.edges):
            names = list(dict.fromkeys([*self.edges, *(c for cs in self.edges.values() for c in cs)]))
            ids = {name: number for number, name in enumerate(names)}
            children = [[ids[c] for c in self.edges.get(name, ())] for name in names]
            self._numbers = (names, ids, children, len(self.edges))
            self._searches.clear()
        return self._numbers[:3]
