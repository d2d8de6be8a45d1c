"""Run a page's blocks top to bottom in a sandbox: a fresh empty folder, a temporary HOME with a git identity,
the installed `pipegen` and a stand-in `buildkite-agent` on PATH (DOCS.md, "Examples that cannot lie").

A page that starts with `<!-- page: checkout -->` runs instead in a fresh copy of the repository under test:
the work-tree versions of the files `git ls-files` lists, committed once in a new repository (a clean history).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import yaml

from tests.docs.blocks import Block, PageError
from tests.docs.console import commands, mismatch
from tests.docs.declarations import problems

# What a page may leave unrun: only what cannot run in a test. A new reason is a decision, made here.
NOT_RUN_REASONS = (
    "installs from a package index",
    "needs a real Buildkite agent",
    "needs a GPU",
)
YAML = ("yaml", "yml")
SHELL = ("bash", "sh", "shell")
COMMAND_LINES = ("$ ", "pipegen ")  # in a block that is not run: a command shown, never tried
TIMEOUT = 60  # seconds for one command or script

AGENT = """#!/bin/sh
# A stand-in for buildkite-agent: records each call's arguments and standard input (the uploaded file), exits 0.
n=$(ls "$FAKE_AGENT_RECORD" | grep -c 'args$')
printf '%s\\n' "$@" > "$FAKE_AGENT_RECORD/$n.args"
if [ "$1" = pipeline ] && [ "$2" = upload ] && [ -n "${3:-}" ]; then cp "$3" "$FAKE_AGENT_RECORD/$n.stdin"
else cat > "$FAKE_AGENT_RECORD/$n.stdin"; fi
"""
GITCONFIG = "[user]\n\tname = Docs Reader\n\temail = reader@example.com\n[init]\n\tdefaultBranch = main\n"


@dataclass(frozen=True)
class Sandbox:
    folder: Path  # the page's folder: empty at first, every command's working directory
    record: Path  # the stand-in agent's calls: N.args, N.stdin
    env: dict[str, str]


def sandbox(tmp: Path, checkout: Path | None = None) -> Sandbox:
    """The page's sandbox; with `checkout` (a repository's root), its folder is a fresh copy of that repository."""
    home, folder, bin_dir, record = tmp / "home", tmp / "page", tmp / "bin", tmp / "agent-calls"
    for path in (home, folder, bin_dir, record):
        path.mkdir(parents=True)
    (home / ".gitconfig").write_text(GITCONFIG)
    (bin_dir / "buildkite-agent").write_text(AGENT)
    (bin_dir / "buildkite-agent").chmod(0o755)
    installed = Path(sys.executable).parent  # the venv's bin: its `pipegen` entry point, as a user's shell has
    if not (installed / "pipegen").exists():
        raise RuntimeError(f"no installed pipegen in {installed}: pip install -e . first")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k != "XDG_CONFIG_HOME"}
    env.update(HOME=str(home), PATH=os.pathsep.join([str(bin_dir), str(installed), env.get("PATH", "")]),
               GIT_CONFIG_NOSYSTEM="1", PYTHONUNBUFFERED="1", COLUMNS="80", LC_ALL="C.UTF-8",
               FAKE_AGENT_RECORD=str(record))
    if checkout is not None:
        _copy_checkout(checkout, folder, env)
    return Sandbox(folder, record, env)


def _copy_checkout(root: Path, folder: Path, env: dict[str, str]) -> None:
    """The tracked files as they are in root's work tree (those deleted there skipped), in one commit."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, check=True, capture_output=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        source, target = root / name, folder / name
        if source.is_file() or source.is_symlink():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target, follow_symlinks=False)
    for git in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "checkout"]):
        subprocess.run(["git", *git], cwd=folder, env=env, check=True, capture_output=True)


def run_page(blocks: list[Block], box: Sandbox) -> str | None:
    """Run every block in order; the first failure as a message naming the page, line and command."""
    try:
        for block in blocks:
            failed = run_block(block, box)
            if failed:
                return failed
    except PageError as error:
        return str(error)
    return problems(blocks, box.folder)


def run_block(block: Block, box: Sandbox) -> str | None:
    if block.not_run is not None:
        if block.not_run not in NOT_RUN_REASONS:
            return (f"{block.where}: not-run reason '{block.not_run}' is not allowed (tests/docs/runner.py "
                    f"NOT_RUN_REASONS: {'; '.join(NOT_RUN_REASONS)})")
        return None
    if block.lang in YAML and (failed := _loads(block)):
        return failed
    if block.file is not None:
        _write(block, box.folder)
        return None
    if block.lang == "console":
        return _console(block, box)
    if block.lang in SHELL:
        return _script(block, box)
    if any(line.startswith(COMMAND_LINES) for line in block.text.splitlines()):
        return f"{block.where}: a command a user types: make it a console or bash block (then it runs)"
    return None


def _loads(block: Block) -> str | None:
    try:
        yaml.safe_load(block.text)
    except yaml.YAMLError as error:
        return f"{block.where}: the YAML does not load: {error}"
    return None


def _write(block: Block, folder: Path) -> None:
    path = PurePosixPath(block.file or "")
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise PageError(f"{block.where}: file marker '{block.file}' must be a path inside the page's folder")
    target = folder.joinpath(*path.parts)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(block.text)


def _console(block: Block, box: Sandbox) -> str | None:
    for command in commands(block):
        code, output = _run(["bash", "-c", command.command], box)
        found = mismatch(command, output, code)
        if found:
            return f"{block.page}:{command.line}: $ {command.command}\n{found}"
    return None


def _script(block: Block, box: Sandbox) -> str | None:
    code, output = _run(["bash", "-euo", "pipefail", "-c", block.text], box)
    if code:
        return f"{block.where}: the {block.lang} block exited {code}:\n{block.text}output:\n{output}"
    return None


def _run(argv: list[str], box: Sandbox) -> tuple[int, str]:
    """Exit code and stdout and stderr together, as a terminal shows them."""
    try:
        done = subprocess.run(argv, cwd=box.folder, env=box.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, errors="replace", timeout=TIMEOUT)
    except subprocess.TimeoutExpired as timeout:
        output = timeout.output.decode(errors="replace") if isinstance(timeout.output, bytes) else ""
        return -1, f"{output}\n(killed after {TIMEOUT} s)"
    return done.returncode, done.stdout
