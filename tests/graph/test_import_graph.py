"""Static import closures (import_graph.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pipegen.graph.import_graph import ImportGraph
from pipegen.graph.import_scan import scan_imports
from pipegen.graph.modules import ModuleFiles
from pipegen.graph.modules import resolve as resolve_numbers

FILES = {
    "pkg/__init__.py": "from pkg import core\n",
    "pkg/core.py": "import os\nimport numpy\nfrom . import util\n",
    "pkg/util.py": "import json\n",
    "pkg/sub/__init__.py": "",
    "pkg/sub/deep.py": "from ..core import thing\nfrom .. import util as u\n",
    "pkg/cycle_a.py": "from pkg import cycle_b\n",
    "pkg/cycle_b.py": "import pkg.cycle_a\nfrom pkg.util import helper\n",
    "src/lib/__init__.py": "",
    "src/lib/impl.py": "",
    "tests/conftest.py": "pytest_plugins = ['tests.plugin']\n",
    "tests/plugin.py": "",
    "tests/unit/helpers.py": "",
    "tests/unit/test_a.py": "import helpers\nimport lib.impl\nfrom pkg.sub import deep\n",
    "tests/unit/test_types.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.util\nelse:\n"
                                "    import pkg.core\n",
    "broken.py": "import pkg.util\ndef (:\n",  # imports, so the parser runs (and fails)
}


def graph(files=FILES, reads=None):
    def specs(path):
        if reads is not None:
            reads.append(path)
        text = files.get(path)
        return None if text is None else scan_imports(text)

    return ImportGraph(ModuleFiles(files), specs)


def resolve(specs, importer, mods):
    return [mods.paths[n] for n in resolve_numbers(specs, importer, mods)]


def test_standard_library_and_third_party_are_ignored():
    mods = ModuleFiles(FILES)
    assert resolve([("os", (), 0)], "pkg/core.py", mods) == []
    assert resolve([("numpy", (), 0)], "pkg/core.py", mods) == []
    assert resolve([("json", ("dumps",), 0)], "pkg/util.py", mods) == []


def test_absolute_import_brings_its_packages():
    mods = ModuleFiles(FILES)
    assert resolve([("pkg.sub.deep", (), 0)], "x.py", mods) == ["pkg/sub/deep.py", "pkg/sub/__init__.py", "pkg/__init__.py"]


def test_from_package_import_module():
    mods = ModuleFiles(FILES)
    assert resolve([("pkg", ("util", "not_a_module"), 0)], "x.py", mods) == ["pkg/__init__.py", "pkg/util.py",
                                                                              "pkg/__init__.py"]


def test_relative_imports_resolve():
    mods = ModuleFiles(FILES)
    assert resolve([("core", ("thing",), 2)], "pkg/sub/deep.py", mods) == ["pkg/core.py", "pkg/__init__.py"]
    assert resolve([(None, ("util",), 2)], "pkg/sub/deep.py", mods) == ["pkg/__init__.py", "pkg/util.py",
                                                                        "pkg/__init__.py"]


def test_src_layout_and_pytest_base_dir():
    mods = ModuleFiles(FILES)
    assert resolve([("lib.impl", (), 0)], "tests/unit/test_a.py", mods) == ["src/lib/impl.py", "src/lib/__init__.py"]
    # tests/unit has no __init__.py: pytest puts it on sys.path, so `import helpers` is the sibling.
    assert resolve([("helpers", (), 0)], "tests/unit/test_a.py", mods) == ["tests/unit/helpers.py"]


def test_attribute_import_falls_back_to_the_enclosing_module():
    mods = ModuleFiles(FILES)
    assert resolve([("pkg.util.helper", (), 0)], "x.py", mods) == ["pkg/util.py", "pkg/__init__.py"]


def test_closure_follows_cycles_and_reads_each_file_once():
    reads = []
    g = graph(reads=reads)
    roots = ["tests/unit/test_a.py", "pkg/cycle_a.py", "tests/conftest.py"]
    bit = {p: i for i, p in enumerate(sorted(FILES))}
    closure = g.closures(roots, bit)

    def files(mask):
        return {p for p, i in bit.items() if mask >> i & 1}

    assert files(closure["tests/unit/test_a.py"]) == {
        "tests/unit/test_a.py", "tests/unit/helpers.py", "src/lib/impl.py", "src/lib/__init__.py",
        "pkg/sub/deep.py", "pkg/sub/__init__.py", "pkg/__init__.py", "pkg/core.py", "pkg/util.py"}
    assert files(closure["pkg/cycle_a.py"]) == files(closure["pkg/cycle_b.py"]) == {
        "pkg/cycle_a.py", "pkg/cycle_b.py", "pkg/__init__.py", "pkg/core.py", "pkg/util.py"}
    assert files(closure["tests/conftest.py"]) == {"tests/conftest.py", "tests/plugin.py"}
    assert len(reads) == len(set(reads))


def test_untracked_or_unreadable_files_are_not_followed():
    g = graph({"a.py": "import b\n", "b.py": None})
    assert g.imports("a.py") == ("b.py",)
    assert g.imports("b.py") == ()
    assert g.unreadable == {"b.py"}


def test_a_file_that_does_not_parse_still_counts_its_import_lines():
    g = graph()
    assert g.imports("broken.py") == ("pkg/util.py", "pkg/__init__.py")
    assert g.unreadable == set()


def test_resolving_is_memoised_per_base_dir_and_folder():
    mods = ModuleFiles(FILES)
    assert resolve([("helpers", (), 0)], "tests/unit/test_a.py", mods) == ["tests/unit/helpers.py"]
    assert resolve([("helpers", (), 0)], "pkg/core.py", mods) == []  # another base dir: not the sibling
    assert resolve([(None, ("util",), 1)], "pkg/core.py", mods) == ["pkg/__init__.py", "pkg/util.py", "pkg/__init__.py"]
    assert resolve([(None, ("util",), 1)], "pkg/sub/deep.py", mods) == ["pkg/sub/__init__.py", "pkg/__init__.py"]


def test_chain_names_the_import_path():
    g = graph()
    g.closures(["tests/unit/test_a.py"], {})
    assert g.chain(["tests/unit/test_a.py"], "pkg/util.py") == ["tests/unit/test_a.py", "pkg/sub/deep.py", "pkg/util.py"]
    assert g.chain(["tests/unit/test_a.py"], "tests/plugin.py") == []


@st.composite
def import_webs(draw):
    """Modules importing each other in a drawn order (cycles too), and some start files."""
    n = draw(st.integers(1, 12))
    files = {}
    for i in range(n):
        targets = draw(st.lists(st.integers(0, n - 1), max_size=4))
        files[f"m{i}.py"] = "".join(f"import m{t}\n" for t in targets)
    starts = draw(st.lists(st.sampled_from(sorted(files)), min_size=1, max_size=3))
    return files, starts, draw(st.sampled_from(sorted(files)))


@settings(max_examples=200, deadline=None)
@given(import_webs())
def test_closures_and_chains_are_what_a_plain_breadth_first_search_finds(web):
    files, starts, target = web
    g = graph(files)
    bit = {p: i for i, p in enumerate(sorted(files))}
    closure = g.closures(starts, bit)
    parent: dict[str, str | None] = dict.fromkeys(starts)
    queue = list(parent)
    for node in queue:  # grows while read: breadth first, each file's imports in their order
        for child in g.imports(node):
            if child not in parent:
                parent[child] = node
                queue.append(child)
        reached, todo = {node}, [node]
        while todo:
            todo += [c for c in g.imports(todo.pop()) if c not in reached and not reached.add(c)]
        assert closure[node] == sum(1 << bit[p] for p in reached)
    expected = []
    if target in parent:
        expected = [target]
        while parent[expected[-1]] is not None:
            expected.append(parent[expected[-1]])
    assert g.chain(starts, target) == expected[::-1]
