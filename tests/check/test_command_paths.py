"""Test paths named by step commands (command_paths.py)."""

from __future__ import annotations

import pytest

from pipegen.buildkite.workdir import map_workdir
from pipegen.check.command_paths import extract

VLLM = (("/vllm-workspace", ""),)


def paths(commands, working_dir="/vllm-workspace/tests", mapping=VLLM):
    refs, unplaced = extract(commands, working_dir, mapping)
    assert not unplaced
    return [r.path for r in refs]


@pytest.mark.parametrize("command, expected", [
    ("pytest -v -s distributed/test_comm_ops.py", ["tests/distributed/test_comm_ops.py"]),
    ("pytest -v -s v1/e/test_x.py::test_a[FLASH] -k 'not ngram'", ["tests/v1/e/test_x.py"]),
    ("TP_SIZE=1 DP_SIZE=2 pytest -v -s v1/distributed", ["tests/v1/distributed"]),
    ("python3 -m pytest -x unit/test_a.py", ["tests/unit/test_a.py"]),
    ("pytest -v -s -m 'cpu_test' multimodal", ["tests/multimodal"]),
    ("pytest models -m 'core and not slow' --num-shards=$$N --shard-id=$$I", ["tests/models"]),
    ("pytest -v -s engine test_sequence.py test_config.py", ["tests/engine", "tests/test_sequence.py",
                                                            "tests/test_config.py"]),
    ("VLLM_X=1 torchrun --nproc-per-node=4 distributed/test_same_node.py | grep 'passed'",
     ["tests/distributed/test_same_node.py"]),
    ("torchrun --nnodes 2 --nproc-per-node 2 --rdzv_endpoint=1.2.3.4 d/test_same.py", ["tests/d/test_same.py"]),
    ("python3 -m torch.distributed.run --nproc_per_node 2 d/test_x.py", ["tests/d/test_x.py"]),
    ("VLLM_Y=1 python3 -u ../examples/rl/rlhf.py --model=m", ["examples/rl/rlhf.py"]),
    ("timeout 30m pytest a/test_b.py && echo done", ["tests/a/test_b.py"]),
    ("pytest -v -s /vllm-workspace/tests/a/test_abs.py", ["tests/a/test_abs.py"]),
])
def test_paths_from_vllm_style_commands(command, expected):
    assert paths([command]) == expected


@pytest.mark.parametrize("command", [
    "pytest -v -s $TEST_DIR",                       # computed by the shell
    "pytest -s -v 'compile/test_*.py'",             # a glob
    "find compile/ -name 'test_*.py' | xargs -n1 -I{} pytest -s -v '{}'",
    "python3 -c 'import vllm'",
    "python3 -m pip install x",
    "pip install pytest-timeout",
    "export NCCL_CUMEM_HOST_ENABLE=0",
    "pytest -s -v 'unbalanced",                    # unparseable: ignored, not guessed at
])
def test_nothing_checkable(command):
    assert paths([command]) == []


def test_option_values_are_not_paths():
    refs, _ = extract(["pytest -k fp8 -m slow --ignore models/test_x.py --tp-size 4 models --models llama3.2"],
                      "/vllm-workspace/tests", VLLM)
    # `--models` is unknown: its value stays a bare word, which only counts if such a folder exists.
    assert [(r.path, r.surely_path) for r in refs] == [("tests/models", False), ("tests/llama3.2", False)]
    assert refs[0].ignored == ("tests/models/test_x.py",)


def test_deselecting_one_test_does_not_ignore_its_file():
    refs, _ = extract(["pytest models --deselect models/test_x.py::test_a --deselect=models/test_y.py"],
                      "/vllm-workspace/tests", VLLM)
    assert [(r.path, r.ignored) for r in refs] == [("tests/models", ("tests/models/test_y.py",))]


def test_bare_words_are_not_sure_paths():
    refs, _ = extract(["pytest tool_use --models llama3"], "/vllm-workspace/tests", VLLM)
    assert {r.path: r.surely_path for r in refs} == {"tests/tool_use": False, "tests/llama3": False}


def test_cd_carries_over_to_later_commands():
    assert paths(["cd ..", "pytest tests/a/test_b.py"]) == ["tests/a/test_b.py"]
    assert paths(["cd /vllm-workspace/examples && python3 run.py"]) == ["examples/run.py"]


def test_working_dir_outside_the_mapping():
    refs, unplaced = extract(["pytest a/test_b.py", "python3 /vllm-workspace/tests/c.py"], "/", VLLM)
    assert unplaced == ["a/test_b.py"]
    assert [r.path for r in refs] == ["tests/c.py"]


def test_leaving_the_repository_is_not_a_path():
    assert paths(["pytest ../../outside/test_x.py"]) == []


def test_map_workdir():
    assert map_workdir("/vllm-workspace/tests", VLLM) == "tests"
    assert map_workdir("/vllm-workspace/", VLLM) == ""
    assert map_workdir(None, VLLM) == ""
    assert map_workdir("tests/unit", ()) == "tests/unit"
    assert map_workdir("/elsewhere", VLLM) is None
    assert map_workdir("/w/tests/x", (("/w", ""), ("/w/tests", "src/tests"))) == "src/tests/x"


def test_command_index_is_kept():
    refs, _ = extract(["nvidia-smi", "pytest a/test_1.py", "pytest a/test_2.py"], "", ())
    assert [(r.path, r.command) for r in refs] == [("a/test_1.py", 1), ("a/test_2.py", 2)]
