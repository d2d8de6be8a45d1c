"""Test paths named by step commands (command_paths.py, command_walk.py)."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipegen.check.command_paths import tokens
from pipegen.check.command_walk import extract
from pipegen.check.file_index import FileIndex

VLLM = (("/vllm-workspace", ""),)


def paths(commands, working_dir="/vllm-workspace/tests", mapping=VLLM):
    found = extract(commands, working_dir, mapping)
    refs = found.refs
    assert not found.unplaced
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
    "find compile/ -name 'test_*.py' | xargs -n1 -I{} pytest -s -v '{}'",  # no such files
    "python3 -c 'import vllm'",
    "python3 -m pip install x",
    "pip install pytest-timeout",
    "export NCCL_CUMEM_HOST_ENABLE=0",
    "pytest -s -v 'unbalanced",                    # unparseable: ignored, not guessed at
])
def test_nothing_checkable(command):
    assert paths([command]) == []


def test_option_values_are_not_paths():
    refs = extract(["pytest -k fp8 -m slow --ignore models/test_x.py --tp-size 4 models --models llama3.2"],
                   "/vllm-workspace/tests", VLLM).refs
    # `--models` is unknown: its value stays a bare word, which only counts if such a folder exists.
    assert [(r.path, r.surely_path) for r in refs] == [("tests/models", False), ("tests/llama3.2", False)]
    assert refs[0].ignored == ("tests/models/test_x.py",)


def test_deselecting_one_test_does_not_ignore_its_file():
    refs = extract(["pytest models --deselect models/test_x.py::test_a --deselect=models/test_y.py"],
                   "/vllm-workspace/tests", VLLM).refs
    assert [(r.path, r.ignored) for r in refs] == [("tests/models", ("tests/models/test_y.py",))]


def test_bare_words_are_not_sure_paths():
    refs = extract(["pytest tool_use --models llama3"], "/vllm-workspace/tests", VLLM).refs
    assert {r.path: r.surely_path for r in refs} == {"tests/tool_use": False, "tests/llama3": False}


def test_cd_carries_over_to_later_commands():
    assert paths(["cd ..", "pytest tests/a/test_b.py"]) == ["tests/a/test_b.py"]
    assert paths(["cd /vllm-workspace/examples && python3 run.py"]) == ["examples/run.py"]


def test_working_dir_outside_the_mapping():
    found = extract(["pytest a/test_b.py", "python3 /vllm-workspace/tests/c.py"], "/", VLLM)
    assert found.unplaced == ["a/test_b.py"]
    assert [r.path for r in found.refs] == ["tests/c.py"]


def test_leaving_the_repository_is_not_a_path():
    assert paths(["pytest ../../outside/test_x.py"]) == []


def test_command_index_is_kept():
    refs = extract(["nvidia-smi", "pytest a/test_1.py", "pytest a/test_2.py"], "", ()).refs
    assert [(r.path, r.command) for r in refs] == [("a/test_1.py", 1), ("a/test_2.py", 2)]


# The shell around the commands: scripts, handed-on text, globs, find | xargs (command_walk.py).
TREE = {
    "tests/kernels/test_fused_v4_a.py": "", "tests/kernels/test_fused_v4_b.py": "", "tests/kernels/sub/test_fused_v4_c.py": "",
    "tests/compile/test_x.py": "", "tests/compile/test_full_graph.py": "", "tests/compile/deep/test_y.py": "",
    "tests/compile/helper.py": "", "tests/cpu/test_cpu.py": "", "examples/gen.py": "",
    "ci/run-in-docker.sh": 'TIMEOUT=$1\nTEST_COMMAND=$2\ndocker run --rm img timeout "$TIMEOUT" bash -c "set -e; ${TEST_COMMAND}"\n',
    "tests/nixl/sweep.sh": (
        '#!/bin/bash\n# runs the canary first (an apostrophe: don\'t trip the lexer)\n'
        'SCRIPT="nixl/run.sh"\nCANARY="nixl/test_canary.py"\npython3 -m pytest -s -x "${CANARY}"\n'
        'cat <<EOF > /tmp/x\nit\'s a heredoc: pytest nowhere/test_z.py\nEOF\n'
        'for c in a b; do\n  if ! env "${parts[@]}" bash "${SCRIPT}" --tp 2; then exit 1; fi\ndone\n'),
    "tests/nixl/run.sh": ('SCRIPT_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"\n'
                          'GIT_ROOT="${GIT_ROOT:-$(cd -- "${SCRIPT_DIR}/../.." && pwd -P)}"\n'
                          'python3 -m pytest -s -x "${GIT_ROOT}"/tests/nixl/test_accuracy.py\n'
                          'pytest $UNKNOWN_DIR/test_q.py\n'),
    "tests/nixl/test_canary.py": "", "tests/nixl/test_accuracy.py": "",
    "ci/compat.sh": "./sde/sde64 -skl -- python3 examples/gen.py > log 2>&1 &\ncd /workspace/other && pytest tests/e2e/\n",
}


def walked(commands, working_dir="/vllm-workspace/tests", tree=TREE):
    return extract(commands, working_dir, VLLM, FileIndex(tree), tree.get)


@pytest.mark.parametrize("command, expected", [
    ("pytest -v -s kernels/test_fused_v4_*.py",  # a glob: `*` stays in its folder
     ["tests/kernels/test_fused_v4_a.py", "tests/kernels/test_fused_v4_b.py"]),
    ("find compile/ -maxdepth 1 -name 'test_*.py' -not -name 'test_full_graph.py' -print0 "
     "| xargs -0 -n1 -I{} pytest -s -v '{}'", ["tests/compile/test_x.py"]),
    ("find compile/ -name 'test_*.py' | xargs pytest -v", ["tests/compile/deep/test_y.py",
                                                          "tests/compile/test_full_graph.py", "tests/compile/test_x.py"]),
    ('bash ../ci/run-in-docker.sh 30m "\npytest -x tests/cpu/test_cpu.py\npytest -x cpu/test_cpu.py"',
     ["tests/cpu/test_cpu.py"]),  # handed on: from the working dir, else from the root; the script passes it on
    ("bash nixl/sweep.sh", ["tests/nixl/test_canary.py", "tests/nixl/test_accuracy.py"]),
    ("cd .. && bash ci/compat.sh", ["examples/gen.py"]),
])
def test_the_shell_around_the_tests(command, expected):
    assert sorted(dict.fromkeys(r.path for r in walked([command]).refs)) == sorted(expected)


def test_what_cannot_be_read_is_named():
    assert walked(["bash nixl/sweep.sh"]).unread == ["pytest $UNKNOWN_DIR/test_q.py"]
    assert walked(["bash $SCRIPT 1"]).unread == ["$SCRIPT 1"]
    assert walked(["pytest -s -v 'unbalanced"]).unread == ["pytest -s -v 'unbalanced"]
    assert walked(["cd .. && bash ci/compat.sh"]).unread == [
        "pytest tests/e2e/ (in a folder outside the repository)"]
    assert walked(['docker run img bash -c "pytest tests/elsewhere/"']).unread == [
        "pytest tests/elsewhere/ (not in the repository where it is handed to run)"]


def test_a_command_substitution_is_named_whole():
    assert walked(["pytest $(cat tests/list.txt)"]).unread == ["pytest $(cat tests/list.txt)"]
    assert walked(["pytest -v `cat x` compile/test_x.py"]).unread == ["pytest `cat x`"]
    assert walked(['bash -c "pytest -x $(cat a/b) --tb=short"']).unread == ["pytest $(cat a/b)"]
    assert walked(["pytest $(cat " + "a" * 200 + ")"]).unread == ["pytest $(cat " + "a" * 64 + "..."]  # 80 wide
    assert walked(['echo "a \\`b\\` c" && echo "\\$(d)" && pytest compile/test_x.py']).unread == []  # escaped
    # What follows a substitution is still read; a `cd` inside one stays there (a subshell).
    walk = walked(["pytest -n $(nproc) compile/test_x.py", "X=$(cd /tmp && pwd) pytest cpu/test_cpu.py"])
    assert [r.path for r in walk.refs] == ["tests/compile/test_x.py", "tests/cpu/test_cpu.py"]
    assert [r.path for r in walked(["$(bash nixl/sweep.sh)"]).refs] == ["tests/nixl/test_canary.py",
                                                                      "tests/nixl/test_accuracy.py"]


def test_a_command_writing_what_looks_like_a_substitution_placeholder_is_shown_as_written():
    """A placeholder stands for a substitution while the text is read: one the command wrote itself (no
    substitution of that number) is shown as written; it raised IndexError, a traceback from `check`."""
    assert walked(["pytest ${PIPEGEN_SUBSTITUTION_3}"]).unread == ["pytest ${PIPEGEN_SUBSTITUTION_3}"]
    assert walked(["pytest $(cat a) ${PIPEGEN_SUBSTITUTION_1}"]).unread == [
        "pytest $(cat a)", "pytest ${PIPEGEN_SUBSTITUTION_1}"]


def test_wrapper_programs_are_read_through_to_a_bound():
    """`wrapper -- program`: read through, as deep as scripts are followed; thousands of `--` raised
    RecursionError, a traceback from `check`."""
    assert [r.path for r in walked(["sde -- " * 8 + "pytest compile/test_x.py"]).refs] == ["tests/compile/test_x.py"]
    assert walked(["sde -- " * 9 + "pytest compile/test_x.py"]).refs == []
    assert walked(["sde -- " * 1500 + "pytest compile/test_x.py"]).refs == []


def test_a_script_line_a_substitution_leaves_unbalanced_is_lost_alone():
    """`'$(' ")'"` is balanced, but with the `$(...)` it holds put aside it is not: the script is read line by
    line, and that line alone was read again and again (RecursionError, a traceback from `check`)."""
    tree = {"a.sh": "echo '$(' \")'\"\npytest tests/test_a.py\n", "tests/test_a.py": ""}
    assert [r.path for r in walked(["bash a.sh"], "", tree).refs] == ["tests/test_a.py"]


def test_a_glob_matching_nothing_is_a_missing_path():
    assert [r.path for r in walked(["pytest kernels/test_none_*.py"]).refs] == ["tests/kernels/test_none_*.py"]


def test_a_script_calling_itself_ends():
    tree = {"a.sh": "bash a.sh\npytest tests/test_a.py\n", "tests/test_a.py": ""}
    assert [r.path for r in walked(["bash a.sh"], "", tree).refs] == ["tests/test_a.py"]


def shlex_tokens(command):
    """The reference: Python's shell lexer, configured as tokens() reads."""
    lexer = shlex.shlex(command.replace("\\\n", " ").replace("\n", "\n\n"), posix=True, punctuation_chars="();<>|&\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return tuple(lexer)
    except ValueError:
        return None


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet="ab $#'\"\\;&|()<>\n\t\r=*", max_size=40))
def test_tokens_are_shlex_tokens(command):
    assert tokens(command) == shlex_tokens(command)


@pytest.mark.parametrize("name", ["ci/run-in-docker.sh", "tests/nixl/sweep.sh", "tests/nixl/run.sh", "ci/compat.sh"])
def test_scripts_lex_as_shlex_lexes_them(name):
    assert tokens(TREE[name]) == shlex_tokens(TREE[name])


def test_a_shell_glob_is_matched_once_per_index_among_the_files_under_its_start(monkeypatch):
    """Every step that runs `pytest kernels/test_fused_v4_*.py` asked fnmatch about every tracked file."""
    import fnmatch

    asked = []
    real = fnmatch.fnmatchcase
    monkeypatch.setattr(fnmatch, "fnmatchcase", lambda name, pattern: asked.append(name) or real(name, pattern))
    tree = {**TREE, **{f"tests/other/f{i}.py": "" for i in range(500)}}
    index = FileIndex(tree)
    for _ in range(3):
        refs = extract(["pytest -v -s kernels/test_fused_v4_*.py"], "/vllm-workspace/tests", VLLM, index,
                       tree.get).refs
        assert sorted({r.path for r in refs}) == ["tests/kernels/test_fused_v4_a.py", "tests/kernels/test_fused_v4_b.py"]
    assert set(asked) <= {p for p in tree if p.startswith("tests/kernels/test_fused_v4_")}
    assert len(asked) <= 2 * len(set(asked))
