"""Derived entries (graph/derived.py, cargo.py, expand.py): a step's `derive:` roots select it through the
code's own graph, computed at select time from small real Python and Cargo repositories, with the chain
`why` prints, and cached by content."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import pipegen.cache
from pipegen.graph import expand
from tests.helpers import commit_files, git, git_repo, invoke

STEPS = """\
steps:
  - label: Unit
    key: unit
    commands: [pytest tests/unit]
    derive: {python: [tests/unit/]}
  - label: App
    key: app
    commands: [cargo test -p app]
    derive: {cargo: [crates/app]}
"""

PYTHON = {
    "tests/conftest.py": "import pkg.fixtures\n",
    "tests/unit/test_a.py": "from typing import TYPE_CHECKING\nimport pkg.a\nif TYPE_CHECKING:\n    import pkg.typing_only\n",
    "pkg/__init__.py": "", "pkg/a.py": "from .sub import b\n", "pkg/sub/__init__.py": "",
    "pkg/sub/b.py": "def f():\n    import pkg.lazy\n", "pkg/lazy.py": "", "pkg/typing_only.py": "",
    "pkg/fixtures.py": "", "pkg/unused.py": "",
}
CARGO = {
    "Cargo.toml": '[workspace]\nmembers = ["crates/*"]\n[workspace.dependencies]\nutil = { path = "crates/util" }\n',
    "Cargo.lock": "# lock\n",
    "crates/app/Cargo.toml": '[package]\nname = "app"\n[dependencies]\ncore = { path = "../core" }\nserde = "1"\n',
    "crates/core/Cargo.toml": '[package]\nname = "core"\n[target.\'cfg(unix)\'.dev-dependencies]\n'
                              'util = { workspace = true }\n',
    "crates/util/Cargo.toml": '[package]\nname = "util"\n', "crates/util/src/lib.rs": "",
    "crates/core/src/lib.rs": "", "crates/app/src/main.rs": "", "crates/other/Cargo.toml": '[package]\nname = "o"\n',
    "crates/other/src/lib.rs": "",
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return git_repo(tmp_path / "repo", {".buildkite/pipegen.yaml": "steps: [.buildkite/steps]\nuncovered: fail\n",
                                        ".buildkite/steps/t.yaml": STEPS, **PYTHON, **CARGO})


def selected(root: Path, *paths: str, env: dict[str, str] | None = None) -> dict[str, dict]:
    result = invoke(root, "select", "--format", "json", files="\n".join(paths) + "\n", env=env)
    assert result.exit_code == 0, result.output
    return {s["key"]: s for s in json.loads(result.stdout)["steps"] if s["action"] == "run"}


@pytest.mark.parametrize("path", ["pkg/a.py", "pkg/sub/b.py", "pkg/lazy.py", "pkg/fixtures.py", "pkg/__init__.py",
                                  "tests/conftest.py", "tests/unit/test_a.py"])
def test_a_file_in_the_import_closure_selects_the_step(root, path):
    assert set(selected(root, path)) == {"unit"}


def test_type_checking_imports_and_unimported_files_do_not(root):
    result = invoke(root, "select", "--format", "json", files="pkg/typing_only.py\npkg/unused.py\n")
    assert result.exit_code == 1 and "pkg/typing_only.py, pkg/unused.py" in result.stderr  # uncovered: fail


def test_why_prints_the_chain(root):
    out = invoke(root, "why", "pkg/lazy.py", "pkg/fixtures.py", "crates/util/src/lib.rs").stdout
    assert ("selects unit  (pkg/lazy.py <- imported by pkg/sub/b.py <- imported by pkg/a.py <- imported by "
            "tests/unit/test_a.py (derive root tests/unit/))") in out
    assert ("pkg/fixtures.py <- imported by tests/conftest.py <- loaded by pytest for tests/unit/test_a.py") in out
    assert ("selects app  (crates/util/src/lib.rs is in crates/util <- path dependency of crates/core <- path "
            "dependency of crates/app (derive root crates/app))") in out


@pytest.mark.parametrize("path", ["crates/app/src/main.rs", "crates/core/src/lib.rs", "crates/util/src/lib.rs",
                                  "Cargo.lock", "Cargo.toml"])
def test_a_file_of_a_crate_in_the_path_closure_selects_the_step(root, path):
    assert set(selected(root, path)) == {"app"}


def test_a_crate_outside_the_closure_does_not(root):
    assert invoke(root, "select", files="crates/other/src/lib.rs\n").exit_code == 1  # uncovered: fail


def test_derived_entries_follow_the_code_without_an_edit_of_the_declarations(root):
    commit_files(root, {"pkg/sub/b.py": "import pkg.unused\n",
                        "crates/app/Cargo.toml": CARGO["crates/app/Cargo.toml"] + 'o = { path = "../other" }\n'})
    assert set(selected(root, "pkg/unused.py", "crates/other/src/lib.rs")) == {"unit", "app"}
    # b.py no longer imports pkg.lazy: a change to it runs no step, and `uncovered: fail` says so
    assert invoke(root, "select", files="pkg/lazy.py\n").exit_code == 1


def test_the_closure_is_cached_by_content_and_a_tampered_entry_is_recomputed(root, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    env = {"PIPEGEN_CACHE_DIR": str(cache)}
    assert set(selected(root, "pkg/lazy.py", env=env)) == {"unit"}
    stored = json.loads(pipegen.cache.load(str(cache / "derived.json"), expand.STORE_KEY) or b"")
    monkeypatch.setattr(expand, "python_closure", lambda *a: pytest.fail("computed again"))
    assert set(selected(root, "pkg/lazy.py", env=env)) == {"unit"}  # from the cache
    monkeypatch.undo()
    for entry in stored["entries"].values():
        entry["links"] = [["pkg/lazy.py", "x", "root"]]  # altered, its sha256 no longer matches
    pipegen.cache.store(str(cache / "derived.json"), expand.STORE_KEY, json.dumps(stored).encode())  # resealed
    assert set(selected(root, "pkg/a.py", env=env)) == {"unit"}  # recomputed, not trusted
    commit_files(root, {"pkg/a.py": ""})  # new content, new key: pkg/sub/b.py is no longer reached
    assert invoke(root, "select", files="pkg/sub/b.py\n", env=env).exit_code == 1


def test_a_root_that_holds_no_file_is_a_declaration_error_at_the_step(root):
    commit_files(root, {".buildkite/steps/t.yaml": STEPS.replace("tests/unit/", "tests/gone/")})
    result = subprocess.run([sys.executable, "-m", "pipegen", "select"], cwd=root, capture_output=True, text=True,
                            env={**os.environ, "PIPEGEN_CACHE_DIR": ""})
    assert result.returncode == 2 and ".buildkite/steps/t.yaml:2:5" in result.stderr
    assert "tests/gone/" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(("derive", "message"), [
    ("{pyhton: [tests/]}", "did you mean 'python'"),
    ("{use: check}", "derive names no roots"),
    ("[tests/]", "expected a mapping"),
    ("{cargo: [crates/none]}", "crates/none/Cargo.toml is not a tracked file"),
])
def test_a_bad_derive_is_one_message(root, derive, message):
    commit_files(root, {".buildkite/steps/t.yaml": STEPS.replace("{cargo: [crates/app]}", derive)})
    result = invoke(root, "select", files="x\n")
    assert result.exit_code == 2 and message in result.stderr, result.output


def test_invalid_cargo_toml_names_the_file(root):
    git(root, "rm", "-q", "--cached", "Cargo.toml")
    commit_files(root, {"crates/core/Cargo.toml": "[package\n"})
    result = invoke(root, "select", files="x\n")
    assert result.exit_code == 2 and "crates/core/Cargo.toml is not valid TOML" in result.stderr


FROZEN = """\
  - label: Frozen
    key: frozen
    commands: [cargo test -p app]
    source_file_dependencies: [crates/app/, crates/core/, crates/util/, Cargo.toml, Cargo.lock]
    derive: {cargo: [crates/app], use: check}
"""


def test_check_reports_a_hand_written_list_that_drifted_from_what_it_derives(root):
    commit_files(root, {".buildkite/steps/t.yaml": STEPS + FROZEN})
    result = invoke(root, "check", "--format", "json")
    assert result.exit_code == 0 and "derived-drift" not in result.stdout, result.stdout  # in step: nothing
    # Materialize's port: an entry removed by hand; check says so before a real change is missed
    commit_files(root, {".buildkite/steps/t.yaml": STEPS + FROZEN.replace(" crates/util/,", " docs/,"),
                        "docs/a.md": ""})
    result = invoke(root, "check", "--format", "json")
    findings = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "derived-drift"]
    assert result.exit_code == 1
    error = next(f for f in findings if f["severity"] == "error")
    assert error["step"] == "frozen" and error["line"] == 10 and "a change to crates/util/ would not run" in \
        error["message"] and "path dependency of crates/core" in error["message"]
    assert error["fix"] == "add 'crates/util/' to its source_file_dependencies"
    extra = next(f for f in findings if f["severity"] == "warning")
    assert "entry 'docs/' of step 'frozen' covers nothing its derive: reaches" in extra["message"]
    # and it matters: the list, not the derivation, selects the step (use: check)
    assert "frozen" not in selected(root, "crates/util/src/lib.rs")


def test_drifted_top_level_files_are_named_in_the_message_and_the_fix(root):
    commit_files(root, {".buildkite/steps/t.yaml": STEPS + FROZEN.replace(", Cargo.toml, Cargo.lock]", "]")})
    result = invoke(root, "check", "--format", "json")
    error = next(f for f in json.loads(result.stdout)["findings"] if f["code"] == "derived-drift")
    assert error["message"].startswith("a change to Cargo.toml (and 1 more in the top folder) would not run"), error
    assert error["fix"] == "add 'Cargo.toml', 'Cargo.lock' to its source_file_dependencies"  # not "the files"


def test_check_counts_derived_entries_as_the_steps_own(root):
    """A step whose entries are all derived has dependencies: no no-dependencies or import-not-covered finding."""
    result = invoke(root, "check", "--format", "json")
    codes = [f["code"] for f in json.loads(result.stdout)["findings"]]
    assert "no-dependencies" not in codes and "import-not-covered" not in codes, codes


def test_audit_replays_derived_entries_and_compares_with_the_same_derivation(root):
    git(root, "checkout", "-q", "-b", "work")
    commit_files(root, {"pkg/lazy.py": "x = 1\n"}, "lazy")
    commit_files(root, {"crates/util/src/lib.rs": "// x\n"}, "util")
    result = invoke(root, "audit", "--last", "2", "--compare", "main", "--fail-on-loss", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [c["run"] for c in data["commits"]] == [["app"], ["unit"]]


def test_render_runs_a_derived_step_and_its_annotation_says_why(root, tmp_path):
    commit_files(root, {".buildkite/pipegen.yaml": "steps: [.buildkite/steps]\nhardware: {default: cpu, families: "
                        "{cpu: {vendor: cpu, queue: q, template: plain}}, templates: {plain: {kind: plain}}}\n"})
    annotation = tmp_path / "why.md"
    result = invoke(root, "render", "--annotation", str(annotation), files="pkg/lazy.py\n")
    assert result.exit_code == 0, result.output
    assert "pytest tests/unit" in result.stdout
    row = next(line for line in annotation.read_text().splitlines() if "(`unit`)" in line)
    assert "| run |" in row and "pkg/lazy.py <- imported by pkg/sub/b.py" in row
    app = next(line for line in annotation.read_text().splitlines() if "(`app`)" in line)
    assert "| run |" not in app


def test_check_with_tracked_files_derives_from_the_files_on_disk(root, tmp_path):
    """`check --tracked-files` (a configuration checked without its repository's git): derived entries are read
    from the listed files, so a deriving step is neither without dependencies nor drifting by mistake."""
    commit_files(root, {".buildkite/steps/t.yaml": STEPS + FROZEN.replace(" crates/util/,", "")})
    listed = tmp_path / "tracked.txt"
    listed.write_text(git(root, "ls-files"))
    result = invoke(root, "check", "--tracked-files", str(listed), "--format", "json")
    findings = json.loads(result.stdout)["findings"]
    codes = {f["code"] for f in findings}
    assert "no-dependencies" not in codes, codes
    drift = [f for f in findings if f["code"] == "derived-drift"]
    assert len(drift) == 1 and "a change to crates/util/ would not run step 'frozen'" in drift[0]["message"]
