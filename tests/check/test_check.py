"""`pipegen check` on real git repositories made in tmp_path, through the real CLI.

Every finding code has a case that fires and, where a false alarm is
plausible, a case that must not (a folder entry, a standard-library
import, a relative import that resolves).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from pipegen.cli import cli
from tests.helpers import CHECK_CONFIG, CLEAN_STEP, ROOT, SOURCES, check, check_repo, codes, only


def test_a_clean_repository_passes(tmp_path):
    exit_code, report = check(check_repo(tmp_path, CLEAN_STEP))
    assert (exit_code, report["findings"]) == (0, [])


# --------------------------------------------------------------------------- entries


def test_stale_entry_suggests_the_nearest_real_path(tmp_path):
    root = check_repo(tmp_path, CLEAN_STEP.replace("[mypkg, tests/]", "[mypkg, tests/, mypkg/utils.py]"))
    exit_code, report = check(root)
    finding = only(report, "stale-entry")
    assert exit_code == 1
    assert (finding["file"], finding["line"], finding["severity"]) == (".buildkite/steps.yaml", 5, "error")
    assert "'mypkg/util.py'" in finding["fix"]


def test_an_entry_that_only_matched_as_a_raw_prefix(tmp_path):
    root = check_repo(tmp_path, CLEAN_STEP.replace("[mypkg, tests/]", "[mypkg, tests/, tests/test_config]"))
    finding = only(check(root)[1], "raw-prefix-only")
    assert "old raw-prefix rule" in finding["message"]
    assert finding["fix"] == "write 'tests/test_config.py'"


@pytest.mark.parametrize("entries", ["[mypkg, tests]", "[mypkg/, tests/]", "['mypkg/**/*.py', 'tests/*.py']"])
def test_entries_that_match_a_folder_or_glob_are_not_stale(tmp_path, entries):
    exit_code, report = check(check_repo(tmp_path, CLEAN_STEP.replace("[mypkg, tests/]", entries)))
    assert (exit_code, codes(report)) == (0, [])


def test_exclusion_that_excludes_nothing(tmp_path):
    deps = "[mypkg, tests/, '!mypkg/extra.py', '!mypkg/gone.py', '!docs/index.md']"
    report = check(check_repo(tmp_path, CLEAN_STEP.replace("[mypkg, tests/]", deps)))[1]
    unused = [f for f in report["findings"] if f["code"] == "exclusion-unused"]
    assert [f["severity"] for f in unused] == ["warning", "warning"]
    assert "'!mypkg/gone.py'" in unused[0]["message"] and "matches no tracked file" in unused[0]["message"]
    assert "'!docs/index.md'" in unused[1]["message"] and "excludes nothing" in unused[1]["message"]
    assert check(check_repo(tmp_path / "b", CLEAN_STEP))[0] == 0


def test_stale_run_all_pattern(tmp_path):
    root = check_repo(tmp_path, CLEAN_STEP, config=CHECK_CONFIG + "run_all: [setup.py, mypkg/core.py]\n"
                                                           "run_all_exclude: [mypkg/none.py]\n")
    exit_code, report = check(root)
    assert exit_code == 1
    assert only(report, "stale-run-all")["line"] == 2
    assert "mypkg/none.py" in only(report, "exclusion-unused")["message"]


def test_run_all_exclusion_outside_the_run_all_patterns(tmp_path):
    root = check_repo(tmp_path, CLEAN_STEP, config=CHECK_CONFIG + "run_all: [mypkg/core.py]\n"
                                                           "run_all_exclude: [docs/index.md, mypkg/core.py]\n")
    exit_code, report = check(root)
    unused = only(report, "exclusion-unused")
    assert (exit_code, unused["line"]) == (0, 3)
    assert unused["message"] == "run-all exclude pattern 'docs/index.md' excludes nothing the run-all patterns match"


# --------------------------------------------------------------------------- tests named by commands


def test_missing_test_file(tmp_path):
    step = CLEAN_STEP.replace('"]', '", "pytest tests/test_gone.py --maxfail 3 --models llama"]')
    root = check_repo(tmp_path, step)
    finding = only(check(root)[1], "test-missing")
    assert "tests/test_gone.py" in finding["message"] and "command 2" in finding["message"]


def test_a_test_whose_change_does_not_select_its_step(tmp_path):
    root = check_repo(tmp_path, CLEAN_STEP.replace("[mypkg, tests/]", "[mypkg, tests/helpers.py, tests/__init__.py]"))
    exit_code, report = check(root)
    finding = only(report, "test-not-selecting")
    assert exit_code == 1
    assert "a change to tests/test_core.py would not run step 'core'" in finding["message"]
    assert finding["fix"] == "add 'tests/test_core.py' to its source_file_dependencies"


def test_an_exclusion_that_drops_the_test_is_named(tmp_path):
    root = check_repo(tmp_path, CLEAN_STEP.replace("[mypkg, tests/]", "[mypkg, tests/, '!tests/test_*.py']"))
    assert "'!tests/test_*.py' drops it" in only(check(root)[1], "test-not-selecting")["fix"]


def test_a_folder_of_tests_honours_ignore(tmp_path):
    step = """\
- label: Folder
  key: folder
  working_dir: /work/tests
  commands: ["pytest -v . --ignore=test_config.py"]
  source_file_dependencies: [mypkg, tests/test_core.py, tests/helpers.py, tests/__init__.py]
"""
    config = CHECK_CONFIG + "docker_workdir: {/work: ''}\n"
    exit_code, report = check(check_repo(tmp_path, step, config=config))
    assert (exit_code, codes(report)) == (0, [])
    exit_code, report = check(check_repo(tmp_path / "b", step.replace(" --ignore=test_config.py", ""), config=config))
    assert "tests/test_config.py" in only(report, "test-not-selecting")["message"]


def test_working_dir_without_a_mapping(tmp_path):
    step = CLEAN_STEP.replace("  commands:", "  working_dir: /somewhere\n  commands:")
    assert only(check(check_repo(tmp_path, step))[1], "workdir-unmapped")["severity"] == "warning"


# --------------------------------------------------------------------------- imports


def test_an_uncovered_import_is_a_warning_and_strict_makes_it_an_error(tmp_path):
    root = check_repo(tmp_path, CLEAN_STEP.replace("[mypkg, tests/]", "[mypkg/core.py, mypkg/__init__.py, tests/]"))
    exit_code, report = check(root)
    finding = only(report, "import-not-covered")
    assert exit_code == 0 and finding["severity"] == "warning"
    assert finding["message"] == ("a change to mypkg/util.py would not run step 'core' "
                                  "(imported via tests/test_core.py -> mypkg/core.py)")
    exit_code, report = check(root, "--strict")
    assert exit_code == 1 and only(report, "import-not-covered")["severity"] == "error"


def test_stdlib_third_party_and_resolved_relative_imports_do_not_fire(tmp_path):
    files = {"tests/test_core.py": "import os, sys\nimport numpy as np\nimport torch.distributed\n"
                                   "from .helpers import x\nfrom . import helpers\n"}
    exit_code, report = check(check_repo(tmp_path, CLEAN_STEP, files))
    assert (exit_code, codes(report)) == (0, [])


def test_conftest_above_a_test_counts_as_imported(tmp_path):
    files = {"conftest.py": "from mypkg import extra\n"}
    report = check(check_repo(tmp_path, CLEAN_STEP, files))[1]
    finding = only(report, "import-not-covered")
    assert finding["message"].startswith("a change to conftest.py would not run step 'core' (pytest loads")


def test_scripts_get_no_conftest(tmp_path):
    files = {"conftest.py": "from mypkg import extra\n", "tools/run_me.py": "import mypkg.core\n"}
    script = CLEAN_STEP + """\
- label: Tool
  key: tool
  commands: ["python tools/run_me.py --fast"]
  source_file_dependencies: [mypkg, tools/]
"""
    report = check(check_repo(tmp_path, script, files))[1]
    # pytest loads conftest.py for tests/test_core.py; `python tools/run_me.py` never does.
    assert only(report, "import-not-covered")["step"] == "core"


def test_tracked_files_list_without_contents(tmp_path):
    root = check_repo(tmp_path, CLEAN_STEP.replace("[mypkg, tests/]", "[mypkg/core.py, tests/]"))
    listing = tmp_path / "list.txt"
    listing.write_text("\n".join([*SOURCES, ".buildkite/pipegen.yaml", ".buildkite/steps.yaml", "tests/test_new.py"]))
    (root / "tests" / "test_core.py").unlink()  # listed, but not on disk: its imports cannot be followed
    exit_code, report = check(root, "--tracked-files", str(listing))
    assert exit_code == 0 and codes(report) == []
    assert any("not readable here" in note for note in report["notes"])
    assert any("list.txt, not git" in note for note in report["notes"])


# --------------------------------------------------------------------------- hardware, twins, limits


def test_a_device_no_family_provides(tmp_path):
    root = check_repo(tmp_path, CLEAN_STEP + "  device: h100\n")
    exit_code, report = check(root)
    assert exit_code == 1 and "'h100'" in only(report, "no-queue")["message"]


VLLM_CONFIG = "name: ci\njob_dirs: [.buildkite/test_areas]\nrun_all_patterns: [setup.py]\n"
VLLM_STEP = """\
- label: AMD image
  key: image-build-amd
  commands: [docker build .]
- label: Core
  key: core
  working_dir: /vllm-workspace/tests
  num_gpus: 2
  commands: [pytest -v -s test_core.py]
  source_file_dependencies: [mypkg/, tests/]
  mirror:
    amd:
      device: mi325_1
      source_file_dependencies: [mypkg/platforms.py]
"""
AMD_FILE = """\
steps:
- label: Core
  agent_pool: mi325_1
  mirror_hardwares: [amdproduction]
  commands: [pytest -v -s test_core.py, pytest -v -s test_config.py]
  source_file_dependencies: [mypkg/, tests/]
"""


def vllm_repo(tmp_path, amd_file=AMD_FILE, steps=VLLM_STEP, files=None):
    files = {"setup.py": "", "mypkg/platforms.py": "", **(files or {})}
    if amd_file:
        files[".buildkite/test-amd.yaml"] = amd_file
    return check_repo(tmp_path, steps, files, config=VLLM_CONFIG, config_file=".buildkite/ci_config.yaml",
                     steps_file=".buildkite/test_areas/core.yaml")


def test_vllm_ignored_field_and_drifted_amd_twin(tmp_path):
    exit_code, report = check(vllm_repo(tmp_path))
    assert exit_code == 0
    assert only(report, "ignored-field")["fix"] == "use 'num_devices'"
    drift = only(report, "mirror-drift")
    assert "only mirror.amd: mypkg/platforms.py" in drift["message"]
    assert "only test-amd.yaml: 'pytest -v -s test_config.py'" in drift["message"]
    assert (drift["file"], drift["step"]) == (".buildkite/test_areas/core.yaml", "amd-core")


def test_each_declarations_file_is_parsed_once(tmp_path, monkeypatch):
    import pipegen.declarations.yamlio

    parsed = []
    load_text = pipegen.declarations.yamlio.load_text
    monkeypatch.setattr(pipegen.declarations.yamlio, "load_text", lambda text, file, *more: parsed.append(file) or load_text(text, file, *more))
    assert check(vllm_repo(tmp_path))[0] == 0
    assert sorted(parsed) == [".buildkite/ci_config.yaml", ".buildkite/test-amd.yaml", ".buildkite/test_areas/core.yaml"]


def test_a_config_without_amd_mirrors_compares_no_twins(tmp_path):
    """vLLM's ci_config_intel.yaml sits next to test-amd.yaml but mirrors nothing to AMD."""
    steps = VLLM_STEP.split("  mirror:")[0]
    exit_code, report = check(vllm_repo(tmp_path, steps=steps))
    assert exit_code == 0 and not [n for n in report["notes"] if "AMD twins" in n]
    assert any("AMD twins compared" in n for n in check(vllm_repo(tmp_path / "b"))[1]["notes"])


def test_amd_file_given_explicitly(tmp_path):
    root = vllm_repo(tmp_path, amd_file=None)
    (root / "ci").mkdir()
    (root / "ci" / "amd.yaml").write_text(AMD_FILE)
    assert "mirror-drift" in codes(check(root, "--amd-file", "ci/amd.yaml")[1])


AGREEING_AMD_FILE = AMD_FILE.replace(", pytest -v -s test_config.py", "").replace(
    "[mypkg/, tests/]", "[mypkg/platforms.py, mypkg/, tests/]")


def test_twins_that_agree_do_not_drift(tmp_path):
    assert "mirror-drift" not in codes(check(vllm_repo(tmp_path, AGREEING_AMD_FILE))[1])
    assert "mirror-drift" not in codes(check(vllm_repo(tmp_path / "b", amd_file=None))[1])


def test_the_steps_file_as_a_dependency_is_no_drift(tmp_path):
    # A file-level depends_on makes vLLM add the steps file to its steps' (and mirrors') dependencies;
    # test-amd.yaml cannot name it.
    image, core = VLLM_STEP.split("- label: Core\n")
    steps = "- label: Core\n" + core + "depends_on: [image-build-amd]\n"
    files = {".buildkite/test_areas/image.yaml": "steps:\n" + image}
    assert "mirror-drift" not in codes(check(vllm_repo(tmp_path, AGREEING_AMD_FILE, steps, files))[1])


def test_a_mirror_reports_its_origins_stale_entry_once(tmp_path):
    steps = VLLM_STEP.replace("[mypkg/, tests/]", "[mypkg/, tests/, mypkg/gone.py]")
    stale = only(check(vllm_repo(tmp_path, steps=steps))[1], "stale-entry")
    assert (stale["file"], stale["line"], stale["step"]) == (".buildkite/test_areas/core.yaml", 10, "core")


def test_worst_case_over_the_upload_limit(tmp_path):
    steps = "".join(f"- label: S{i}\n  commands: [pytest tests/test_core.py]\n  source_file_dependencies: [mypkg, tests]\n"
                    for i in range(251))
    exit_code, report = check(check_repo(tmp_path, steps))
    assert exit_code == 1
    assert "502 jobs (251 command jobs, 251 blocks, 0 groups)" in only(report, "upload-limit")["message"]
    under = check(check_repo(tmp_path / "b", steps, config=CHECK_CONFIG + "unselected: skip\n"))[1]
    assert "upload-limit" not in codes(under)


@pytest.mark.parametrize("key, problem, written", [
    ("bad key!", "contains characters", "bad-key"),
    ("k" * 96, "is 102 characters long", "block-" + "k" * 85 + "-"),
    ("123e4567-e89b-12d3-a456-426614174000", "looks like a UUID", "123e4567-e89b-12d3-a456-426614174000-k"),
    ("a.b", "contains characters other than letters, digits and - _ : ('.')", "a-b"),
    ("core-", "starts or ends with '-'", "core"),
])
def test_invalid_keys(tmp_path, key, problem, written):
    """Exactly the keys render rewrites (buildkite/keys.py's valid_key), with what it writes instead."""
    finding = only(check(check_repo(tmp_path, CLEAN_STEP.replace("key: core", f"key: '{key}'")))[1], "invalid-key")
    assert problem in finding["message"]
    assert finding["fix"].startswith(f"render writes '{written}")


@pytest.mark.parametrize("key", ["a_b:c-1", "123e4567e89b12d3a456426614174000", "k" * 94])
def test_keys_render_keeps_are_valid(tmp_path, key):
    assert "invalid-key" not in codes(check(check_repo(tmp_path, CLEAN_STEP.replace("key: core", f"key: '{key}'")))[1])


def test_an_always_run_step_has_no_block_key_to_fit(tmp_path):
    step = CLEAN_STEP.replace("key: core", f"key: {'k' * 96}")
    assert "invalid-key" not in codes(check(check_repo(tmp_path, step, config=CHECK_CONFIG + "always_run: ['k*']\n"))[1])


def test_orphans_are_information(tmp_path):
    root = check_repo(tmp_path, CLEAN_STEP.replace("[mypkg, tests/]", "[mypkg/core.py, mypkg/util.py, mypkg/__init__.py, tests/]"))
    assert "orphan" not in codes(check(root)[1])
    exit_code, report = check(root, "--orphans")
    assert exit_code == 0
    assert [(f["file"], f["severity"]) for f in report["findings"] if f["code"] == "orphan"] == [
        ("mypkg/extra.py", "info")]


# --------------------------------------------------------------------------- input, formats, exit codes


def test_unreadable_declarations_exit_2_with_one_finding(tmp_path):
    root = check_repo(tmp_path, CLEAN_STEP + "  bogus_field: 1\n")
    exit_code, report = check(root)
    finding = only(report, "declaration-error")
    assert exit_code == 2 and "bogus_field" in finding["message"] and finding["line"] == 6


def test_usage_errors_exit_2(tmp_path):
    root = check_repo(tmp_path, CLEAN_STEP)
    result = CliRunner().invoke(cli, ["check", "--root", str(root), "--tracked-files", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "cannot read" in result.output
    result = CliRunner().invoke(cli, ["check", "--root", str(root), "--format", "yaml"])
    assert result.exit_code == 2


def test_text_and_markdown(tmp_path):
    root = check_repo(tmp_path, CLEAN_STEP.replace("[mypkg, tests/]", "[mypkg, tests/, tests/test_config]"))
    text = CliRunner().invoke(cli, ["check", "--root", str(root)])
    assert text.exit_code == 1
    assert text.output.startswith(".buildkite/steps.yaml:5:45: error[raw-prefix-only]: entry 'tests/test_config'")
    assert "    fix: write 'tests/test_config.py'" in text.output
    assert text.output.rstrip().endswith("1 error, 0 warnings, 0 infos (raw-prefix-only 1)")
    markdown = CliRunner().invoke(cli, ["check", "--root", str(root), "--format", "markdown"]).output
    assert "| :x: | `raw-prefix-only` |" in markdown


def test_subprocess_in_the_repository(tmp_path):
    root = check_repo(tmp_path, CLEAN_STEP.replace("tests/test_core.py::", "tests/test_gone.py::"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PIPEGEN_"))}
    done = subprocess.run([sys.executable, "-m", "pipegen", "check"], cwd=root, env=env, capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    assert "error[test-missing]" in done.stdout and done.stdout.rstrip().endswith("(test-missing 1)")


def test_the_pre_commit_hook_runs_check_at_the_repository_root(tmp_path, monkeypatch):
    import shlex

    import tomllib
    import yaml

    project = ROOT
    (hook,) = [h for h in yaml.safe_load((project / ".pre-commit-hooks.yaml").read_text()) if h["id"] == "pipegen-check"]
    # pre-commit runs `entry` from the repository root; check takes no file names.
    assert (hook["language"], hook["pass_filenames"]) == ("python", False)
    program, *args = shlex.split(hook["entry"])
    scripts = tomllib.loads((project / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts[program] == "pipegen.__main__:main"  # the CLI, started with the garbage collector off
    root = check_repo(tmp_path, CLEAN_STEP.replace("tests/test_core.py::", "tests/test_gone.py::"))
    monkeypatch.chdir(root)
    result = CliRunner().invoke(cli, args, env={"PIPEGEN_CONFIG": None, "GIT_DIR": None})
    assert result.exit_code == 1 and "error[test-missing]" in result.output, result.output


def test_a_step_with_tests_but_no_dependencies(tmp_path):
    # pipegen's own format adds the steps file as a dependency; like `select`, check does not count it as declared.
    root = check_repo(tmp_path, CLEAN_STEP.replace("  source_file_dependencies: [mypkg, tests/]\n", ""))
    assert codes(check(root)[1]) == ["no-dependencies"]
    vllm = check_repo(tmp_path / "v", VLLM_STEP.replace("  source_file_dependencies: [mypkg/, tests/]\n", ""),
                     {"mypkg/platforms.py": "", "setup.py": ""}, config=VLLM_CONFIG,
                     config_file=".buildkite/ci_config.yaml", steps_file=".buildkite/test_areas/core.yaml")
    finding = only(check(vllm)[1], "no-dependencies")
    assert finding["step"] == "core" and finding["severity"] == "warning"


def test_no_dependencies_run_selects_on_every_change(tmp_path):
    # pipegen's format adds the steps file as a dependency; like `select`, check must not count it as declared.
    root = check_repo(tmp_path, CLEAN_STEP.replace("  source_file_dependencies: [mypkg, tests/]\n", ""),
                     config=CHECK_CONFIG + "no_dependencies: run\n")
    exit_code, report = check(root)
    assert (exit_code, codes(report)) == (0, [])


def test_optional_steps_are_not_expected_to_be_selected(tmp_path):
    step = CLEAN_STEP.replace("[mypkg, tests/]", "[mypkg/core.py]") + "  optional: true\n"
    assert codes(check(check_repo(tmp_path, step))[1]) == []


def test_always_run_steps_are_not_expected_to_be_selected(tmp_path):
    step = CLEAN_STEP.replace("[mypkg, tests/]", "[mypkg/core.py]")
    assert codes(check(check_repo(tmp_path, step, config=CHECK_CONFIG + "always_run: [co*]\n"))[1]) == []


def test_parallel_jobs_count_towards_the_upload_limit(tmp_path):
    steps = "".join(f"- label: S{i}\n  parallelism: 4\n  commands: [pytest tests/test_core.py]\n"
                    f"  source_file_dependencies: [mypkg, tests]\n" for i in range(130))
    finding = only(check(check_repo(tmp_path, steps, config=CHECK_CONFIG + "unselected: skip\n"))[1], "upload-limit")
    assert "renders 520 jobs (520 command jobs, 0 blocks, 0 groups)" in finding["message"]


def test_a_hardware_fan_out_is_reported_once(tmp_path):
    config = CHECK_CONFIG + ("hardware:\n  families:\n    cpu: {vendor: cpu, queue: cpu-q}\n"
                       "    h100: {vendor: nvidia, queues: {1: h100-q}}\n")
    step = CLEAN_STEP.replace("[mypkg, tests/]", "[mypkg, tests/helpers.py, mypkg/gone.py]") + "  hardware: [cpu, h100]\n"
    exit_code, report = check(check_repo(tmp_path, step, config=config))
    assert exit_code == 1
    assert sorted((f["code"], f["step"]) for f in report["findings"]) == [
        ("import-not-covered", "core"), ("stale-entry", "core"), ("test-not-selecting", "core")]


def test_this_repository_checks_clean_strictly():
    """pipegen's own .buildkite/ passes its own strictest check (needs the git checkout)."""
    root = ROOT
    if not (root / ".git").exists():
        pytest.skip("not a git checkout")
    result = CliRunner().invoke(cli, ["check", "--root", str(root), "--strict"])
    assert result.exit_code == 0, result.output
