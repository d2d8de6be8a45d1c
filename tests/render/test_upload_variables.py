"""Upload-time variables where Buildkite allows them: kept for its upload to fill in, checked before."""

from __future__ import annotations

import yaml

from tests.helpers import buildkite_schema_validator, git_repo, invoke

STEPS = """
steps:
  - label: Build
    key: build_${TRIPLET?}
    timeout_in_minutes: ${TIMEOUT?}
    commands: [make]
    source_file_dependencies: [src/]
  - label: Test
    key: test
    depends_on: ["build_${TRIPLET?}"]
    timeout_in_minutes: ${TEST_TIMEOUT:-2}
    commands: [sleep 30]
    source_file_dependencies: [src/]
"""


def make(tmp_path, steps=STEPS):
    return git_repo(tmp_path / "repo", {".buildkite/pipegen.yaml": "steps: [.buildkite/steps]\n",
                                        ".buildkite/steps/ci.yaml": steps, "src/a.c": ""})




def test_variables_reach_the_upload_as_written_and_make_a_valid_pipeline_there(tmp_path):
    result = invoke(make(tmp_path), "render", "--all")
    assert result.exit_code == 0, result.output
    assert "timeout_in_minutes: ${TIMEOUT?}\n" in result.stdout  # unquoted: a number once filled in
    assert yaml.safe_load(result.stdout)["steps"][1]["depends_on"] == ["build_${TRIPLET?}"]  # not rewritten
    # what `buildkite-agent pipeline upload` makes of it with TIMEOUT=30, TRIPLET=x64
    uploaded = yaml.safe_load(result.stdout.replace("${TIMEOUT?}", "30").replace("${TRIPLET?}", "x64")
                              .replace("${TEST_TIMEOUT:-2}", "2"))
    buildkite_schema_validator().validate(uploaded)
    build, test = uploaded["steps"]
    assert (build["key"], build["timeout_in_minutes"], test["depends_on"]) == ("build_x64", 30, ["build_x64"])


def test_check_does_not_call_a_key_with_variables_invalid(tmp_path):
    result = invoke(make(tmp_path), "check", "--format", "json")
    assert "invalid-key" not in result.stdout, result.stdout


def test_what_no_upload_could_make_a_number_of_is_refused_at_load(tmp_path):
    for index, (bad, fix) in enumerate([("${TIMEOUT:-soon}", "a default must be a whole number"),
                                        ("30 minutes", "write e.g. 30"),
                                        ("${TIMEOUT?not set}", "write e.g. 30"),
                                        # Buildkite's parser reads ':' then an offset: '?' is none, the upload fails
                                        ("${TIMEOUT:?}", "write e.g. 30"), ("${TIMEOUT:x}", "write e.g. 30"),
                                        ("${_TIMEOUT}", "write e.g. 30")]):
        result = invoke(make(tmp_path / str(index), STEPS.replace("${TIMEOUT?}", f'"{bad}"')), "select",
                        "--files-from", "/dev/null")
        assert result.exit_code == 2, result.output
        assert "ci.yaml:5" in result.stderr and "one upload-time variable" in result.stderr and fix in result.stderr


def test_run_reads_the_variable_as_the_upload_would(tmp_path):
    root = make(tmp_path)
    result = invoke(root, "run", "--step", "test", "--timeout-scale", "0.005", env={"PIPEGEN_HARDWARE": "cpu"})
    assert result.exit_code == 1 and "timed out after 0.6s" in result.stdout, result.output  # the default: 2 x 0.005
    result = invoke(root, "run", "--step", "test", "--timeout-scale", "0.005",
                    env={"PIPEGEN_HARDWARE": "cpu", "TEST_TIMEOUT": "1"})
    assert "timed out after 0.3s" in result.stdout, result.output
