"""`pipegen import --format json`: what was written, the proof's verdict and what could not be carried over
(each with its file and line where the input gives one), agreeing with the text report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipegen.cli import cli
from pipegen.importer.said import Said
from pipegen.json_output import IMPORT
from pipegen.model import Location
from tests.helpers import git_repo
from tests.importer.test_import_property import pipelines

CARRIED = """\
env: {PYTHONUNBUFFERED: "1"}
steps:
  - label: unit
    key: unit
    command: pytest tests/unit
    if_changed: "src/**"
    agents: {queue: cpu}
  - wait
  - label: gpu
    key: gpu
    command: pytest tests/gpu
    agents: {queue: h100}
"""
NOT_CARRIED = CARRIED + """\
  - label: deploy
    command: ./deploy
    inputs: [src/deploy]
"""


def import_(repo: Path, name: str, fmt: str, *args: str) -> Any:
    return CliRunner().invoke(cli, ["import", str(repo / ".buildkite" / name), "--out", str(repo / f"ci-{fmt}"),
                                    "--format", fmt, *args], env={"PIPEGEN_CACHE_DIR": ""}, catch_exceptions=False)


def both(tmp_path: Path, text: str, *args: str) -> tuple[dict[str, Any], Any]:
    repo = git_repo(tmp_path / "repo", {".buildkite/pipeline.yml": text, "src/a.py": ""})
    plain, result = import_(repo, "pipeline.yml", "text", *args), import_(repo, "pipeline.yml", "json", *args)
    assert result.exit_code == plain.exit_code and result.stderr == ""
    data = json.loads(result.stdout)
    jsonschema.Draft202012Validator(IMPORT).validate(data)
    assert data["exit_code"] == result.exit_code
    written = sorted(str(p.relative_to(repo / "ci-json")) for p in (repo / "ci-json").rglob("*.yaml"))
    assert data["files"] == written
    return data, plain


def test_a_proven_import(tmp_path: Path) -> None:
    data, text = both(tmp_path, CARRIED)
    assert data["proven"] and data["exit_code"] == 0 and data["differences"] == data["not_carried"] == []
    assert "Proven: rendered with --all" in text.stdout
    assert data["steps"] == 2 and data["selecting"] == ["unit"] and data["families"] == {"cpu": "queue: cpu",
                                                                                         "h100": "queue: h100"}
    assert f"into {data['out_dir'].replace('json', 'text')}/" in text.stdout


def test_what_is_not_carried_has_its_place_and_agrees_with_the_text(tmp_path: Path) -> None:
    data, text = both(tmp_path, NOT_CARRIED)
    assert not data["proven"] and data["exit_code"] == 1 and "Proven" not in text.stdout
    item = data["not_carried"][0]
    # repository-relative, though the tests run in another repository (pipegen's checkout)
    assert item["file"] == ".buildkite/pipeline.yml" and item["line"] == 13 and item["column"] == 5
    lines = text.stdout.splitlines()
    listed = lines[lines.index("Not carried over (the files are written with everything else):") + 1:]
    for item in data["not_carried"]:
        assert f"  {item['file']}:{item['line']}:{item['column']}: {item['message']}" in listed
    assert data["differences"] == [{"step": "deploy", "field": "inputs", "file": ".buildkite/pipeline.yml", "line": 13,
                                    "column": 5, "expected": ["src/deploy"], "got": None}]
    assert "  inputs: differs on 1 step (deploy); 'deploy' had '[\"src/deploy\"]', renders nothing" in lines


def test_a_paths_field_selects_and_is_carried(tmp_path: Path) -> None:
    data, _ = both(tmp_path, NOT_CARRIED, "--paths-field", "inputs")
    assert data["proven"] and "deploy" in data["selecting"] and data["not_carried"] == []


texts = st.text(st.characters(blacklist_categories=("Cs",)))
places = st.none() | st.builds(Location, st.text(st.characters(blacklist_categories=("Cs",)), min_size=1),
                                st.integers(0, 10**6), st.integers(0, 500))


@given(places, texts)
def test_the_json_and_the_text_read_one_place(where: Location | None, message: str) -> None:
    """Any file name (`: `, digits, no extension), any message: the text is the JSON's place and message."""
    said = Said(where, message)
    data = said.as_json()
    place = f"{data['file']}:{data['line']}:{data['column']}: " if data["line"] else \
        f"{data['file']}: " if data["file"] is not None else ""
    assert str(said) == place + message and data["message"] == message
    assert (data["file"], data["line"]) == ((where.file, where.line or None) if where else (None, None))


UNCARRIED = yaml.safe_dump({"env": {"MODE": "${HOME_Q:-abcdef}"}, "steps": [{"key": "sub", "command": "echo ${MODE:1:2}"}]})


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=pipelines(), uncarried=st.booleans())
def test_random_pipelines_json_agrees_with_the_text(tmp_path_factory: Any, files: dict[str, str],
                                                    uncarried: bool) -> None:
    """Of the same import: the exit code, the verdict, every file written and each thing not carried over."""
    files = {**files, **({"sub.yml": UNCARRIED} if uncarried else {})}
    root = git_repo(tmp_path_factory.mktemp("p") / "r", {f".buildkite/{n}": t for n, t in files.items()})
    inputs = [str(root / ".buildkite" / name) for name in files]
    text = CliRunner().invoke(cli, ["import", *inputs, "--out", str(root / "text")], env={"PIPEGEN_CACHE_DIR": ""})
    result = CliRunner().invoke(cli, ["import", *inputs, "--out", str(root / "json"), "--format", "json"],
                                env={"PIPEGEN_CACHE_DIR": ""})
    data = json.loads(result.stdout)
    jsonschema.Draft202012Validator(IMPORT).validate(data)
    assert result.exit_code == text.exit_code == data["exit_code"] == (0 if data["proven"] else 1)
    assert data["proven"] == ("Proven:" in text.stdout) == (not uncarried)
    assert data["inputs"] == [f".buildkite/{name}" for name in files]
    assert data["files"] == sorted(str(p.relative_to(root / "json")) for p in (root / "json").rglob("*.yaml"))
    lines = text.stdout.splitlines()
    for item in data["not_carried"]:
        place = f"{item['file']}:{item['line']}:{item['column']}: " if item["line"] else \
            f"{item['file']}: " if item["file"] else ""
        assert f"  {place}{item['message']}" in lines


def test_a_place_is_the_one_the_note_was_made_with_whatever_the_file_is_named(tmp_path: Path) -> None:
    """The place was read back out of the sentence: a pipeline file named without .yml (`ci.pipeline`), or
    with `: ` in its name, lost its place in the JSON though the text named it."""
    main, other = ".buildkite/ci.pipeline", ".buildkite/deploy: prod.yml"
    repo = git_repo(tmp_path / "repo", {main: "priority: 1\n" + CARRIED, other: "priority: 2\nsteps:\n  - command: ./deploy\n    command: ./deploy\n",
                                        "src/a.py": ""})
    args = ["import", str(repo / main), str(repo / other), "--out", str(repo / "ci"), "--format", "json"]
    data = json.loads(CliRunner().invoke(cli, args, env={"PIPEGEN_CACHE_DIR": ""}).stdout)
    assert data["not_carried"] == [{"file": name, "line": None, "column": None, "message": "the pipeline's "
                                    "'priority' (another input file has another; one pipeline has one)"}
                                   for name in (main, other)]
    assert data["notes"][0] == {"file": other, "line": 4, "column": 5, "message": "key 'command' is written twice "
                                "(first on line 3): the last one counts, as in Buildkite"}
