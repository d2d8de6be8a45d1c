"""`pipegen render`: the pieces of a command step, the check after rendering, the job limit."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers import assert_valid, by_key, render, render_repo

# --------------------------------------------------------------------------- pieces of a command step


def test_skip_reason_is_cut_to_70_characters_without_splitting_a_dollar_pair():
    from pipegen.buildkite.upload_escape import Dollars
    from pipegen.render.command_step import skip_text

    double = Dollars()
    assert skip_text("", double) == "not selected"
    assert skip_text("one\ntwo", double) == "one two"
    assert skip_text("x" * 70, double) == "x" * 70
    assert skip_text("x" * 71, double) == "x" * 67 + "..."
    # "$" doubles to "$$"; a cut between the two would leave a lone "$" for Buildkite to interpolate
    assert skip_text("a" * 66 + "$" + "b" * 10, double) == "a" * 66 + "..."
    assert skip_text("a" * 65 + "$" + "b" * 10, double) == "a" * 65 + "$$..."


@pytest.mark.parametrize("declared, expected", [
    (None, {"automatic": [{"exit_status": -1, "limit": 1}]}),
    ({"manual": {"allowed": False}}, {"manual": {"allowed": False}, "automatic": [{"exit_status": -1, "limit": 1}]}),
    ({"automatic": {"exit_status": 3}}, {"automatic": [{"exit_status": 3}, {"exit_status": -1, "limit": 1}]}),
    ({"automatic": [{"exit_status": "*", "limit": 2}]}, {"automatic": [{"exit_status": "*", "limit": 2}]}),
    ({"automatic": [{"exit_status": [1, -1]}]}, {"automatic": [{"exit_status": [1, -1]}]}),
    ({"automatic": True}, {"automatic": True}),
    ({"automatic": False}, {"automatic": False}),
])
def test_lost_agents_are_retried_where_the_template_asks_unless_the_step_says_otherwise(declared, expected):
    from pipegen.render.job_fields import _with_lost_agent as _retry

    assert _retry(declared, lost_agent=1) == expected
    # without the template's lost_agent_retry the step's own retry goes out as declared
    assert _retry(declared) == (declared or {})


@pytest.mark.parametrize("text, message", [
    ("steps:\n  - command: x\n    key: a\n  - command: y\n    key: a\n", "two steps with key 'a'"),
    ("steps:\n  - command: x\n    key: a\n    depends_on: [b]\n", "depends on 'b', which is not in the pipeline"),
    # fastyaml's path (a plain `y` would be PyYAML's: a YAML 1.1 boolean is outside fastyaml's dialect)
    ("steps:\n  - command: x\n    command: z\n", r"duplicate key 'command' \(first written on line 2.* \(line 3\)"),
    ("steps:\n  - command: 'x'\n    command: y\n", r"duplicate key 'command' .* \(line 3\)"),  # PyYAML's path
    ("steps:\n  - command: [x\n", "not valid YAML: YAML syntax error"),
    ("steps:\n  - command: x\n    parallelism: 3\n", "has 3 jobs, more than the 2"),
    ("steps:\n  - group: g\n    steps:\n      - command: x\n      - command: y\n", "has 3 jobs, more than the 2"),
    ("steps:\n  - command: x\n    colour: red\n", "Buildkite's schema"),
    ("- not a mapping\n", "not a mapping"),
    # `${X:?x}` is an offset Buildkite's parser cannot read: the upload fails (a regex of its own read a variable)
    ("steps:\n  - command: x\n    key: a-${X:?x}\n", "Buildkite's schema"),
])
def test_the_check_after_rendering_refuses_what_an_upload_would(text, message):
    from pipegen.errors import OutputError
    from pipegen.render.output_check import check

    with pytest.raises(OutputError, match=message):
        check(text, limit=2)


@pytest.mark.parametrize("key", ["a-$Ñ", "a-${Ñ:-b}"])
def test_a_key_with_a_variable_buildkite_reads_passes_the_check(key):
    """Buildkite reads a name that starts with any letter (interpolation.py); the key is its value."""
    from pipegen.render.output_check import check

    check(f"steps:\n  - command: x\n    key: '{key}'\n  - command: y\n    depends_on: '{key}'\n")


# --------------------------------------------------------------------------- the 500-job limit


def many_steps(count: int, parallelism: int = 1) -> str:
    lines = ["group: Many", "steps:"]
    for i in range(count):
        lines += [f"  - label: step {i}", f"    key: s{i}", "    commands: [x]",
                  f"    source_file_dependencies: [d{i}/]"]
        if parallelism > 1:
            lines.append(f"    parallelism: {parallelism}")
    return "\n".join(lines) + "\n"


def test_over_500_jobs_omits_unselected_steps(tmp_path):
    repo = render_repo(tmp_path, many_steps(300))
    note = tmp_path / "note.md"
    files = "".join(f"d{i}/x\n" for i in range(5))
    result = render(repo, "--annotation", str(note), files=files)  # 5 run + 295 block pairs + group = 596
    assert result.exit_code == 0, result.stderr
    data = assert_valid(result.stdout)
    assert sorted(by_key(data)) == [f"s{i}" for i in range(5)]
    text = note.read_text()
    assert "295 unselected steps were omitted" in text and "omitted to stay within 500 jobs" in text


def test_block_pairs_and_groups_count_toward_the_limit(tmp_path):
    repo = render_repo(tmp_path, many_steps(249))  # 249 blocks + 249 commands + 1 group = 499
    assert len(by_key(assert_valid(render(repo, files="").stdout))) == 498
    repo2 = render_repo(tmp_path / "b", many_steps(250))  # 501: folded
    assert by_key(assert_valid(render(repo2, files="").stdout)) == {}


def test_selected_steps_alone_over_the_limit_fail_and_print_nothing(tmp_path):
    repo = render_repo(tmp_path, many_steps(100, parallelism=5))  # 500 jobs + the group
    note = tmp_path / "note.md"
    result = render(repo, "--all", "--annotation", str(note))
    assert result.exit_code == 1 and result.stdout == ""
    assert "501 Buildkite jobs" in result.stderr and "Traceback" not in result.stderr
    assert "Not uploaded" in note.read_text()
    proc = subprocess.run([sys.executable, "-m", "pipegen", "render", "--root", str(repo), "--all", "--files-from", "-"],
                          capture_output=True, env={**os.environ, "PIPEGEN_CACHE_DIR": ""})
    assert proc.returncode == 1 and proc.stdout == b"" and b"more than the 500" in proc.stderr
