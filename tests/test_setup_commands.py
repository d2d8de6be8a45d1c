"""README's two set-up commands come first, and the second is exactly what CI runs (.ci/run) and installs what
it needs: mkdocs, for the docs build, in the extra it installs."""

from __future__ import annotations

import re
import sys

from tests.helpers import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the backport pipegen depends on there
    import tomli as tomllib


def readme_commands() -> list[str]:
    """The commands of README's first fenced block, without their trailing comments."""
    first = re.search(r"^```bash\n(.*?)^```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S | re.M)
    assert first is not None, "README.md has no bash block"
    return [line.split("   #")[0].strip() for line in first.group(1).splitlines() if line.strip()]


def test_the_second_set_up_command_is_what_ci_runs():
    ci = [line for line in (ROOT / ".ci/run").read_text(encoding="utf-8").splitlines()
          if line.strip() and not line.startswith("#")]
    commands = readme_commands()
    assert len(commands) == 2, commands
    assert commands[1] == ci[-1]


def test_the_test_command_builds_the_docs_with_what_the_extra_installs():
    command = readme_commands()[1]
    assert "pip install -e '.[test]'" in command and command.endswith("python3 -m mkdocs build --strict")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert any(requirement.startswith("mkdocs") for requirement in extras["test"])


def test_readme_points_into_the_docs_and_stays_short():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 250
    for link in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / link).is_file(), link
