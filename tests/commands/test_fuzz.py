"""Fuzz: mutated configs, steps files and inventories never give a traceback.

hypothesis deletes fields, changes their types, adds unknown ones, nests deeply and
shares subtrees (YAML aliases, up to a billion-laughs bomb); every command must then
exit 0, 1 or 2 with a message, in well under 2 s. In process (CliRunner): cheap enough
for CI's two cores.
"""

from __future__ import annotations

import copy
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipegen.cli import cli
from tests.helpers import write_files

CONFIG = {"steps": [".buildkite/steps"], "hardware": ".buildkite/hardware.yaml", "run_all": ["pyproject.toml"],
          "docs_only": ["docs/", "*.md"], "always_run": ["lint"], "unselected": "block",
          "rules": [{"name": "gpu-base", "changed": ["docker/"], "devices": ["gpu"]}]}
STEPS = {"group": "Tests", "steps": [
    {"label": "Lint", "key": "lint", "commands": ["ruff check"], "hardware": ["cpu"]},
    {"label": "Unit", "key": "unit", "depends_on": ["lint"], "commands": ["pytest tests/unit"],
     "source_file_dependencies": ["src/", "!src/vendored/", "tests/unit/"], "env": {"A": "1"}},
    {"label": "GPU", "key": "gpu", "device": "gpu", "num_devices": 2, "optional": True, "timeout_in_minutes": 5,
     "commands": ["pytest tests/gpu"], "source_file_dependencies": ["src/**/*.cu", "tests/gpu/"]},
]}
INVENTORY = {"default": "cpu", "templates": {"box": {"kind": "docker", "image": "img:1", "options": {"x": True}}},
             "families": {"cpu": {"vendor": "cpu", "queue": "cpu-q"},
                          "gpu": {"vendor": "nvidia", "arch": "sm_90", "template": "box",
                                  "queues": {1: "gpu-1", 2: "gpu-2"}}}}
PIPEGEN = {".buildkite/pipegen.yaml": CONFIG, ".buildkite/steps/tests.yaml": STEPS, ".buildkite/hardware.yaml": INVENTORY}
VLLM = {  # vLLM's layout, read through the preset
    ".buildkite/ci_config.yaml": {"name": "ci", "job_dirs": [".buildkite/areas"], "run_all_patterns": ["csrc/"],
                                  "run_all_exclude_patterns": ["csrc/cpu/"]},
    ".buildkite/areas/a.yaml": {"group": "A", "depends_on": ["image-build"], "steps": [
        {"label": "Unit", "commands": ["pytest tests/unit"], "source_file_dependencies": ["src/"],
         "mirror": {"amd": {"device": "mi325_1", "source_file_dependencies": ["tests/unit/"]}}},
        {"label": "Dist", "device": "h100", "num_devices": 2, "num_gpus": 2, "commands": ["pytest tests/gpu"],
         "source_file_dependencies": ["tests/gpu/"]}]},
    ".buildkite/areas/build.yaml": {"group": "B", "steps": [
        {"label": "image-build", "key": "image-build", "commands": ["docker build ."]},
        {"label": "image-build-amd", "key": "image-build-amd", "commands": ["docker build ."]}]},
}
CHANGED = "src/a.py\ntests/gpu/test_x.py\n"
SOURCES = ["src/a.py", "src/vendored/v.py", "src/k/x.cu", "tests/unit/test_t.py", "tests/gpu/test_x.py", "pyproject.toml"]
COMMANDS = [["select", "--format", "json"], ["why", "src/a.py", "--step", "unit"], ["render"], ["check"],
            ["run", "--dry-run", "--hardware", "cpu"]]

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 10**12), st.floats(allow_nan=True),
                    st.text(max_size=8), st.just("src/[bad"), st.just("$VAR"), st.just("*"))


def _bomb(levels: int) -> list[Any]:
    node: list[Any] = ["lol"] * 9
    for _ in range(levels):
        node = [node] * 9  # the same list nine times: yaml.dump writes an anchor and aliases
    return node


def _deep(depth: int) -> Any:
    node: Any = "x"
    for _ in range(depth):
        node = [node]
    return node


VALUES = st.one_of(SCALARS, st.lists(SCALARS, max_size=3), st.dictionaries(st.text(max_size=5), SCALARS, max_size=2),
                   st.integers(2, 8).map(_bomb), st.integers(90, 400).map(_deep))


def _paths(node: Any, here: tuple = (), seen: set[int] | None = None) -> list[tuple]:
    """Where a mutation can go: every node down to depth 5, each shared or recursive subtree once."""
    seen = set() if seen is None else seen
    out = [here]
    if id(node) in seen or len(here) >= 5:
        return out
    seen.add(id(node))
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        out += _paths(value, here + (key,), seen)
    return out


@st.composite
def mutated(draw: Any) -> tuple[dict[str, Any], str, str]:
    """(the layout's documents, file name, YAML text) of one document after 1-3 mutations."""
    docs = draw(st.sampled_from([PIPEGEN, VLLM]))
    name = draw(st.sampled_from(sorted(docs)))
    doc = copy.deepcopy(docs[name])
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(doc)[1:] or [()]))  # the whole document rarely: it only fails early
        parent = doc
        for part in path[:-1]:
            parent = parent[part]
        kind = draw(st.sampled_from(["replace"] * 4 + ["delete"] * 2 + ["unknown"] * 2 + ["share"]))
        if not path:
            doc = draw(VALUES)
            continue
        last = path[-1]
        if kind == "delete":
            del parent[last]
        elif kind == "unknown" and isinstance(parent[last], dict):
            parent[last][draw(st.sampled_from(["comands", "num_gpus", "bogus", "queues", "steps"]))] = draw(VALUES)
        elif kind == "share":
            parent[last] = parent  # a subtree under itself: a recursive alias
        else:
            parent[last] = draw(VALUES)
    try:
        text = yaml.safe_dump(doc, sort_keys=False)
    except (yaml.YAMLError, RecursionError, ValueError):
        text = "steps: [\n"  # not representable: broken YAML instead
    if draw(st.integers(0, 5)) == 0:
        cut = draw(st.integers(0, len(text)))
        text = text[:cut]  # truncated, as an editor crash leaves it
    return docs, name, text


def _repo(folder: Path, docs: dict[str, Any], name: str, text: str) -> None:
    files = {path: yaml.safe_dump(doc, sort_keys=False) for path, doc in docs.items()}
    files[name] = text
    write_files(folder, {**files, **dict.fromkeys(SOURCES, "")})


def _invoke(folder: Path, docs: dict[str, Any], args: list[str]) -> Any:
    if args[0] == "check":
        listing, given = "--tracked-files", "\n".join([*SOURCES, *docs])
    else:
        listing, given = "--files-from", CHANGED
    return CliRunner().invoke(cli, [*args, "--root", str(folder), listing, "-"], input=given)


@pytest.mark.parametrize("docs", [PIPEGEN, VLLM], ids=["pipegen", "vllm"])
def test_the_unmutated_repository_works(tmp_path, docs):
    _repo(tmp_path, docs, ".buildkite/unused.yaml", "")
    for args in COMMANDS:
        result = _invoke(tmp_path, docs, ["why", "src/a.py"] if args[0] == "why" and docs is VLLM else args)
        assert result.exit_code == 0 or (args[0] == "check" and result.exit_code == 1), (args, result.output)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated())
def test_mutated_declarations_never_give_a_traceback(case):
    docs, name, text = case
    with tempfile.TemporaryDirectory() as folder:
        _repo(Path(folder), docs, name, text)
        for args in COMMANDS:
            start = time.process_time()  # CPU, not wall: a loaded machine must not fail a bound on blow-ups
            result = _invoke(Path(folder), docs, args)
            took = time.process_time() - start
            assert result.exit_code in (0, 1, 2), (args, name, text[:300], result.output)
            assert result.exception is None or isinstance(result.exception, SystemExit), (
                args, name, text[:300], result.exc_info)
            assert "Traceback" not in result.output
            if result.exit_code == 2:
                assert "error" in result.output, (args, result.output)
            assert took < 2, (args, name, took)
