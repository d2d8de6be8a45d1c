"""Exit codes live in one place (pipegen/errors.py: EXIT_* and EXIT_CODES, from which docs/reference/exit-codes.md
is generated): every constant is described, and the commands return the constants, never a bare number."""

from __future__ import annotations

import ast
from pathlib import Path

from pipegen import errors

ROOT = Path(__file__).resolve().parent.parent.parent
EDGES = [ROOT / "pipegen" / "cli.py", ROOT / "pipegen" / "run" / "output.py",
         *sorted((ROOT / "pipegen" / "commands").glob("*.py"))]


def test_every_exit_constant_is_described() -> None:
    constants = {name: value for name, value in vars(errors).items() if name.startswith("EXIT_") and name != "EXIT_CODES"}
    assert {"EXIT_OK", "EXIT_FINDINGS", "EXIT_USAGE", "EXIT_OUTPUT", "EXIT_INTERRUPTED"} <= set(constants)
    assert sorted(constants.values()) == sorted(errors.EXIT_CODES)
    assert errors.EXIT_OUTPUT == 3 and errors.EXIT_INTERRUPTED == 130  # what users and scripts already rely on


def _bare_codes(path: Path) -> list[str]:
    """`return N`, `return A if B else N`, `sys.exit(N)`, `os._exit(N)`, `exit_code = N` with a number N other
    than 0 (success needs no name)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        value = None
        if isinstance(node, ast.Return):
            value = node.value
        elif isinstance(node, ast.Call) and ast.unparse(node.func) in ("sys.exit", "os._exit") and node.args:
            value = node.args[0]
        elif isinstance(node, ast.Assign) and any(ast.unparse(t).endswith("exit_code") for t in node.targets):
            value = node.value
        values = [value.body, value.orelse] if isinstance(value, ast.IfExp) else [value]
        if any(isinstance(v, ast.Constant) and type(v.value) is int and v.value for v in values):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_commands_exit_with_the_named_codes() -> None:
    assert _bare_codes(ROOT / "tests" / "commands" / "test_exit_codes.py") != []  # the scan sees `return 1`
    assert [line for path in EDGES for line in _bare_codes(path)] == []


def _example(failed: bool) -> int:
    return 1 if failed else 0
