"""`pipegen audit`: replay first-parent history through the declarations (the I/O edge).

One `git log` call gives every commit's changed files; `--compare REF` loads the
declarations as they are at REF from a `git archive` of their folders (the work tree is
not touched) and replays the same commits through both.
"""

from __future__ import annotations

import io
import posixpath
import tarfile
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, TextIO

from pipegen.audit.history import LOG_FORMAT, Commit, parse_log
from pipegen.audit.replay import Audit, Outcome, branch_notes, compare, replay
from pipegen.audit.replay_formats import AuditReport, format_audit
from pipegen.commands.options import AuditOptions
from pipegen.commands.terminal import painted
from pipegen.errors import EXIT_FINDINGS, DeclarationError, UsageError
from pipegen.git import Git
from pipegen.model import Declarations

if TYPE_CHECKING:
    from click._termui_impl import ProgressBar


def main(args: AuditOptions, out: TextIO) -> int:
    """Write the report in `fmt`; the exit code: 0, or 1 when --fail-on-loss and a step loses a commit."""
    from pipegen.dialects.load import load
    from pipegen.graph.expand import expand, expanded_like

    decl = expand(load(args.root, args.config, args.environ), args.environ)  # derived from the tree as it is
    git = Git(args.root, args.environ, instead="", command="pipegen audit")
    commits, described = _history(git, args.last, args.rev_range)
    minutes = _durations(args.durations) if args.durations else None
    bar = _progress_bar(args.progress if args.terminal.verbosity >= 0 else None,  # -q: no bar
                        len(commits) * (2 if args.compare_ref else 1))
    audit = _audit(decl, commits, minutes, bar)
    notes = branch_notes(decl.settings)
    report = AuditReport(audit, described, notes=notes)
    if args.compare_ref:
        at_ref = expanded_like(_declarations_at(git, args.compare_ref, decl, args.environ), decl)
        before = _audit(at_ref, commits, minutes, bar)
        report = AuditReport(audit, described, before, args.compare_ref, tuple(compare(before, audit)), notes)
    if bar is not None:
        bar.render_finish()
    text = format_audit(report, args.fmt)
    out.write(painted(args.terminal, text, LOSSES) if args.fmt == "text" else text)
    return EXIT_FINDINGS if args.fail_on_loss and report.losses else 0


def _history(git: Git, last: int | None, rev_range: str | None) -> tuple[list[Commit], str]:
    if last is not None and rev_range:
        raise UsageError("--last and --range both given", fix="pass one of them")
    if rev_range and ".." not in rev_range:
        raise UsageError(f"--range '{rev_range}' is not a range", fix="write it as A..B (the commits after A up to B)")
    spec = [rev_range] if rev_range else ["-n", str(last or DEFAULT_LAST), "HEAD"]
    output = git("log", "--first-parent", "--diff-merges=first-parent", "--no-renames", "--name-status", "-z",
                 LOG_FORMAT, *spec, "--", fix="pass commits that exist: --last N or --range A..B")
    commits = parse_log(output)
    described = rev_range or f"--last {last or DEFAULT_LAST}"
    if not commits:
        raise UsageError(f"no commits in {described}", fix="name a range with commits: --range A..B, A before B")
    return commits, described


DEFAULT_LAST = 100
LOSSES = ((r"^(LOSS: |!!! )", "red"),)  # in colour on a terminal (replay_formats' text)


def _durations(path: str) -> dict[str, float]:
    from pipegen.audit.durations import parse_durations
    from pipegen.bounded_read import read_bytes

    try:  # a regular file of bounded size: not /dev/zero, not a FIFO nobody writes
        text = read_bytes(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read --durations {path}: {getattr(exc, 'strerror', None) or exc}",
                         fix="pass a CSV (key,minutes) or JSON ({key: minutes}) file") from None
    return parse_durations(text, path)


def _audit(decl: Declarations, commits: Sequence[Commit], minutes: Mapping[str, float] | None,
           bar: ProgressBar[int] | None) -> Audit:
    outcomes = tuple(_advancing(replay(decl, commits), bar))
    from pipegen.buildkite.limits import command_jobs

    return Audit(tuple(s.key for s in decl.steps), outcomes, _weights(decl) if minutes is not None else {}, minutes,
                 jobs={s.key: command_jobs(s.parallelism, s.field("matrix")) for s in decl.steps},  # Buildkite's count
                 optional=frozenset(s.key for s in decl.steps if s.optional))


def _weights(decl: Declarations) -> dict[str, int]:
    """Machines per job: the GPUs of its hardware target times its nodes (1 for a CPU job)."""
    from pipegen.hardware.inventory import load_inventory
    from pipegen.hardware.placement import place

    inventory = load_inventory(decl)
    out = {}
    for step in decl.steps:
        try:
            job = place(step, inventory)
        except DeclarationError:
            out[step.key] = 1  # `check` reports it (no-queue); one machine here
            continue
        out[step.key] = max(job.gpus, 1) * job.nodes
    return out


def _declarations_at(git: Git, ref: str, decl: Declarations, environ: Mapping[str, str]) -> Declarations:
    """The declarations as they are at `ref`: the folders of the working tree's declaration files, from
    `git archive` into a temporary folder."""
    from pipegen.dialects.load import load

    git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", fix=f"pass --compare REF: a commit ('{ref}' is not)")
    folders = sorted({posixpath.dirname(f) or f for f in decl.files})
    folders = [f for f in folders if not any(f.startswith(o + "/") for o in folders)]
    present = git.paths("ls-tree", "-z", "--name-only", ref, "--", *folders, fix="pass --compare REF: a commit")
    with tempfile.TemporaryDirectory(prefix="pipegen-audit-") as tmp:
        if present:
            tar = git.raw("archive", "--format=tar", ref, "--", *present, fix="pass --compare REF: a commit")
            with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
                archive.extractall(tmp, filter="data")
        try:
            return load(tmp, decl.files[0], environ)
        except DeclarationError as exc:
            raise UsageError(f"the declarations at {ref} cannot be loaded: {exc}",
                             fix=f"compare with a commit whose {decl.files[0]} loads") from None


def _progress_bar(stream: TextIO | None, total: int) -> ProgressBar[int] | None:
    """A progress bar on a terminal (stderr), none otherwise."""
    if stream is None or not stream.isatty():
        return None
    import click

    bar: ProgressBar[int] = click.progressbar(length=total, label="replaying commits", file=stream)
    bar.render_progress()
    return bar


def _advancing(outcomes: Iterable[Outcome], bar: ProgressBar[int] | None) -> Iterator[Outcome]:
    for outcome in outcomes:
        if bar is not None:
            bar.update(1)
        yield outcome
