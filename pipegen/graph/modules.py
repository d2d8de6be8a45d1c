"""Module names -> the repository's tracked Python files, statically (import_graph.py walks what they give).

A module name resolves against the repository's tracked files only: the
importing file's pytest base dir (the first folder up without an
`__init__.py`, which pytest puts on sys.path), the repository root and
`src/`. Anything that does not resolve there (the standard library,
third-party packages) is ignored. A resolved module brings its packages'
`__init__.py` files; `from pkg import name` brings `pkg/name.py` when that
is a module. Files are numbered once (ModuleFiles), and resolve() answers in numbers.
"""

from __future__ import annotations

from collections.abc import Iterable

from pipegen.graph.import_scan import ImportSpec

GLOBAL_ROOTS = ("", "src")


class ModuleFiles:
    """Tracked Python files, numbered (`paths`, `number`), and the folders they make up, for resolving module
    names."""

    def __init__(self, tracked: Iterable[str]):
        self.paths = list(dict.fromkeys(p for p in tracked if p.endswith(".py")))
        self.number = {path: n for n, path in enumerate(self.paths)}
        self.files = frozenset(self.paths)
        # `a/b` -> "a/b.py", else "a/b/__init__.py"; and `a` -> {"b": that file} (`from a import b`)
        self.modules = {path[:-3]: path for path in self.paths}
        for path in self.paths:
            if path.endswith("/__init__.py"):
                self.modules.setdefault(path[:-12], path)
        self.submodules: dict[str, dict[str, str]] = {}
        for module, path in self.modules.items():
            folder, _, name = module.rpartition("/")
            inside = self.submodules.setdefault(folder, {})
            if name != "*":  # `from a import *` imports no module named "*"
                inside[name] = path
        dirs: set[str] = set()
        for folder in self.submodules:  # every folder holding a Python file directly
            while folder and folder not in dirs:
                dirs.add(folder)
                folder = folder.rpartition("/")[0]
        self.dirs = frozenset(dirs)
        # resolve()'s memos: thousands of files import the same modules, from a few dozen base dirs
        self.roots: dict[tuple[str, str], str | None] = {}
        self._tables: dict[str, tuple[Table, Table, str]] = {}
        self._by_base: dict[str, Table] = {}
        self._executes: dict[str, list[int]] = {}

    def exists(self, path: str) -> bool:
        """A module file, or a folder holding Python files (a namespace package)."""
        return path in self.modules or path in self.dirs

    def executes(self, module: str) -> list[int]:
        """Importing the tracked module file `module`: it and its packages' `__init__.py` files, innermost first."""
        found = self._executes.get(module)
        if found is None:
            found = self._executes[module] = [self.number[module], *self._packages(module)]
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


# A module, imported absolutely (its name) or relatively ((name, level)) -> the files importing it executes and
# its submodules by name ([], {} for one not the repository's)
Table = dict[object, tuple[list[int], dict[str, str]]]


def resolve(specs: Iterable[ImportSpec], importer: str, mods: ModuleFiles) -> list[int]:
    """The numbers (`mods.paths`) of the tracked files the import statements `specs` of `importer` execute,
    in order (repeats kept)."""
    folder = importer.rpartition("/")[0]
    absolute, relative, base = mods.tables(folder)
    out: list[int] = []
    for module, names, level in specs:
        # A module means the same in every file of a folder (relative), of a base dir (absolute).
        if level:
            found, submodules = relative.get((module, level)) or _relative(module, level, folder, relative, mods)
        else:
            found, submodules = absolute.get(module) or _absolute(module or "", base, absolute, mods)
        out += found
        if submodules:  # a package: `from a import b` imports a/b.py
            for name in names:
                sub = submodules.get(name)
                if sub is not None:
                    out += mods.executes(sub)
    return out


def _absolute(module: str, base: str, table: Table, mods: ModuleFiles) -> tuple[list[int], dict[str, str]]:
    root = _root_of(module, base, mods)  # None: the standard library, a third-party package
    found = table[module] = ([], {}) if root is None else _module_at(module, root, mods)
    return found


def _relative(module: str | None, level: int, folder: str, table: Table,
              mods: ModuleFiles) -> tuple[list[int], dict[str, str]]:
    floor = folder
    for _ in range(level - 1):
        floor = floor.rpartition("/")[0]
    found = table[module, level] = _module_at(module, floor, mods)
    return found


def _module_at(module: str | None, floor: str, mods: ModuleFiles) -> tuple[list[int], dict[str, str]]:
    """`<floor>/<module>`: the files importing it executes, its submodules."""
    path = _join(floor, (module or "").replace(".", "/"))
    return _nearest_module(path, floor, mods), mods.submodules.get(path, {})


def _join(folder: str, name: str) -> str:
    return folder + "/" + name if folder and name else folder or name


def _nearest_module(path: str, floor: str, mods: ModuleFiles) -> list[int]:
    """The module `path` names, else its nearest enclosing one below `floor` (`import a.b` of an attribute)."""
    while len(path) > len(floor) or path == floor:
        module = mods.modules.get(path) if path else None
        if module is not None or path == floor:
            return [] if module is None else mods.executes(module)
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
