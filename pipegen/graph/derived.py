"""Derived dependency entries: what a step's roots reach in the code's own graph. Pure.

A step's `derive:` names roots; the entries are computed from the tree as it is, so they cannot go
stale as a hand-written list does:
- `python`: test files or folders; the files their imports reach (import_graph.py: module-level and
  in-function imports, relative imports, not under `if TYPE_CHECKING:`), with the conftest.py files
  pytest loads above each test;
- `cargo`: crate folders; the crates they reach through `path =` dependencies (cargo.py).

Each derived entry keeps the link that reached it (`Link`), so `why` can print the chain
(changed file <- imported by <- test).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a cached closure needs no scanner: importing it compiles its regular expressions
    from pipegen.graph.import_graph import ImportGraph

# (entry, the file or crate that reached it, how): how is "imported by", "loaded by pytest for",
# "path dependency of", or "root" (then `by` names the derive root).
Link = tuple[str, str, str]
ROOT = "root"


def python_starts(root: str, tracked: Iterable[str]) -> list[str]:
    """The Python files a root names: the file, or every tracked .py file under the folder."""
    base = root.strip("/")
    return sorted(p for p in tracked if p.endswith(".py") and (p == base or p.startswith(base + "/") or not base))


def python_closure(roots: Sequence[str], starts: Sequence[str], graph: ImportGraph) -> list[Link]:
    """Breadth first from the start files and the conftest.py files above them: every file reached, each
    with the one that first reached it."""
    links: dict[str, Link] = {}
    queue: list[str] = []
    for path in starts:
        for conftest in _conftests(path, graph.mods.files):
            if conftest not in links:
                links[conftest] = (conftest, path, "loaded by pytest for")
                queue.append(conftest)
        root = next((r for r in roots if path == r.strip("/") or path.startswith(r.strip("/") + "/")), roots[0])
        links[path] = (path, root, ROOT)  # a root wins over a conftest link
        queue.append(path)
    done = 0
    while done < len(queue):
        node = queue[done]
        done += 1
        for child in graph.imports(node):
            if child not in links:
                links[child] = (child, node, "imported by")
                queue.append(child)
    return list(links.values())


def _conftests(path: str, files: frozenset[str]) -> list[str]:
    """The conftest.py files pytest loads for a test: its folder's and every one above."""
    out = []
    folder = posixpath.dirname(path)
    while True:
        conftest = posixpath.join(folder, "conftest.py") if folder else "conftest.py"
        if conftest in files and conftest != path:
            out.append(conftest)
        if not folder:
            return out
        folder = posixpath.dirname(folder)


def chain(entry: str, links: dict[str, Link]) -> str:
    """`a.py <- imported by b.py <- imported by tests/t.py (root tests/)`, from the links of one step."""
    parts = [entry]
    seen = {entry}
    while entry in links:
        _, by, how = links[entry]
        if how == ROOT:
            return " <- ".join(parts) + f" (derive root {by})"
        parts.append(f"{how} {by}")
        if by in seen:  # never loops: each link points at an entry reached before
            break
        seen.add(by)
        entry = by
    return " <- ".join(parts)
