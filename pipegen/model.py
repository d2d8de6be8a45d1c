"""The data that flows through pipegen: declarations in, decisions out.

Everything here is plain, immutable data. Loading (declarations/), the change set (selection/changes.py),
deciding (selection/decide.py), placing on hardware (hardware/placement.py; the hardware's own types are
hardware/types.py) and rendering (render/) all speak these types.
"""

from __future__ import annotations

import functools
from dataclasses import MISSING, field
from typing import Any, Literal

from pipegen.frozen import frozen
from pipegen.states import ACTIONS, Action, Unselected  # a step's states, one vocabulary

STRUCTURE = ("wait", "block", "input")  # step kinds that only order or gate the pipeline: no selection of their own

# How a pattern list matches paths (see selection/matching.py):
#   "entry": vLLM's rule; a path matches itself and everything below it,
#            an entry with glob characters is a gitignore-style glob,
#            a leading "!" excludes.
#   "regex": Python re.match (anchored at the start only): vLLM's run-all patterns.
#   "raw":   raw string prefix: the legacy test-amd.yaml matcher.
#   "pathspec": "entry", but a glob read as git's pathspec reads it (`*` crosses "/"): the config's `globs:`.
PatternKind = Literal["entry", "regex", "raw", "pathspec"]
# Steps' dependencies are never regexes, so the step index (matching.StepIndex) need not handle them.
DependencyKind = Literal["entry", "raw", "pathspec"]


@frozen
class Location:
    """Where something was declared, for error messages and findings."""

    file: str
    line: int = 0  # 1-based; 0 when unknown
    column: int = 0  # 1-based; 0 when unknown

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column or 1}" if self.line else self.file


def _written(check: str, default: Any = MISSING, *, key: str | None = None, read_by: str = "steps legacy") -> Any:
    """A Step attribute a steps file writes, declared once for the loaders and their checks: `check` names its
    checker in declarations/fields.py, `key` its YAML key where that is not the attribute's name, `read_by` the
    files that have it ("steps": pipegen's and vLLM's steps files; "legacy": vLLM's legacy test-pipeline.yaml)."""
    return field(default=default, metadata={"check": check, "key": key, "read_by": tuple(read_by.split())})


@frozen
class Step:
    """One schedulable unit: a test step on one hardware target.

    The loader expands every declaration into these: an AMD mirror
    (`mirror.amd`) or a fan-out over several hardware families becomes its
    own Step, with `origin` naming the declared step it came from. Each Step
    gets exactly one decision and becomes exactly one job. The attributes
    declared with `_written` are the fields of a steps file (key, label and
    group are required: `_written` without a default).
    """

    location: Location
    key: str = _written("string")  # unique, final Buildkite key (vLLM: own key or label-derived; mirror: amd-<key>)
    label: str = _written("string")
    group: str = _written("string", read_by="steps")  # display group ("" = ungrouped)
    commands: tuple[str, ...] = _written("string_list", ())
    working_dir: str | None = _written("string", None)
    depends_on: tuple[str, ...] = _written("string_list", ())
    # source_file_dependencies, verbatim; "!"-prefixed entries exclude.
    dependencies: tuple[str, ...] = _written("entry_list", (), key="source_file_dependencies")
    dependency_kind: DependencyKind = "entry"
    # Hardware request. `device` is a hardware family or a vLLM device name
    # ("h100", "mi325_1", "cpu-small"); None = the default GPU family.
    device: str | None = _written("string", None, read_by="steps")
    num_devices: int | None = _written("positive_int", None, read_by="steps")
    num_nodes: int | None = _written("positive_int", None)
    no_gpu: bool = _written("boolean", False)
    agent_tags: tuple[tuple[str, str], ...] = _written("tag_map", (), read_by="steps")
    env: tuple[tuple[str, str], ...] = _written("env_map", ())
    soft_fail: bool | tuple[int | str, ...] = _written("soft_fail", False)  # bool, or exit statuses ("*": any)
    timeout_in_minutes: int | str | None = _written("minutes", None)  # a str: one upload-time variable (${T?})
    parallelism: int | None = _written("positive_int", None)
    concurrency: int | None = _written("positive_int", None, read_by="steps")
    concurrency_group: str | None = _written("string", None, read_by="steps")
    retry: Any = _written("mapping", None)  # Buildkite retry mapping, verbatim
    optional: bool = _written("boolean", False)
    no_plugin: bool = _written("boolean", False, read_by="steps")
    dind: bool = _written("boolean", True, read_by="steps")
    # vLLM: the agent binary inside the step's docker container
    mount_buildkite_agent: bool = _written("boolean", False, read_by="steps")
    run_all_exempt: bool = _written("boolean", False, read_by="own")  # decide.py: CI glue's run-all skips it
    derive: tuple[tuple[str, str], ...] = _written("derive_map", (), read_by="own")  # (python|cargo|use, root)
    dependency_sets: tuple[str, ...] = _written("string_list", (), read_by="own")  # names of the config's sets
    derivation: tuple[tuple[str, str, str], ...] = ()  # derived entries: (entry, by, how), graph/expand.py
    # Mirrors and fan-outs: key of the declared step this one expands; None for a plain step.
    origin: str | None = None
    mirror: str | None = None  # "amd" for a vLLM AMD mirror
    block_label: str | None = None  # the prompt of its block step; None: "Run <label>"
    derived_key: bool = False  # vLLM: no `key:` was declared, the key comes from the label
    block_key: str | None = None  # the key of its block step; None: "block-<key>"
    prelude: tuple[str, ...] = ()  # lines the job runs first, before `cd` and setup, as written
    # Its dialect leaves it out of this pipeline, and why (vLLM's test-amd.yaml: not mirrored to $AMD_MIRROR_HW).
    dialect_skip: Reason | None = None
    # pipegen's format: depends_on targets whose failure this step accepts ({step, allow_failure: true}).
    allow_failure_on: tuple[str, ...] = ()
    # pipegen's format: the other Buildkite command-step fields (if, branches, matrix, plugins, ...), verbatim.
    buildkite: tuple[tuple[str, Any], ...] = ()
    kind: str = "command"  # Buildkite's step type: command, trigger, or one of STRUCTURE (fields in `buildkite`)

    def field(self, name: str, default: Any = None) -> Any:
        """A Buildkite field of `buildkite`, or `default`."""
        return next((value for key, value in self.buildkite if key == name), default)

    @property
    def declares_dependencies(self) -> bool:
        """Whether the step names any include entry itself: the steps file that the
        loader adds (pipegen's format, vLLM files with a depends_on) does not count."""
        return any(not d.startswith("!") and d != self.location.file for d in self.dependencies)


@frozen
class Group:
    """A declaration group's own Buildkite fields (a steps file's `group:` written as a mapping)."""

    name: str  # the display group its steps name (Step.group)
    location: Location
    key: str | None = None
    depends_on: tuple[str, ...] = ()  # step or group keys: every step of the group waits for them
    allow_failure_on: tuple[str, ...] = ()
    buildkite: tuple[tuple[str, Any], ...] = ()  # if, notify, allow_dependency_failure, ..., verbatim


@frozen
class Rule:
    """A hardware-specific selection rule (pipegen config `rules:`): a step that `applies` runs when a changed
    file matches `changed`. `overrides_optional` places the rule before the optional->block rule (vLLM: AMD
    mirrors run when docker/Dockerfile.rocm_base changes); otherwise it sits just before run-all (vLLM: native
    AMD steps and run-amd-test.sh)."""

    name: str
    changed: tuple[str, ...]
    devices: tuple[str, ...] = ()  # fnmatch globs on Step.device; empty = any
    mirror: str | None = None  # only mirrors of this kind ("amd")
    dind: bool | None = None  # only steps with this dind value
    overrides_optional: bool = False


@frozen
class LabelRule:
    """What a pull-request label asks for (config `labels:`)."""

    label: str
    run_all: bool = False
    nightly: bool = False
    only: tuple[str, ...] = ()  # exactly these steps (and their depends_on)
    add: tuple[str, ...] = ()  # these steps run too (and their depends_on), whatever changed


@frozen
class Settings:
    """Repository-wide selection settings (pipegen.yaml or a preset)."""

    base_branch: str = "main"
    base_env: tuple[str, ...] = ()  # variables naming the merge base, tried first (vLLM: MERGE_BASE_COMMIT)
    run_all: tuple[str, ...] = ()
    run_all_exclude: tuple[str, ...] = ()
    run_all_kind: PatternKind = "entry"
    run_all_fields: tuple[str, str] = ("run_all", "run_all_exclude")  # the config keys they are written under
    docs_only: tuple[str, ...] = ()  # entries; empty = no docs-only rule
    always_run: tuple[str, ...] = ()  # key globs (fnmatch)
    no_dependencies: Literal["block", "run"] = "block"
    unselected: Unselected = "block"
    rules: tuple[Rule, ...] = ()
    run_all_env: tuple[str, ...] = ("RUN_ALL",)  # env vars that mean "run everything" when == "1"
    interpolate: tuple[str, ...] = ()  # variables left for upload-time interpolation
    docker_workdir: tuple[tuple[str, str], ...] = ()  # ("/vllm-workspace/tests", "tests")
    hardware_file: str | None = None
    hardware_inline: Any = None
    # Keys of steps uploaded elsewhere (the bootstrap step, an earlier image build): depends_on may name them.
    external_steps: tuple[str, ...] = ()
    hardware_preset: str | None = None  # the dialect whose dialects/NAME/hardware.yaml a repository's extends
    config_selects: bool = True  # a change to the config or the inventory file selects what they shape
    labels: tuple[LabelRule, ...] = ()  # pull-request labels that widen or narrow the selection
    # Branch filters (`main`, `release/*`): Buildkite builds of them (not PRs) run everything / as nightly.
    run_all_branches: tuple[str, ...] = ()
    nightly_branches: tuple[str, ...] = ()
    # Values for the inventory's build context (vLLM: ci_config.yaml's registries, repositories.*).
    build_values: tuple[tuple[str, str], ...] = ()
    pipeline: tuple[tuple[str, Any], ...] = ()  # Buildkite's pipeline-level env, agents, notify, ... (`pipeline:`)
    uncovered: Literal["warn", "run_all", "fail"] = "warn"  # a changed file no entry matches (uncovered.py)
    uncovered_ignore: tuple[str, ...] = ()  # entries: changes that need no step (never warned about)
    dependency_sets: tuple[tuple[str, tuple[str, ...]], ...] = ()  # name -> entries, that steps name
    entry_kind: PatternKind = "entry"  # how docs_only, rules and uncovered_ignore read a glob (`globs:`)
    globs: str = ""  # the config's `globs:` as written ("": not chosen, so check warns where git reads wider)


@frozen
class DeclarationWarning:
    """A non-fatal problem found while loading (e.g. a field vLLM ignores)."""

    location: Location
    code: str
    message: str
    fix: str = ""

    def __str__(self) -> str:
        text = f"{self.location}: {self.message}"
        return f"{text} ({self.fix})" if self.fix else text


@frozen
class Declarations:
    """Everything loaded from a repository's CI configuration."""

    steps: tuple[Step, ...]
    settings: Settings
    layout: str  # the dialect that read them (dialects/): "pipegen", "vllm", "legacy"
    files: tuple[str, ...] = ()  # every file that was read (repo-relative)
    warnings: tuple[DeclarationWarning, ...] = ()
    root: str = "."  # repository root the paths are relative to
    # (path git names, path a declaration file was read by) where they differ: a symbolic link on the way
    aliases: tuple[tuple[str, str], ...] = ()
    groups: tuple[Group, ...] = ()  # groups with fields of their own (a key, depends_on, if, notify)

    def by_key(self) -> dict[str, Step]:
        return {s.key: s for s in self.steps}

    def group(self, name: str) -> Group | None:
        return next((g for g in self.groups if g.name == name), None)

    @functools.cached_property
    def group_members(self) -> dict[str, tuple[str, ...]]:
        """Group key -> the keys of its steps (Buildkite: depending on a group waits for all of it)."""
        return {g.key: tuple(s.key for s in self.steps if s.group == g.name) for g in self.groups if g.key}

    def needs(self, step: Step) -> tuple[str, ...]:
        """The steps a step waits for: its depends_on and its group's, a group key as that group's steps."""
        group = self.group(step.group) if self.groups else None
        out: list[str] = []
        for target in (*step.depends_on, *(group.depends_on if group else ())):
            out += self.group_members.get(target, (target,))
        return tuple(dict.fromkeys(t for t in out if t != step.key))


@frozen
class ChangeSet:
    """The changed files of a change and how far they can be trusted."""

    files: tuple[str, ...]
    base: str | None = None  # the ref that was asked for / resolved
    merge_base: str | None = None  # commit sha
    trusted: bool = True  # False: the diff could not be computed; select everything
    reason: str = ""  # why it cannot be trusted, or how it was computed
    warnings: tuple[str, ...] = ()  # said on stderr and in the output (e.g. an empty --files-from list)


@frozen
class Reason:
    """Why a step got its action: the rule, and the file/entry that fired it."""

    rule: str  # e.g. "dependency", "run-all", "optional", "no-dependencies", "docs-only"
    text: str  # human sentence
    file: str | None = None
    entry: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"rule": self.rule, "text": self.text, "file": self.file, "entry": self.entry}
        return {name: value for name, value in out.items() if value is not None}


@frozen
class Decision:
    step: Step
    action: Action
    reasons: tuple[Reason, ...]


@frozen
class Options:
    """What the user asked for on the command line or in the environment."""

    only: tuple[str, ...] | None = None  # explicit keys; None = not given
    nightly: bool = False
    nightly_reason: str = ""  # why a nightly build ("" = asked for plainly: --nightly, NIGHTLY=1)
    # Steps a pull-request label adds: key (declared, or a fanned-out step's own) -> the label.
    added: tuple[tuple[str, str], ...] = ()
    run_all: str = ""  # why everything was asked for ("--all", "RUN_ALL=1"); "" = not asked
    noauto: bool = False
    docs_only_disable: bool = False
    unselected: Unselected | None = None  # None: the config's; block pulls more in: selection/waited_for.py


@frozen
class Selection:
    """The outcome of deciding: one Decision per Step, plus the global verdict."""

    decisions: tuple[Decision, ...]
    changes: ChangeSet
    run_all_reason: str = ""  # "" = not everything runs
    skip_reason: str = ""  # "" = not everything is skipped
    warnings: tuple[str, ...] = field(default_factory=tuple)
    uncovered: tuple[str, ...] = ()  # changed files no entry matches and no ignore list excludes

    @property
    def run_all(self) -> bool:
        return bool(self.run_all_reason)

    @property
    def skip_all(self) -> bool:
        return bool(self.skip_reason)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = dict.fromkeys(ACTIONS, 0)
        for d in self.decisions:
            out[d.action] += 1
        return out
