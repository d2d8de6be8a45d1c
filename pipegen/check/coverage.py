"""Do a step's tests exist, does a change to them select the step, and are their imports covered? Pure.

The test paths come from the step's commands (command_paths.py). A
test whose change does not select its own step, or a repository file the
test imports that no entry covers, is a silent skip waiting to happen:
the change breaks the test and CI never runs it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pipegen.check.command_paths import CommandPath
from pipegen.check.command_walk import Reader, extract
from pipegen.check.entries import declared, either, nearest
from pipegen.check.file_index import FileIndex
from pipegen.check.findings import Finding
from pipegen.check.uncovered import group_by_folder, not_covered
from pipegen.graph.bitmask import bits
from pipegen.graph.import_graph import ImportGraph
from pipegen.model import Declarations, Step
from pipegen.selection.decide import always_run_pattern
from pipegen.selection.matching import explain


@dataclass
class StepTests:
    """One step's test files, resolved against the tracked files."""

    step: Step
    files: dict[str, CommandPath] = field(default_factory=dict)  # test file -> the ref that names it
    findings: list[Finding] = field(default_factory=list)


def is_test_file(path: str) -> bool:
    name = posixpath.basename(path)
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def resolve_tests(decl: Declarations, step: Step, index: FileIndex, read: Reader | None = None) -> StepTests:
    """The step's test refs, test-missing, workdir-unmapped and tests-unread findings, and the test files
    named (`read`: a tracked file's text, to follow the scripts the step runs)."""
    walked = extract(step.commands, step.working_dir, decl.settings.docker_workdir, index, read)
    refs, unplaced = walked.refs, walked.unplaced
    found = StepTests(step)
    if walked.unread:
        found.findings.append(Finding(
            "tests-unread", "warning", step.location,
            f"step '{declared(step)}' runs what check cannot read statically, so its tests there are not known: "
            + "; ".join(f"'{text}'" for text in dict.fromkeys(walked.unread)),
            "name the test files, or a folder, in the command (or a script's literal arguments)", declared(step)))
    if unplaced:
        found.findings.append(Finding(
            "workdir-unmapped", "warning", step.location,
            f"step '{declared(step)}' runs in '{step.working_dir}', which maps to no repository folder: "
            f"cannot check {', '.join(dict.fromkeys(unplaced))}",
            "map the docker path to the repository with 'docker_workdir' (pipegen.yaml)", declared(step)))
    for ref in refs:
        if ref.path in index.bit:
            found.files.setdefault(ref.path, ref)
        elif index.is_dir(ref.path):
            ignored = 0
            for path in ref.ignored:
                ignored |= index.matches(path)
            for path in index.files(index.prefix(ref.path + "/") & ~ignored):
                if is_test_file(path):
                    found.files.setdefault(path, ref)
        elif ref.surely_path:
            near = nearest(ref.path, index)
            found.findings.append(Finding(
                "test-missing", "error", step.location,
                f"step '{declared(step)}' runs '{ref.written}' (command {ref.command + 1}), but {ref.path} is not in "
                "the repository", f"did you mean {either(near)}?" if near else
                "fix the path, or remove the command", declared(step)))
    return found


def always_runs(step: Step, decl: Declarations) -> bool:
    """Steps whose key always runs (vLLM's image builds): their dependencies do not decide."""
    return always_run_pattern(step, decl.settings) is not None


def checks_selection(step: Step, decl: Declarations) -> bool:
    """Whether changes decide this step at all: optional and always-run steps do not wait for them."""
    return not step.optional and not always_runs(step, decl)


def selection_findings(tests: StepTests, decl: Declarations, cover: int, index: FileIndex) -> list[Finding]:
    """test-not-selecting per test file (one per named folder), or no-dependencies for the step."""
    step = tests.step
    if not checks_selection(step, decl):
        return []
    if not step.declares_dependencies:
        return _no_dependencies(tests, decl)
    by_ref: dict[CommandPath, list[str]] = {}
    for path, ref in tests.files.items():
        if not cover >> index.bit[path] & 1:
            by_ref.setdefault(ref, []).append(path)
    return [_not_selecting(step, ref, paths) for ref, paths in by_ref.items()]


def _no_dependencies(tests: StepTests, decl: Declarations) -> list[Finding]:
    """A step no change selects, whatever runs it (pytest, go test, cargo test, ctest, npm test, Julia's
    Pkg.test, a plugin): it waits to be unblocked on every build."""
    step = tests.step
    plugins = step.field("plugins")
    if decl.settings.no_dependencies != "block" or not (step.commands or plugins):
        return []
    runs = (f"{len(tests.files)} test file(s)" if tests.files else
            f"'{_shown(step.commands[0])}'" if step.commands else "its plugins")
    return [Finding("no-dependencies", "warning", step.location,
                    f"step '{declared(step)}' runs {runs} but has no source_file_dependencies: no change selects "
                    "it, it waits to be unblocked", "add the folders it tests to source_file_dependencies, or mark "
                    "it 'optional: true' if it is manual", declared(step))]


def _shown(command: str, width: int = 60) -> str:
    line = " ".join(command.split())
    return line if len(line) <= width else line[: width - 3] + "..."


def _not_selecting(step: Step, ref: CommandPath, paths: list[str]) -> Finding:
    first = paths[0]
    _hit, dropped = explain(step.dependencies, first, step.dependency_kind)
    if dropped:
        fix = f"the exclusion '!{dropped}' drops it: narrow or remove the exclusion"
    else:
        fix = f"add '{ref.path}{'/' if ref.path != first else ''}' to its source_file_dependencies"
    what = first if len(paths) == 1 else f"{first} (and {len(paths) - 1} more test file(s) in {ref.path}/)"
    return Finding("test-not-selecting", "error", step.location,
                   f"a change to {what} would not run step '{declared(step)}', which runs it "
                   f"(command {ref.command + 1})",
                   fix, declared(step))


def import_findings(steps: Sequence[StepTests], decl: Declarations, covers: Mapping[str, int], run_all: int,
                    index: FileIndex, graph: ImportGraph) -> list[Finding]:
    """import-not-covered: repository files a step's tests import that no entry of the step covers."""
    checked = [t for t in steps if t.files and checks_selection(t.step, decl) and t.step.declares_dependencies]
    # pytest loads the conftest.py files above a test; a script run by python or torchrun has none.
    conftests = Conftests(index)
    starts = {path: conftests.with_test(path) if ref.tool == "pytest" else [path]
              for t in checked for path, ref in t.files.items() if path.endswith(".py")}
    closure = graph.closures([p for group in starts.values() for p in group], index.bit)
    out: list[Finding] = []
    for tests in checked:
        own = index.mask(tests.files)
        masks = [(p, _union(closure, starts[p])) for p in tests.files if p in starts]
        reach = 0
        for _root, mask in masks:
            reach |= mask
        covered = covers[tests.step.key] | run_all | own
        groups = group_by_folder(index.files(reach & ~covered), covered, index)
        # Each group's first file: the first test (in the step's order) whose closure holds it, for its chain.
        owner: dict[int, str] = {}
        left = index.mask(paths[0] for paths in groups.values())
        for root, mask in masks:
            hit = mask & left
            if hit:
                owner.update(dict.fromkeys(bits(hit), root))
                left ^= hit

        def chain(target: str) -> list[str]:
            return graph.chain(starts[owner[index.bit[target]]], target)  # noqa: B023 - called in this iteration

        out += [not_covered(tests.step, group, paths, chain) for group, paths in groups.items()]
    return out


class Conftests:
    """The conftest.py files pytest loads for a test: its folder's and every one above (looked up once a
    folder: a step's tests share them)."""

    def __init__(self, index: FileIndex):
        self.index = index
        self._above: dict[str, list[str]] = {"": ["conftest.py"] if "conftest.py" in index.bit else []}

    def with_test(self, path: str) -> list[str]:
        """The test file, then its conftest.py files, innermost first."""
        return [path, *(c for c in self._of(path.rpartition("/")[0]) if c != path)]

    def _of(self, folder: str) -> list[str]:
        up = [folder]  # the folders up to one looked up before: a loop, as a test may lie 1,000s of folders deep
        while up[-1] not in self._above:
            up.append(up[-1].rpartition("/")[0])
        found = self._above[up.pop()]
        for name in reversed(up):
            conftest = name + "/conftest.py"
            found = self._above[name] = ([conftest] if conftest in self.index.bit else []) + found
        return found


def _union(closure: Mapping[str, int], paths: Sequence[str]) -> int:
    mask = 0
    for path in paths:
        mask |= closure.get(path, 0)
    return mask
