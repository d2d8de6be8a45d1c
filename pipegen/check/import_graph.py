"""The repository-internal import closure of Python files, statically (`ast`).

A module name resolves against the repository's tracked files only: the
importing file's pytest base dir (the first folder up without an
`__init__.py`, which pytest puts on sys.path), the repository root and
`src/`. Anything that does not resolve there (the standard library,
third-party packages) is ignored. A resolved module brings its packages'
`__init__.py` files; `from pkg import name` brings `pkg/name.py` when that
is a module; `pytest_plugins = [...]` counts as imports. Imports under
`if TYPE_CHECKING:` never run, so they do not count.

Each file is read and parsed once. Closures are bit masks over a caller's
file numbering: strongly connected components (import cycles) are found
once, and each component's closure is the union of its successors'.
"""

from __future__ import annotations

import ast
import posixpath
from typing import Callable, Iterable, Mapping, Sequence

# (module or None, imported names, level): `from ..a import b` -> ("a", ("b",), 2)
ImportSpec = tuple["str | None", tuple[str, ...], int]
Reader = Callable[[str], "str | None"]

GLOBAL_ROOTS = ("", "src")


def parse_imports(source: str) -> list[ImportSpec]:
    """The import statements of a module, nested ones included; [] when it does not parse."""
    if "import" not in source and "pytest_plugins" not in source:
        return []  # parsing is most of the cost: skip files that cannot import
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    specs: list[ImportSpec] = []
    for node in _statements(tree.body):
        if isinstance(node, ast.Import):
            specs += [(alias.name, (), 0) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            specs.append((node.module, tuple(a.name for a in node.names), node.level or 0))
        elif isinstance(node, ast.Assign) and _is_pytest_plugins(node):
            specs += [(name, (), 0) for name in _strings(node.value)]
    return specs


def _statements(body: list[ast.stmt]) -> list[ast.AST]:
    """Every statement, breadth first in source order; expressions are never walked (imports are statements)."""
    queue: list[ast.AST] = list(body)
    for node in queue:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            queue.extend(node.orelse)
            continue
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(node, name, None)
            if isinstance(children, list):
                queue.extend(children)
    return queue


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _is_pytest_plugins(node: ast.Assign) -> bool:
    return any(isinstance(t, ast.Name) and t.id == "pytest_plugins" for t in node.targets)


def _strings(value: ast.expr) -> list[str]:
    items = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
    return [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]


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
        out = []
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
    return [path for spec in specs for path in _resolve(spec, importer, roots, mods)]


def _resolve(spec: ImportSpec, importer: str, roots: Sequence[str], mods: ModuleFiles) -> list[str]:
    module, names, level = spec
    dotted = (module or "").replace(".", "/")
    if level:
        floor = posixpath.dirname(importer)
        for _ in range(level - 1):
            floor = posixpath.dirname(floor)
    else:
        root = _root_of(dotted, roots, mods)
        if root is None:
            return []
        floor = root
    base = _join(floor, dotted)
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


def _root_of(path: str, roots: Sequence[str], mods: ModuleFiles) -> str | None:
    """The first root holding `path`'s top-level package; None = not the repository's."""
    top = path.split("/", 1)[0]
    for root in roots:
        if top and mods.exists(_join(root, top)):
            return root
    return None


class ImportGraph:
    """Files -> the files they import, read lazily and once each."""

    def __init__(self, mods: ModuleFiles, read: Reader):
        self.mods = mods
        self._read = read
        self.edges: dict[str, tuple[str, ...]] = {}
        self.unreadable: set[str] = set()
        self._parents: dict[tuple[str, ...], dict[str, str | None]] = {}

    def imports(self, path: str) -> tuple[str, ...]:
        if path not in self.edges:
            source = self._read(path) if path in self.mods.files else None
            if source is None:
                self.unreadable.add(path)
                self.edges[path] = ()
            else:
                found = resolve(parse_imports(source), path, self.mods)
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
        """One import path from a start file to `target` (breadth first), for messages."""
        key = tuple(start)
        if key not in self._parents:
            self._parents[key] = self._breadth_first(key)
        parent = self._parents[key]
        if target not in parent:
            return []
        path: list[str] = []
        node: str | None = target
        while node is not None:
            path.append(node)
            node = parent[node]
        return path[::-1]

    def _breadth_first(self, start: tuple[str, ...]) -> dict[str, str | None]:
        parent: dict[str, str | None] = {s: None for s in start}
        queue = list(start)
        for node in queue:
            for child in self.edges.get(node, ()):
                if child not in parent:
                    parent[child] = node
                    queue.append(child)
        return parent
