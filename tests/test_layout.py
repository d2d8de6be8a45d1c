"""The layout shows the architecture: no import cycles, small modules and functions.

The import graph is read with `ast`, imports inside functions included (a lazy import
that closes a cycle is still a cycle: it only moves the failure to run time).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("pipegen", "qr_tests")
MODULE_LINES = 320  # "about 300"
FUNCTION_LINES = 65  # "about 60"


def modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = path
    return out


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules `name` imports (`from pkg import mod` counts as importing pkg.mod)."""
    out = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                out.add(full if full in known else base)
    return {m for m in out if m in known and m != name}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path that starts and ends at the same module, or None."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return stack[stack.index(target):] + [target]
            if target not in state and (found := visit(target)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_find_cycle_finds_one() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_no_import_cycles() -> None:
    found = modules()
    graph = {name: imports(name, path, set(found)) for name, path in found.items()}
    assert graph["pipegen.commands.run"] >= {"pipegen.run.local_plan", "pipegen.commands.selecting"}  # the graph is read
    assert find_cycle(graph) is None


# Data flows one way: a stage imports only the stages before it (peers of one rank not each other).
STAGES = {"frozen": -1, "atomic": -1, "states": -1, "model": 0, "errors": 0, "cache": 0, "markdown": 0, "shown": 0, "json_output": 0,
          "git": 1, "bounded_read": 1, "buildkite": 1, "declarations": 2, "graph": 2, "dialects": 3, "selection": 4,
          "hardware": 5, "render": 6, "check": 6, "run": 6, "audit": 6, "importer": 6, "commands": 7, "cli": 8, "__main__": 9}


def test_stages_import_only_earlier_stages() -> None:
    found = modules()
    backwards = []
    for name, path in found.items():
        if name.count(".") < 1 or not name.startswith("pipegen."):
            continue
        stage = name.split(".")[1]
        assert stage in STAGES, f"{name}: give its stage a place in STAGES"
        for target in imports(name, path, set(found)):
            other = target.split(".")[1] if target.startswith("pipegen.") and "." in target else stage
            if other != stage and STAGES[other] >= STAGES[stage] and {stage, other} != {"model", "errors"}:
                backwards.append(f"{name} -> {target}")
    assert backwards == []


@pytest.mark.parametrize("name", sorted(modules()))  # pipegen and the bundled suites
def test_modules_and_functions_stay_small(name: str) -> None:
    path = modules()[name]
    text = path.read_text()
    assert text.count("\n") <= MODULE_LINES, f"{path}: split it by job"
    long = [f"{n.name} ({n.end_lineno - n.lineno + 1} lines)" for n in ast.walk(ast.parse(text))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > FUNCTION_LINES]
    assert long == [], f"{path}: split these functions"


# The process's state is read at the edge: cli.py and commands/ read the environment and the standard streams and
# pass them on as values (cache.py: where the caches live, $PIPEGEN_CACHE_DIR, asked wherever one is opened).
PROCESS_STATE = ("os.environ", "os.getenv", "sys.stdin", "sys.stdout", "sys.stderr")
EDGE = ("pipegen.cli", "pipegen.commands.", "pipegen.cache", "pipegen.__main__")


def test_only_the_edge_reads_the_environment_and_the_standard_streams() -> None:
    found = []
    for name, path in modules().items():
        if not name.startswith("pipegen") or name.startswith(EDGE):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and f"{node.value.id}.{node.attr}" in PROCESS_STATE:
                found.append(f"{name}:{node.lineno} {node.value.id}.{node.attr}")
    assert found == []
