"""What many tests share: this checkout, the vLLM fixtures, and real git repositories built in tmp_path."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Mapping

import pytest

ROOT = Path(__file__).resolve().parent.parent  # this checkout
# vLLM's configuration and tracked files, beside the checkout (../shared), not copied into it.
FIXTURE = ROOT.parent / "shared" / "fixtures" / "vllm-2026-05-29"
needs_fixture = pytest.mark.skipif(not FIXTURE.is_dir(), reason=f"vLLM fixtures not found at {FIXTURE}")

# A fixed identity: commits succeed on a machine without git config.
IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.com"}


def git(cwd: Path | str, *args: str) -> str:
    """Run git in `cwd`; its stdout (a failure raises, with git's stderr captured)."""
    return subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **IDENTITY}, check=True,
                          capture_output=True, text=True).stdout


def write_files(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def commit_files(root: Path, files: Mapping[str, str], message: str = "change") -> None:
    write_files(root, files)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def git_repo(root: Path, files: Mapping[str, str], branch: str = "main") -> Path:
    """A new repository at `root` whose first commit ("base") holds `files`."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", branch)
    commit_files(root, files, "base")
    return root
