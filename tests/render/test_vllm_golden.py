"""The vLLM preset against vLLM's own generator, job by job, on its real builds.

The goldens (../shared/fixtures/vllm-2026-05-29/generator/) are what vLLM's
generator wrote for vLLM's configuration; pipegen renders the same builds
(same environment, same changed files) and vllm_golden.py compares every job.
Every remaining difference must be a deliberate deviation listed below (and
in docs/reference/vllm.md), and every deviation must still occur: new drift fails, and so
does a deviation that no longer exists.
"""

from __future__ import annotations

import fnmatch
import functools

import yaml

from tests.helpers import FIXTURE, assert_valid, needs_fixture, render
from tests.render import vllm_golden

GOLDENS = FIXTURE / "generator"
# Every build of scenarios.yaml the generator wrote a pipeline for (the refused one is tested on its own).
SCENARIOS = ("branch-run-all", "branch-change", "main-run-all", "main-nightly", "branch-skip-timeout", "pr-change",
             "pr-label-run-all", "branch-only-keys", "intel-branch-run-all", "intel-pr-label")

# The generator's branch-run-all build computed its diff in its own checkout (no MERGE_BASE_COMMIT),
# which held docker/Dockerfile.rocm_base: its optional AMD mirrors run. scenarios.yaml lists no file
# for that build; pipegen is given that file, the generator's actual input.
EXTRA_FILES = {"branch-run-all": ["docker/Dockerfile.rocm_base"]}

# (scenario glob, key glob, field, why): the deliberate deviations, each named in docs/reference/vllm.md.
DEVIATIONS = [
    # vLLM's tracing helper is a base64 bundle of ci-infra's own scripts, run on main: it stays
    # vLLM's business. The commands inside it are compared (vllm_golden unwraps it) and equal.
    ("main-*", "*", "tracing", "tracing wrapper left to vLLM"),
]


@functools.cache
def golden(name: str) -> dict:
    """What the generator wrote for a build, parsed once (libyaml where PyYAML has it: main's are 2.4 MB)."""
    return yaml.load((GOLDENS / f"{name}.yaml").read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def scenario(name: str) -> dict:
    return yaml.safe_load((GOLDENS / "scenarios.yaml").read_text())[name]


@functools.cache  # each build is rendered once for all the tests here
def render_scenario(name: str):
    build = scenario(name)
    config = ["--config", build["config"]] if "config" in build else []
    files = build["changed_files"] + EXTRA_FILES.get(name, [])
    return render(FIXTURE, *config, files="\n".join(files), env=build["env"])


@functools.cache
def pipegen_pipeline(name: str) -> dict:
    """pipegen's pipeline for a build, valid against Buildkite's schema (parsed once; never changed)."""
    result = render_scenario(name)
    assert result.exit_code == 0, result.stderr
    return assert_valid(result.stdout)


def pipegen_jobs(name: str) -> dict[str, dict]:
    return vllm_golden.jobs(pipegen_pipeline(name))


def deviation(name: str, key: str, field: str) -> tuple | None:
    for item in DEVIATIONS:
        glob, key_glob, field_glob, _ = item
        if all(fnmatch.fnmatchcase(value, pattern) for value, pattern in
               ((name, glob), (key, key_glob), (field, field_glob))):
            return item
    return None


@needs_fixture
def test_every_job_matches_the_generator_but_the_deviations():
    used = set()
    drift = []
    for name in SCENARIOS:
        expected = vllm_golden.jobs(golden(name))
        for key, field, theirs, ours in vllm_golden.diff(expected, pipegen_jobs(name)):
            item = deviation(name, key, field)
            if item is None:
                drift.append(f"{name} {key} {field}:\n  generator: {theirs!r:.300}\n  pipegen:   {ours!r:.300}")
            else:
                used.add(item)
    assert not drift, f"{len(drift)} differences from vLLM's generator:\n" + "\n".join(drift[:20])
    assert [item for item in DEVIATIONS if item not in used] == [], "a deviation no longer occurs: remove it"


def page(data: dict) -> list[tuple[str | None, list[str]]]:
    """The build page: each top-level entry's group and the keys of its steps, in order."""
    return [(entry.get("group"), [s["key"] for s in entry.get("steps", [entry])]) for entry in data["steps"]]


@needs_fixture
def test_the_page_is_in_the_generators_order():
    """Groups by name, steps by label, blocks before their commands. The AMD group takes each group's
    mirrors in the order the generator walked its checkout (os.walk: the directory order of the disk
    it ran on); pipegen walks the steps files sorted, so there only each group's own order is compared."""
    from pipegen.dialects.load import load

    steps = load(str(FIXTURE)).by_key()
    origin = {key: step.origin or key for key, step in steps.items()}
    compared = 0
    for name in SCENARIOS:
        theirs, ours = page(golden(name)), page(pipegen_pipeline(name))
        assert [g for g, _ in ours] == [g for g, _ in theirs], name
        for (group, expected), (_, actual) in zip(theirs, ours, strict=True):
            if group == "Hardware-AMD Tests":
                def by_source(keys):
                    source = {k: steps[origin[k.removeprefix("block-")]].group for k in keys}
                    return {g: [k for k in keys if source[k] == g] for g in sorted(set(source.values()))}
                expected, actual = by_source(expected), by_source(actual)
            assert actual == expected, (name, group)
            compared += 1
    assert compared > 150


@needs_fixture
def test_the_build_the_generator_refused_is_refused():
    """A key derived from a label: the generator stops with `Unknown CI step key(s)` and uploads nothing."""
    builds = yaml.safe_load((GOLDENS / "scenarios.yaml").read_text())
    refused = [name for name, build in builds.items() if "error" in build]
    assert refused == ["branch-only-keys-derived"] and sorted(SCENARIOS) == sorted(set(builds) - set(refused))
    result = render_scenario(refused[0])
    assert result.exit_code == 2 and result.stdout == ""
    assert scenario(refused[0])["error"].removeprefix("ValueError: ") in result.stderr
    assert "fix: give the step 'Kernels KDA Test' (.buildkite/test_areas/kernels.yaml:" in result.stderr
    assert "'key: kernels-kda-test'" in result.stderr


@needs_fixture
def test_the_comparison_sees_a_difference():
    """The helper is not blind: a changed queue, command or pod field is a difference."""
    golden = yaml.safe_load((GOLDENS / "branch-change.yaml").read_text())
    expected = vllm_golden.jobs(golden)
    group = next(g for g in golden["steps"] if g["group"] == "Attention")
    step = next(s for s in group["steps"] if s.get("key") == "v1-attention-b200")
    step["agents"]["queue"] = "elsewhere"
    step["commands"][-1] += " -x"
    step["plugins"][0]["kubernetes"]["podSpec"]["hostNetwork"] = False
    changed = {(key, field) for key, field, _, _ in vllm_golden.diff(expected, vllm_golden.jobs(golden))}
    assert changed == {("v1-attention-b200", "agents"), ("v1-attention-b200", "commands"), ("v1-attention-b200", "pod")}


@needs_fixture
def test_a_main_build_renders_byte_identical_twice():
    build = scenario("main-nightly")
    first, second = (render(FIXTURE, files="", env=build["env"]).stdout for _ in range(2))
    assert first == second and "vllm-ci-postmerge-repo" in first
