"""Shell completion as docs/reference/cli.md documents it: click's, through pipegen's own program name."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from pipegen.cli import cli


def complete(words: str) -> list[str]:
    """What bash completion offers after `words` (the last word is the one being completed)."""
    env = {"_PIPEGEN_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(len(words.split()) - 1)}
    result = CliRunner().invoke(cli, [], env=env, prog_name="pipegen")
    assert result.exit_code == 0, result.output
    return [line.split(",", 1)[1] for line in result.output.splitlines()]


@pytest.mark.parametrize(("words", "offered"), [
    ("pipegen re", ["render"]),
    ("pipegen render --unse", ["--unselected"]),
    ("pipegen render --unselected o", ["omit"]),
    ("pipegen select --format j", ["json"]),
    ("pipegen check --col", ["--color"]),
    ("pipegen import --color n", ["never"]),
    ("pipegen render --color a", ["auto", "always"]),
    ("pipegen audit --qu", ["--quiet"]),
    ("pipegen run --verb", ["--verbose"]),
    ("pipegen render --annotate-", ["--annotate-timeout"]),
])
def test_commands_options_and_choices_complete(words, offered):
    assert complete(words) == offered


def test_the_documented_script_comes_from_the_installed_command():
    done = subprocess.run([sys.executable, "-c", "import sys; from pipegen.cli import cli; sys.argv[0] = 'pipegen'; cli()"],
                          env={**os.environ, "_PIPEGEN_COMPLETE": "bash_source"}, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "_pipegen_completion()" in done.stdout and "complete -o nosort -F _pipegen_completion pipegen" in done.stdout
