"""The change set: the files changed between the merge base and HEAD (git through pipegen/git.py).

The base is the first candidate ref that resolves, in Buildkite's order. Renames are split into a
deletion and an addition, so a file moved out of a watched folder still
selects the folder's steps. Whenever the diff cannot be computed the
ChangeSet says so (`trusted=False`) and the decision stage selects
everything: fail safe, never fail quiet.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pipegen.errors import UsageError
from pipegen.git import Git, GitFailed, in_ci
from pipegen.model import ChangeSet

# How a candidate base ref is treated when it does not resolve.
EXPLICIT = "explicit"  # --base / $PIPEGEN_BASE: a usage error (the user named it)
REQUIRED = "required"  # the pull request's base branch: fail safe (select everything), never another base
GIVEN = "given"  # a diff base the CI names ($BUILDKITE_GIT_DIFF_BASE, vLLM's $MERGE_BASE_COMMIT): the same
FALLBACK = "fallback"  # defaults: try the next one


def base_candidates(base: str | None, base_branch: str, environ: Mapping[str, str],
                    base_env: Sequence[str] = ()) -> list[tuple[str, str]]:
    """Refs to diff against, in order, each once, with what to do when one does not resolve.
    `base_env`: variables a preset's own bootstrap sets to the merge base (vLLM: MERGE_BASE_COMMIT),
    which its generator ignores on a build of the base branch."""
    explicit = base or environ.get("PIPEGEN_BASE")
    if explicit:
        return [(explicit, EXPLICIT)]
    refs: dict[str, str] = {}
    if environ.get("BUILDKITE_BRANCH") != base_branch:
        refs.update((environ[name], GIVEN) for name in base_env if environ.get(name))
    if environ.get("BUILDKITE_GIT_DIFF_BASE"):
        refs.setdefault(environ["BUILDKITE_GIT_DIFF_BASE"], GIVEN)
    pull_request = environ.get("BUILDKITE_PULL_REQUEST", "false")
    if pull_request not in ("", "false") and environ.get("BUILDKITE_PULL_REQUEST_BASE_BRANCH"):
        refs.setdefault(f"origin/{environ['BUILDKITE_PULL_REQUEST_BASE_BRANCH']}", REQUIRED)
    if environ.get("BUILDKITE_PIPELINE_DEFAULT_BRANCH"):
        refs.setdefault(f"origin/{environ['BUILDKITE_PIPELINE_DEFAULT_BRANCH']}", FALLBACK)
    refs.setdefault(f"origin/{base_branch}", FALLBACK)
    refs.setdefault(base_branch, FALLBACK)
    return list(refs.items())


def _choose_base(git: Git, candidates: list[tuple[str, str]], fetch_base: bool) -> tuple[str, str] | ChangeSet:
    """(ref, commit) of the first candidate that resolves; an untrusted ChangeSet when none may be used."""
    for ref, kind in candidates:
        commit = git.resolves(ref) or (_fetch_branch(git, ref) if fetch_base and kind != FALLBACK else None)
        if commit:
            return ref, commit
        if kind == EXPLICIT:
            raise UsageError(f"base ref '{ref}' does not resolve (from --base or $PIPEGEN_BASE)",
                             fix="name a branch, tag or commit that exists here (fetch it first, or add --fetch-base)")
        if kind == REQUIRED:
            branch = ref.split("/", 1)[1]
            return ChangeSet((), base=ref, trusted=False,
                             reason=f"the pull request's base branch '{branch}' is not fetched ({ref} does not "
                                    "resolve); try --fetch-base, or fetch the branch before pipegen runs")
        if kind == GIVEN:
            return ChangeSet((), base=ref, trusted=False,
                             reason=f"the diff base '{ref}' that the CI environment names does not resolve (not "
                                    "fetched?); fetch it or deepen the clone before pipegen runs")
    tried = ", ".join(ref for ref, _ in candidates)
    return ChangeSet((), trusted=False, reason=f"no base ref resolves (tried {tried})")


def _fetch_branch(git: Git, ref: str) -> str | None:
    """Fetch origin/BRANCH into its remote-tracking ref; its commit, or None."""
    remote, _, branch = ref.partition("/")
    if remote != "origin" or not branch:
        return None
    try:
        git("fetch", "--quiet", "origin", f"+refs/heads/{branch}:refs/remotes/origin/{branch}")
    except GitFailed:
        return None
    return git.resolves(ref)


def changed_files(
    root: str,
    *,
    base: str | None,
    base_branch: str,
    environ: Mapping[str, str],
    committed_only: bool = False,
    fetch_base: bool = False,
    base_env: Sequence[str] = (),
) -> ChangeSet:
    """Files changed between the merge base and HEAD (plus uncommitted work outside CI)."""
    git = Git(root, environ)
    chosen = _choose_base(git, base_candidates(base, base_branch, environ, base_env), fetch_base)
    if isinstance(chosen, ChangeSet):
        return chosen
    ref, commit = chosen
    head = git.resolves("HEAD")
    if head is None:
        return ChangeSet((), base=ref, trusted=False, reason=git.unreadable_head() or "HEAD has no commit yet")
    uncommitted = not committed_only and not in_ci(environ)
    merge_base = head if head == commit else _merge_base(git, commit, fetch_base)
    where = f"HEAD is {'on' if head == commit else 'behind'} {ref}"
    if merge_base == head and uncommitted:
        # Working on the base branch itself (or behind it): the change is the uncommitted work.
        how = where
    elif merge_base == head:
        # A push to the base branch (or a build of it after it moved on): what HEAD's first-parent commit brought.
        merge_base = _parent(git, fetch_base)
        if merge_base is None and _is_shallow(git):
            return ChangeSet((), base=ref, trusted=False,
                             reason=f"shallow clone without the parent of HEAD ({where}); "
                                    "try --fetch-base or a deeper clone")
        merge_base = merge_base or _EMPTY_TREE  # the first commit: everything in it is new
        how = f"{where}: diff against its first parent"
    elif merge_base is None:
        shallow = _is_shallow(git)
        why = "shallow clone without the merge base" if shallow else "no common history (unrelated histories)"
        return ChangeSet((), base=ref, trusted=False,
                         reason=f"{why} of HEAD and {ref}; try --fetch-base or a deeper clone")
    else:
        how = f"merge base of HEAD and {ref}"
    try:
        files = git.paths("diff", "-z", "--name-only", "--no-renames", merge_base,
                          *([] if uncommitted else ["HEAD"]), "--")
        if uncommitted:
            files += git.paths("ls-files", "-z", "--others", "--exclude-standard")
            how += ", with uncommitted work"
    except GitFailed as exc:
        return ChangeSet((), base=ref, merge_base=merge_base, trusted=False, reason=exc.message)
    return ChangeSet(tuple(_unique(files)), base=ref, merge_base=merge_base, trusted=True, reason=how)


def _parent(git: Git, fetch_base: bool) -> str | None:
    """HEAD's first parent; with --fetch-base a depth-1 clone is first deepened by one commit."""
    parent = git.resolves("HEAD^1")
    if parent is None and fetch_base and _is_shallow(git):
        try:
            git("fetch", "--quiet", "--deepen=1", "origin")
        except GitFailed:
            return None
        parent = git.resolves("HEAD^1")
    return parent


_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def _merge_base(git: Git, commit: str, fetch_base: bool) -> str | None:
    for attempt in range(6 if fetch_base else 1):
        if attempt:
            try:
                git("fetch", "--quiet", f"--deepen={50 * 2 ** attempt}", "origin")
            except GitFailed:
                return None
        try:
            return git("merge-base", commit, "HEAD").strip() or None
        except GitFailed:
            continue
    return None


def _is_shallow(git: Git) -> bool:
    return git("rev-parse", "--is-shallow-repository").strip() == "true"


def _unique(paths: list[str]) -> list[str]:
    return list(dict.fromkeys(paths))
