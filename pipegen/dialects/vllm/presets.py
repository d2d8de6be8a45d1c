"""vLLM's selection rules, written as pipegen configuration.

The engine (decide.py) knows nothing about vLLM: these settings reproduce
vLLM's generator (vllm-project/ci-infra, see shared/spec/vllm-ci.md) when
pipegen reads vLLM's own files.
"""

from __future__ import annotations

from pipegen.model import LabelRule, Rule, Settings

GENERATOR = "vLLM's generator"  # reads vLLM's files: what it drops loads with a warning that names it
AMD_GPU_DEVICES = ("mi250_?", "mi300_?", "mi325_?", "mi355_?")
AMD_IMAGE_BUILD = "image-build-amd"
VLLM_UNGROUPED = "ungrouped"  # ci-infra step.group_steps: the group of a step that has none

VLLM_RULES = (
    # An AMD base-image change reruns every AMD mirror, even optional ones.
    Rule(
        name="rocm-base-changed",
        changed=("docker/Dockerfile.rocm_base",),
        devices=AMD_GPU_DEVICES,
        mirror="amd",
        overrides_optional=True,
    ),
    # Native (non-docker-in-docker) AMD jobs run through this wrapper script.
    Rule(
        name="amd-native-runtime",
        changed=(".buildkite/scripts/hardware_ci/run-amd-test.sh",),
        devices=AMD_GPU_DEVICES,
        dind=False,
    ),
)

# ci-infra docker_plugin.py: a step with this label gets the Buildkite agent in its container.
VLLM_MOUNT_AGENT = ("Benchmarks",)

VLLM_SETTINGS = {
    "base_branch": "main",
    "base_env": ("MERGE_BASE_COMMIT",),  # ci-infra git_utils.py: the merge base, when the bootstrap sets it
    "run_all_kind": "regex",
    "run_all_fields": ("run_all_patterns", "run_all_exclude_patterns"),  # ci_config.yaml's keys
    "docs_only": ("docs/", "*.md", "mkdocs.yaml"),
    "always_run": ("image-build*", "ensure-ci-base-amd", "refresh-rocm-base-amd"),
    "no_dependencies": "block",
    "unselected": "block",
    "rules": VLLM_RULES,
    "run_all_env": ("RUN_ALL", "TORCH_NIGHTLY"),
    "docker_workdir": (("/vllm-workspace", ""),),
    "interpolate": ("*",),  # vLLM's files are written in Buildkite's syntax (`$$VAR`): every `$` stays as written
    "hardware_preset": "vllm",  # dialects/vllm/hardware.yaml: ci-infra's queues, its gate and wrappers
    "config_selects": False,  # vLLM's generator reruns nothing when ci_config.yaml changes
    # ci-infra global_config.py: this label runs everything, nightly included. Its other label,
    # ci-no-fail-fast, changes nothing the generator writes.
    "labels": (LabelRule("ready-run-all-tests", run_all=True, nightly=True),),
}

# The old test-amd.yaml template: raw prefixes, no dependencies = always run.
LEGACY_SETTINGS = dict(VLLM_SETTINGS, no_dependencies="run", rules=())

LEGACY_MIRROR_TAG_ENV = "AMD_MIRROR_HW"
LEGACY_MIRROR_TAG_DEFAULT = "amdproduction"


def vllm_settings(**overrides: object) -> Settings:
    return Settings(**{**VLLM_SETTINGS, **overrides})  # type: ignore[arg-type]


def legacy_settings(**overrides: object) -> Settings:
    return Settings(**{**LEGACY_SETTINGS, **overrides})  # type: ignore[arg-type]

