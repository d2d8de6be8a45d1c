"""`pipegen render`: Buildkite YAML on the right hardware, validated, explained."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from pipegen.cli import cli
from tests.helpers import RENDER_HARDWARE, RENDER_STEPS, all_steps, assert_valid, by_key, git_repo, render, render_repo


@pytest.fixture
def repo(tmp_path):
    return render_repo(tmp_path, RENDER_STEPS)


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
    # nothing undeclared: no banners, no lost-agent retry (a template opts in to them)
    assert step["commands"] == ["cd /work", "nvidia-smi", "pytest qr_tests", "echo $$HOME"]
    assert step["env"] == {"TP_SIZE": "2"}
    assert step["retry"] == {"automatic": [{"exit_status": 3, "limit": 2}]}
    assert step["soft_fail"] == [{"exit_status": 7}]
    assert (step["timeout_in_minutes"], step["parallelism"]) == (30, 2)
    assert (step["concurrency"], step["concurrency_group"]) == (1, "qr-gpu")
    assert step["plugins"] == [{"docker#v5.12.0": {
        "image": "nvcr.io/cuda:$BUILDKITE_COMMIT", "gpus": "all", "volumes": ["/dev/shm:/dev/shm"]}}]
    rocm = by_key(data)["qr-mi355-x8"]["plugins"][0]["docker#v5.12.0"]
    assert rocm["devices"] == ["/dev/kfd", "/dev/dri"] and "gpus" not in rocm
    cpu = by_key(data)["unit"]
    assert "retry" not in cpu
    assert cpu["plugins"] == [{"docker#v5.12.0": {"image": "python:3.11", "always-pull": True}}]


def test_banners_and_the_lost_agent_retry_are_a_templates_opt_in(tmp_path):
    hardware = RENDER_HARDWARE.replace('py: {kind: docker, image: "python:3.11", options: {always-pull: true}}',
                                'py: {kind: docker, image: "python:3.11", job: {banners: true, lost_agent_retry: 2}}')
    steps = by_key(assert_valid(render(render_repo(tmp_path, RENDER_STEPS, hardware=hardware), "--all").stdout))
    assert steps["qr-cpu"]["commands"] == [
        "cd /work",
        "echo '+++ :test_tube: Command (1/2): pytest qr_tests'", "pytest qr_tests",
        "echo '+++ :test_tube: Command (2/2): echo  HOME'", "echo $$HOME",
    ]
    assert steps["qr-cpu"]["retry"] == {"automatic": [{"exit_status": 3, "limit": 2}, {"exit_status": -1, "limit": 2}]}
    assert steps["unit"]["retry"] == {"automatic": [{"exit_status": -1, "limit": 2}]}
    # the other families did not opt in
    assert steps["qr-h100"]["commands"] == ["cd /work", "nvidia-smi", "pytest qr_tests", "echo $$HOME"]
    assert steps["pod"].get("retry") is None


def test_no_inventory_renders_the_step_as_declared(tmp_path):
    """Without an inventory a step gets no queue, no banner and no retry it did not declare."""
    (tmp_path / ".buildkite" / "steps").mkdir(parents=True)
    (tmp_path / ".buildkite" / "pipegen.yaml").write_text("steps: [.buildkite/steps]\n")
    (tmp_path / ".buildkite" / "steps" / "a.yaml").write_text(
        "steps:\n  - label: a\n    commands: [make test]\n    agents: {os: linux}\n")
    step = by_key(assert_valid(render(tmp_path, "--all").stdout))["a"]
    assert step == {"label": "a", "key": "a", "agents": {"os": "linux"}, "commands": ["make test"]}


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
    repo = render_repo(tmp_path, RENDER_STEPS, config="unselected: omit\n")
    assert list(by_key(assert_valid(render(repo, files="src/a.py\n").stdout))) == ["unit"]


def test_nothing_selected_and_docs_only(tmp_path):
    repo = render_repo(tmp_path, RENDER_STEPS, config="docs_only: ['*.md']\n")
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
    repo = render_repo(tmp_path, """
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
    git_repo(repo, {}, branch="trunk")  # base_branch 'main' does not resolve
    # A base from the CI environment that does not resolve (an explicit --base would be a usage error).
    result = CliRunner().invoke(cli, ["render", "--root", str(repo)],
                                env={"PIPEGEN_CACHE_DIR": "", "BUILDKITE_GIT_DIFF_BASE": "no-such-ref",
                                     "BUILDKITE_PIPELINE_DEFAULT_BRANCH": "no-such-branch"})
    assert result.exit_code == 0
    assert "WARNING" in result.stderr
    assert not [k for k in by_key(assert_valid(result.stdout)) if k.startswith("block-")]


# --------------------------------------------------------------------------- hardware errors


def test_missing_gpu_count_is_a_declaration_error(tmp_path):
    repo = render_repo(tmp_path, """
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
    repo = render_repo(tmp_path, """
        steps:
          - label: x
            hardware: [mi999]
            commands: [x]
        """)
    result = render(repo, "--all")
    assert result.exit_code == 2 and "mi999" in result.stderr and "no family" in result.stderr


# --------------------------------------------------------------------------- keys


def test_invalid_keys_become_valid_unique_and_dependencies_follow(tmp_path):
    repo = render_repo(tmp_path, """
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


def test_each_step_is_placed_once(repo, tmp_path, monkeypatch):
    # --templates needs the jobs before deciding (a family's template shapes the steps placed on it);
    # the plan takes the same jobs instead of placing every step again.
    import pipegen.hardware.placement as placement

    placed, real = [], placement.place
    monkeypatch.setattr(placement, "place", lambda step, inventory: placed.append(step.key) or real(step, inventory))
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "docker.j2").write_text((Path(__file__).parents[2] / "templates" / "docker.j2").read_text())
    for args in ((), ("--templates", str(mine))):
        placed.clear()
        assert_valid(render(repo, "--all", *args).stdout)
        assert placed and sorted(placed) == sorted(set(placed))


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


def test_an_unusable_cache_is_no_error(repo, tmp_path):
    from pipegen.buildkite import schema as bkschema

    cache = tmp_path / "not-a-folder"
    cache.write_text("a file where the cache folder should be")
    bkschema.validator.cache_clear()  # a fresh validator: neither it nor the templates touch the cache folder
    result = render(repo, "--all", env={"PIPEGEN_CACHE_DIR": str(cache)})
    assert result.exit_code == 0, result.stderr
    assert_valid(result.stdout)


def test_interpolate_keeps_listed_variables_for_upload_time(tmp_path):
    repo = render_repo(tmp_path, """
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


# --------------------------------------------------------------------------- placing and plugins

PLACING_HARDWARE = """
default: cpu
families:
  cpu: {vendor: cpu, queue: cpu-q}
  h100: {vendor: nvidia, template: cuda, queues: {1: h100-1, 2: h100-2}, agents: {region: family}}
  nvpod: {vendor: nvidia, template: nvpod, queues: {1: nvpod-1, 2: nvpod-2}}
  amdpod: {vendor: amd, template: amdpod, queues: {1: amdpod-1, 2: amdpod-2}}
  mine: {vendor: other, template: mine, queue: mine-q}
templates:
  cuda: {kind: docker, image: cuda, gpus: all}
  nvpod: {kind: kubernetes, pod_spec: {containers: [{image: nv}]}}
  amdpod: {kind: kubernetes, pod_spec: {containers: [{image: amd}]}}
  mine: {kind: docker, image: mine, file: mine.j2}
routes:
  - {key: "gen-*", family: h100}
"""

PLACING_STEPS = """
steps:
  - {label: "GPU", key: gpu, hardware: ["h100:2"], commands: [x], agent_tags: {region: step, team: t}}
  - {label: "No GPU", key: nogpu, device: h100, no_gpu: true, commands: [x]}
  - {label: "Routed", key: gen-a, commands: [x]}
  - {label: "Not routed", key: other, commands: [x]}
  - {label: "Pod", key: nvpod, hardware: ["nvpod:2"], commands: [x]}
  - {label: "Pod without GPU", key: nvpod-nogpu, device: nvpod, no_gpu: true, commands: [x]}
  - {label: "AMD pod", key: amdpod, hardware: ["amdpod:2"], commands: [x]}
  - {label: "Own plugin template", key: mine, hardware: [mine], commands: [x]}
"""


@pytest.fixture(scope="module")
def placed(tmp_path_factory) -> dict[str, dict]:
    root = tmp_path_factory.mktemp("placing")
    repo = render_repo(root, PLACING_STEPS, hardware=PLACING_HARDWARE)
    (root / "mine").mkdir()
    (root / "mine" / "mine.j2").write_text('- "mine#v1":\n    image: {{ item.plugin.image }}\n')
    result = render(repo, "--all", "--templates", str(root / "mine"))
    assert result.exit_code == 0, result.stderr
    return by_key(assert_valid(result.stdout))


def _plugin(step: dict) -> dict:
    return step["plugins"][0]


@pytest.mark.parametrize("key, part, expected", [
    # the family's agent tags win over the step's, which add the rest
    ("gpu", lambda s: s["agents"], {"queue": "h100-2", "region": "family", "team": "t"}),
    ("gpu", lambda s: _plugin(s)["docker#v5.12.0"]["gpus"], "all"),
    # no_gpu on a GPU family: its smallest queue, and no GPUs for the container
    ("nogpu", lambda s: s["agents"]["queue"], "h100-1"),
    ("nogpu", lambda s: "gpus" in _plugin(s)["docker#v5.12.0"], False),
    ("gen-a", lambda s: s["agents"]["queue"], "h100-1"),  # a route's key glob
    ("other", lambda s: s["agents"], {"queue": "cpu-q"}),  # ... which matches only those keys
    ("nvpod", lambda s: _plugin(s)["kubernetes"]["podSpec"]["containers"][0]["resources"],
     {"limits": {"nvidia.com/gpu": 2}}),
    ("nvpod-nogpu", lambda s: _plugin(s)["kubernetes"]["podSpec"]["containers"][0], {"image": "nv"}),
    ("amdpod", lambda s: _plugin(s)["kubernetes"]["podSpec"]["containers"][0]["resources"],
     {"limits": {"amd.com/gpu": 2}}),
    ("mine", lambda s: s["plugins"], [{"mine#v1": {"image": "mine"}}]),  # the template's `file`
])
def test_placing_and_plugins(placed, key, part, expected):
    assert part(placed[key]) == expected
