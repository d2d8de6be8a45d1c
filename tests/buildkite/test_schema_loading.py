"""The vendored schema is parsed once per process, whatever reads it; the compiled schema and templates are
written whole or not at all (setup.py, when the wheel is built); the shipped templates' stamp is made once."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from pipegen.buildkite import schema
from pipegen.render import templates
from tests.helpers import write_files

COUNTING = """
import json, runpy, sys
real, parses = json.loads, []
def counting(text, *args, **kwargs):
    if isinstance(text, (bytes, str)) and 'commandStep' in str(text[:100000]):
        parses.append(1)
    return real(text, *args, **kwargs)
json.loads = counting
sys.argv = ["pipegen", *sys.argv[1:]]
try:
    runpy.run_module("pipegen", run_name="__main__")
finally:
    sys.stderr.write(f"PARSES={len(parses)}\\n")
"""


def test_the_schema_is_parsed_once_by_every_reader(tmp_path):
    """A group written as a mapping, wait, block, input and trigger steps with Buildkite fields, pipeline-level
    fields, and a refused field: each read the schema again (five parses and more), now one parse."""
    write_files(tmp_path, {
        ".buildkite/pipegen.yaml": "steps: [.buildkite/steps]\npipeline: {env: {A: '1'}}\n",
        ".buildkite/steps/a.yaml": textwrap.dedent("""\
            group: {group: G, key: g, if: build.branch != "x"}
            steps:
              - {label: A, key: a, commands: [a]}
              - {wait: ~, continue_on_failure: true}
              - {block: Go, key: go, prompt: Sure?}
              - {input: Notes, key: notes, prompt: Why?}
              - {trigger: other, label: T, key: t, async: true}
              - {label: B, key: b, commands: [b], soft_fail: [{exit_status: 'x'}]}
            """)})
    done = subprocess.run([sys.executable, "-c", COUNTING, "select", "--root", str(tmp_path), "--all"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert "soft_fail" in done.stderr and done.returncode != 0, done.stderr  # the refused field, told
    assert "PARSES=1\n" in done.stderr, done.stderr


def test_the_compiled_schema_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    target = tmp_path / "compiled_schema.py"
    target.write_text("old\n")

    def cut_short() -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(schema, "compiled_source", cut_short)
    with pytest.raises(KeyboardInterrupt):
        schema.write_compiled(str(target))
    assert target.read_text() == "old\n" and os.listdir(tmp_path) == ["compiled_schema.py"]
    monkeypatch.undo()
    schema.write_compiled(str(target))
    assert f"STAMP = {schema.stamp()!r}" in target.read_text()


def test_the_shipped_templates_stamp_is_made_once(monkeypatch):
    made = []
    real = templates._stamp
    monkeypatch.setattr(templates, "_stamp", lambda: made.append(1) or real())
    templates._builtin_loader.cache_clear()
    templates.environment.cache_clear()
    try:
        for folder in (None, templates.builtin_templates()):
            templates.environment(folder)
    finally:
        templates._builtin_loader.cache_clear()
        templates.environment.cache_clear()
    assert len(made) <= 1
