"""pipegen decides exactly as vLLM's generator on vLLM's real configuration.

The oracle is tests/vllm_reference.py, an independent transcription of
vLLM's rules; the change sets come from every rule in the spec plus
random samples of vLLM's real tracked files.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipegen.dialects.load import load
from pipegen.model import ChangeSet, Options
from pipegen.selection.decide import decide
from pipegen.selection.requested import requested
from tests.helpers import FIXTURE, needs_fixture

from . import vllm_reference

pytestmark = needs_fixture

TRACKED = (FIXTURE / "tracked-files.txt").read_text().splitlines() if FIXTURE.is_dir() else []
SPECIAL = [
    "docs/index.md", "README.md", "mkdocs.yaml", "docs/api/x.py", "csrc/attention/x.cu", "csrc/cpu/x.cpp",
    "csrc/rocm/y.cu", "docker/Dockerfile", "docker/Dockerfile.rocm", "docker/Dockerfile.rocm_base",
    "docker/Dockerfile.cpu", "cmake/hipify.py", "cmake/utils.cmake", "setup.py", "CMakeLists.txt",
    "requirements/common.txt", "requirements/rocm.txt", ".buildkite/scripts/hardware_ci/run-amd-test.sh",
    ".buildkite/test_areas/distributed.yaml", ".buildkite/image_build/image_build.yaml",
    "vllm/distributed/kv_transfer/kv_connector/v1/base.py", "vllm/distributed/parallel_state.py",
    "vllm/v1/worker/gpu_model_runner.py", "tests/distributed/test_comm_ops.py", "tests/test_config.py",
    "tests/kernels/moe/test_moe.py", "vllm/model_executor/models/llama.py", "examples/rl/rlhf_nccl.py",
]


@pytest.fixture(scope="module")
def decl():
    return load(str(FIXTURE))


def pipegen_actions(decl, files, env):
    options = requested(Options(), decl.settings, env)
    selection = decide(decl, ChangeSet(tuple(files)), options)
    return {d.step.key: d.action for d in selection.decisions}, selection


def assert_same(decl, files, env=None):
    env = env or {}
    expected = vllm_reference.decisions(str(FIXTURE), files, env)
    actual, selection = pipegen_actions(decl, files, env)
    if expected is None:
        assert selection.skip_all and set(actual.values()) == {"skip"}, "vLLM skips a docs-only change entirely"
        return
    assert not selection.skip_all
    rendered = {k: a for k, a in actual.items() if a != "skip"}
    assert rendered == expected, {k: (actual.get(k), expected.get(k)) for k in set(rendered) | set(expected)
                                  if actual.get(k) != expected.get(k)}


CASES = {
    "empty diff": ([], {}),
    "docs only": (["docs/index.md", "README.md", "mkdocs.yaml"], {}),
    "docs plus code": (["docs/index.md", "vllm/distributed/parallel_state.py"], {}),
    "docs only disabled": (["docs/index.md"], {"DOCS_ONLY_DISABLE": "1"}),
    "run-all pattern": (["csrc/attention/x.cu"], {}),
    "run-all excluded": (["csrc/cpu/x.cpp", "docker/Dockerfile.rocm"], {}),
    "run-all regex dot": (["docker/Dockerfile_x"], {}),
    "dockerfile": (["docker/Dockerfile"], {}),
    "rocm base": (["docker/Dockerfile.rocm_base"], {}),
    "rocm base noauto": (["docker/Dockerfile.rocm_base"], {"NOAUTO": "1"}),
    "amd test script": ([".buildkite/scripts/hardware_ci/run-amd-test.sh"], {}),
    "steps file": ([".buildkite/test_areas/distributed.yaml"], {}),
    "its own config": ([".buildkite/ci_config.yaml"], {}),
    "image build file": ([".buildkite/image_build/image_build.yaml"], {}),
    "exclusion": (["vllm/distributed/kv_transfer/kv_connector/v1/base.py"], {}),
    "one module": (["vllm/v1/worker/gpu_model_runner.py"], {}),
    "a test": (["tests/distributed/test_comm_ops.py"], {}),
    "nightly": (["tests/test_config.py"], {"NIGHTLY": "1"}),
    "run all env": ([], {"RUN_ALL": "1"}),
    "torch nightly": (["README.md"], {"TORCH_NIGHTLY": "1"}),
    "noauto": (["vllm/distributed/parallel_state.py"], {"NOAUTO": "1"}),
    "only keys": ([], {"VLLM_CI_ONLY_STEP_KEYS": '["distributed-comm-ops", "image-build-amd"]'}),
    "only keys with docs": (["docs/a.md"], {"VLLM_CI_ONLY_STEP_KEYS": '["distributed-comm-ops"]'}),
    "run-all label": (["docs/a.md"], {"BUILDKITE_PULL_REQUEST_LABELS": "documentation,ready-run-all-tests"}),
    "other labels": (["docs/a.md"], {"BUILDKITE_PULL_REQUEST_LABELS": "ci-no-fail-fast"}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_rule_cases(decl, name):
    files, env = CASES[name]
    assert_same(decl, files, env)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    files=st.lists(st.sampled_from(TRACKED or ["x"]) | st.sampled_from(SPECIAL), max_size=40, unique=True),
    env=st.fixed_dictionaries({}, optional={"NIGHTLY": st.just("1"), "NOAUTO": st.just("1"),
                                            "DOCS_ONLY_DISABLE": st.just("1")}),
)
def test_random_real_change_sets(decl, files, env):
    assert_same(decl, files, env)


def test_every_step_and_mirror_decided_once(decl):
    actual, _ = pipegen_actions(decl, ["vllm/config.py"], {})
    keys = [s.key for s in decl.steps]
    assert len(keys) == len(set(keys)) == len(actual)
    mirrors = [s for s in decl.steps if s.mirror == "amd"]
    assert mirrors and all(s.key == f"amd-{s.origin}" for s in mirrors)


def test_reason_names_file_and_entry(decl):
    _, selection = pipegen_actions(decl, ["vllm/distributed/parallel_state.py"], {})
    reason = next(d for d in selection.decisions if d.step.key == "distributed-comm-ops").reasons[0]
    assert (reason.rule, reason.file, reason.entry) == ("dependency", "vllm/distributed/parallel_state.py",
                                                        "vllm/distributed")


def test_legacy_files_load():
    amd = load(str(FIXTURE), ".buildkite/test-amd.yaml")
    legacy = load(str(FIXTURE), "legacy-test-pipeline.yaml")
    assert (len(amd.steps), len(legacy.steps)) == (182, 101)
    keys = [s.key for s in amd.steps]
    assert len(set(keys)) == len(keys)
    assert "engine-mi325_1" in keys and "engine-mi250_1" in keys  # a label repeated across pools
    # Legacy AMD matching is a raw prefix: 'tests/foo' matched 'tests/foo_bar.py'.
    assert all(s.dependency_kind == "raw" and s.soft_fail is True for s in amd.steps)


LEGACY_AMD = """\
steps:
- label: No deps
  agent_pool: mi300_1
  mirror_hardwares: [amdproduction]
  commands: [pytest -v -s test_a.py]
- label: Raw prefix
  agent_pool: mi300_1
  mirror_hardwares: [amdproduction]
  source_file_dependencies: [tests/foo]
  commands: [pytest -v -s test_b.py]
- label: Experimental only
  agent_pool: mi355_2
  num_gpus: 2
  mirror_hardwares: [amdexperimental]
  source_file_dependencies: [tests/]
  commands: [pytest -v -s test_c.py]
"""


def test_legacy_amd_decisions(tmp_path):
    (tmp_path / "test-amd.yaml").write_text(LEGACY_AMD)
    amd = load(str(tmp_path), "test-amd.yaml")
    selection = decide(amd, ChangeSet(("tests/foo_bar.py",)), requested(Options(), amd.settings, {}))
    actions = {d.step.key: d.action for d in selection.decisions}
    assert actions == {"no-deps": "run", "raw-prefix": "run", "experimental-only": "skip"}
    selection = decide(amd, ChangeSet(("vllm/x.py",)), requested(Options(), amd.settings, {}))
    assert {d.step.key: d.action for d in selection.decisions}["raw-prefix"] == "block"
