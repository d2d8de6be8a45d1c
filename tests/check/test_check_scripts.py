"""`pipegen check` finds the tests a step runs through a script, a quoted command, a glob or `find | xargs`
(command_walk.py), in real git repositories made in tmp_path, through the real CLI."""

from __future__ import annotations

import json

from tests.helpers import check, check_repo, codes, only

SCRIPT = """\
#!/bin/bash
# runs the suite handed to it in the image's shell
SUITE=$1
docker run --rm image bash -c "set -e; pytest -x ${SUITE}"
"""


def step(command: str, deps: str = "[mypkg, tests/test_core.py, tests/__init__.py, tests/helpers.py]") -> str:
    return f"""\
- label: Scripted
  key: scripted
  commands: [{command!r}]
  source_file_dependencies: {deps}
"""


def test_a_test_run_by_a_script_with_its_argument_must_select_the_step(tmp_path):
    root = check_repo(tmp_path, step("bash ci/run.sh tests/test_config.py"), files={"ci/run.sh": SCRIPT})
    exit_code, report = check(root)
    finding = only(report, "test-not-selecting")
    assert exit_code == 1
    assert "a change to tests/test_config.py would not run step 'scripted'" in finding["message"]
    deps = "[mypkg, tests/]"
    assert check(check_repo(tmp_path / "b", step("bash ci/run.sh tests/test_config.py", deps),
                            files={"ci/run.sh": SCRIPT}))[0] == 0


def test_quoted_commands_globs_and_find_xargs(tmp_path):
    for number, command in enumerate([
        'ci/run-quoted.sh 30m "pytest -x tests/test_config.py"',
        "pytest -v tests/test_c*.py",
        "find tests -name 'test_*.py' -not -name 'test_core.py' | xargs -n1 pytest -v",
    ]):
        files = {"ci/run-quoted.sh": 'timeout "$1" bash -c "$2"\n'}
        report = check(check_repo(tmp_path / str(number), step(command), files=files))[1]
        assert "tests/test_config.py" in only(report, "test-not-selecting")["message"], command


def test_what_cannot_be_read_is_a_finding_that_names_it(tmp_path):
    root = check_repo(tmp_path, step('bash ci/run.sh "$SUITE"'), files={"ci/run.sh": SCRIPT})
    exit_code, report = check(root)
    finding = only(report, "tests-unread")
    assert (exit_code, finding["severity"], finding["step"]) == (0, "warning", "scripted")
    assert "'pytest $SUITE'" in finding["message"]
    assert codes(check(check_repo(tmp_path / "b", step("bash ci/run.sh tests/test_core.py"),
                                  files={"ci/run.sh": SCRIPT}))[1]) == []


def test_a_command_substitution_is_named_whole_in_the_finding(tmp_path):
    for number, (command, shown) in enumerate([
        ("pytest $(cat tests/list.txt)", "'pytest $(cat tests/list.txt)'"),
        ("pytest `cat x`", "'pytest `cat x`'"),
    ]):
        report = check(check_repo(tmp_path / str(number), step(command)))[1]
        assert only(report, "tests-unread")["message"].endswith(f"not known: {shown}"), command


def test_a_script_the_step_runs_that_is_not_tracked_is_missing(tmp_path):
    for number, command in enumerate(["./scripts/nothere.sh", "bash scripts/nothere.sh tests/test_core.py",
                                      "cd scripts && bash nothere.sh", "source scripts/nothere.sh"]):
        exit_code, report = check(check_repo(tmp_path / str(number), step(command), files={"scripts/there.sh": ""}))
        finding = only(report, "test-missing")
        assert (exit_code, finding["step"]) == (1, "scripted"), command
        assert "but scripts/nothere.sh is not in the repository" in finding["message"], command
        assert "did you mean 'scripts/there.sh'?" in finding["fix"], command


def test_a_script_made_first_or_run_elsewhere_is_not_missing(tmp_path):
    for number, command in enumerate([
        "curl -fsSL -o scripts/made.sh https://example.com/made.sh && bash scripts/made.sh",
        "wget https://example.com/get.sh && chmod +x get.sh && ./get.sh",
        "cat > scripts/made.sh <<EOF\npytest tests/\nEOF\nbash scripts/made.sh",
        'docker run --rm image bash -c "bash scripts/in_image.sh"',  # the image's checkout, or its own files
        "git clone https://example.com/x.git && cd x && ./build.sh",  # a folder that is not tracked
        "./sde/sde64 -skl -- python3 -m pytest tests/test_core.py", "curl https://sh.rustup.rs | sh -s -- -y",
        "FILES=(\n  scripts/reqs.txt\n)",
    ]):
        steps = step(command).replace(repr(command), json.dumps(command))  # YAML reads JSON's escapes: a newline
        report = check(check_repo(tmp_path / str(number), steps, files={"scripts/there.sh": ""}))[1]
        assert "test-missing" not in codes(report), command


def test_the_json_lists_the_test_files_found_for_every_step(tmp_path):
    steps = step("bash ci/run.sh tests/test_config.py && pytest tests/test_core.py", "[mypkg, tests/]") + """\
- label: Lint
  key: lint
  commands: ["ruff check ."]
  source_file_dependencies: [mypkg]
"""
    report = check(check_repo(tmp_path, steps, files={"ci/run.sh": SCRIPT}))[1]
    assert report["tests"] == {"scripted": ["tests/test_config.py", "tests/test_core.py"], "lint": []}
