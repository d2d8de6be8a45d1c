"""`pipegen import` of pipelines of several files (issue 26): each file is its own upload, and exit 0 means
Buildkite would run what the rendered declarations say. Small synthetic pipelines of what broke on real ones."""

from __future__ import annotations

import yaml

from ..helpers import git_repo
from .test_import import OUT, run, steps_of, written


def imported(tmp_path, files, *options):
    root = git_repo(tmp_path / "r", {f".buildkite/{name}": text for name, text in files.items()})
    return root, run(root, *[f".buildkite/{name}" for name in files], *options)


AGENT = """\
env:
  AGENT_RUNNERS_LINUX_QUEUE: "${AGENT_RUNNERS_LINUX_QUEUE:-agent-runners-linux-amd64}"
  AGENT_BUILDERS_ARM64_QUEUE: "${AGENT_BUILDERS_QUEUE:-elastic-builders}"
steps:
  - label: build
    command: echo $$HOME $AGENT_BUILDERS_ARM64_QUEUE
    agents: {queue: "$AGENT_RUNNERS_LINUX_QUEUE"}
"""
CLIMA = """\
env:
  JULIA_VERSION: "1.10"
  COMMON_CONFIG_PATH: "${COMMON:-config}/x"
steps:
  - label: run
    command: juliaup add $JULIA_VERSION --config_file ${COMMON_CONFIG_PATH}/x.yml
"""


def test_each_files_env_is_written_into_its_own_references(tmp_path):
    # buildkite/agent (a queue from the file's env) and CliMA (a command's values): the definitions are followed
    root, result = imported(tmp_path, {"agent.yml": AGENT, "clima.yml": CLIMA})
    assert result.exit_code == 0, result.output
    assert "Proven" in result.output
    build, run_ = steps_of(root)
    assert build["command"] == "echo $$HOME ${AGENT_BUILDERS_QUEUE:-elastic-builders}"
    assert written(root, "hardware.yaml")["families"][build["hardware"][0]]["agents"] == {
        "queue": "${AGENT_RUNNERS_LINUX_QUEUE:-agent-runners-linux-amd64}"}
    assert run_["command"] == "juliaup add 1.10 --config_file ${COMMON:-config}/x/x.yml"
    assert written(root, "steps/02-clima.yaml")["defaults"]["env"] == {
        "JULIA_VERSION": "1.10", "COMMON_CONFIG_PATH": "${COMMON:-config}/x"}


def test_a_reference_no_text_can_carry_is_named(tmp_path):
    root, result = imported(tmp_path, {"a.yml": CLIMA.replace("$JULIA_VERSION", "${JULIA_VERSION:0:3}"),
                                       "b.yml": "steps:\n  - {key: b, command: make}\n"})
    assert result.exit_code == 1
    assert "'${JULIA_VERSION:0:3}' over the file's own env (JULIA_VERSION: '1.10') has no form" in result.output


def test_an_upload_time_value_in_a_typed_field_is_named_and_the_output_loads(tmp_path):
    # JuliaCI/julia-buildkite: soft_fail: ${ALLOW_FAIL?}
    root, result = imported(tmp_path, {"a.yml": "steps:\n  - {key: a, command: make, soft_fail: '${ALLOW_FAIL?}'}\n"})
    assert result.exit_code == 1
    assert "its soft_fail '${ALLOW_FAIL?}' takes its value when Buildkite interpolates the upload" in result.output
    assert "do not render" not in result.output
    assert steps_of(root) == [{"label": "make", "key": "a", "command": "make"}]


def test_a_wait_acts_within_its_file_and_a_group_key_means_its_steps(tmp_path):
    # buildkite/docs: steps after a file's wait wait for that file's steps only, not for another file's
    files = {"docs.yml": "steps:\n  - {key: linting, command: lint}\n  - wait\n  - {key: rspec, command: rspec}\n"
                         "  - block: deploy?\n    key: go\n  - {key: deploy, command: deploy}\n",
             "mirror.yml": "steps:\n  - {key: sync, command: sync}\n  - wait\n"
                           "  - group: Publish\n    key: publish\n    steps: [{key: deb, command: deb}]\n"
                           "  - {key: brew, command: brew, depends_on: publish}\n"}
    root, result = imported(tmp_path, files)
    assert result.exit_code == 0, result.output
    steps = {s.get("key", s.get("block")): s for s in steps_of(root) if isinstance(s, dict)}
    assert steps["brew"]["depends_on"] == ["deb"]  # the group key, as its steps
    assert "linting" not in str(steps["sync"].get("depends_on", ""))


def test_the_notify_of_every_file_is_the_builds(tmp_path):
    # buildkite/docs: a Slack message on a failed build, in one file of several
    files = {"a.yml": "notify: [{slack: '#ci', if: build.state == \"failed\"}]\nsteps:\n  - {key: a, command: x}\n",
             "b.yml": "steps:\n  - {key: b, command: y}\n"}
    root, result = imported(tmp_path, files)
    assert result.exit_code == 0, result.output
    assert written(root, "pipegen.yaml")["pipeline"]["notify"] == [{"slack": "#ci", "if": 'build.state == "failed"'}]


def test_past_99_files_the_names_sort_in_pipeline_order(tmp_path):
    groups = "".join(f"  - group: g{n:03d}\n    steps: [{{key: s{n}, command: make}}]\n" for n in range(101))
    root, result = imported(tmp_path, {"pipeline.yml": f"steps:\n{groups}"})
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in (root / OUT / "steps").iterdir())
    assert names[0] == "001-g000.yaml" and names[-1] == "101-g100.yaml"
    assert [s["key"] for s in steps_of(root)] == [f"s{n}" for n in range(101)]


def test_another_selectors_path_field_is_suggested_and_read_with_paths_field(tmp_path):
    # MaterializeInc/materialize: `inputs:` path lists, read by its own trimming script
    pipeline = {"pipeline.yml": "steps:\n  - {key: a, command: x, inputs: [src/a, misc/b]}\n  - {key: b, command: y}\n"}
    root, result = imported(tmp_path, pipeline)
    assert result.exit_code == 1
    assert "its 'inputs' is no field of a Buildkite step" in result.output
    assert "pass --paths-field inputs to read it as source_file_dependencies" in result.output
    assert "every step runs on every build" not in result.output
    root, result = imported(tmp_path / "again", pipeline, "--paths-field", "inputs")
    assert result.exit_code == 0, result.output
    assert steps_of(root)[0]["source_file_dependencies"] == ["src/a", "misc/b"]
    assert "Selected by the paths they watched: 1 step (a)" in result.output


def test_a_declaration_pipegen_wrote_is_marked_as_its_own(tmp_path):
    root, result = imported(tmp_path, {"pipeline.yml": "steps:\n  - {key: a, command: x}\n"})
    assert result.exit_code == 0
    for path in (root / OUT).rglob("*.yaml"):
        assert path.read_text().startswith("# Written by pipegen import; `pipegen import --force` replaces")
        yaml.safe_load(path.read_text())
