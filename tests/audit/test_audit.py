"""`pipegen audit` on a synthetic history: renames, deletions, a merge (first parent only),
a declaration change mid-range, and steps gone or changed since --compare REF.

What each commit must run is written out below from the history itself (which files each
commit touches, which entries each step has), not computed by pipegen's code.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipegen.cli import cli
from pipegen.commands import audit as audit_command
from tests.helpers import commit_files, git, git_repo

CONFIG = """\
steps: [.buildkite/steps.yaml, .buildkite/idle.yaml]
run_all: [setup.py]
docs_only: [docs/]
hardware:
  families:
    cpu: {vendor: cpu, queue: cpu-q}
    h100: {vendor: nvidia, queues: {1: h100-1, 2: h100-2}}
"""


def step(key: str, entries: list[str], hardware: str = "cpu") -> str:
    return (f"  - label: {key}\n    key: {key}\n    hardware: [{hardware}]\n    commands: [pytest]\n"
            f"    source_file_dependencies: [{', '.join(entries)}]\n")


CORE = step("core", ["pkg/core/"], "h100:2")  # a 2-GPU job: two machines' minutes per minute
UTIL = step("util", ["pkg/util.py"])
OLD = step("old", ["old/"])
LATE = step("late", ["late/"])
IDLE = "steps:\n" + step("idle", ["never/"])


def history(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """c0 (base) .. c8, first parent; returns the repository and each commit's sha."""
    root = git_repo(tmp_path / "repo", {
        ".buildkite/pipegen.yaml": CONFIG, ".buildkite/steps.yaml": "steps:\n" + CORE + UTIL + OLD,
        ".buildkite/idle.yaml": IDLE, "pkg/core/a.py": "a\n", "pkg/core/b.py": "b\n", "pkg/util.py": "u\n",
        "old/x.py": "x\n", "setup.py": "s\n", "docs/index.md": "d\n", "never/n.py": "n\n"})
    sha = {"c0": git(root, "rev-parse", "HEAD").strip()}

    def commit(name: str) -> None:
        sha[name] = git(root, "rev-parse", "HEAD").strip()

    commit_files(root, {"pkg/core/a.py": "a2\n"}, "c1 edit")
    commit("c1")
    (root / "lib").mkdir()
    git(root, "mv", "pkg/core/b.py", "lib/b.py")
    git(root, "commit", "-q", "-m", "c2 rename out of pkg/core/")
    commit("c2")
    commit_files(root, {"old/x.py": "x2\n"}, "c3 old")
    commit("c3")
    git(root, "rm", "-q", "pkg/util.py")
    git(root, "commit", "-q", "-m", "c4 delete")
    commit("c4")
    git(root, "checkout", "-q", "-b", "side")
    commit_files(root, {"late/y.py": "y\n", "pkg/core/side.py": "only on the side branch, then merged\n"}, "side")
    commit_files(root, {"pkg/core/side.py": "side 2\n"}, "side 2")
    git(root, "checkout", "-q", "main")
    git(root, "merge", "-q", "--no-ff", "-m", "c5 merge", "side")
    commit("c5")
    commit_files(root, {".buildkite/steps.yaml": "steps:\n" + CORE + UTIL + OLD + LATE}, "c6 add step late")
    commit("c6")
    commit_files(root, {"docs/guide.md": "g\n"}, "c7 docs")
    commit("c7")
    commit_files(root, {"setup.py": "s2\n"}, "c8 setup")
    commit("c8")
    return root, sha


# What runs with the declarations of c8 (core, util, old, late, idle), commit by commit:
AT_HEAD = {
    "c1": {"core"},  # pkg/core/a.py
    "c2": {"core"},  # the rename's old path pkg/core/b.py (lib/b.py is no one's)
    "c3": {"old"},
    "c4": {"util"},  # the deleted pkg/util.py
    "c5": {"core", "late"},  # the merge against its first parent: late/y.py and pkg/core/side.py
    "c6": {"core", "util", "old", "late"},  # the steps file is a dependency of its steps (not idle.yaml's)
    "c7": set(),  # docs-only
    "c8": {"core", "util", "old", "late", "idle"},  # setup.py: run-all
}
# The pull request under review edits the declarations in the work tree: `old` removed,
# util watches pkg/other/ and lib/ instead of pkg/util.py.
EDITED = {".buildkite/steps.yaml": "steps:\n" + CORE + step("util", ["pkg/other/", "lib/"]) + LATE}
IN_WORK_TREE = {**AT_HEAD, "c2": {"core", "util"}, "c3": set(), "c4": set(),
                "c6": {"core", "util", "late"}, "c8": {"core", "util", "late", "idle"}}


def audit(root: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["audit", "--root", str(root), *args], env={"PIPEGEN_CONFIG": None})
    return result.exit_code, result.output


def audit_json(root: Path, *args: str) -> dict:
    code, out = audit(root, *args, "--format", "json")
    assert code == 0, out
    return json.loads(out)


def runs_by_commit(report: dict, sha: dict[str, str]) -> dict[str, set[str]]:
    name = {v: k for k, v in sha.items()}
    return {name[c["sha"]]: set(c["run"]) for c in report["commits"]}


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    return history(tmp_path_factory.mktemp("audit"))


def test_each_first_parent_commit_runs_what_its_files_select(repo):
    root, sha = repo
    report = audit_json(root, "--range", f"{sha['c0']}..HEAD")
    assert runs_by_commit(report, sha) == AT_HEAD  # the side branch's own commits are not replayed
    steps = 5
    by_name = {c["sha"]: c for c in report["commits"]}
    docs, everything = by_name[sha["c7"]], by_name[sha["c8"]]
    assert (len(docs["skipped"]), docs["waiting"]) == (steps, []) and docs["docs_only"].startswith("docs-only change")
    assert everything["run_all"] == "setup.py matches run-all pattern 'setup.py'"
    assert by_name[sha["c1"]]["waiting"] == ["idle", "late", "old", "util"]
    assert (report["ran"], report["every"]) == (sum(map(len, AT_HEAD.values())), steps * 8)
    assert report["never_run"] == []


def test_never_run_and_last_n(repo):
    root, sha = repo
    report = audit_json(root, "--range", f"{sha['c0']}..{sha['c7']}")  # without c8's run-all
    assert report["never_run"] == ["idle"]
    last = audit_json(root, "--last", "3")
    assert [c["sha"] for c in last["commits"]] == [sha["c8"], sha["c7"], sha["c6"]]


def test_durations_count_machine_minutes(repo, tmp_path):
    root, sha = repo
    durations = tmp_path / "durations.csv"
    durations.write_text("step,minutes\ncore,10\nutil,5\nold,1\nlate,2\n")  # idle: none, counted as 0
    report = audit_json(root, "--range", f"{sha['c0']}..HEAD", "--durations", str(durations))
    cost = {"core": 10 * 2, "util": 5, "old": 1, "late": 2, "idle": 0}
    ran = sum(cost[key] for keys in AT_HEAD.values() for key in keys)
    assert (report["unit"], report["ran"], report["every"]) == ("machine-minutes", ran, sum(cost.values()) * 8)
    assert report["without_duration"] == ["idle"]
    assert {s["key"]: s["ran"] for s in report["steps"]}["core"] == 10 * 2 * 5


def test_compare_lists_losses_first(repo):
    root, sha = repo
    (root / ".buildkite/steps.yaml").write_text(EDITED[".buildkite/steps.yaml"])
    try:
        report = audit_json(root, "--range", f"{sha['c0']}..HEAD", "--compare", "HEAD")
        code, text = audit(root, "--range", f"{sha['c0']}..HEAD", "--compare", "HEAD", "--fail-on-loss")
        markdown = audit(root, "--range", f"{sha['c0']}..HEAD", "--compare", "HEAD", "--format", "markdown")[1]
    finally:
        git(root, "checkout", "-q", "--", ".buildkite/steps.yaml")
    assert runs_by_commit(report, sha) == IN_WORK_TREE
    names = {v: k for k, v in sha.items()}
    changes = [(c["key"], c["where"], sorted(names[s] for s in c["lost"]), sorted(names[s] for s in c["gained"]))
               for c in report["compare"]["changes"]]
    assert changes == [("old", "before", ["c3", "c6", "c8"], []), ("util", "both", ["c4"], ["c2"])]
    assert report["compare"]["losses"] == 2
    assert code == 1
    lines = text.splitlines()
    alarm = next(i for i, line in enumerate(lines) if line.startswith("!!! 2 step(s) LOSE commits"))
    assert lines[alarm + 1].startswith("LOSS: step 'old' (gone since HEAD) would not run on 3 commit(s)")
    assert lines[alarm + 2].startswith("LOSS: step 'util' would not run on 1 commit(s) it ran on: " + sha["c4"][:12])
    assert ":rotating_light: **2 step(s) lose commits against `HEAD`**" in markdown


def test_no_loss_exits_0_with_fail_on_loss(repo):
    root, sha = repo
    code, text = audit(root, "--range", f"{sha['c0']}..HEAD", "--compare", sha["c6"], "--fail-on-loss")
    assert code == 0 and "no step loses a commit against" in text


def test_a_step_new_since_ref_only_gains(repo):
    root, sha = repo
    report = audit_json(root, "--range", f"{sha['c0']}..HEAD", "--compare", sha["c5"])
    names = {v: k for k, v in sha.items()}
    assert [(c["key"], c["where"], sorted(names[s] for s in c["gained"])) for c in report["compare"]["changes"]] == [
        ("late", "after", ["c5", "c6", "c8"])]


def test_one_git_log_call_for_the_whole_range(repo, monkeypatch):
    root, sha = repo
    calls: list[list[str]] = []
    real = subprocess.run
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: calls.append(cmd) or real(cmd, **kw))
    audit_json(root, "--range", f"{sha['c0']}..HEAD", "--compare", "HEAD")
    assert [c[1] for c in calls] == ["rev-parse", "log", "rev-parse", "ls-tree", "archive"]


def test_progress_bar_on_a_terminal(repo):
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    root, sha = repo
    shown = Terminal()
    audit_command.main(audit_command.AuditOptions(str(root), last=4, progress=shown), io.StringIO())
    assert "replaying commits" in shown.getvalue() and "100%" in shown.getvalue()


@pytest.mark.parametrize(("args", "message"), [
    (["--last", "2", "--range", "HEAD~1..HEAD"], "--last and --range both given"),
    (["--range", "HEAD"], "is not a range"),
    (["--range", "nope..HEAD"], "git log"),
    (["--range", "HEAD..HEAD"], "no commits in HEAD..HEAD"),
    (["--compare", "nope"], "--compare REF"),
    (["--durations", "missing.csv"], "cannot read --durations"),
])
def test_usage_errors_exit_2(repo, args, message):
    code, out = audit(repo[0], *args)
    assert code == 2 and message in out


def test_a_bad_durations_row_names_its_line(repo, tmp_path):
    bad = tmp_path / "d.csv"
    bad.write_text("core,10\nutil,soon\n")
    code, out = audit(repo[0], "--durations", str(bad))
    assert code == 2 and f"{bad}:2" in out and "'soon' is not a number of minutes for step 'util'" in out
    (tmp_path / "d.json").write_text('{"core": -1}')
    assert "is not a number of minutes" in audit(repo[0], "--durations", str(tmp_path / "d.json"))[1]


def test_not_a_repository_exits_2(tmp_path):
    (tmp_path / ".buildkite").mkdir()
    (tmp_path / ".buildkite/pipegen.yaml").write_text("steps: [.buildkite/steps.yaml]\n")
    (tmp_path / ".buildkite/steps.yaml").write_text("steps:\n" + UTIL)
    code, out = audit(tmp_path, "--last", "3")
    assert code == 2 and "not a git repository" in out and "run pipegen audit inside a git checkout" in out


def test_subprocess_exit_code(repo):
    root, sha = repo
    (root / ".buildkite/steps.yaml").write_text(EDITED[".buildkite/steps.yaml"])
    try:
        done = subprocess.run([sys.executable, "-m", "pipegen", "audit", "--range", f"{sha['c0']}..HEAD",
                               "--compare", "HEAD", "--fail-on-loss"], cwd=root, capture_output=True, text=True)
    finally:
        git(root, "checkout", "-q", "--", ".buildkite/steps.yaml")
    assert done.returncode == 1 and "LOSS: step 'old'" in done.stdout and done.stderr == ""


def test_optional_steps_that_never_ran_are_listed_apart(tmp_path):
    """An optional step waits by design (vLLM: all 48 steps that ran on none of 200 commits): not a dead one."""
    steps = ("steps:\n" + step("a", ["src/"]) + step("dead", ["nowhere/"])
             + step("opt", ["src/"]) + "    optional: true\n")
    root = git_repo(tmp_path / "repo", {".buildkite/pipegen.yaml": "steps: [.buildkite/steps.yaml]\n",
                                        ".buildkite/steps.yaml": steps, "src/x.py": "x\n"})
    commit_files(root, {"src/x.py": "x2\n"}, "edit")
    report = audit_json(root, "--last", "1")
    assert (report["never_run"], report["never_run_optional"]) == (["dead"], ["opt"])
    _, text = audit(root, "--last", "1")
    assert "never run in these commits (1 step(s)): dead\n" in text
    assert "optional, so never run without a click or nightly (1 step(s)): opt\n" in text
    _, markdown = audit(root, "--last", "1", "--format", "markdown")
    assert "**Never run** in these commits: `dead`" in markdown and "nightly: `opt`" in markdown
