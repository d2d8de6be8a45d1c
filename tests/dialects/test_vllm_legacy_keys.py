"""vLLM's legacy file: a key derived from a label never collides with another step's key (dialects/vllm/
legacy.py), whatever the labels; a declared key is kept as written, and two declared alike are refused."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipegen.dialects.load import load
from pipegen.errors import DeclarationError
from tests.helpers import write_files

CONFIG = ".buildkite/test-pipeline.yaml"


def keys_of(root: Path, steps: list[dict[str, str]]) -> list[str]:
    write_files(root, {CONFIG: yaml.safe_dump({"steps": [{**s, "commands": ["true"]} for s in steps]})})
    return [s.key for s in load(str(root), CONFIG).steps]


def test_a_label_that_derives_a_suffixed_key_does_not_collide(tmp_path):
    assert keys_of(tmp_path, [{"label": "A 2"}, {"label": "A"}, {"label": "A"}]) == ["a-2", "a", "a-3"]
    # a declared key is the step's, even where a derived one came first
    assert keys_of(tmp_path, [{"label": "A"}, {"label": "B", "key": "a"}]) == ["a-2", "a"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["A", "A 2", "a-2", "A 3", "B", "a"]),
                          st.sampled_from([None, "a", "a-2", "a-3", "b"])), min_size=1, max_size=8))
def test_derived_keys_never_collide(steps):
    raw = [{"label": label, **({"key": key} if key else {})} for label, key in steps]
    declared = [key for _, key in steps if key]
    with tempfile.TemporaryDirectory() as folder:
        if len(set(declared)) < len(declared):
            with pytest.raises(DeclarationError, match="duplicate step key"):
                keys_of(Path(folder), raw)
            return
        keys = keys_of(Path(folder), raw)
    assert len(set(keys)) == len(keys)
    assert all(key == got for (_, key), got in zip(steps, keys, strict=True) if key)
