"""Issue 28 item 9: VLLM_CI_ONLY_STEP_KEYS=["docker-build-metadata"] names the key pipegen derives from the label of
test_areas/docker.yaml's "Docker Build Metadata", which declares no `key:`. vLLM's generator knows declared keys only
and stops (`ValueError: Unknown CI step key(s)`); pipegen matches it, with the fix, rather than render a pipeline the
generator would not (docs/reference/selection.md: explicit keys)."""

from __future__ import annotations

import shutil

import pytest

from tests.helpers import FIXTURE, invoke, needs_fixture, render

ONLY = {"VLLM_CI_ONLY_STEP_KEYS": '["docker-build-metadata"]', "BUILDKITE_BRANCH": "feature",
        "BUILDKITE_PULL_REQUEST": "false", "BUILDKITE_COMMIT": "abc"}


@needs_fixture
@pytest.mark.parametrize("command", ["render", "select"])
def test_a_label_derived_key_is_refused_as_the_generator_refuses_it(command):
    result = invoke(FIXTURE, command, files="", env=ONLY)
    assert result.exit_code == 2 and result.stdout == "", result.output
    assert "Unknown CI step key(s): docker-build-metadata (vLLM's generator refuses them too)" in result.stderr
    assert ("fix: give the step 'Docker Build Metadata' (.buildkite/test_areas/docker.yaml:5:3) "
            "'key: docker-build-metadata'") in result.stderr
    assert "Traceback" not in result.output


@needs_fixture
def test_the_key_declared_renders_that_step_and_what_it_depends_on(tmp_path):
    shutil.copytree(FIXTURE / ".buildkite", tmp_path / ".buildkite")
    docker = tmp_path / ".buildkite" / "test_areas" / "docker.yaml"
    docker.write_text(docker.read_text().replace("- label: Docker Build Metadata\n",
                                                 "- label: Docker Build Metadata\n  key: docker-build-metadata\n"))
    result = render(tmp_path, files="", env=ONLY)
    assert result.exit_code == 0, result.stderr
    assert "key: docker-build-metadata" in result.stdout and "key: image-build-cpu" in result.stdout
