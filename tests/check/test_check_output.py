"""check at scale: uncovered imports grouped by (step, folder), text and Markdown within
MAX_LINES with errors first, JSON and --detail with everything, and the import-scan cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import pipegen.cache
from pipegen.check.findings import MAX_LINES
from pipegen.cli import cli
from pipegen.graph import scan_cache
from tests.helpers import CLEAN_STEP, check, check_repo, commit_files, git, only, write_files


def run(root: Path, *args: str) -> str:
    return CliRunner().invoke(cli, ["check", "--root", str(root), *args], env={"PIPEGEN_CONFIG": None}).output


def uncovered_repo(tmp_path: Path) -> Path:
    """The test imports 12 modules directly in mypkg/ (whose __init__.py the step covers)
    and 3 in mypkg/deep/ (none covered)."""
    files = {f"mypkg/m{i:02}.py": f"X = {i}\n" for i in range(12)}  # distinct blobs
    files.update({f"mypkg/deep/d{i}.py": f"Y = {i}\n" for i in range(3)})
    files["mypkg/deep/__init__.py"] = ""
    files["tests/test_core.py"] = ("".join(f"from mypkg import m{i:02}\n" for i in range(12))
                                   + "from mypkg.deep import d0, d1, d2\n")
    return check_repo(tmp_path, CLEAN_STEP.replace("[mypkg, tests/]", "[mypkg/__init__.py, tests/]"), files)


def test_one_finding_per_step_and_uncovered_folder(tmp_path):
    exit_code, report = check(uncovered_repo(tmp_path))
    found = sorted((f for f in report["findings"] if f["code"] == "import-not-covered"), key=lambda f: len(f["files"]))
    assert exit_code == 0 and len(found) == 2
    deep, direct = found
    assert deep["files"] == ["mypkg/deep/__init__.py", "mypkg/deep/d0.py", "mypkg/deep/d1.py", "mypkg/deep/d2.py"]
    assert deep["message"] == ("a change to any of 4 files in mypkg/deep/ (e.g. mypkg/deep/__init__.py, "
                               "mypkg/deep/d0.py) would not run step 'core' (mypkg/deep/__init__.py: imported via "
                               "tests/test_core.py)")
    assert deep["fix"] == "add 'mypkg/deep/' to its source_file_dependencies"
    assert direct["files"] == [f"mypkg/m{i:02}.py" for i in range(12)]
    assert "any of 12 files directly in mypkg/ (e.g. mypkg/m00.py, mypkg/m01.py)" in direct["message"]
    assert "mypkg/ also holds files it covers" in direct["fix"]
    assert report["counts"] == {"import-not-covered": 2}


def test_text_summarises_and_detail_lists_every_file(tmp_path):
    root = uncovered_repo(tmp_path)
    text = run(root)
    assert text.count("warning[import-not-covered]") == 2 and "mypkg/m11.py" not in text
    assert text.rstrip().endswith("(import-not-covered 2 (16 files))")
    detail = run(root, "--detail")
    assert all(f"    - mypkg/m{i:02}.py" in detail for i in range(12))
    assert "mypkg/m11.py" in run(root, "--detail", "--format", "markdown")


def many_findings_repo(tmp_path: Path, steps: int) -> Path:
    """`steps` steps, each with a stale entry (an error) and two uncovered imports (warnings)."""
    block = "".join(f"- label: S{i}\n  key: s{i}\n  commands: [pytest tests/test_core.py]\n"
                    f"  source_file_dependencies: [mypkg/core.py, mypkg/__init__.py, tests/, gone{i}/]\n"
                    for i in range(steps))
    return check_repo(tmp_path, block)


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_text_and_markdown_fit_the_screen_errors_first(tmp_path, fmt):
    root = many_findings_repo(tmp_path, 120)
    out = run(root, "--format", fmt).splitlines()
    assert len(out) <= MAX_LINES
    kinds = [("error" if "error[" in line or ":x:" in line else "warning") for line in out
             if "error[" in line or "warning[" in line or ":x:" in line or ":warning:" in line]
    assert kinds == sorted(kinds)  # every error before the first warning
    assert kinds.count("error") > 40
    more = next(line for line in out if "more findings" in line)
    shown = len(kinds)
    assert f"... {240 - shown} more findings" in more and "--detail" in more
    assert len(run(root, "--format", fmt, "--detail").splitlines()) > MAX_LINES


def test_json_keeps_every_finding(tmp_path):
    _, report = check(many_findings_repo(tmp_path, 120))
    assert len(report["findings"]) == 240 and report["errors"] == 120


# --------------------------------------------------------------------------- the import-scan cache


def stored_scans(cache: Path) -> dict:
    """The import-scan cache's content, verified as pipegen reads it."""
    content = pipegen.cache.load(str(cache / "import-scans.json"), scan_cache.KEY)
    assert content is not None
    return json.loads(content)


@pytest.fixture
def scans(monkeypatch):
    """Count the files scanned (not taken from the cache)."""
    calls: list[str] = []
    real = scan_cache.scan_imports
    monkeypatch.setattr(scan_cache, "scan_imports", lambda text: calls.append(text) or real(text))
    return calls


def test_a_second_run_scans_nothing_and_finds_the_same(tmp_path, monkeypatch, scans):
    monkeypatch.setenv("PIPEGEN_CACHE_DIR", str(tmp_path / "cache"))
    root = uncovered_repo(tmp_path)
    first = check(root)
    assert len(scans) > 10 and (tmp_path / "cache" / "import-scans.json").is_file()
    scans.clear()
    assert check(root) == first and scans == []


def test_an_edited_file_is_scanned_again_staged_or_not(tmp_path, monkeypatch, scans):
    monkeypatch.setenv("PIPEGEN_CACHE_DIR", str(tmp_path / "cache"))
    root = uncovered_repo(tmp_path)
    check(root)
    write_files(root, {"tests/test_core.py": "import mypkg.extra\n"})  # not staged: the index SHA is stale
    scans.clear()
    report = check(root)[1]
    assert scans == ["import mypkg.extra\n"]
    assert only(report, "import-not-covered")["message"].startswith("a change to mypkg/extra.py would not run")
    git(root, "add", "tests/test_core.py")  # staged: a new index SHA, scanned once and stored
    scans.clear()
    assert check(root)[1] == report and scans == ["import mypkg.extra\n"]
    scans.clear()
    assert check(root)[1] == report and scans == []


def test_the_cache_keeps_the_current_tree_first_then_older_scans_up_to_its_limit(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("PIPEGEN_CACHE_DIR", str(cache))
    root = uncovered_repo(tmp_path)

    def stored() -> set[str]:
        return set(stored_scans(cache)["scans"])

    def blob() -> str:
        return git(root, "rev-parse", "HEAD:tests/test_core.py").strip()

    check(root)
    first, v1 = stored(), blob()
    commit_files(root, {"tests/test_core.py": "from mypkg import m00\n"})
    check(root)
    assert stored() == first | {blob()}  # under LIMIT: the older blob stays
    monkeypatch.setattr(scan_cache, "LIMIT", len(first))
    commit_files(root, {"tests/test_core.py": "from mypkg import m01\n"})
    check(root)
    assert stored() == first - {v1} | {blob()}  # at LIMIT: the current tree's blobs only


def test_a_corrupt_or_disabled_cache_changes_nothing(tmp_path, monkeypatch, scans):
    cache = tmp_path / "cache"
    monkeypatch.setenv("PIPEGEN_CACHE_DIR", str(cache))
    root = uncovered_repo(tmp_path)
    expected = check(root)
    stored = stored_scans(cache)
    stored["scans"] = {sha: [["mypkg.m00"]] for sha in stored["scans"]}  # wrong shape: scanned again
    pipegen.cache.store(str(cache / "import-scans.json"), scan_cache.KEY, json.dumps(stored).encode())
    assert check(root) == expected
    (cache / "import-scans.json").write_text("{not json")
    assert check(root) == expected
    monkeypatch.setenv("PIPEGEN_CACHE_DIR", "")
    scans.clear()
    assert check(root) == expected and len(scans) > 10
