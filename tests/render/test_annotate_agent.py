"""`pipegen render --annotate` as a build step runs it: the real CLI in a subprocess, a real git repository,
and a stand-in `buildkite-agent` on PATH recording each call. Whatever the agent does, the exit code and the
pipeline printed are those of a render without --annotate."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipegen.render.annotate import MAX_BYTES, fit
from tests import agent
from tests.helpers import CLI_CONFIG, CLI_STEPS, commit_files, git, git_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = git_repo(tmp_path / "repo", {".buildkite/pipegen.yaml": CLI_CONFIG, ".buildkite/steps/tests.yaml": CLI_STEPS,
                                        "src/core/a.py": "a = 1\n"})
    git(root, "checkout", "-q", "-b", "change")
    commit_files(root, {"src/core/a.py": "a = 2\n"})
    return root


def render(repo: Path, tmp_path: Path, *args: str, agent_on_path: bool = True,
           **env: str) -> tuple[subprocess.CompletedProcess[bytes], list[dict[str, str]]]:
    """`pipegen render --base main ARGS` in `repo`; the agent calls it made."""
    clean, record = environment(tmp_path, agent_on_path, **env)
    done = subprocess.run([*RENDER, *args], cwd=repo, env=clean, capture_output=True, timeout=120)
    return done, agent.calls(record)


RENDER = [sys.executable, "-m", "pipegen", "render", "--base", "main"]


def environment(tmp_path: Path, agent_on_path: bool = True, **env: str) -> tuple[dict[str, str], Path]:
    """This environment without Buildkite's and pipegen's variables, the fake agent first on PATH; its records."""
    bin_dir, record = agent.install(tmp_path / "agent")
    path = os.environ["PATH"]
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("BUILDKITE", "PIPEGEN"))}
    clean.update(PATH=f"{bin_dir}{os.pathsep}{path}" if agent_on_path else path, RECORD=str(record),
                 PIPEGEN_CACHE_DIR="", **env)
    return clean, record


def test_posts_the_annotation_it_writes_with_style_info(repo, tmp_path):
    plain, none = render(repo, tmp_path / "plain", "--annotation", str(tmp_path / "why.md"))
    done, calls = render(repo, tmp_path, "--annotate")
    assert none == [] and done.returncode == plain.returncode == 0, done.stderr
    assert done.stdout == plain.stdout and b"steps:" in done.stdout  # the YAML, byte for byte
    [annotate] = calls
    assert annotate["args"].splitlines() == ["annotate", "--context", "pipegen", "--style", "info"]
    assert annotate["stdin"] == (tmp_path / "why.md").read_text()
    assert done.stderr == b""  # the agent's own output is not echoed when it succeeds


@pytest.mark.parametrize("given_as", [["--annotate=ci why"], ["--annotate", "ci why"]])
def test_the_context_is_given_after_the_option(repo, tmp_path, given_as):
    done, [annotate] = render(repo, tmp_path, *given_as, "--unselected", "omit")
    assert done.returncode == 0, done.stderr
    assert annotate["args"].splitlines()[:3] == ["annotate", "--context", "ci why"]


def test_an_untrusted_diff_posts_a_warning(repo, tmp_path):
    git(repo, "checkout", "-q", "--orphan", "lonely")  # no merge base with main: everything runs, with a WARNING
    commit_files(repo, {"x.txt": "x\n"}, "lonely")
    done, [annotate] = render(repo, tmp_path, "--annotate")
    assert done.returncode == 0 and b"WARNING" in done.stderr
    assert annotate["args"].splitlines()[-1] == "warning"


def test_a_failed_render_posts_an_error_and_keeps_its_exit_code(repo, tmp_path):
    (repo / ".buildkite" / "steps" / "tests.yaml").write_text("steps:\n- label: x\n  bogus_field: 1\n")
    plain, _ = render(repo, tmp_path / "plain")
    done, [annotate] = render(repo, tmp_path, "--annotate")
    assert done.returncode == plain.returncode == 2 and done.stdout == b""
    assert annotate["args"].splitlines()[-1] == "error"
    assert "Not uploaded" in annotate["stdin"] and "bogus_field" in annotate["stdin"]


def test_over_the_job_limit_posts_the_page_as_an_error(repo, tmp_path):
    many = "steps:\n" + "".join(f"- {{label: s{i}, key: s{i}, commands: [t], parallelism: 5}}\n" for i in range(101))
    (repo / ".buildkite" / "steps" / "tests.yaml").write_text(many)
    done, [annotate] = render(repo, tmp_path, "--annotate", "--all")
    assert done.returncode == 1 and done.stdout == b""
    assert annotate["args"].splitlines()[-1] == "error"
    assert "Not uploaded" in annotate["stdin"] and "| s100 (`s100`) |" in annotate["stdin"]  # the page's rows


@pytest.mark.parametrize(("agent_on_path", "env", "said"), [
    (True, {"FAKE_ANNOTATE_EXIT": "1"}, "buildkite-agent annotate failed (exit 1): fake agent: annotate says goodbye"),
    (False, {}, "buildkite-agent not found on PATH"),
    (True, {"FAKE_ANNOTATE_SLEEP": "60", "PIPEGEN_ANNOTATE_TIMEOUT": "0.5"},
     "buildkite-agent annotate did not finish within 0.5 s (stopped)"),
])
def test_an_agent_that_fails_is_a_warning_and_changes_nothing_else(repo, tmp_path, agent_on_path, env, said):
    plain, _ = render(repo, tmp_path / "plain")
    started = time.monotonic()
    done, _ = render(repo, tmp_path, "--annotate", agent_on_path=agent_on_path, **env)
    assert time.monotonic() - started < 30  # a hanging agent is stopped, not waited for
    assert (done.returncode, done.stdout) == (plain.returncode, plain.stdout) == (0, plain.stdout)
    assert done.stderr.decode().splitlines() == [f"pipegen: WARNING: {said}; no annotation posted, the pipeline is "
                                                 "unaffected"]


def test_what_a_failing_agent_says_is_shown_escaped_and_cut(repo, tmp_path):
    says = "token \x1b[2J\u202e" + "!" * 5000  # a terminal escape, a bidi override, a long line
    done, _ = render(repo, tmp_path, "--annotate", FAKE_ANNOTATE_EXIT="1", FAKE_ANNOTATE_SAYS=says)
    said = done.stderr.decode()
    assert done.returncode == 0 and "\x1b" not in said and "\u202e" not in said and len(said) < 500
    assert "annotate failed (exit 1): token \\x1b[2J\\u202e!!!" in said


def test_ctrl_c_while_annotating_stops_the_agent_and_what_it_started(repo, tmp_path):
    env, record = environment(tmp_path, FAKE_ANNOTATE_SLEEP="60")
    proc = subprocess.Popen([*RENDER, "--annotate"], cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not (record / "0.pid").exists() and time.monotonic() < deadline:  # the agent has started
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130 and b"interrupted" in stderr
    session = int((record / "0.pid").read_text())
    while _alive(session) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(session)  # the agent's shell and its sleep


def _alive(session: int) -> bool:
    """Whether a process of `session` runs (a zombie waits only to be reaped)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone while read
            continue
        if int(fields[3]) == session and fields[0] != "Z":  # state, ppid, pgrp, session
            return True
    return False


def test_a_failed_render_stays_failed_when_annotating_fails_too(repo, tmp_path):
    (repo / ".buildkite" / "steps" / "tests.yaml").write_text("steps:\n- label: x\n  bogus_field: 1\n")
    done, _ = render(repo, tmp_path, "--annotate", FAKE_ANNOTATE_EXIT="1")
    assert done.returncode == 2 and b"annotate failed" in done.stderr and b"bogus_field" in done.stderr


def test_a_huge_annotation_is_cut_under_the_limit(repo, tmp_path):
    long = "é" * 2000  # two bytes each in UTF-8: the limit counts bytes
    steps = "steps:\n" + "".join(f"- label: 'step {i} {long}'\n  key: s{i}\n  commands: [t]\n"
                                 "  source_file_dependencies: [src/core/]\n" for i in range(300))
    commit_files(repo, {".buildkite/steps/tests.yaml": steps})
    done, [annotate] = render(repo, tmp_path, "--annotate")
    assert done.returncode == 0, done.stderr
    body = annotate["stdin"]
    assert len(body.encode()) <= MAX_BYTES < 300 * 2 * len(long)
    assert body.rstrip().endswith("tells each step's reason._") and "cut at 1 MiB" in body


@given(st.text(st.characters(codec="utf-8"), max_size=300), st.integers(min_value=240, max_value=400))
def test_fit_keeps_within_the_limit_in_bytes(text, limit):
    text = text + "<details>\n" + text  # an open <details> would hide the note
    out = fit(text, limit)
    if len(text.encode()) <= limit:
        assert out == text
        return
    assert len(out.encode()) <= limit
    body = out[: out.rindex("\n\n_Annotation cut at 1 MiB")]
    assert text.startswith(body.removesuffix("\n</details>\n"))  # the head, whole characters
    assert body.count("<details>") <= body.count("</details>")  # the note shows, not folded away
    assert out.endswith(f" of {len(text.encode()):,} bytes shown; `pipegen why --step KEY` tells each step's reason._\n")
