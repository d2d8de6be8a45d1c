"""`pipegen render`: Buildkite YAML on the right hardware, validated, explained."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from pipegen.cli import cli

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT.parent / "shared" / "fixtures" / "vllm-2026-05-29"
needs_fixture = pytest.mark.skipif(not FIXTURE.is_dir(), reason=f"vLLM fixtures not found at {FIXTURE}")


def buildkite_schema_validator():
    """An independent check: jsonschema on check-jsonschema's vendored copy (not pipegen's fast path)."""
    import importlib.resources

    import jsonschema

    text = importlib.resources.files("check_jsonschema.builtin_schemas.vendor").joinpath("buildkite.json").read_text()
    return jsonschema.Draft7Validator(json.loads(text))


SCHEMA = buildkite_schema_validator()


def assert_valid(text: str) -> dict:
    data = yaml.safe_load(text)
    errors = sorted(SCHEMA.iter_errors(data), key=lambda e: list(e.absolute_path))
    assert not errors, errors[0]
    return data


def all_steps(data: dict) -> list[dict]:
    out = []
    for step in data["steps"]:
        out += step["steps"] if "group" in step else [step]
    return out


def by_key(data: dict) -> dict[str, dict]:
    return {s["key"]: s for s in all_steps(data)}


def render(root, *args, files: str | None = "", env=None):
    extra = ["--files-from", "-"] if files is not None else []
    runner = CliRunner()
    result = runner.invoke(cli, ["render", "--root", str(root), *extra, *args], input=files or "",
                           env={"PIPEGEN_CACHE_DIR": "", **(env or {})}, catch_exceptions=False)
    return result


HARDWARE = """
default: cpu
families:
  cpu: {vendor: cpu, queue: cpu-q, template: py}
  h100: {vendor: nvidia, arch: sm_90, template: cuda, queues: {1: h100-1, 2: h100-2, 4: h100-4, 8: h100-8}}
  mi355: {vendor: amd, arch: gfx950, template: rocm, queues: {1: mi355-1, 2: mi355-2, 8: mi355-8}}
  k8s: {vendor: nvidia, template: pod, queues: {1: k8s-q, 2: k8s-q}}
  runner: {vendor: amd, template: script, queues: {1: script-q}}
templates:
  py: {kind: docker, image: "python:3.11", options: {always-pull: true}}
  cuda: {kind: docker, image: "nvcr.io/cuda:$BUILDKITE_COMMIT", gpus: all, volumes: [/dev/shm:/dev/shm],
         setup: ["nvidia-smi"]}
  rocm: {kind: docker, image: rocm/pytorch, devices: [/dev/kfd, /dev/dri]}
  pod: {kind: kubernetes, pod_spec: {containers: [{image: "img:1", resources: {limits: {}}}]}}
  script: {kind: plain, wrap: "bash run.sh {commands}"}
"""


def make_repo(tmp_path: Path, steps: str, config: str = "", hardware: str = HARDWARE) -> Path:
    (tmp_path / ".buildkite" / "steps").mkdir(parents=True)
    (tmp_path / ".buildkite" / "pipegen.yaml").write_text("steps: [.buildkite/steps]\nhardware: .buildkite/hardware.yaml\n"
                                                         + config)
    (tmp_path / ".buildkite" / "hardware.yaml").write_text(hardware)
    (tmp_path / ".buildkite" / "steps" / "steps.yaml").write_text(textwrap.dedent(steps))
    return tmp_path


STEPS = """
group: Tests
steps:
  - label: "Unit"
    key: unit
    hardware: [cpu]
    commands: ["pytest tests"]
    source_file_dependencies: [src/]
  - label: "Quick reduce"
    key: qr
    hardware: [cpu, h100:2, mi355:2, mi355:8]
    working_dir: /work
    commands: ["pytest qr_tests", "echo $HOME"]
    env: {TP_SIZE: "2"}
    retry: {automatic: [{exit_status: 3, limit: 2}]}
    soft_fail: [{exit_status: 7}]
    timeout_in_minutes: 30
    parallelism: 2
    concurrency: 1
    concurrency_group: qr-gpu
    depends_on: [unit]
    source_file_dependencies: [qr/]
  - label: "On Kubernetes"
    key: pod
    hardware: ["k8s:2"]
    commands: ["true"]
    source_file_dependencies: [k8s/]
  - label: "Script runner"
    key: script
    hardware: [runner]
    working_dir: /w
    commands: ["a 'b'", "c"]
    source_file_dependencies: [script/]
"""


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path, STEPS)


# --------------------------------------------------------------------------- output shape


def test_mixed_change_runs_selected_blocks_the_rest(repo):
    result = render(repo, files="qr/x.py\n")
    assert result.exit_code == 0, result.output
    data = assert_valid(result.stdout)
    steps = by_key(data)
    assert [s.get("group") for s in data["steps"]] == ["Tests"]
    qr = steps["qr-mi355-x2"]
    assert qr["agents"] == {"queue": "mi355-2"}  # a 2-GPU MI355 step on the MI355 2-GPU queue
    assert steps["qr-cpu"]["agents"] == {"queue": "cpu-q"}  # a CPU step on a CPU queue
    assert steps["qr-mi355-x8"]["agents"] == {"queue": "mi355-8"}
    assert steps["qr-h100"]["agents"] == {"queue": "h100-2"}
    # the selected step's dependency runs too, whatever its own decision
    assert "block-unit" not in steps and "unit" in steps and steps["qr-cpu"]["depends_on"] == ["unit"]
    # unselected steps: a block step that the command step waits for
    assert steps["block-pod"]["block"] == "Run On Kubernetes"
    assert steps["pod"]["depends_on"] == ["block-pod"]


def test_command_step_fields(repo):
    data = assert_valid(render(repo, "--all").stdout)
    step = by_key(data)["qr-h100"]
    assert step["commands"] == [
        "cd /work", "nvidia-smi",
        "echo '+++ :test_tube: Command (1/2): pytest qr_tests'", "pytest qr_tests",
        "echo '+++ :test_tube: Command (2/2): echo  HOME'", "echo $$HOME",
    ]
    assert step["env"] == {"TP_SIZE": "2"}
    assert step["retry"] == {"automatic": [{"exit_status": 3, "limit": 2}, {"exit_status": -1, "limit": 1}]}
    assert step["soft_fail"] == [{"exit_status": 7}]
    assert (step["timeout_in_minutes"], step["parallelism"]) == (30, 2)
    assert (step["concurrency"], step["concurrency_group"]) == (1, "qr-gpu")
    assert step["plugins"] == [{"docker#v5.12.0": {
        "image": "nvcr.io/cuda:$BUILDKITE_COMMIT", "gpus": "all", "volumes": ["/dev/shm:/dev/shm"]}}]
    rocm = by_key(data)["qr-mi355-x8"]["plugins"][0]["docker#v5.12.0"]
    assert rocm["devices"] == ["/dev/kfd", "/dev/dri"] and "gpus" not in rocm
    cpu = by_key(data)["unit"]
    assert cpu["retry"] == {"automatic": [{"exit_status": -1, "limit": 1}]}
    assert cpu["plugins"] == [{"docker#v5.12.0": {"image": "python:3.11", "always-pull": True}}]


def test_kubernetes_and_wrapped_commands(repo):
    steps = by_key(assert_valid(render(repo, "--all").stdout))
    pod = steps["pod"]["plugins"][0]["kubernetes"]["podSpec"]
    assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 2}
    assert steps["script"]["commands"] == ["bash run.sh 'cd /w && a '\"'\"'b'\"'\"' && c'"]
    assert "plugins" not in steps["script"]


def test_unselected_skip_and_omit(repo):
    skip = by_key(assert_valid(render(repo, "--unselected", "skip", files="src/a.py\n").stdout))
    assert skip["unit"].get("skip") is None
    assert skip["pod"]["skip"].startswith("no changed file matches") and len(skip["pod"]["skip"]) <= 70
    assert not [k for k in skip if k.startswith("block-")]
    omit = by_key(assert_valid(render(repo, "--unselected", "omit", files="src/a.py\n").stdout))
    assert list(omit) == ["unit"]


def test_config_default_for_unselected(tmp_path):
    repo = make_repo(tmp_path, STEPS, config="unselected: omit\n")
    assert list(by_key(assert_valid(render(repo, files="src/a.py\n").stdout))) == ["unit"]


def test_nothing_selected_and_docs_only(tmp_path):
    repo = make_repo(tmp_path, STEPS, config="docs_only: ['*.md']\n")
    nothing = by_key(assert_valid(render(repo, files="elsewhere/x.py\n").stdout))
    assert all(k.startswith("block-") or s["depends_on"][0].startswith("block-") for k, s in nothing.items())
    annotation = tmp_path / "why.md"
    docs = render(repo, "--annotation", str(annotation), files="README.md\n")
    assert yaml.safe_load(docs.stdout)["steps"] == [] and assert_valid(docs.stdout)
    assert "docs-only" in annotation.read_text()


def test_annotation_lists_hardware_action_reason(repo, tmp_path):
    note = tmp_path / "note.md"
    assert render(repo, "--annotation", str(note), files="qr/x.py\n").exit_code == 0
    text = note.read_text()
    assert "| Quick reduce (mi355 x2) (`qr-mi355-x2`) | Tests | mi355 x2 (`mi355-2`) | run | qr/x.py matches 'qr/' |" in text
    assert "needed by selected step" in text  # `unit` was pulled in
    assert "blocked" in text and "**5 run**" in text


def test_annotation_says_why_everything_runs(repo, tmp_path):
    note = tmp_path / "note.md"
    assert render(repo, "--all", "--annotation", str(note)).exit_code == 0
    assert "> Running everything: " in note.read_text()


def test_dependencies_of_a_selected_step_run_transitively(tmp_path):
    repo = make_repo(tmp_path, """
        steps:
          - label: A
            key: a
            commands: [x]
            source_file_dependencies: [a/]
          - label: B
            key: b
            depends_on: [a]
            commands: [x]
            source_file_dependencies: [b/]
          - label: C
            key: c
            depends_on: [b]
            commands: [x]
            source_file_dependencies: [c/]
          - label: D
            key: d
            commands: [x]
            source_file_dependencies: [d/]
        """)
    note = tmp_path / "note.md"
    steps = by_key(assert_valid(render(repo, "--annotation", str(note), files="c/x.py\n").stdout))
    assert sorted(steps) == ["a", "b", "block-d", "c", "d"]
    assert (steps["c"]["depends_on"], steps["b"]["depends_on"], steps["a"].get("depends_on")) == (["b"], ["a"], None)
    text = note.read_text()
    assert "needed by selected step 'c'" in text and "needed by selected step 'b'" in text


def test_byte_identical_output(repo):
    first = render(repo, files="qr/x.py\n").stdout_bytes
    assert first == render(repo, files="qr/x.py\n").stdout_bytes


def test_untrusted_diff_warns_and_selects_everything(repo):
    for command in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", *command], cwd=repo, check=True)
    result = CliRunner().invoke(cli, ["render", "--root", str(repo), "--base", "no-such-ref"],
                                env={"PIPEGEN_CACHE_DIR": ""})
    assert result.exit_code == 0
    assert "WARNING" in result.stderr
    assert not [k for k in by_key(assert_valid(result.stdout)) if k.startswith("block-")]


# --------------------------------------------------------------------------- hardware errors


def test_missing_gpu_count_is_a_declaration_error(tmp_path):
    repo = make_repo(tmp_path, """
        steps:
          - label: big
            hardware: ["mi355:4"]
            commands: [x]
        """)
    result = render(repo, "--all")
    assert result.exit_code == 2 and result.stdout == ""
    assert "steps.yaml:3" in result.stderr and "'big'" in result.stderr and "4 GPU" in result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_family_is_a_declaration_error(tmp_path):
    repo = make_repo(tmp_path, """
        steps:
          - label: x
            hardware: [mi999]
            commands: [x]
        """)
    result = render(repo, "--all")
    assert result.exit_code == 2 and "mi999" in result.stderr and "no family" in result.stderr


# --------------------------------------------------------------------------- keys


def test_invalid_keys_become_valid_unique_and_dependencies_follow(tmp_path):
    repo = make_repo(tmp_path, """
        steps:
          - label: a
            key: "my.key/with spaces"
            commands: [x]
          - label: b
            key: "my key:with spaces"
            commands: [x]
          - label: c
            key: "6ba7b810-9dad-11d1-80b4-00c04fd430c8"
            commands: [x]
          - label: d
            key: "%s"
            depends_on: ["my.key/with spaces"]
            commands: [x]
          - label: e
            key: "my-key-with-spaces"
            commands: [x]
        """ % ("k" * 150))
    data = assert_valid(render(repo, "--all").stdout)
    keys = [s["key"] for s in all_steps(data)]
    assert len(set(keys)) == 5 and all(len(k) <= 100 for k in keys)
    assert keys[0] == "my-key-with-spaces" and keys[1] == "my-key:with-spaces"
    assert keys[2] == "6ba7b810-9dad-11d1-80b4-00c04fd430c8-k"
    assert all_steps(data)[3]["depends_on"] == [keys[0]]
    assert keys[4] == "my-key-with-spaces-2"


# --------------------------------------------------------------------------- templates


def test_user_template_override_replaces_one_piece(repo, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "docker.j2").write_text("- my-docker#v9.9.9:\n    image: {{ item.plugin.image }}\n")
    steps = by_key(assert_valid(render(repo, "--all", "--templates", str(mine)).stdout))
    assert steps["unit"]["plugins"] == [{"my-docker#v9.9.9": {"image": "python:3.11"}}]
    assert "kubernetes" in steps["pod"]["plugins"][0]  # the other templates are still the shipped ones


def test_user_template_extends_a_block_of_the_shipped_pipeline(repo, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "pipeline.j2").write_text('{% extends "builtin/pipeline.j2" %}\n'
                                      '{% block header %}# my own header\nenv: {FROM_TEMPLATE: "1"}\n{% endblock %}\n')
    result = render(repo, "--all", "--templates", str(mine))
    assert result.stdout.startswith("# my own header\n")
    assert assert_valid(result.stdout)["env"] == {"FROM_TEMPLATE": "1"}


def test_broken_user_template_prints_nothing(repo, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "block.j2").write_text("- block: {{ item.block }}\n  key: {{ item.key }}\n  colour: red\n")
    result = render(repo, files="")
    assert result.exit_code == 0
    result = render(repo, "--templates", str(mine), files="src/x\n")
    assert result.exit_code == 1 and result.stdout == ""
    assert "Buildkite's schema" in result.stderr and "block-" in result.stderr
    (mine / "block.j2").write_text("- block: {{ item.undefined_field }}\n")
    result = render(repo, "--templates", str(mine), files="src/x\n")
    assert result.exit_code == 2 and result.stdout == "" and "template error in " in result.stderr and "block.j2:1" in result.stderr


def test_raw_user_text_cannot_reach_the_yaml(repo, tmp_path):
    # Even a template that forgets to quote cannot paste user text raw: {{ }} always quotes.
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "block.j2").write_text("- block: {{ item.block ~ ': x\\n  evil: 1' }}\n  key: {{ item.key }}\n")
    data = assert_valid(render(repo, "--templates", str(mine), files="src/x\n").stdout)
    assert by_key(data)["block-pod"]["block"] == "Run On Kubernetes: x\n  evil: 1"


def test_through_a_subprocess_with_overrides(repo, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "block.j2").write_text("- block: {{ ('Please run ' ~ item.block[4:]) }}\n  key: {{ item.key }}\n")
    proc = subprocess.run([sys.executable, "-m", "pipegen", "render", "--root", str(repo), "--files-from", "-",
                           "--templates", str(mine)], input=b"src/a.py\n", capture_output=True,
                          env={**os.environ, "PIPEGEN_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr
    assert by_key(assert_valid(proc.stdout.decode()))["block-pod"]["block"] == "Please run On Kubernetes"


# --------------------------------------------------------------------------- pieces of a command step


def test_skip_reason_is_cut_to_70_characters_without_splitting_a_dollar_pair():
    from pipegen.command_step import skip_text
    from pipegen.yamlout import Dollars

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
def test_lost_agents_are_retried_unless_the_step_says_otherwise(declared, expected):
    from pipegen.command_step import _retry

    assert _retry(declared) == expected


@pytest.mark.parametrize("text, message", [
    ("steps:\n  - command: x\n    key: a\n  - command: y\n    key: a\n", "two steps with key 'a'"),
    ("steps:\n  - command: x\n    key: a\n    depends_on: [b]\n", "depends on 'b', which is not in the pipeline"),
    ("steps:\n  - command: x\n    command: y\n", "repeats the key 'command'"),
    ("steps:\n  - command: 'x'\n    command: y\n", r"duplicate key 'command' .* \(line 3\)"),  # PyYAML's path
    ("steps:\n  - command: [x\n", "not valid YAML: YAML syntax error"),
    ("steps:\n  - command: x\n    parallelism: 3\n", "has 3 jobs, more than the 2"),
    ("steps:\n  - command: x\n    colour: red\n", "Buildkite's schema"),
    ("- not a mapping\n", "not a mapping"),
])
def test_the_check_after_rendering_refuses_what_an_upload_would(text, message):
    from pipegen.errors import OutputError
    from pipegen.pipeline_check import check

    with pytest.raises(OutputError, match=message):
        check(text, limit=2)


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
    repo = make_repo(tmp_path, many_steps(300))
    note = tmp_path / "note.md"
    files = "".join(f"d{i}/x\n" for i in range(5))
    result = render(repo, "--annotation", str(note), files=files)  # 5 run + 295 block pairs + group = 596
    assert result.exit_code == 0, result.stderr
    data = assert_valid(result.stdout)
    assert sorted(by_key(data)) == [f"s{i}" for i in range(5)]
    text = note.read_text()
    assert "295 unselected steps were omitted" in text and "omitted to stay within 500 jobs" in text


def test_block_pairs_and_groups_count_toward_the_limit(tmp_path):
    repo = make_repo(tmp_path, many_steps(249))  # 249 blocks + 249 commands + 1 group = 499
    assert len(by_key(assert_valid(render(repo, files="").stdout))) == 498
    repo2 = make_repo(tmp_path / "b", many_steps(250))  # 501: folded
    assert by_key(assert_valid(render(repo2, files="").stdout)) == {}


def test_selected_steps_alone_over_the_limit_fail_and_print_nothing(tmp_path):
    repo = make_repo(tmp_path, many_steps(100, parallelism=5))  # 500 jobs + the group
    note = tmp_path / "note.md"
    result = render(repo, "--all", "--annotation", str(note))
    assert result.exit_code == 1 and result.stdout == ""
    assert "501 Buildkite jobs" in result.stderr and "Traceback" not in result.stderr
    assert "Not uploaded" in note.read_text()
    proc = subprocess.run([sys.executable, "-m", "pipegen", "render", "--root", str(repo), "--all", "--files-from", "-"],
                          capture_output=True, env={**os.environ, "PIPEGEN_CACHE_DIR": ""})
    assert proc.returncode == 1 and proc.stdout == b"" and b"more than the 500" in proc.stderr


# --------------------------------------------------------------------------- this repository


def test_this_repository_renders_on_its_hardware():
    result = render(ROOT, "--all")
    assert result.exit_code == 0, result.stderr
    steps = by_key(assert_valid(result.stdout))
    assert steps["quick-reduce-mi355-x2"]["agents"] == {"queue": "amd-mi355-2"}
    assert steps["quick-reduce-mi355-x8"]["agents"] == {"queue": "amd-mi355-8"}
    assert steps["quick-reduce-cpu"]["agents"] == {"queue": "cpu"}
    assert steps["pipegen-tests"]["agents"] == {"queue": "cpu"}
    assert steps["torchrun-4-mi300"]["agents"] == {"queue": "amd-mi300-4"}
    assert steps["torchrun-2-h100"]["agents"] == {"queue": "nvidia-h100-2"}


@pytest.mark.parametrize("files, expect", [
    ("pipegen/render.py\n", {"pipegen-tests"}),
    ("qr_tests/quick_reduce.py\n", {"quick-reduce-cpu", "quick-reduce-h100", "quick-reduce-mi300-x2",
                                    "quick-reduce-mi300-x8", "quick-reduce-mi355-x2", "quick-reduce-mi355-x8",
                                    "torchrun-4-cpu", "torchrun-4-h100", "torchrun-4-mi300", "torchrun-2-cpu",
                                    "torchrun-2-h100"}),
    ("qr_tests/torchrun_dist.py\n", {"torchrun-4-cpu", "torchrun-4-h100", "torchrun-4-mi300", "torchrun-2-cpu",
                                     "torchrun-2-h100"}),
    ("somewhere/else.txt\n", set()),
])
def test_this_repository_selects_by_source(files, expect):
    steps = by_key(assert_valid(render(ROOT, files=files).stdout))
    running = {k for k, s in steps.items() if "block" not in s and not any(
        d.startswith("block-") for d in s.get("depends_on", []))}
    assert running == expect


# --------------------------------------------------------------------------- vLLM


@needs_fixture
@pytest.mark.parametrize("args, files", [
    (["--all"], ""),
    ([], "nothing/matches/this\n"),
    ([], "vllm/distributed/parallel_state.py\ntests/kernels/test_foo.py\ndocker/Dockerfile.rocm_base\n"),
    ([], "docs/index.md\nREADME.md\n"),
    (["--config", ".buildkite/test-amd.yaml"], "tests/kernels/test_foo.py\n"),
    (["--config", "legacy-test-pipeline.yaml", "--all"], ""),
    (["--unselected", "skip"], "vllm/model_executor/x.py\n"),
])
def test_vllm_configuration_validates(args, files):
    result = render(FIXTURE, *args, files=files)
    assert result.exit_code == 0, result.stderr
    data = assert_valid(result.stdout)
    from pipegen.pipeline_check import count_jobs

    assert count_jobs(data["steps"]) <= 500


@needs_fixture
def test_vllm_queues_and_mirrors():
    steps = by_key(assert_valid(render(FIXTURE, files="vllm/distributed/parallel_state.py\n").stdout))
    assert all(s.get("agents", {}).get("queue") for s in steps.values() if "command" in s or "commands" in s)
    amd = [s for k, s in steps.items() if k.startswith("amd-") and "commands" in s]
    assert amd and all(s["agents"]["queue"].startswith("amd_mi") for s in amd)
    assert all(s["commands"][0].startswith("bash .buildkite/scripts/hardware_ci/run-amd-test.sh ") for s in amd)
    # vLLM's files are written in Buildkite's syntax: `$$` stays as it is
    assert any("$$BUILDKITE_PARALLEL_JOB" in c for s in steps.values() for c in s.get("commands", []))


@needs_fixture
def test_vllm_annotation_counts_jobs_against_the_upload_limit(tmp_path):
    note = tmp_path / "note.md"
    result = render(FIXTURE, "--annotation", str(note), files=".buildkite/test_areas/lora.yaml\n")
    assert result.exit_code == 0
    assert "of 500 jobs" in note.read_text()


def test_an_unusable_cache_is_no_error(repo, tmp_path):
    cache = tmp_path / "not-a-folder"
    cache.write_text("a file where the cache folder should be")
    result = render(repo, "--all", env={"PIPEGEN_CACHE_DIR": str(cache)})
    assert result.exit_code == 0, result.stderr
    assert_valid(result.stdout)


def test_the_wheel_ships_templates_and_the_vllm_inventory(tmp_path):
    """A non-editable `pip install .` finds the templates (package pipegen.templates) and data."""
    import zipfile

    pytest.importorskip("setuptools")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(ROOT),
                           "-w", str(tmp_path)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {proc.stderr.strip()[-300:]}")
    names = zipfile.ZipFile(next(tmp_path.glob("pipegen-*.whl"))).namelist()
    shipped = {n for n in names if n.startswith(("pipegen/templates/", "pipegen/data/"))}
    expected = {f"pipegen/templates/{p.name}" for p in (ROOT / "templates").glob("*.j2")}
    assert expected and expected <= shipped
    assert "pipegen/data/vllm-hardware.yaml" in shipped
    # Installed from the wheel (not editable), pipegen finds them there.
    site = tmp_path / "site"
    zipfile.ZipFile(next(tmp_path.glob("pipegen-*.whl"))).extractall(site)
    probe = ("import pipegen, pipegen.render as r, pipegen.inventory as i; print(pipegen.__file__); "
             "print(r.builtin_templates()); print(i.vllm_inventory().source)")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(site)})
    assert proc.returncode == 0, proc.stderr
    package, templates, source = proc.stdout.splitlines()
    assert package.startswith(str(site)) and Path(templates) == site / "pipegen" / "templates"
    assert source == "preset:vllm"


def test_interpolate_keeps_listed_variables_for_upload_time(tmp_path):
    repo = make_repo(tmp_path, """
        steps:
          - label: "Build $BUILDKITE_COMMIT for $USER"
            key: build
            commands: ["echo ${BUILDKITE_COMMIT:0:7} $BUILDKITE_COMMIT $HOME $$"]
            env: {TAG: "$BUILDKITE_COMMIT-$RANDOM"}
        """, config="interpolate: [BUILDKITE_COMMIT]\n")
    step = by_key(assert_valid(render(repo, "--all").stdout))["build"]
    assert step["label"] == "Build $BUILDKITE_COMMIT for $$USER"
    assert step["commands"][-1] == "echo ${BUILDKITE_COMMIT:0:7} $BUILDKITE_COMMIT $$HOME $$$$"
    assert step["env"] == {"TAG": "$BUILDKITE_COMMIT-$$RANDOM"}


def test_plain_families_get_plugins_only_from_an_override(repo, tmp_path):
    assert "plugins" not in by_key(assert_valid(render(repo, "--all").stdout))["script"]
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "plain.j2").write_text("- cache#v1.0.0:\n    paths: [.venv]\n")
    step = by_key(assert_valid(render(repo, "--all", "--templates", str(mine)).stdout))["script"]
    assert step["plugins"] == [{"cache#v1.0.0": {"paths": [".venv"]}}]


def test_the_bootstrap_pipeline_is_valid_and_renders_with_pipegen():
    data = assert_valid((ROOT / ".buildkite" / "pipeline.yaml").read_text())
    commands = " ".join(data["steps"][0]["commands"])
    assert "pipegen render --annotation" in commands and "buildkite-agent pipeline upload" in commands
    assert "buildkite-agent annotate" in commands


def test_readme_main_job_command_at_the_repository_root():
    """`pipegen render` with no options, as the README's main job runs it (CI: committed work only)."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    proc = subprocess.run([sys.executable, "-m", "pipegen", "render"], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "CI": "true", "PIPEGEN_CACHE_DIR": ""})
    assert proc.returncode == 0, proc.stderr
    steps = by_key(assert_valid(proc.stdout))
    # What the newest commit touched decides; a docs-only commit renders no steps at all.
    selection = subprocess.run([sys.executable, "-m", "pipegen", "select", "--format", "json"], cwd=ROOT,
                               capture_output=True, text=True, env={**os.environ, "CI": "true"})
    if json.loads(selection.stdout)["skip_all"]:
        assert steps == {}
    else:
        assert {"pipegen-tests", "quick-reduce-mi355-x2", "torchrun-4-cpu"} <= {
            k.removeprefix("block-") for k in steps}
