"""Property: a python derive: closure is exactly what the test's imports reach, on generated packages whose
modules import each other at module level, inside functions, relatively, or only under TYPE_CHECKING."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pipegen.graph.derived import python_closure
from pipegen.graph.import_graph import ImportGraph
from pipegen.graph.import_scan import scan_imports
from pipegen.graph.modules import ModuleFiles

STYLES = ("import pkg.m{}\n", "def f():\n    from pkg import m{}\n", "from . import m{}\n",
          "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.m{}\n")
TYPING_ONLY = 3


@st.composite
def packages(draw: st.DrawFn) -> tuple[dict[str, str], dict[str, set[str]], set[str]]:
    n = draw(st.integers(1, 8))
    files = {"pkg/__init__.py": "", "tests/conftest.py": ""}
    edges: dict[str, set[str]] = {f"pkg/m{i}.py": set() for i in range(n)}
    for i in range(n):
        lines = []
        for target, style in draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, 3)), max_size=4)):
            lines.append(STYLES[style].format(target))
            if style != TYPING_ONLY:
                edges[f"pkg/m{i}.py"].add(f"pkg/m{target}.py")
        files[f"pkg/m{i}.py"] = "".join(lines)
    roots = {f"pkg/m{i}.py" for i in draw(st.sets(st.integers(0, n - 1), max_size=3))}
    files["tests/test_x.py"] = "".join(f"import {r[:-3].replace('/', '.')}\n" for r in sorted(roots))
    return files, edges, roots


@settings(max_examples=60, deadline=None)
@given(packages())
def test_the_closure_is_what_the_imports_reach(package):
    files, edges, roots = package
    graph = ImportGraph(ModuleFiles(files), lambda path: scan_imports(files[path]))
    got = {entry for entry, _, _ in python_closure(["tests/"], ["tests/test_x.py"], graph)}
    expected, queue = {"tests/test_x.py", "tests/conftest.py"}, sorted(roots)
    while queue:
        module = queue.pop()
        if module not in expected:
            expected.add(module)
            queue += sorted(edges[module])
    if len(expected) > 2:
        expected.add("pkg/__init__.py")  # a module brings its package
    assert got == expected
