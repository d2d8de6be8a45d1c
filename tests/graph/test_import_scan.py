"""The lexical import scanner (import_scan.py) against an independent `ast` reading."""

from __future__ import annotations

import ast
import re
from collections import Counter

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pipegen.graph import import_scan
from pipegen.graph.import_scan import scan_imports
from tests.helpers import ROOT


def ast_imports(source: str) -> Counter:
    """What the scanner must find, read from the parse tree: every import statement outside
    an `if TYPE_CHECKING:` body, and the strings of `pytest_plugins = ...`."""
    found: Counter = Counter()
    queue = list(ast.parse(source).body)
    for node in queue:
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            queue += node.orelse
            continue
        for name in ("body", "orelse", "finalbody", "handlers"):
            queue += getattr(node, name, None) or []
        if isinstance(node, ast.Import):
            found.update((alias.name, (), 0) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found[(node.module, tuple(a.name for a in node.names), node.level)] += 1
        elif isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytest_plugins" for t in node.targets):
            values = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
            found.update((v.value, (), 0) for v in values if isinstance(v, ast.Constant))
    return found


def scanned(source: str) -> Counter:
    return Counter((module, tuple(names), level) for module, names, level in scan_imports(source))


def test_statements_in_source_order_nested_ones_included():
    source = "import a.b, c as d\nfrom .x import y, z as w\nfrom .. import v\ndef f():\n    import late\n"
    assert scan_imports(source) == [("a.b", (), 0), ("c", (), 0), ("x", ("y", "z"), 1), (None, ("v",), 2),
                                    ("late", (), 0)]


def test_a_module_whose_name_ends_in_import():
    # `from .test_import import run` (a test module importing another): the name is not cut at "import".
    source = "from .test_import import run\nfrom ..import x\nfrom a.reimport import y\n"
    assert scan_imports(source) == [("test_import", ("run",), 1), (None, ("x",), 2), ("a.reimport", ("y",), 0)]


def test_odd_spellings():
    """Spaces inside the dots, no module, no names (the last two do not parse)."""
    assert scan_imports("from . .a import b\nfrom\timport y\nfrom .import(a)\n") == [
        ("a", ("b",), 2), (None, ("y",), 0), (None, ("a",), 1)]
    assert scan_imports("from import x\nimport\nfrom x import\n") == [(None, ("x",), 0), ("x", (), 0)]


def test_parenthesised_and_continued_lists():
    source = ("from pkg import (\n    one,  # the first (of two)\n    two as deux,\n)\n"
              "import a, \\\n    b\nfrom m import *\n")
    assert scan_imports(source) == [("pkg", ("one", "two"), 0), ("a", (), 0), ("b", (), 0), ("m", ("*",), 0)]


def test_strings_and_comments_are_not_code():
    source = ('"""Example:\n\nimport not_this\nfrom nor import this\n"""\n'
              "x = 'import no'  # import neither\n# from a import b\ns = '''\nimport inside\n'''\nimport yes\n")
    assert scan_imports(source) == [("yes", (), 0)]


def test_type_checking_blocks_do_not_count_but_their_else_does():
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import only_for_types\n\n"
              "    # a comment at any indent\n    from a import b\nelse:\n    import at_run_time\n"
              "class C:\n    if typing.TYPE_CHECKING:\n        import hidden\n    import shown\n")
    assert scan_imports(source) == [("typing", ("TYPE_CHECKING",), 0), ("at_run_time", (), 0), ("shown", (), 0)]


def test_pytest_plugins():
    assert scan_imports("pytest_plugins = ['a.plugin', \"b\"]\n") == [("a.plugin", (), 0), ("b", (), 0)]
    assert scan_imports("pytest_plugins = ('t',)\npytest_plugins = 'single'\n") == [("t", (), 0), ("single", (), 0)]
    assert scan_imports("if pytest_plugins == x:\n    pass\n") == []


def test_documented_limits():
    """An import after `:` or `;` on its line is not seen, and a file that does not parse keeps its imports."""
    assert scan_imports("if x: import y\nz = 1; import w\n") == []
    assert scan_imports("import a\ndef (:\n") == [("a", (), 0)]


@pytest.mark.parametrize("path", sorted(p for folder in ("pipegen", "tests", "qr_tests", "benchmarks")
                                        for p in (ROOT / folder).rglob("*.py")), ids=str)
def test_this_repository_reads_as_ast_reads_it(path):
    source = path.read_text()
    assert scanned(source) == ast_imports(source)


NAME = st.sampled_from(["a", "pkg.sub", "b_2", "TYPE_CHECKING", "x.y.z"])
IMPORTS = st.one_of(
    st.builds(lambda names: "import " + ", ".join(names), st.lists(NAME, min_size=1, max_size=3)),
    st.builds(lambda dots, mod, names, paren: f"from {dots}{mod} import " +
              (f"(\n    {', '.join(names)},\n)" if paren else ", ".join(names)),
              st.sampled_from(["", ".", ".."]), NAME, st.lists(st.sampled_from(["n", "m as k", "o"]), min_size=1,
                                                               max_size=3), st.booleans()),
    st.builds(lambda names: f"pytest_plugins = {names!r}", st.lists(NAME, max_size=2)),
)
NOISE = st.sampled_from(['s = "import fake"', "t = '''\nimport fake\nfrom x import y\n'''", "# import fake",
                         'u = "#" + "\\"import"  # from a import b', "pass", 'v = f"{1}import"'])


def blocks(depth: int) -> st.SearchStrategy[list[str]]:
    """Statements as lines at indent 0, some opening a nested block (def, if TYPE_CHECKING, with)."""
    leaf = st.one_of(IMPORTS, NOISE).map(lambda s: s.split("\n"))
    if depth == 0:
        return leaf
    header = st.sampled_from(["def f():", "if TYPE_CHECKING:", "with lock:", "class C:", "if typing.TYPE_CHECKING:"])
    nested = st.builds(lambda head, body: [head, "    pass", *("    " + line for line in body)], header,
                       body_of(depth - 1))
    return st.one_of(leaf, nested)


def body_of(depth: int) -> st.SearchStrategy[list[str]]:
    return st.lists(blocks(depth), min_size=1, max_size=4).map(
        lambda parts: [line for part in parts for line in part] or ["pass"])


@settings(max_examples=300, deadline=None)
@given(body_of(2))
def test_generated_modules_read_as_ast_reads_them(lines):
    source = "\n".join(lines) + "\n"
    assert scanned(source) == ast_imports(source)


# The reading the scanner had before it read only some lines token by token: every string and comment of
# the file, in one pass. Kept as the reference of what a line in a string is, on any text.
_EVERY_TOKEN = re.compile(r'''
    [#"'\n](?:(?<=\#)[^\n]*
  | (?<=")(?:""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*(?:"""|\Z)|[^"\\\n]*(?:\\.[^"\\\n]*)*["\n]?)
  | (?<=')(?:''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*(?:\'\'\'|\Z)|[^'\\\n]*(?:\\.[^'\\\n]*)*['\n]?)
  | (?<=\n)(?P<code>))''', re.X | re.S)


def code_lines_read_whole(source: str) -> list[int]:
    """Every newline the one-pass reading reaches as code (not inside a string or comment)."""
    return [m.start() for m in _EVERY_TOKEN.finditer(source) if m.lastgroup == "code"]


def read_in_one_pass(source: str) -> list:
    """What scan_imports reads, with every string and comment read: the statements at the code lines of the
    one-pass reading, made into imports the plain way."""
    whole = "\n" + source
    specs: list = []
    guarded_until = -1
    for line in code_lines_read_whole(whole):
        match = import_scan._STATEMENT.match(whole, line)
        if match is None or line < guarded_until:
            continue
        indent, guard, module, names, rest, _ = match.groups()
        if guard:
            guarded_until = import_scan._block_end(whole, match.end(), len(indent))
        elif names is None and rest is None:
            specs += [(name, (), 0) for name in import_scan._plugins(whole, match.end())]
        else:
            imported = import_scan._items(names) if rest is None else import_scan._names(whole, match.end(), rest)
            if module is None:
                specs += [(name, (), 0) for name in imported]
            else:
                module = module.replace(" ", "").replace("\t", "")
                level = len(module) - len(module.lstrip("."))
                specs.append((module[level:] or None, tuple(imported), level))
    return specs


PIECES = st.sampled_from(['"', "'", '"""', "'''", "\\", "\n", "\n", "#", "import a", "from .b import c",
                          "if TYPE_CHECKING:", "    ", "pytest_plugins = ['p']", "x", "(", ")", "\\\n", "\r"])


@settings(max_examples=500, deadline=None)
@given(st.lists(PIECES, max_size=40))
@example(["import a", "'", "\n", "import b"])  # the line before a statement, a statement too, leaves a quote open
@example(["from .b import c", '"', "\n", "import a"])
def test_lines_read_as_code_as_the_one_pass_reading_reads_them(pieces):
    """On any text, valid Python or not: statements are read exactly where the one-pass reading of every
    string and comment would have read them (the same code lines, so the same imports)."""
    source = "".join(pieces)
    assert scan_imports(source) == read_in_one_pass(source)
