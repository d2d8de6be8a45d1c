"""The vLLM preset honours the build as vLLM's generator reads it (ci-infra buildkite/pipeline_generator):
its build variables, its explicit keys, its page order, its pull-request gate. Small synthetic
repositories; the goldens (test_vllm_golden.py) show the same on vLLM's real configuration."""

from __future__ import annotations

import pytest

from tests.helpers import all_steps, assert_valid, by_key, render, render_repo, write_files

CONFIG = "name: vllm_ci\njob_dirs: [.buildkite/jobs]\n"
IMAGES = """\
group: Abuild
steps:
- {label: Image, key: image-build, no_plugin: true, commands: [build]}
- {label: AMD image, key: image-build-amd, no_plugin: true, commands: [build]}
"""
TESTS = """\
group: {group}
depends_on: [image-build]
steps:
- label: Keyed
  key: keyed
  timeout_in_minutes: 30
  commands: [pytest a]
  source_file_dependencies: [src/]
  mirror: {{amd: {{device: mi325_1}}}}
- label: Derived Key
  commands: [pytest b]
  timeout_in_minutes: 20
  source_file_dependencies: [src/]
"""


def vllm_repo(tmp_path, files=None):
    write_files(tmp_path, {".buildkite/ci_config.yaml": CONFIG, ".buildkite/jobs/images.yaml": IMAGES,
                           ".buildkite/jobs/tests.yaml": TESTS.format(group="Tests"), **(files or {})})
    return tmp_path


def jobs(root, env=None, files="src/x.py\n"):
    result = render(root, files=files, env={"BUILDKITE_BRANCH": "feature", "BUILDKITE_COMMIT": "abc", **(env or {})})
    assert result.exit_code == 0, result.stderr
    return by_key(assert_valid(result.stdout))


def test_skip_timeout_drops_every_timeout_the_amd_default_too(tmp_path):
    repo = vllm_repo(tmp_path)
    assert {k: j.get("timeout_in_minutes") for k, j in jobs(repo).items() if "command" in j or "commands" in j} \
        == {"image-build": None, "image-build-amd": None, "keyed": 30, "derived-key": 20, "amd-keyed": 180}
    assert not [j for j in jobs(repo, {"SKIP_TIMEOUT": "1"}).values() if "timeout_in_minutes" in j]
    assert jobs(repo, {"SKIP_TIMEOUT": "0"})["keyed"]["timeout_in_minutes"] == 30


def test_priority_high_raises_every_job_but_the_amd_ones(tmp_path):
    repo = vllm_repo(tmp_path)
    priorities = {k: j.get("priority", 0) for k, j in jobs(repo, {"PRIORITY": "HIGH"}).items() if "commands" in j}
    assert priorities == {"image-build": 1000, "image-build-amd": 1000, "keyed": 1000, "derived-key": 1000,
                          "amd-keyed": 200}
    assert jobs(repo, {"PRIORITY": "high"})["keyed"].get("priority", 0) == 0  # the generator compares exactly


@pytest.mark.parametrize("value, skipped", [("0", True), ("1", False), ("true", False), ("", False)])
def test_docs_only_disable_is_anything_but_0(tmp_path, value, skipped):
    """ci-infra: the docs-only skip happens where DOCS_ONLY_DISABLE is unset or '0' (its README says '0')."""
    result = render(vllm_repo(tmp_path), files="docs/a.md\n", env={"DOCS_ONLY_DISABLE": value})
    assert result.exit_code == 0, result.stderr
    assert (assert_valid(result.stdout)["steps"] == []) is skipped


def test_explicit_keys_name_declared_keys(tmp_path):
    repo = vllm_repo(tmp_path)
    assert set(jobs(repo, {"VLLM_CI_ONLY_STEP_KEYS": '["keyed"]'})) == {"image-build", "keyed"}
    for key, fix in (("derived-key", "give the step 'Derived Key' (.buildkite/jobs/tests.yaml:10:3) "
                                     "'key: derived-key'"),
                     ("amd-keyed", "'amd-keyed' is an AMD mirror, which only runs by the change: name 'keyed'"),
                     ("nothing", "'nothing' names no step")):
        result = render(repo, files="", env={"VLLM_CI_ONLY_STEP_KEYS": f'["{key}", "keyed"]'})
        assert result.exit_code == 2, result.output
        assert f"Unknown CI step key(s): {key}" in result.stderr and fix in result.stderr, result.stderr
        assert "Traceback" not in result.output and result.stdout == ""


def test_explicit_keys_refuse_a_dependency_without_a_declared_key(tmp_path):
    repo = vllm_repo(tmp_path, {".buildkite/jobs/later.yaml": "group: Later\nsteps:\n"
                                "- {label: Later, key: later, depends_on: [derived-key], commands: [x]}\n"})
    assert "derived-key" in jobs(repo)["later"]["depends_on"]  # by the change, the derived key names it
    result = render(repo, files="", env={"VLLM_CI_ONLY_STEP_KEYS": '["later"]'})
    assert result.exit_code == 2
    assert "CI step later depends on unknown step derived-key" in result.stderr
    assert "'key: derived-key'" in result.stderr


def test_an_empty_key_list_variable_is_refused(tmp_path):
    result = render(vllm_repo(tmp_path), files="", env={"VLLM_CI_ONLY_STEP_KEYS": ""})
    assert result.exit_code == 2 and "VLLM_CI_ONLY_STEP_KEYS is not valid JSON" in result.stderr


def test_own_format_explicit_keys_still_take_derived_keys(tmp_path):
    repo = render_repo(tmp_path, "steps:\n  - {label: Unit Tests, hardware: [cpu], commands: [pytest]}\n")
    result = render(repo, files="", env={"PIPEGEN_ONLY_STEP_KEYS": '["unit-tests"]'})
    assert result.exit_code == 0, result.stderr
    assert [s["key"] for s in all_steps(assert_valid(result.stdout))] == ["unit-tests"]


def test_the_page_is_sorted_as_the_generator_sorts(tmp_path):
    """Groups by name (uppercase first), steps by label; the AMD group by the group each mirror came
    from (in the order the files load), then label; a file's group wins over a step's, none is 'ungrouped'."""
    repo = vllm_repo(tmp_path, {
        ".buildkite/jobs/tests.yaml": TESTS.format(group="zeta") + "- {label: Alpha, key: alpha, commands: [x],"
                                      " mirror: {amd: {device: mi325_1}}}\n",
        ".buildkite/jobs/more.yaml": "group: Beta\nsteps:\n- {label: Zed, key: zed, group: Other, commands: [x]}\n"
                                     "- {label: Mid, key: mid, commands: [x], mirror: {amd: {device: mi325_1}}}\n",
        ".buildkite/jobs/loose.yaml": "steps:\n- {label: Loose, key: loose, commands: [x]}\n"})
    result = render(repo, "--all", files="", env={"BUILDKITE_BRANCH": "feature"})
    assert result.exit_code == 0, result.stderr
    page = [(e["group"], [s["key"] for s in e["steps"]]) for e in assert_valid(result.stdout)["steps"]]
    assert page == [("Abuild", ["image-build-amd", "image-build"]),  # 'AMD image' < 'Image'
                    ("Beta", ["mid", "zed"]),
                    ("Hardware-AMD Tests", ["amd-mid", "amd-alpha", "amd-keyed"]),  # more.yaml loads first
                    ("ungrouped", ["loose"]),
                    ("zeta", ["alpha", "derived-key", "keyed"])]


def test_own_format_keeps_the_declared_order(tmp_path):
    repo = render_repo(tmp_path, "group: Zeta\nsteps:\n  - {label: B, key: b, hardware: [cpu], commands: [x]}\n"
                               "  - {label: A, key: a, hardware: [cpu], commands: [x], group: Alpha}\n")
    result = render(repo, "--all", files="")
    assert [(e.get("group"), [s["key"] for s in e["steps"]]) for e in assert_valid(result.stdout)["steps"]] == \
        [("Zeta", ["b"]), ("Alpha", ["a"])]


def test_a_pull_request_waits_for_the_pre_commit_check(tmp_path):
    repo = vllm_repo(tmp_path, {".buildkite/ci_config.yaml": CONFIG + "github_repo_name: vllm-project/fork\n",
                                ".buildkite/jobs/free.yaml": "group: Free\nsteps:\n"
                                "- {label: Free, key: free, commands: [x], source_file_dependencies: [src/]}\n"})
    pr = {"BUILDKITE_PULL_REQUEST": "41002"}
    result = render(repo, files="src/x.py\n", env={"BUILDKITE_BRANCH": "feature", "BUILDKITE_COMMIT": "f00d", **pr})
    data = assert_valid(result.stdout)
    gate = data["steps"][0]
    assert gate["group"] == "GitHub pre-commit check" and [s["key"] for s in gate["steps"]] == ["pre-commit"]
    step = gate["steps"][0]
    assert step["agents"] == {"queue": "small_cpu_queue_premerge"} and "retry" not in step and "plugins" not in step
    assert 'commit = "f00d"\nrepo = "vllm-project/fork"\n' in step["commands"][0]
    depends = {s["key"]: s.get("depends_on", []) for s in all_steps(data)}
    assert "pre-commit" in depends["keyed"] and "pre-commit" in depends["amd-keyed"]
    assert "pre-commit" in depends["derived-key"]
    assert "pre-commit" not in depends["image-build-amd"] and "pre-commit" not in depends["free"]
    high = by_key(assert_valid(render(repo, files="src/x.py\n", env={**pr, "PRIORITY": "HIGH"}).stdout))
    assert high["pre-commit"]["priority"] == 1000
    for env in ({"BUILDKITE_PULL_REQUEST": "false"}, {}):
        assert "pre-commit" not in render(repo, files="src/x.py\n", env=env).stdout
    docs = render(repo, files="docs/a.md\n", env=pr)
    assert assert_valid(docs.stdout)["steps"] == []  # the generator uploads nothing for a docs-only change


def test_a_blocked_test_waits_for_its_block_and_the_check(tmp_path):
    result = render(vllm_repo(tmp_path), files="elsewhere.py\n", env={"BUILDKITE_PULL_REQUEST": "7"})
    steps = by_key(assert_valid(result.stdout))
    assert steps["keyed"]["depends_on"] == ["block-keyed", "image-build", "pre-commit"]
    assert steps["block-keyed"].get("depends_on") in (None, [])


def test_continue_on_failure_runs_every_command_and_fails_at_the_end(tmp_path):
    """ci-infra _prepare_commands, as the preset's continue-on-failure wrapper (AMD jobs too)."""
    steps = jobs(vllm_repo(tmp_path), {"CONTINUE_ON_FAILURE": "1"})
    commands = steps["keyed"]["commands"]
    assert commands[commands.index("CI_OVERALL_STATUS=0") + 1:] == [
        'echo "+++ :test_tube: Command (1/1): pytest a"', "{ pytest a\n} || CI_OVERALL_STATUS=1",
        "exit $$CI_OVERALL_STATUS"]
    assert steps["amd-keyed"]["env"]["VLLM_TEST_COMMANDS"].endswith(
        "CI_OVERALL_STATUS=0 && echo \"+++ :test_tube: Command (1/1): pytest a\" && { pytest a\n} || "
        "CI_OVERALL_STATUS=1 && exit $$CI_OVERALL_STATUS")


def test_a_repository_wraps_every_command_through_its_own_variant(tmp_path):
    """A `wrap:` in the repository's inventory: given to the preset's `traced` variant, it replaces that
    variant where it stands (inside CONTINUE_ON_FAILURE's wrapper, as vLLM's generator nests them)."""
    own = """build:
  variants:
    - name: traced
      branch: main
      env: {BUILDKITE_PULL_REQUEST: "false"}
      docker_options: {mount_buildkite_agent: true}
      wrap:
        before: ["trace-setup {commit}"]
        command: "trace-start {index}/{total} {preview_b64}\\n{command}\\ntrace-end $$?"
        except_vendors: [amd]
"""
    repo = vllm_repo(tmp_path, {".buildkite/hardware.yaml": own})
    main = {"BUILDKITE_BRANCH": "main", "BUILDKITE_PULL_REQUEST": "false", "CONTINUE_ON_FAILURE": "1"}
    steps = jobs(repo, main)
    commands = steps["keyed"]["commands"]
    assert commands[-5:] == ["trace-setup abc", "CI_OVERALL_STATUS=0", 'echo "+++ :test_tube: Command (1/1): pytest a"',
                             "{ trace-start 1/1 cHl0ZXN0IGE=\npytest a\ntrace-end $$?\n} || CI_OVERALL_STATUS=1",
                             "exit $$CI_OVERALL_STATUS"]
    assert "trace-start" not in steps["amd-keyed"]["env"]["VLLM_TEST_COMMANDS"]
    assert next(iter(steps["keyed"]["plugins"][0].values()))["mount_buildkite_agent"] is True
    assert "trace-setup" not in str(jobs(repo, {**main, "BUILDKITE_PULL_REQUEST": "1"}))  # no pull request


@pytest.mark.parametrize("env, mounted", [
    ({"BUILDKITE_BRANCH": "main", "BUILDKITE_PULL_REQUEST": "false"}, True),
    ({"BUILDKITE_BRANCH": "main"}, None),  # the generator traces a build it knows is no pull request's
    ({"BUILDKITE_BRANCH": "try", "CI_INFRA_OTEL_TREATMENT_BRANCH": "try", "BUILDKITE_SOURCE": "api",
      "BUILDKITE_PULL_REQUEST": "false"}, True),
    ({"BUILDKITE_BRANCH": "try", "CI_INFRA_OTEL_TREATMENT_BRANCH": "try", "BUILDKITE_SOURCE": "webhook",
      "BUILDKITE_PULL_REQUEST": "false"}, None),
])
def test_a_traced_build_mounts_the_agent(tmp_path, env, mounted):
    steps = jobs(vllm_repo(tmp_path), env)
    assert next(iter(steps["keyed"]["plugins"][0].values())).get("mount_buildkite_agent") is mounted


def test_an_amd_test_of_its_own_runs_as_a_mirror_does(tmp_path):
    """ci-infra: a step whose device is an AMD GPU goes to the AMD group, labelled with its device,
    exports its group name first, waits for the AMD image, and is blocked by `block-amd-<key>`."""
    repo = vllm_repo(tmp_path, {".buildkite/jobs/amd.yaml": "group: Own\ndepends_on: [image-build]\nsteps:\n"
                                "- {label: Own AMD, key: own-amd, device: mi300_1, commands: [pytest o],"
                                " source_file_dependencies: [src/amd/]}\n"})
    steps = jobs(repo, files="src/x.py\n")
    own = steps["own-amd"]
    assert own["label"] == "AMD: Own AMD (mi300_1)" and own["agents"] == {"queue": "amd_mi300_1"}
    assert own["env"]["VLLM_TEST_COMMANDS"].startswith("export VLLM_TEST_GROUP_NAME=own-amd && cd /vllm-workspace/tests")
    assert sorted(own["depends_on"]) == ["block-amd-own-amd", "image-build-amd"]
    assert steps["block-amd-own-amd"]["block"] == "Run AMD: Own AMD (mi300_1)"
    assert "block-own-amd" not in steps


def test_a_native_amd_job_runs_in_its_agents_pod(tmp_path):
    """ci-infra amd.py: `dind: false` patches the agent's pod (the GPUs as text, the runner's native env)."""
    repo = vllm_repo(tmp_path, {".buildkite/jobs/amd.yaml": "group: Own\nsteps:\n"
                                "- {label: Native, key: native, device: mi325_2, dind: false, commands: [pytest n],"
                                " source_file_dependencies: [src/]}\n"})
    native = jobs(repo)["native"]
    patch = native["plugins"][0]["kubernetes"]["podSpecPatch"]
    container = patch["containers"][0]
    assert container["image"] == "rocm/vllm-dev:ci_base-build-$BUILDKITE_BUILD_ID"
    assert container["resources"] == {"limits": {"amd.com/gpu": "2"}, "requests": {"amd.com/gpu": "2"}}
    assert {"name": "VLLM_CI_EXPECTED_GPU_COUNT", "value": "2"} in container["env"]
    assert native["commands"] == ["bash .buildkite/scripts/hardware_ci/run-amd-test.sh"]
    assert native["env"]["AMD_CI_RUNTIME"] == "native" and "DOCKER_IMAGE_NAME" not in native["env"]
    assert native["agents"] == {"queue": "amd_mi325_2"} and native["priority"] == 200
    assert "plugins" not in jobs(repo)["amd-keyed"]  # docker-in-docker AMD jobs keep the plain runner


@pytest.mark.parametrize("env, timeout, skip", [({}, 540, "0"), ({"ROCM_BASE_REFRESH_SKIP": "1"}, 15, "1"),
                                                ({"ROCM_BASE_REFRESH_SKIP": "yes"}, 540, "yes"),
                                                ({"SKIP_TIMEOUT": "1"}, None, "0")])
def test_the_rocm_base_refresh_step(tmp_path, env, timeout, skip):
    """ci-infra amd.py: the step keyed refresh-rocm-base-amd gets its controls in its env and 9 hours
    (15 minutes when skipped), past the AMD CPU jobs' 3-hour cap; a label-derived key does not."""
    refresh = ("group: Base\nsteps:\n- {label: Refresh, key: refresh-rocm-base-amd, device: amd_cpu, no_plugin: true,"
               " commands: [refresh.sh], timeout_in_minutes: 60}\n- {label: refresh-rocm-base-amd x, device: amd_cpu,"
               " no_plugin: true, commands: [x]}\n")
    steps = jobs(vllm_repo(tmp_path, {".buildkite/jobs/base.yaml": refresh}), env)
    step = steps["refresh-rocm-base-amd"]
    assert step.get("timeout_in_minutes") == timeout
    assert step["env"] == {"ROCM_BASE_REFRESH_SKIP": skip, "ROCM_BASE_REFRESH_FORCE": "0"}
    assert "env" not in steps["refresh-rocm-base-amd-x"]
