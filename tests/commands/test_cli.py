"""select / why through the real CLI: formats, explanations, forcing options, help."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from pipegen.cli import cli
from tests.helpers import CLI_CONFIG, CLI_STEPS, write_files


@pytest.fixture
def root(tmp_path):
    write_files(tmp_path, {".buildkite/pipegen.yaml": CLI_CONFIG, ".buildkite/steps/tests.yaml": CLI_STEPS})
    return tmp_path


def invoke(root, *args, files="", env=None):
    return CliRunner().invoke(cli, [*args, "--root", str(root), "--files-from", "-"], input=files,
                              env=env)


def decisions(root, files, *args, env=None):
    result = invoke(root, "select", "--format", "json", *args, files=files, env=env)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    return {s["key"]: (s["action"], s["reasons"][0]["rule"]) for s in data["steps"]}, data


def test_every_rule_through_the_cli(root):
    got, data = decisions(root, "src/core/a.py\n")
    assert got == {"lint": ("run", "always-run"), "core": ("run", "dependency"), "slow": ("block", "optional"),
                   "bare": ("block", "no-dependencies")}
    assert data["steps"][1]["reasons"][0] == {"rule": "dependency", "text": "src/core/a.py matches 'src/core/'",
                                              "file": "src/core/a.py", "entry": "src/core/"}
    got, _ = decisions(root, "src/core/vendored/x.py\n")
    assert got["core"] == ("block", "no-match")
    got, data = decisions(root, "pyproject.toml\n")
    assert data["run_all"] and got["core"] == ("run", "run-all") and got["slow"] == ("block", "optional")
    got, _ = decisions(root, "src/x.py\n", "--nightly")
    assert got["slow"] == ("run", "nightly")
    got, data = decisions(root, "docs/a.txt\nREADME.md\n")
    assert data["skip_all"] and {a for a, _ in got.values()} == {"skip"}
    got, _ = decisions(root, "docs/a.txt\n", env={"DOCS_ONLY_DISABLE": "1"})
    assert got["core"] == ("block", "no-match")
    got, _ = decisions(root, "", "--only", "core")
    assert got == {"lint": ("run", "only"), "core": ("run", "only"), "slow": ("skip", "only"),
                   "bare": ("skip", "only")}
    got, _ = decisions(root, "", env={"PIPEGEN_ONLY_STEP_KEYS": '["slow"]'})
    assert got["slow"] == ("run", "only") and got["core"] == ("skip", "only")
    got, _ = decisions(root, "src/core/a.py\n", env={"NOAUTO": "1"})
    assert set(got.values()) == {("block", "noauto")}
    got, _ = decisions(root, "", "--all")
    assert got["core"] == ("run", "run-all")


def test_bad_forcing_options_are_usage_errors(root):
    result = invoke(root, "select", "--only", "nope")
    assert result.exit_code == 2 and "unknown step key(s): nope" in result.output
    result = invoke(root, "select", env={"PIPEGEN_ONLY_STEP_KEYS": "core"})
    assert result.exit_code == 2 and "PIPEGEN_ONLY_STEP_KEYS is not valid JSON" in result.output


def test_text_and_markdown(root):
    text = invoke(root, "select", files="src/core/a.py\n").stdout
    assert text.startswith("2 run, 2 block, 0 skip of 4 steps")
    assert "Run (2):" in text and "src/core/a.py matches 'src/core/'" in text
    markdown = invoke(root, "select", "--format", "markdown", files="pyproject.toml\n").stdout
    assert markdown.startswith("### pipegen: test selection")
    assert "> Running everything: pyproject.toml matches run-all pattern 'pyproject.toml'" in markdown
    assert "| Core (`core`) | Tests | run |" in markdown
    # The counts once, in one sentence.
    assert "\n**3 run**, 1 blocked, 0 skipped of 4 steps; 1 changed file(s).\n" in markdown
    assert markdown.count(" of 4 steps") == 1


def test_why_paths_and_steps(root):
    result = invoke(root, "why", "src/core/vendored/x.py", "src/core/a.py", "other.txt")
    assert result.exit_code == 0
    assert "not core: entry 'src/core/' matches but '!src/core/vendored/' excludes it" in result.stdout
    assert "selects core  (entry 'src/core/')" in result.stdout
    # no silent uncovered change: the warning says that it runs no step
    assert "other.txt:\n  warning: 1 changed file(s) no step's dependency entry matches and no ignore list excludes: " \
           "other.txt: it runs no step" in result.stdout
    result = invoke(root, "why", "--step", "core", "--format", "json", files="src/core/a.py\n")
    info = json.loads(result.stdout)["steps"][0]
    assert info["action"] == "run" and info["declared_at"] == ".buildkite/steps/tests.yaml:6:3"
    assert invoke(root, "why").exit_code == 2


def test_why_of_a_folder_says_it_decides_files(root):
    """`why src` does not select core (its entry src/core/ is inside): said on stderr, with what answers."""
    (root / "src" / "core").mkdir(parents=True)
    result = invoke(root, "why", "src/", "src/core/a.py")
    assert "src:\n  matches slow (entry 'src/')" in result.stdout and "selects core" in result.stdout
    assert "WARNING: src is a folder" in result.stderr and "src/core/a.py is" not in result.stderr
    assert "git ls-files src | pipegen select --files-from -" in result.stderr


@pytest.mark.parametrize("command", ["select", "why", "audit"])
def test_help_has_an_example(command):
    result = CliRunner().invoke(cli, [command, "--help"])
    assert result.exit_code == 0 and "Example:" in result.output


def test_why_comes_from_the_decision_select_makes(root):
    """A run-all file, a docs-only file, an optional step's file: why says what select does."""
    result = invoke(root, "why", "pyproject.toml", "docs/a.txt", "src/x.py", "./src/core/a.py")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "pyproject.toml:\n  run-all: everything runs (pyproject.toml matches run-all pattern" in text
    assert "docs/a.txt:\n  docs-only: every step is skipped" in text
    assert "src/x.py:\n  matches slow (entry 'src/') but it does not run: block, optional step" in text
    assert "src/core/a.py:\n  selects core  (entry 'src/core/')" in text
    rows = json.loads(invoke(root, "why", "--format", "json", ".buildkite/pipegen.yaml").stdout)["paths"]
    assert rows[0]["verdict"] == "run-all" and "the pipegen config" in rows[0]["reason"]
    assert invoke(root, "why", "../x.py").exit_code == 2


def test_help_agrees_with_behaviour():
    def help_of(command):
        return " ".join(CliRunner().invoke(cli, [command, "--help"], terminal_width=200).output.split())

    assert "plain.j2" in help_of("render")
    assert "2 on a usage or declaration error" in help_of("run")
    assert "vllm/" not in help_of("why")  # the examples use this repository's paths
    assert "does not resolve is an error (exit 2)" in help_of("select")
    assert "--no-renames" in help_of("select")


OPTIONS = {"select": "SelectOptions", "why": "WhyOptions", "render": "RenderOptions", "run": "RunOptions",
           "check": "CheckOptions", "audit": "AuditOptions", "import": "ImportOptions"}


@pytest.mark.parametrize("command", sorted(OPTIONS))
def test_every_command_declares_its_options_once(command):
    """commands/<name>.main(options, out) -> int, its options a dataclass with every option the CLI parses."""
    import dataclasses
    import importlib
    import inspect

    kind = getattr(importlib.import_module("pipegen.commands.options"), OPTIONS[command])  # all in one module
    declared = {f.name for f in dataclasses.fields(kind)}
    terminal = {"quiet", "verbose", "color"}  # every command's, resolved into `terminal` (commands/guard.py)
    assert {p.name for p in cli.commands[command].params} - {"help", *terminal} <= declared
    assert {"environ", "terminal"} <= declared
    main = importlib.import_module(f"pipegen.commands.{command.replace('import', 'import_')}").main
    assert list(inspect.signature(main).parameters) == ["args", "out"]
    assert inspect.signature(main).return_annotation in (int, "int")


def test_an_option_its_command_does_not_declare_is_an_error_not_dropped(root, monkeypatch):
    import click

    command = cli.commands["select"]
    monkeypatch.setattr(command, "params", [*command.params, click.Option(["--unwired"], is_flag=True)])
    result = invoke(root, "select", "--unwired", files="src/core/a.py\n")
    assert isinstance(result.exception, TypeError) and "unwired" in str(result.exception)
