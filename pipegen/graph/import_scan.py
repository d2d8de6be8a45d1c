"""The import statements of a Python module, read lexically: no parse tree. Pure.

`ast.parse` builds a tree of every expression of every file; on vLLM's
tree (2,500 files reached from the tests) that alone took 3.4 s of a 4.4 s
`check`. Imports are statements, so one regular expression that skips
strings and comments and stops at each line starting with `import`,
`from ... import`, `if TYPE_CHECKING:` or `pytest_plugins =` finds the same
imports about seven times faster (tests/graph/test_import_scan.py compares
it with an `ast` reading, on generated sources and on this repository).

What it reads as the `ast` reading does: nested imports (in functions,
`try`, `with`), relative levels, `as` names, parenthesised and
backslash-continued lists, `pytest_plugins = [...]`, and no import in an
`if TYPE_CHECKING:` block (its `else:` counts). What it does not: an import
after `;` or `:` on one line (`if x: import y`), a file with a syntax
error (its import lines still count), and, like the `ast` reading,
anything dynamic (`importlib.import_module(name)`, `__import__`, plugins
found by entry point): check cannot follow those.
"""

from __future__ import annotations

import ast
import re

# (module or None, imported names, level): `from ..a import b` -> ("a", ("b",), 2)
ImportSpec = tuple["str | None", tuple[str, ...], int]

# Every alternative starts with one of # " ' or a newline, so the regex engine skips
# ahead between them; strings and comments are matched whole, so nothing inside
# them is read as code.
_TOKEN = re.compile(r'''
    [#"'\n](?:(?<=\#)[^\n]*
  | (?<=")(?:""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*(?:"""|\Z)|[^"\\\n]*(?:\\.[^"\\\n]*)*["\n]?)
  | (?<=')(?:''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*(?:\'\'\'|\Z)|[^'\\\n]*(?:\\.[^'\\\n]*)*['\n]?)
  | (?<=\n)(?P<indent>[ \t]*)(?:
        (?:el)?if[ \t]+(?:\w+\.)?(?P<guard>TYPE_CHECKING)[ \t]*:
      | from[ \t]+(?P<module>\.*[ \t]*(?:[\w.]+(?=[ \t]))?)[ \t]*import\b
      | (?P<plain>import)\b
      | (?P<plugins>pytest_plugins)[ \t]*=(?!=)))''', re.X | re.S)
_PARENTHESISED = re.compile(r"[ \t]*\(((?:[^)#]|#[^\n]*)*)\)")  # a comment may hold a ")"
_REST_OF_STATEMENT = re.compile(r"(?:[^\n\\#;]|\\\r?\n|\\.)*")
_COMMENT = re.compile(r"#[^\n]*")
_PLUGINS_VALUE = re.compile(r"""[ \t]*(\[[^\]]*\]|\([^)]*\)|"[^"\n]*"|'[^'\n]*')""")


def scan_imports(source: str) -> list[ImportSpec]:
    """The import statements of a module in source order, nested ones included."""
    if "import" not in source and "pytest_plugins" not in source:
        return []
    source = "\n" + source  # every statement now starts after a newline
    specs: list[ImportSpec] = []
    guarded_until = -1
    for match in _TOKEN.finditer(source):
        kind = match.lastgroup
        if kind in (None, "indent") or match.start() < guarded_until:
            continue  # a string, a comment, or inside an `if TYPE_CHECKING:` block
        if kind == "guard":
            guarded_until = _block_end(source, match.end(), len(match.group("indent")))
        elif kind == "plain":
            specs += [(name, (), 0) for name in _names(source, match.end())]
        elif kind == "module":
            module = re.sub(r"[ \t]", "", match.group("module"))
            level = len(module) - len(module.lstrip("."))
            specs.append((module[level:] or None, tuple(_names(source, match.end())), level))
        else:
            specs += [(name, (), 0) for name in _plugins(source, match.end())]
    return specs


def _block_end(source: str, start: int, indent: int) -> int:
    """Where the block opened at `indent` ends: the next code line indented no deeper."""
    end = re.compile(rf"\n[ \t]{{0,{indent}}}(?=[^ \t\r\n#])").search(source, start)
    return end.start() if end else len(source)


def _names(source: str, start: int) -> list[str]:
    """`a.b as c, d` or `(x, y)` after `import`: the names, without their `as`."""
    group = _PARENTHESISED.match(source, start)
    if group:
        text = _COMMENT.sub("", group.group(1))
    else:
        rest = _REST_OF_STATEMENT.match(source, start)
        assert rest is not None  # it matches the empty text too
        text = rest.group()
    return [item.split()[0] for item in text.replace("\\\n", " ").split(",") if item.strip()]


def _plugins(source: str, start: int) -> list[str]:
    """The module names of `pytest_plugins = [...]` (a list, a tuple or one string)."""
    value = _PLUGINS_VALUE.match(source, start)
    if value is None:
        return []
    try:
        node = ast.parse(value.group(1).strip(), mode="eval").body
    except SyntaxError:
        return []
    items = node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node]
    return [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]
