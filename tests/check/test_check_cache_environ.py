"""check's kept report is keyed on the environment variables pipegen reads (check_cache.KEYED), not the whole
environment: PATH or a variable pipegen never reads leaves the entry good. The list cannot fall behind the code
unseen: every lookup in pipegen's source is keyed or said not to matter, and check, run on real repositories
with an environment that watches it, looks up no other variable."""

from __future__ import annotations

import ast
import inspect
import io
import os
from collections.abc import ItemsView, Iterator, Mapping, ValuesView
from pathlib import Path

import pytest

import pipegen
from pipegen.commands import check_cache
from pipegen.commands.check import main
from pipegen.commands.options import CheckOptions
from tests.check.test_check import vllm_repo
from tests.check.test_check_cache import checked, repo, run  # noqa: F401 (repo: a fixture)
from tests.graph.test_derived import CARGO, PYTHON, STEPS
from tests.helpers import git_repo

SOURCE = Path(pipegen.__file__).parent
# Lookups that name no variable in the source, or that read the whole environment: where, and why none of them
# can change check's report.
REVIEWED = {
    "git.py clean_env": "git's environment: the entry's state is what git reports under it, by the same commands",
    "commands/check_cache.py _state": "the key itself",
    "buildkite/upload_escape.py upload_value": "pipegen run: a step's upload-time variables, this machine's",
    "selection/changes.py base_candidates": "select: the config's base_env (vLLM's MERGE_BASE_COMMIT is keyed)",
    "selection/requested.py requested": "select: the config's run_all_env (vLLM's RUN_ALL, TORCH_NIGHTLY keyed)",
    "hardware/build_spec.py from_environ": "render: the build's variables its templates read ({env.NAME})",
    "commands/annotating.py post": "render: the environment of buildkite-agent annotate",
    "commands/run.py local_env": "pipegen run: the environment its steps run in",
    "run/process.py run_all": "pipegen run: the environment a step runs in",
}
WHOLE = {"dict", "list", "set", "tuple", "sorted", "iter", "len", "repr", "str"}  # builtins that read every variable


def keyed(name: str) -> bool:
    return name in check_cache.KEYED or name.startswith(check_cache.KEYED_FAMILIES)


def _is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id.endswith("environ")) or \
        (isinstance(node, ast.Attribute) and node.attr.endswith("environ"))


def _constants(trees: dict[str, ast.Module]) -> dict[str, set[str]]:
    """Module-level NAME = "text" of every module (a variable's name is often a constant)."""
    out: dict[str, set[str]] = {}
    for tree in trees.values():
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        out.setdefault(target.id, set()).add(node.value.value)
    return out


def _names(key: ast.AST, chain: list[ast.AST], constants: dict[str, set[str]]) -> set[str] | None:
    """The variable names a lookup's key can be: a string, a module constant, or a loop over written strings."""
    if isinstance(key, ast.Constant) and isinstance(key.value, str):
        return {key.value}
    if isinstance(key, ast.Name):
        loops = [n for n in chain if isinstance(n, ast.For)] + \
            [g for n in chain if isinstance(n, (ast.GeneratorExp, ast.ListComp, ast.SetComp)) for g in n.generators]
        for loop in loops:
            if isinstance(loop.target, ast.Name) and loop.target.id == key.id:
                items = loop.iter.elts if isinstance(loop.iter, (ast.Tuple, ast.List)) else []
                texts = {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}
                return texts if items and len(texts) == len(items) else None
        return constants.get(key.id)
    return None


def lookups() -> Iterator[tuple[str, str | None]]:
    """(module and function, variable name) of each lookup in pipegen's source; None: the name is not written
    there, or the whole environment is read. Passing the environment on is no lookup (the callee's are)."""
    trees = {str(p.relative_to(SOURCE)): ast.parse(p.read_text("utf-8")) for p in sorted(SOURCE.rglob("*.py"))}
    constants = _constants(trees)
    for path, tree in trees.items():
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in (n for n in ast.walk(tree) if _is_environ(n)):
            chain, up = [], node
            while up in parents:
                up = parents[up]
                chain.append(up)
            function = next((n.name for n in chain if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), "")
            where, parent = f"{path} {function}", chain[0]
            key = chain[1].args[0] if isinstance(parent, ast.Attribute) and parent.attr == "get" and \
                isinstance(chain[1], ast.Call) else parent.slice if isinstance(parent, ast.Subscript) and \
                parent.value is node else parent.left if isinstance(parent, ast.Compare) and \
                node in parent.comparators else None
            if key is not None:
                yield from ((where, name) for name in sorted(_names(key, chain, constants) or {None}, key=str))
            elif isinstance(parent, ast.Attribute) or (isinstance(parent, ast.Dict) and node in parent.values) or \
                    isinstance(parent, (ast.For, ast.comprehension, ast.Starred)) or \
                    (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id in WHOLE):
                yield where, None


def test_every_variable_pipegen_looks_up_is_keyed_or_said_not_to_matter() -> None:
    found = list(lookups())
    named = {name for _, name in found if name is not None}
    assert {"PIPEGEN_CONFIG", "AMD_MIRROR_HW", "NO_COLOR", "BUILDKITE_BRANCH"} <= named  # the scan sees them
    assert sorted(n for n in named if not keyed(n) and n not in check_cache.NOT_KEYED) == []
    assert set(check_cache.NOT_KEYED) <= named and not any(keyed(n) for n in check_cache.NOT_KEYED)
    unnamed = {where for where, name in found if name is None}
    assert sorted(unnamed - set(REVIEWED)) == [] and sorted(set(REVIEWED) - unnamed) == []


class Watched(Mapping[str, str]):
    """An environment that notes each variable looked up, and who read all of it."""

    def __init__(self, environ: Mapping[str, str]):
        self.environ, self.looked_up, self.readers = dict(environ), set[str](), set[str]()

    def __getitem__(self, name: str) -> str:
        self.looked_up.add(name)
        return self.environ[name]

    def __contains__(self, name: object) -> bool:
        self.looked_up.add(str(name))
        return name in self.environ

    def __iter__(self) -> Iterator[str]:
        self._whole()
        return iter(self.environ)

    def items(self) -> ItemsView[str, str]:
        self._whole()
        return self.environ.items()

    def values(self) -> ValuesView[str]:
        self._whole()
        return self.environ.values()

    def _whole(self) -> None:
        self.readers.add(next(f.function for f in inspect.stack()[1:] if f.filename != __file__))

    def __len__(self) -> int:
        return len(self.environ)


def _derived(tmp_path: Path) -> Path:
    return git_repo(tmp_path / "derived", {".buildkite/pipegen.yaml": "steps: [.buildkite/steps]\n",
                                           ".buildkite/steps/t.yaml": STEPS.replace("{python: [tests/unit/]}",
                                                                                    "{python: [tests/unit/], use: check}"),
                                           **PYTHON, **CARGO})


@pytest.mark.parametrize("made", ["vllm, an AMD twin", "derived entries"])
def test_check_looks_up_only_keyed_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, made: str) -> None:
    root = vllm_repo(tmp_path) if made.startswith("vllm") else _derived(tmp_path)
    calls = checked(monkeypatch)
    for cache in ("", str(tmp_path / "cache"), str(tmp_path / "cache")):  # none, written, read
        monkeypatch.setenv("PIPEGEN_CACHE_DIR", cache)
        environ = Watched({**os.environ, "AMD_MIRROR_HW": "amdexperimental"})
        out, before = io.StringIO(), len(calls)
        main(CheckOptions(root=str(root), environ=environ), out)
        assert "pipegen check: " in out.getvalue() and "declaration-error" not in out.getvalue(), out.getvalue()
        assert sorted(n for n in environ.looked_up if not keyed(n)) == []
        assert environ.readers <= {"clean_env", "_state"}
        if len(calls) > before:  # checked, not kept
            assert "PIPEGEN_CONFIG" in environ.looked_up
            assert ("AMD_MIRROR_HW" in environ.looked_up) == made.startswith("vllm")


def test_a_variable_pipegen_does_not_read_keeps_the_report(repo, tmp_path, monkeypatch):  # noqa: F811
    """The whole environment was the key: a new PATH entry or an unrelated variable checked again."""
    calls = checked(monkeypatch)
    cache = tmp_path / "cache"
    first = run(repo, cache)
    before = len(calls)
    assert run(repo, cache, env={"PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}", "EDITOR": "ed",
                                 "SSH_AUTH_SOCK": "/tmp/agent.1", "HOME": str(tmp_path)}) == first
    assert len(calls) == before  # kept


@pytest.mark.parametrize("name", ["AMD_MIRROR_HW", "PIPEGEN_ANY", "BUILDKITE_BRANCH", "VLLM_ANY", "CI", "PYTHONPATH"])
def test_a_keyed_variable_checks_again(repo, tmp_path, monkeypatch, name):  # noqa: F811
    calls = checked(monkeypatch)
    cache = tmp_path / "cache"
    first = run(repo, cache)
    before = len(calls)
    assert run(repo, cache, env={name: str(tmp_path)}) == first
    assert len(calls) == before + 1
