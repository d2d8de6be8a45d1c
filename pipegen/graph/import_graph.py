"""The repository-internal import closure of Python files, statically (import_scan.py).

Module names resolve to the repository's tracked files (modules.py);
`pytest_plugins = [...]` counts as imports. Imports under
`if TYPE_CHECKING:` never run, so they do not count.

Each file is read and scanned once (scan_cache.py keeps the scans), and the
walks run over the files' numbers (ModuleFiles). Closures are bit masks over a caller's
file numbering: strongly connected components (import cycles) are found
once, and each component's closure is the union of its successors'.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import reduce
from operator import or_

from pipegen.graph.import_scan import ImportSpec
from pipegen.graph.modules import ModuleFiles, resolve

# A tracked file -> its import statements (import_scan.py), None when it cannot be read.
SpecReader = Callable[[str], "Sequence[ImportSpec] | None"]

START = -1  # a breadth-first search's parent of a start file


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
        self._searches: dict[tuple[str, ...], tuple[list[int | None], list[int], Iterator[int]]] = {}
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
        order: list[int | None] = [None] * size  # the order a file was reached in, None before
        low = [0] * size
        on_stack = [False] * size
        closure = [0] * size  # 0 until the file's component is finished
        stack: list[int] = []
        reached: list[int] = []
        for root in starts:
            if order[root] is not None:
                continue
            work = [(root, iter(self._imports(root)))]
            order[root] = low[root] = len(reached)
            reached.append(root)
            stack.append(root)
            on_stack[root] = True
            while work:
                node, children = work[-1]
                for child in children:
                    seen = order[child]
                    if seen is None:
                        order[child] = low[child] = len(reached)
                        reached.append(child)
                        stack.append(child)
                        on_stack[child] = True
                        work.append((child, iter(self._imports(child))))
                        break
                    if on_stack[child] and seen < low[node]:
                        low[node] = seen
                else:
                    work.pop()
                    if work:
                        parent = work[-1][0]
                        if low[node] < low[parent]:
                            low[parent] = low[node]
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
        parent, queue, ahead = self._search(tuple(start))
        if parent[goal] is None:
            kids, append = self._kids_listed, queue.append
            for node in ahead:  # the queue's iterator: it goes on over the files appended
                for child in kids[node]:
                    if parent[child] is None:
                        parent[child] = node
                        append(child)
                if parent[goal] is not None:
                    break
            else:
                return []
        path, up = [goal], parent[goal]
        while up is not None and up != START:
            path.append(up)
            up = parent[up]
        return [self.names[node] for node in reversed(path)]

    def _search(self, key: tuple[str, ...]) -> tuple[list[int | None], list[int], Iterator[int]]:
        """The search from these start files: parents, queue, the queue's files not searched from yet; anew when
        more files were read since it began."""
        if self._read_at != len(self.kids):
            self._kids_listed = [self.kids.get(node, ()) for node in range(len(self.names))]
            self._read_at = len(self.kids)
            self._searches.clear()
        if key not in self._searches:
            parent: list[int | None] = [None] * len(self.names)  # None: not reached yet
            queue = []
            for node in map(self._ids.get, key):
                if node is not None and parent[node] is None:
                    parent[node] = START
                    queue.append(node)
            self._searches[key] = (parent, queue, iter(queue))
        return self._searches[key]
