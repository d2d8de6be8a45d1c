"""git, run as pre-commit runs it: the one place pipegen calls git and maps its failures to pipegen's errors.

Through subprocess, with NUL-separated output (odd file names survive) and an environment
cleaned of GIT_* variables that would point git at another work tree or index (git sets
GIT_INDEX_FILE inside hooks). Not through GitPython: its `execute(env=...)` only adds
variables and cannot remove one, and importing it cost ~30 ms of every `render` only to find
the work tree, which `git rev-parse` does.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Mapping
from typing import NamedTuple

from pipegen.errors import UsageError

# GIT_* variables that do not redirect git to another repository or index.
_KEEP = {"GIT_EXEC_PATH", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_SSL_CAINFO", "GIT_SSL_NO_VERIFY", "GIT_CONFIG_NOSYSTEM",
         "GIT_ASKPASS", "GIT_TERMINAL_PROMPT", "GIT_HTTP_PROXY_AUTHMETHOD"}


def clean_env(environ: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in environ.items() if not k.startswith("GIT_") or k in _KEEP}
    env["LC_ALL"] = "C"
    return env


TRUE_VALUES = ("true", "1", "yes")


def in_ci(environ: Mapping[str, str]) -> bool:
    """Only a true value counts: `CI=false` or `CI=0` on a laptop must not hide uncommitted work."""
    return any(environ.get(name, "").strip().lower() in TRUE_VALUES for name in ("CI", "BUILDKITE"))


class GitFailed(UsageError):
    """A git command exited non-zero: `git SUBCOMMAND: git's last line of stderr` (where git says what went
    wrong), with the fix the caller names; `command` and `stderr` keep all of it."""

    def __init__(self, args: tuple[str, ...], stderr: str, fix: str = ""):
        last = stderr.splitlines()[-1] if stderr else "failed"
        super().__init__(f"git {args[0]}: {last}", fix=fix)
        self.command, self.stderr = " ".join(args), stderr


class Git:
    """git at the top level of the repository holding `root`; each call returns stdout, or raises GitFailed.

    `command`: the pipegen command, for the fix when `root` is no git checkout; `instead`: what the user
    can pass in place of git ("" when nothing can: audit replays git's history)."""

    def __init__(self, root: str, environ: Mapping[str, str], *, instead: str = "--files-from FILE",
                 command: str = "pipegen"):
        self._env = clean_env(environ)
        otherwise = f", or pass {instead}" if instead else ""
        try:
            self.top = self._run(root, ("rev-parse", "--show-toplevel")).decode("utf-8", "surrogateescape").rstrip("\n")
        except (GitFailed, OSError) as exc:
            if isinstance(exc, FileNotFoundError) and exc.filename == "git":  # a slim CI image, not a wrong folder
                raise UsageError("git is not installed (no 'git' on PATH)",
                                 fix=f"install git in the image that runs pipegen{otherwise}") from None
            if isinstance(exc, GitFailed) and "dubious ownership" in exc.stderr:
                raise _not_safe(exc.stderr, root) from None
            raise UsageError(f"not a git repository: {os.path.abspath(root)}",
                             fix=f"run {command} inside a git checkout{otherwise}") from None

    def _run(self, cwd: str, args: tuple[str, ...], fix: str = "") -> bytes:
        proc = subprocess.run(["git", *args], cwd=cwd, env=self._env, capture_output=True)
        if proc.returncode != 0:
            stderr = proc.stderr.decode("utf-8", "replace").strip()
            raise GitFailed(args, stderr or f"exit status {proc.returncode}", fix)
        return proc.stdout

    def raw(self, *args: str, fix: str = "") -> bytes:
        """git's stdout as bytes; `fix`: what the user can do when this command fails."""
        return self._run(self.top, args, fix)

    def __call__(self, *args: str, fix: str = "") -> str:
        return self.raw(*args, fix=fix).decode("utf-8", "surrogateescape")

    def resolves(self, ref: str) -> str | None:
        try:
            return self("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip() or None
        except GitFailed:
            return None

    def unreadable_head(self) -> str:
        """Why HEAD resolves to no commit when it names one git cannot read (a corrupt or missing object);
        "" when HEAD has no commit yet (a new repository)."""
        try:
            named = self("rev-parse", "--verify", "--quiet", "HEAD").strip()
        except GitFailed:
            return ""
        return (f"HEAD names commit {named[:12]}, which git cannot read (a corrupt or missing object: "
                "'git fsck' says more)") if named else ""

    def paths(self, *args: str, fix: str = "") -> list[str]:
        """The NUL-separated paths git prints (`-z`)."""
        return [p for p in self(*args, fix=fix).split("\0") if p]


def known_paths(root: str, base_branch: str, environ: Mapping[str, str]) -> set[str]:
    """Every path of the index, of HEAD and of the base branch (origin/BRANCH, BRANCH): a listed path
    among them names a file (a deletion too); empty outside a git repository."""
    try:
        git = Git(root, environ)
    except UsageError:
        return set()
    out = set(git.paths("ls-files", "-z"))
    for ref in ("HEAD", f"origin/{base_branch}", base_branch):
        if git.resolves(ref):
            out.update(git.paths("ls-tree", "-r", "-z", "--name-only", "--full-tree", ref))
    return out


def _not_safe(stderr: str, root: str) -> UsageError:
    """git refuses a checkout another user owns (a container's mounted volume, a CI agent's cache):
    said as git says it, with git's own fix, not as "not a git repository"."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    command = next((line for line in lines if line.startswith("git config")),
                   f"git config --global --add safe.directory {os.path.abspath(root)}")
    why = next((line for line in lines if "dubious ownership" in line), lines[0]).removeprefix("fatal: ")
    owned = " ".join(line for line in lines if "owned by" in line)
    return UsageError(f"git refuses this checkout: {why}" + (f" ({owned})" if owned else ""),
                      fix=f"if you trust it, run: {command}")


class Index(NamedTuple):
    """git's index of a work tree, as `check` reads it once for its import scans and its kept report."""

    top: str  # the work tree's top level
    listing: bytes  # `git ls-files -s -z`: "<mode> <sha> <stage>\t<path>" per tracked file
    dirty: tuple[str, ...]  # `git diff-files`: edited, deleted or unmerged, so their SHA names no content

    def blobs(self) -> dict[str, str]:
        """Every tracked file's blob SHA."""
        blobs: dict[str, str] = {}
        for entry in self.listing.decode("utf-8", "surrogateescape").split("\0"):
            meta, _, path = entry.partition("\t")
            if path:
                blobs[path] = meta.split(" ")[1]
        return blobs


def read_index(root: str, environ: Mapping[str, str]) -> Index:
    git = Git(root, environ, instead="--tracked-files FILE")
    return Index(git.top, git.raw("ls-files", "-s", "-z"), tuple(git.paths("diff-files", "--name-only", "-z")))


class IndexReading:
    """read_index on a thread, for `check` to take when it needs it: git's lstat of every tracked file
    (diff-files: 20-30 ms on vLLM's tree) runs on another core while check loads its declarations."""

    def __init__(self, root: str, environ: Mapping[str, str]):
        self._read: Index | Exception | None = None
        self._thread = threading.Thread(target=self._run, args=(root, environ), name="pipegen git index")
        self._thread.start()

    def _run(self, root: str, environ: Mapping[str, str]) -> None:
        try:
            self._read = read_index(root, environ)
        except Exception as exc:  # raised where the index is taken
            self._read = exc

    def index(self) -> Index:
        """The index; what read_index raised (not a git repository: a UsageError) is raised here."""
        self._thread.join()
        if isinstance(self._read, Exception):
            raise self._read
        assert self._read is not None
        return self._read


def index_blobs(root: str, environ: Mapping[str, str]) -> tuple[dict[str, str], set[str]]:
    """Every tracked file's blob SHA (`git ls-files -s`), and the files whose work-tree copy
    is not that blob (`git diff-files`: edited, deleted or unmerged), so their SHA names no content."""
    index = read_index(root, environ)
    return index.blobs(), set(index.dirty)
