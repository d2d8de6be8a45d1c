"""Replay commits through declarations: what each commit ran, and what a declaration change
would gain or lose. Pure: the decisions are `decide()`'s for (declarations, changed files),
the same as `select` makes for a pull request with that diff (no forcing options): a change
of pipegen's own inputs (the config, the inventory) runs what it shapes, and every step a
running step depends on runs too.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import field

from pipegen.audit.history import Commit
from pipegen.frozen import frozen
from pipegen.model import ChangeSet, Declarations, Options, Settings
from pipegen.selection.decide import decide
from pipegen.selection.waited_for import NEEDED, needed_how


@frozen
class Outcome:
    """One commit's decisions."""

    commit: Commit
    run: frozenset[str]  # keys of the steps that run
    waiting: frozenset[str]  # blocked: in the pipeline, one click away
    skipped: frozenset[str]
    run_all: str = ""  # why everything runs ("" = not): the file and the pattern
    docs_only: str = ""  # why everything is skipped ("" = not)
    needed: frozenset[str] = frozenset()  # of `run`: only because a step that runs waits for them
    needed_how: str = ""  # how: depends_on, a declared wait or block it follows


@frozen
class Audit:
    """A replay of commits through one set of declarations."""

    steps: tuple[str, ...]  # every step key, in declaration order
    outcomes: tuple[Outcome, ...]
    weights: Mapping[str, int] = field(default_factory=dict)  # machines per job: its GPUs (1 without)
    minutes: Mapping[str, float] | None = None  # minutes per job (--durations); None: count jobs
    jobs: Mapping[str, int] = field(default_factory=dict)  # jobs per run: parallelism x matrix (1 without)
    optional: frozenset[str] = frozenset()  # optional steps: blocked by design, nightly or one click

    def runs(self) -> dict[str, int]:
        """Commits each step ran on."""
        counts = dict.fromkeys(self.steps, 0)
        for outcome in self.outcomes:
            for key in outcome.run:
                counts[key] += 1
        return counts

    def never_run(self, optional: bool = False) -> list[str]:
        """Steps that ran on no commit: the optional ones (`optional=True`) wait by design, the others may be dead."""
        return [key for key, n in self.runs().items() if n == 0 and (key in self.optional) == optional]

    def cost(self, key: str) -> float:
        """What one run of the step costs: machine-minutes with durations, else its jobs."""
        jobs = self.jobs.get(key, 1)
        if self.minutes is None:
            return jobs
        return self.minutes.get(key, 0.0) * self.weights.get(key, 1) * jobs

    def totals(self) -> tuple[float, float]:
        """(what the selection ran, what running every step on every commit would), in cost units."""
        ran = sum(self.cost(key) * n for key, n in self.runs().items())
        every = sum(self.cost(key) for key in self.steps) * len(self.outcomes)
        return ran, every

    def without_duration(self) -> list[str]:
        return [] if self.minutes is None else [key for key in self.steps if key not in self.minutes]


def replay(decl: Declarations, commits: Iterable[Commit]) -> Iterator[Outcome]:
    """Each commit's outcome, one at a time (the edge shows progress)."""
    options = Options()
    for commit in commits:
        selection = decide(decl, ChangeSet(commit.files), options)
        keys = {action: frozenset(d.step.key for d in selection.decisions if d.action == action)
                for action in ("run", "block", "skip")}
        needed = frozenset(d.step.key for d in selection.decisions if d.reasons[0].rule == NEEDED)
        yield Outcome(commit, keys["run"], keys["block"], keys["skip"], selection.run_all_reason,
                      selection.skip_reason, needed, needed_how(selection.decisions))


def branch_notes(settings: Settings) -> tuple[str, ...]:
    """What the config's branch lists do to builds that the replay does not count: it replays each commit as
    the pull request it was, while a build of such a branch runs everything (or as a nightly build)."""
    out = []
    for patterns, name, what in ((settings.run_all_branches, "run_all_branches", "run everything"),
                                 (settings.nightly_branches, "nightly_branches", "are nightly builds")):
        if patterns:
            out.append(f"builds of branch {' '.join(patterns)} {what} ({name}); each commit here is replayed as "
                       "its pull request, as select decides one")
    return tuple(out)


@frozen
class Change:
    """How one step's runs differ between two replays of the same commits."""

    key: str
    gained: tuple[Commit, ...]  # runs now, did not before
    lost: tuple[Commit, ...]  # ran before, would not now
    where: str = "both"  # "before" or "after" when the step exists on one side only


def compare(before: Audit, after: Audit) -> list[Change]:
    """Steps whose runs differ, those that lose commits first (most lost first), then the gains."""
    keys = list(dict.fromkeys([*before.steps, *after.steps]))
    old, new = set(before.steps), set(after.steps)
    pairs = list(zip(before.outcomes, after.outcomes, strict=True))  # the same commits
    changes = []
    for key in keys:
        lost = tuple(b.commit for b, a in pairs if key in b.run and key not in a.run)
        gained = tuple(a.commit for b, a in pairs if key in a.run and key not in b.run)
        if lost or gained or (key in old) != (key in new):
            where = "both" if key in old and key in new else "before" if key in old else "after"
            changes.append(Change(key, gained, lost, where))
    return sorted(changes, key=lambda c: (not c.lost, -len(c.lost), -len(c.gained)))
