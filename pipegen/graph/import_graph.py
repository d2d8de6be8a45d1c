"""The repository-internal import closure of Python files, statically (import_scan.py).

A module name resolves against the repository's tracked files only: the
importing file's pytest base dir (the first folder up without an
`__init__.py`, which pytest puts on sys.path), the repository root and
`src/`. Anything that does not resolve there (the standard library,
third-party packages) is ignored. A resolved module brings its packages'
`__init__.py` files; `from pkg import name` brings `pkg/name.py` when that
is a module; `pytest_plugins = [...]` counts as imports. Imports under
`if TYPE_CHECKING:` never run, so they do not count.

Each file is read and scanned once (scan_cache.py keeps the scans). Files are numbered once (ModuleFiles),
and the walks run over the numbers. Closures are bit masks over a caller's
file numbering: strongly connected components (import cycles) are found
once, and each component's closure is the union of its successors'.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import reduce
from operator import or_

from pipegen.graph.import_scan import ImportSpec

# A tracked file -> its import statements (import_scan.py), None when it cannot be read.
SpecReader = Callable[[str], "Sequence[ImportSpec] | None"]

GLOBAL_ROOTS = ("", "src")
UNSEEN, START = -2, -1  # a breadth-first search's parent of a file not reached yet, of a start file


class ModuleFiles:
    """Tracked Python files, numbered (`paths`, `number`), and the folders they make up, for resolving module
    names."""

    def __init__(self, tracked: Iterable[str]):
        self.paths = list(dict.fromkeys(p for p in tracked if p.endswith(".py")))
        self.number = {path: n for n, path in enumerate(self.paths)}
        self.files = frozenset(self.paths)
        # `a/b` -> "a/b.py", else "a/b/__init__.py"
        self.modules = {path[:-3]: path for path in self.paths}
        for path in self.paths:
            if path.endswith("/__init__.py"):
                self.modules.setdefault(path[:-12], path)
        dirs: set[str] = set()
        for path in self.paths:
            folder = path.rpartition("/")[0]
            while folder and folder not in dirs:
                dirs.add(folder)
                folder = folder.rpartition("/")[0]
        self.dirs = frozenset(dirs)
        # resolve()'s memos: thousands of files import the same modules, from a few dozen base dirs
        self.resolved: dict[tuple[str | None, tuple[str, ...], str], list[int]] = {}
        self.roots: dict[tuple[str, str], str | None] = {}
        self._tables: dict[str, tuple[Table, Table, str]] = {}
        self._by_base: dict[str, Table] = {}
        self._executes: dict[str, list[int]] = {}

    def exists(self, path: str) -> bool:
        """A module file, or a folder holding Python files (a namespace package)."""
        return path in self.modules or path in self.dirs

    def executes(self, path: str) -> list[int]:
        """Importing module `a/b`: its file and its packages' `__init__.py` files, innermost first ([] when
        `a/b` is not a tracked module)."""
        found = self._executes.get(path)
        if found is None:
            module = self.modules.get(path)
            found = self._executes[path] = [] if module is None else [self.number[module], *self._packages(module)]
        return found

    def _packages(self, path: str) -> list[int]:
        out = []
        folder = path.rpartition("/")[0]
        while folder:
            init = folder + "/__init__.py"
            if init not in self.files:
                break
            if init != path:
                out.append(self.number[init])
            folder = folder.rpartition("/")[0]
        return out

    def tables(self, folder: str) -> tuple[Table, Table, str]:
        """resolve()'s memos for the files of `folder`: absolute imports (shared by its base dir), relative ones;
        and the base dir: pytest's rootdir-relative one, the first folder up without `__init__.py`."""
        found = self._tables.get(folder)
        if found is None:
            base = folder
            while base and base + "/__init__.py" in self.files:
                base = base.rpartition("/")[0]
            found = self._tables[folder] = (self._by_base.setdefault(base, {}), {}, base)
        return found


# An import statement (module, names[, level]) -> the numbers of the files it executes
Table = dict[tuple[object, ...], list[int]]


def resolve(specs: Iterable[ImportSpec], importer: str, mods: ModuleFiles) -> list[int]:
    """The numbers (`mods.paths`) of the tracked files the import statements `specs` of `importer` execute,
    in order (repeats kept)."""
    folder = importer.rpartition("/")[0]
    absolute, relative, base = mods.tables(folder)
    out: list[int] = []
    for module, names, level in specs:
        # A statement means the same in every file of a folder (relative), of a base dir (absolute).
        if level:
            key: tuple[object, ...] = (module, tuple(names), level)
            found = relative.get(key)
            if found is None:
                floor = folder
                for _ in range(level - 1):
                    floor = floor.rpartition("/")[0]
                found = relative[key] = _executed(module, tuple(names), floor, mods)
        else:
            key = (module, tuple(names))
            found = absolute.get(key)
            if found is None:
                root = _root_of(module or "", base, mods)
                # None: the standard library, a third-party package
                found = absolute[key] = [] if root is None else _executed(module, tuple(names), root, mods)
        out += found
    return out


def _executed(module: str | None, names: tuple[str, ...], floor: str, mods: ModuleFiles) -> list[int]:
    """`from <floor>/<module> import <names>`: the modules it executes, with their packages."""
    key = (module, names, floor)
    found = mods.resolved.get(key)
    if found is None:
        path = _join(floor, (module or "").replace(".", "/"))
        found = mods.resolved[key] = list(_nearest_module(path, floor, mods))
        for name in names:
            if name != "*":
                found += mods.executes(_join(path, name))
    return found


def _join(folder: str, name: str) -> str:
    return folder + "/" + name if folder and name else folder or name


def _nearest_module(path: str, floor: str, mods: ModuleFiles) -> list[int]:
    """The module `path` names, else its nearest enclosing one below `floor` (`import a.b` of an attribute)."""
    while len(path) > len(floor) or path == floor:
        found = mods.executes(path) if path else []
        if found or path == floor:
            return found
        path = path.rpartition("/")[0]
    return []


def _root_of(module: str, base: str, mods: ModuleFiles) -> str | None:
    """The first root (the base dir, then GLOBAL_ROOTS) holding the module's top-level package; None = not the
    repository's."""
    top = module.partition(".")[0]
    key = (top, base)
    if key not in mods.roots:
        mods.roots[key] = next((root for root in (base, *GLOBAL_ROOTS) if top and mods.exists(_join(root, top))),
                               None)
    return mods.roots[key]


class ImportGraph:
    """Files -> the files they import, read lazily and once each; walked over file numbers."""

    def __init__(self, mods: ModuleFiles, specs: SpecReader):
        self.mods = mods
        self._specs = specs
        self.names = list(mods.paths)  # number -> path; a path outside `mods` is numbered when first asked for
        self._ids = dict(mods.number)
        self.kids: dict[int, tuple[int, ...]] = {}  # a file read -> the files it imports
        self.unreadable: set[str] = set()
        # chain()'s searches by start files, over the files read when they began (_read_at)
        self._searches: dict[tuple[str, ...], tuple[list[int], list[int], list[int]]] = {}
        self._kids_listed: list[tuple[int, ...]] = []  # self.kids as a list
        self._read_at = -1

    def read(self) -> list[str]:
        return [self.names[node] for node in self.kids]  # the files whose imports were followed, unreadable ones too

    def imports(self, path: str) -> tuple[str, ...]:
        return tuple(map(self.names.__getitem__, self._imports(self._number(path))))

    def _number(self, path: str) -> int:
        if path not in self._ids:
            self._ids[path] = len(self.names)
            self.names.append(path)
        return self._ids[path]

    def _imports(self, node: int) -> tuple[int, ...]:
        found = self.kids.get(node)
        if found is None:
            path = self.names[node]
            specs = self._specs(path) if node < len(self.mods.paths) else None
            if specs is None:
                self.unreadable.add(path)
                found = ()
            else:
                children = dict.fromkeys(resolve(specs, path, self.mods))
                children.pop(node, None)
                found = tuple(children)
            self.kids[node] = found
        return found

    def closures(self, roots: Sequence[str], bit: Mapping[str, int]) -> dict[str, int]:
        """For each file reachable from `roots`: the mask of its closure (itself included).

        Tarjan's algorithm, iterative: a component is finished only after every
        component it reaches, so its closure is its own bits plus theirs.
        """
        starts = [self._number(root) for root in roots]
        size = len(self.names)
        order = [-1] * size  # the order a file was reached in, -1 before
        low = [0] * size
        on_stack = [False] * size
        closure = [0] * size  # 0 until the file's component is finished
        stack: list[int] = []
        reached: list[int] = []
        for root in starts:
            if order[root] >= 0:
                continue
            work = [(root, iter(self._imports(root)))]
            order[root] = low[root] = len(reached)
            reached.append(root)
            stack.append(root)
            on_stack[root] = True
            while work:
                node, children = work[-1]
                for child in children:
                    if order[child] < 0:
                        order[child] = low[child] = len(reached)
                        reached.append(child)
                        stack.append(child)
                        on_stack[child] = True
                        work.append((child, iter(self._imports(child))))
                        break
                    if on_stack[child] and order[child] < low[node]:
                        low[node] = order[child]
                else:
                    work.pop()
                    if work:
                        parent = work[-1][0]
                        low[parent] = min(low[parent], low[node])
                    if low[node] == order[node]:
                        self._finish_component(node, stack, on_stack, closure, bit)
        return {self.names[node]: closure[node] for node in reached}

    def _finish_component(self, head: int, stack: list[int], on_stack: list[bool], closure: list[int],
                          bit: Mapping[str, int]) -> None:
        members = []
        while True:
            member = stack.pop()
            on_stack[member] = False
            members.append(member)
            if member == head:
                break
        mask = 0
        for member in members:  # members are not finished yet: their closures add nothing here
            own = bit.get(self.names[member])
            mask = reduce(or_, map(closure.__getitem__, self.kids[member]), mask if own is None else mask | 1 << own)
        for member in members:
            closure[member] = mask

    def chain(self, start: Sequence[str], target: str) -> list[str]:
        """One shortest import path from a start file to `target`, for messages ([] when none).

        Breadth first, and only as far as `target`: the search is kept and resumed for the
        next target from the same start (a step's tests reach thousands of files; a message
        needs the path to a few)."""
        if target in start:
            return [target]
        goal = self._ids.get(target)
        if goal is None:
            return []
        parent, queue, done = self._search(tuple(start))
        kids, unseen = self._kids_listed, UNSEEN
        position = done[0]
        while parent[goal] == unseen and position < len(queue):
            node = queue[position]
            position += 1
            for child in kids[node]:
                if parent[child] == unseen:
                    parent[child] = node
                    queue.append(child)
        done[0] = position
        if parent[goal] == UNSEEN:
            return []
        path = [goal]
        while parent[path[-1]] != START:
            path.append(parent[path[-1]])
        return [self.names[node] for node in reversed(path)]

    def _search(self, key: tuple[str, ...]) -> tuple[list[int], list[int], list[int]]:
        """The search from these start files: parents, queue, [how far the queue is done]; anew when more
        files were read since it began."""
        if self._read_at != len(self.kids):
            self._kids_listed = [self.kids.get(node, ()) for node in range(len(self.names))]
            self._read_at = len(self.kids)
            self._searches.clear()
        if key not in self._searches:
            parent = [UNSEEN] * len(self.names)
            queue = []
            for node in map(self._ids.get, key):
                if node is not None and parent[node] == UNSEEN:
                    parent[node] = START
                    queue.append(node)
            self._searches[key] = (parent, queue, [0])
        return self._searches[key]
