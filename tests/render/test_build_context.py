"""The build context: a build's facts (branch, labels, registries) in the rendered jobs, as data."""

from __future__ import annotations

import shutil

import pytest

from tests.helpers import FIXTURE, assert_valid, by_key, needs_fixture, render, render_repo

HARDWARE = """
default: cpu
families:
  cpu: {vendor: cpu, queue: "cpu-{stage}", template: box}
  gpu: {vendor: nvidia, queues: {1: gpu-1, 4: gpu-4}, template: box}
templates:
  box:
    kind: docker
    image: "{registry}/app:$BUILDKITE_COMMIT"
    setup: [nvidia-smi, {run: nvidia-smi topo -m, min_gpus: 2}]
    job: {priority: 5, artifact_paths: [logs/*], default_timeout: 60, max_timeout: 90}
build:
  values: {registry: test.example, stage: premerge}
  variants:
    - {name: postmerge, branch: main, values: {registry: prod.example, stage: postmerge},
       docker_options: {mount-buildkite-agent: true}}
  variables: [[REGISTRY, "{registry}"], [BRANCH, "{branch}"]]
  branch_pattern: "[a-zA-Z0-9._/:-]+"
"""
STEPS = """
steps:
  - {label: Push, key: push, commands: ["push.sh $REGISTRY $BRANCH $HOME"], timeout_in_minutes: 120}
  - {label: Multi, key: multi, hardware: ["gpu:4"], commands: [pytest]}
"""


def build(tmp_path, branch, config="interpolate: [REGISTRY, BRANCH]\n"):
    repo = render_repo(tmp_path, STEPS, config, HARDWARE)
    result = render(repo, "--all", env={"BUILDKITE_BRANCH": branch, "BUILDKITE_COMMIT": "abc"})
    assert result.exit_code == 0, result.stderr
    return by_key(assert_valid(result.stdout))


@pytest.mark.parametrize("branch, registry, queue, mount", [
    ("feature/x", "test.example", "cpu-premerge", None), ("main", "prod.example", "cpu-postmerge", True)])
def test_a_build_fills_values_variables_and_its_variants_options(tmp_path, branch, registry, queue, mount):
    steps = build(tmp_path, branch)
    push = steps["push"]
    assert push["agents"] == {"queue": queue}
    assert push["commands"][-1] == f"push.sh {registry} {branch} $$HOME"  # $HOME is no build variable
    docker = push["plugins"][0]["docker#v5.12.0"]
    assert docker["image"] == f"{registry}/app:$BUILDKITE_COMMIT"
    assert docker.get("mount-buildkite-agent") is mount
    # the template's job fields: timeout capped, priority and artifacts set
    assert (push["timeout_in_minutes"], push["priority"], push["artifact_paths"]) == (90, 5, ["logs/*"])
    assert steps["multi"]["timeout_in_minutes"] == 60
    # multi-GPU setup only where the job has the GPUs
    assert "nvidia-smi topo -m" in steps["multi"]["commands"] and "nvidia-smi topo -m" not in push["commands"]


def test_without_interpolate_pipegens_own_dollars_stay_literal(tmp_path):
    """In pipegen's format a `$` reaches the shell as written: a variable is only filled when the
    config leaves it single for the build (interpolate)."""
    push = build(tmp_path, "main", config="")["push"]
    assert push["commands"][-1] == "push.sh $$REGISTRY $$BRANCH $$HOME"


def test_a_branch_with_shell_metacharacters_is_refused(tmp_path):
    repo = render_repo(tmp_path, STEPS, "", HARDWARE)
    result = render(repo, "--all", env={"BUILDKITE_BRANCH": "x;rm -rf /", "BUILDKITE_COMMIT": "abc"})
    assert result.exit_code == 2
    assert "BUILDKITE_BRANCH 'x;rm -rf /'" in result.stderr and "Traceback" not in result.stderr


def test_labels_select_as_the_config_says(tmp_path):
    steps = """
    steps:
      - {label: A, key: a, commands: [a], source_file_dependencies: [a/]}
      - {label: B, key: b, commands: [b], source_file_dependencies: [b/], depends_on: [a]}
      - {label: C, key: c, commands: [c], source_file_dependencies: [c/]}
    """
    config = "labels:\n  only-b: {only: [b]}\n  everything: {run_all: true}\n"
    repo = render_repo(tmp_path, steps, config, "default: cpu\nfamilies: {cpu: {vendor: cpu, queue: q}}\n")

    def running(labels):
        result = render(repo, files="", env={"BUILDKITE_PULL_REQUEST_LABELS": labels})
        assert result.exit_code == 0, result.stderr
        jobs = by_key(assert_valid(result.stdout))
        return {k for k, s in jobs.items()
                if "commands" in s and not any(d.startswith("block-") for d in s.get("depends_on", []))}

    assert running("") == set()
    assert running("bug,only-b") == {"a", "b"}
    assert running("everything") == {"a", "b", "c"}


def test_a_label_that_asks_for_nothing_is_an_error(tmp_path):
    repo = render_repo(tmp_path, STEPS, "labels:\n  lazy: {}\n", HARDWARE)
    result = render(repo, "--all")
    assert result.exit_code == 2 and "pipegen.yaml:4" in result.stderr and "asks for nothing" in result.stderr


@needs_fixture
def test_vllm_ready_run_all_tests_runs_everything_nightly_included():
    env = {"BUILDKITE_PULL_REQUEST_LABELS": "ready-run-all-tests", "BUILDKITE_BRANCH": "feature"}
    jobs = by_key(assert_valid(render(FIXTURE, files="", env=env).stdout))
    assert not [k for k in jobs if k.startswith("block-")]  # optional steps run too


@needs_fixture
def test_a_vllm_repository_extends_the_preset_inventory(tmp_path):
    repo = tmp_path / "vllm"
    shutil.copytree(FIXTURE / ".buildkite", repo / ".buildkite")
    (repo / ".buildkite" / "hardware.yaml").write_text(
        "families:\n  h100: {vendor: nvidia, arch: sm_90, template: h100-k8s,\n"
        "         queues: {1: my-h100, 2: my-h100, 4: my-h100, 8: my-h100}}\n"
        "build:\n  values: {pull_through: mirror.example/vllm}\n")
    env = {"BUILDKITE_BRANCH": "feature", "BUILDKITE_COMMIT": "abc"}
    jobs = by_key(assert_valid(render(repo, files="", env=env).stdout))
    h100 = jobs["v1-attention-h100"]
    assert h100["agents"] == {"queue": "my-h100"}
    assert h100["plugins"][0]["kubernetes"]["podSpec"]["containers"][0]["image"] == \
        "mirror.example/vllm/vllm-ci-test-repo:$BUILDKITE_COMMIT"
    assert jobs["image-build"]["agents"] == {"queue": "cpu_queue_premerge_us_east_1"}  # the rest is the preset's


@pytest.mark.parametrize("name, registry", [("vllm_ci", "r.example"), ("vllm_intel_ci", "$REGISTRY")])
def test_vllm_build_variables_only_in_the_pipeline_named_vllm_ci(tmp_path, name, registry):
    """vLLM's generator injects $REGISTRY, $BUILDKITE_COMMIT, ... only into `name: vllm_ci` (its
    ci_config_intel.yaml, name vllm_intel_ci, keeps "$BUILDKITE_COMMIT" for Buildkite to interpolate)."""
    (tmp_path / ".buildkite" / "jobs").mkdir(parents=True)
    (tmp_path / ".buildkite" / "ci_config.yaml").write_text(
        f"name: {name}\njob_dirs: [.buildkite/jobs]\nregistries: r.example\n"
        "repositories: {main: main-repo, premerge: test-repo}\n")
    (tmp_path / ".buildkite" / "jobs" / "build.yaml").write_text(
        "group: Build\nsteps:\n- label: Build\n  key: image-build-x\n  no_plugin: true\n  device: cpu\n"
        "  commands: ['build.sh $REGISTRY \"$BUILDKITE_COMMIT\"']\n")
    jobs = by_key(assert_valid(render(tmp_path, files="", env={"BUILDKITE_BRANCH": "feature"}).stdout))
    commit = "$$BUILDKITE_COMMIT" if name == "vllm_ci" else "$BUILDKITE_COMMIT"
    assert jobs["image-build-x"]["commands"][-1] == f'build.sh {registry} "{commit}"'


@pytest.mark.parametrize("branch", ["feature", "main"])
def test_vllm_mount_buildkite_agent_a_step_field_and_the_benchmarks_label(tmp_path, branch):
    """ci-infra's Step has `mount_buildkite_agent`, and its docker plugin mounts the agent for the label
    'Benchmarks' too; an AMD mirror runs AMD's container, without it. On main every docker job has it, once."""
    (tmp_path / ".buildkite" / "jobs").mkdir(parents=True)
    (tmp_path / ".buildkite" / "ci_config.yaml").write_text("name: vllm_ci\njob_dirs: [.buildkite/jobs]\n")
    step = "- label: {label}\n  key: {key}\n  commands: [pytest]\n  source_file_dependencies: [src/]\n"
    (tmp_path / ".buildkite" / "jobs" / "a.yaml").write_text(
        "group: G\nsteps:\n- label: AMD image\n  key: image-build-amd\n  no_plugin: true\n  commands: [build]\n"
        + step.format(label="Benchmarks", key="bench") + step.format(label="Plain", key="plain")
        + step.format(label="Own", key="own") + "  mount_buildkite_agent: true\n  mirror: {amd: {device: mi325_1}}\n")
    result = render(tmp_path, files="src/x.py\n", env={"BUILDKITE_BRANCH": branch, "BUILDKITE_PULL_REQUEST": "false"})
    assert result.exit_code == 0 and "mount_buildkite_agent" not in result.stderr, result.stderr
    jobs = by_key(assert_valid(result.stdout))
    mounted = {key: next(iter(job["plugins"][0].values())).get("mount_buildkite_agent") for key, job in jobs.items()
               if "plugins" in job and "docker" in next(iter(job["plugins"][0]))}
    assert mounted == {"bench": True, "plain": True if branch == "main" else None, "own": True}
    assert "mount_buildkite_agent" not in str(jobs["amd-own"])


def test_deviation_banner_previews_drop_what_the_shell_would_run_inside_double_quotes():
    """vLLM's generator deletes only quotes and `$` from its preview, then writes the banner in
    double quotes: a backtick there would run. pipegen deletes backticks and backslashes too."""
    from pipegen.render.job_commands import banner

    line = banner(1, 1, "echo `date` \\\"$HOME\"", preview="delete")
    assert line == "echo '+++ :test_tube: Command (1/1): echo date HOME'"
    assert banner(1, 2, "pytest -m 'a b'", preview="delete") == "echo '+++ :test_tube: Command (1/2): pytest -m a b'"
