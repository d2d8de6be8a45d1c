"""Properties of select and why on generated declarations and changes.

Every step appears exactly once in `select --format json`, with one action and at least
one reason; and `why PATH` agrees with `select` on a change of that path alone: run-all
(overridden by NOAUTO), docs-only, or the steps it selects are exactly those that run then
and not without it, and the steps it says do not run do not; the steps they depend on run too, and why names them.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipegen.cli import cli
from pipegen.states import ACTIONS
from tests.helpers import declarations, write_files

ENTRIES = ["src/", "src/a/", "src/a/x.py", "lib", "tests/", "!src/a/vendored/", "src/*.py", "**/*.md", "docs/"]
FILES = ["src/a/x.py", "src/a/vendored/v.py", "src/b.py", "lib/l.py", "tests/t.py", "docs/i.md", "README.md",
         "pyproject.toml", ".buildkite/pipegen.yaml", ".buildkite/steps/s.yaml", "other.txt"]


def select(root: Path, files: list[str], env: dict[str, str]) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["select", "--root", str(root), "--format", "json", "--files-from", "-"],
                                input="".join(f + "\n" for f in files), env=env)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def ran(data: dict[str, Any]) -> set[str]:
    return {s["key"] for s in data["steps"] if s["action"] == "run"}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(declarations(ENTRIES, always_run=["s1*"]), st.lists(st.sampled_from(FILES), max_size=4, unique=True),
       st.sampled_from([{}, {"NIGHTLY": "1"}, {"DOCS_ONLY_DISABLE": "1"}, {"NOAUTO": "1"}]))
def test_every_step_once_and_why_agrees_with_select(files, changes, env):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        write_files(root, files)
        data = select(root, changes, env)
        declared = yaml.safe_load(files[".buildkite/steps/s.yaml"])["steps"]
        assert sorted(s["key"] for s in data["steps"]) == sorted(s["key"] for s in declared)
        for step in data["steps"]:
            assert step["action"] in ACTIONS and step["reasons"] and all(r["text"] for r in step["reasons"])
        regardless = ran(select(root, [], env))  # what runs whatever changed
        for path in changes:
            alone = select(root, [path], env)
            result = CliRunner().invoke(cli, ["why", "--root", str(root), "--format", "json", path], env=env)
            assert result.exit_code == 0, result.output
            row = json.loads(result.stdout)["paths"][0]
            if alone["skip_all"]:
                assert row["verdict"] == "docs-only" and not ran(alone)
            elif alone["run_all"]:
                assert row["verdict"] == "run-all" and row["reason"] == alone["run_all_reason"]
                assert bool(row["overridden"]) == ("NOAUTO" in env)  # NOAUTO blocks what run-all would run
            else:
                selects, needed = ({s["key"] for s in row[name]} for name in ("selects", "needed"))
                assert row["verdict"] == "steps" and selects | needed <= ran(alone)
                # What a step that runs depends on runs too, and why says so.
                assert ran(alone) == selects | needed | regardless, (path, row, alone)
                # A step it matches that runs anyway (always-run, nightly) is not one that "does not run".
                assert {s["key"] for s in row["regardless"]} <= regardless
                assert not {s["key"] for s in row["blocked"]} & ran(alone), (path, row, alone)


def test_why_names_steps_that_run_anyway_and_what_overrides_run_all(tmp_path):
    write_files(tmp_path, {
        ".buildkite/pipegen.yaml": "steps: [.buildkite/steps/s.yaml]\nalways_run: [boot]\nrun_all: [pyproject.toml]\n",
        ".buildkite/steps/s.yaml": "steps:\n- {label: Boot, key: boot, commands: [x], source_file_dependencies: [src/]}\n"
                                   "- {label: Opt, key: opt, commands: [x], source_file_dependencies: [src/], "
                                   "optional: true}\n"})

    def why(*args, env=None):
        result = CliRunner().invoke(cli, ["why", "--root", str(tmp_path), *args], env=env)
        assert result.exit_code == 0, result.output
        return result.stdout

    assert why("src/a.py") == ("src/a.py:\n"
                               "  matches opt (entry 'src/') but it does not run: block, optional step: runs only when "
                               "unblocked or nightly\n"
                               "  matches boot (entry 'src/'), which runs whatever changes: key matches always-run "
                               "'boot'\n")
    assert why("pyproject.toml", env={"NOAUTO": "1"}) == (
        "pyproject.toml:\n  run-all: everything would run (pyproject.toml matches run-all pattern 'pyproject.toml'), "
        "but NOAUTO=1 blocks every step\n")
    assert why("pyproject.toml", "--only", "opt").endswith("but the explicit keys decide first\n")


def test_why_step_says_buildkite_may_still_skip_it_as_select_does(tmp_path):
    write_files(tmp_path, {".buildkite/pipegen.yaml": "steps: [.buildkite/steps/s.yaml]\n",
                           ".buildkite/steps/s.yaml": "steps:\n- {label: A, key: a, commands: [x], "
                                                      "source_file_dependencies: [src/], branches: main}\n"})
    result = CliRunner().invoke(cli, ["why", "--root", str(tmp_path), "--step", "a", "--files-from", "-"],
                                input="src/x.py\n")
    assert result.exit_code == 0, result.output
    assert "  action: run: src/x.py matches 'src/'; Buildkite may still skip it (branches: main)\n" in result.stdout
