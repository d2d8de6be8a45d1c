"""What a user installs is what these tests test: the wheel built from the tracked files.

Every other test runs the editable install, which sees the whole checkout; a module that
packaging leaves out, or a stray package it adds, shows only here. Built once per test run,
offline (`--no-build-isolation`: setuptools comes from the test environment), into a fresh
virtual environment that borrows only the test environment's dependencies.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from pipegen.cli import cli
from tests.helpers import ROOT, git
from tests.wheel import build, install

# One invocation per subcommand, run from the installed pipegen on a clone of this repository.
# A new subcommand fails test_every_subcommand_is_tried until it is added here.
INVOCATIONS = {
    "select": ["select"],
    "why": ["why", "README.md"],
    "render": ["render"],
    "check": ["check"],
    "audit": ["audit", "--last", "3"],
    "run": ["run", "--dry-run"],
    "import": ["import", ".buildkite/pipeline.yaml", "--out", "imported"],
    "schema": ["schema", "steps"],
}


def _tracked_files() -> list[str]:
    listed = git(ROOT, "ls-files", "-z").split("\0")
    return [name for name in listed if name and (ROOT / name).is_file()]  # not deleted in the work tree


def _expected_in_wheel(tracked: list[str]) -> set[str]:
    """pipegen/ as tracked, templates/ as pipegen/templates/, and what setup.py compiles from them: the
    schema's validator and a module per template (Jinja's names), with the stamps that say from what."""
    from jinja2 import ModuleLoader

    templates = [name for name in tracked if name.startswith("templates/")]
    compiled = {f"pipegen/render/compiled_templates/{ModuleLoader.get_module_filename(name.split('/', 1)[1])}"
                for name in templates if name.endswith(".j2")}
    return ({name for name in tracked if name.startswith("pipegen/")} | {"pipegen/" + name for name in templates}
            | compiled | {"pipegen/render/compiled_templates/STAMP", "pipegen/buildkite/compiled_schema.py"})


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(wheel, sdist) of the tracked files, the wheel built from the sdist (tests/wheel.py)."""
    dist = build(ROOT, _tracked_files(), tmp_path_factory.mktemp("build"))
    (wheel,), (sdist,) = dist.glob("*.whl"), dist.glob("*.tar.gz")
    return wheel, sdist


@pytest.fixture(scope="module")
def installed(built: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel installed (not editable); its bin folder."""
    venv = tmp_path_factory.mktemp("venv")
    install(built[0], venv, compile=False)
    return venv


def _site_packages(venv: Path) -> Path:
    (site,) = venv.glob("lib/python*/site-packages")
    return site


def test_wheel_holds_pipegen_and_nothing_else(built: tuple[Path, Path]) -> None:
    names = set(zipfile.ZipFile(built[0]).namelist())
    dist_info = {name for name in names if name.split("/")[0].endswith(".dist-info")}
    assert names - dist_info == _expected_in_wheel(_tracked_files())


def test_sdist_holds_what_a_build_needs(built: tuple[Path, Path]) -> None:
    import tarfile

    with tarfile.open(built[1]) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    tracked = _tracked_files()
    needed = {"pyproject.toml", "setup.py", "README.md"} | {
        name for name in tracked if name.startswith(("pipegen/", "templates/"))}
    assert needed <= names


def test_installed_files_are_the_tracked_ones(installed: Path) -> None:
    site = _site_packages(installed)
    top = {path.name for path in site.iterdir()}
    assert {name for name in top if not name.endswith(".dist-info")} == {"pipegen", "borrowed-deps.pth"}
    files = {path.relative_to(site).as_posix() for path in (site / "pipegen").rglob("*")
             if path.is_file() and "__pycache__" not in path.parts}
    assert files == _expected_in_wheel(_tracked_files())


# What `pip install pipegen` brings (issue 30: ten distributions at most; check-jsonschema brought 21).
DISTRIBUTIONS = {"pipegen", "pyyaml", "jinja2", "markupsafe", "click", "pathspec", "fastjsonschema", "identify"}


def test_the_install_brings_few_distributions(built: tuple[Path, Path]) -> None:
    """The wheel's requirements and theirs, resolved against this environment (offline), markers as here."""
    from email.parser import Parser
    from importlib.metadata import PackageNotFoundError, requires
    from importlib.metadata import metadata as installed_metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    with zipfile.ZipFile(built[0]) as wheel:
        meta = Parser().parsestr(next(wheel.read(n).decode() for n in wheel.namelist() if n.endswith(".dist-info/METADATA")))
    found, todo = {"pipegen"}, [Requirement(r) for r in meta.get_all("Requires-Dist") or []]
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        if name in found or (requirement.marker and not requirement.marker.evaluate({"extra": ""})):
            continue
        found.add(name)
        try:
            installed_metadata(name)
            todo += [Requirement(r) for r in requires(name) or []]
        except PackageNotFoundError:
            pass  # still counted: pip would install it
    assert found == DISTRIBUTIONS | ({"tomli"} if sys.version_info < (3, 11) else set()) and len(found) <= 10


def test_the_wheel_runs_what_it_compiled(installed: Path) -> None:
    """The compiled schema and templates are the ones pipegen uses, not compiled again in every run."""
    probe = ("from pipegen.buildkite import schema, compiled_schema; from pipegen.render import templates; "
             "assert compiled_schema.STAMP == schema.stamp(); assert schema.validator() is compiled_schema.validate; "
             "print(type(templates._builtin_loader()).__name__)")
    result = subprocess.run([str(installed / "bin" / "python"), "-c", probe], cwd=installed, capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == "ModuleLoader", result.stderr


def test_every_subcommand_is_tried() -> None:
    assert set(INVOCATIONS) == set(cli.commands), "add the new subcommand to INVOCATIONS"


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("clone") / "pipegen"
    git(ROOT.parent, "clone", "--quiet", "--no-hardlinks", str(ROOT), str(target))
    return target


def _pipegen(installed: Path, clone: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("PIPEGEN_", "BUILDKITE")) and name != "CI"}
    return subprocess.run([str(installed / "bin" / "pipegen"), *args], cwd=clone, env=env,
                          capture_output=True, text=True, timeout=120)


def test_installed_pipegen_is_the_wheel(installed: Path, clone: Path) -> None:
    result = subprocess.run([str(installed / "bin" / "python"), "-c", "import pipegen; print(pipegen.__file__)"],
                            cwd=clone.parent, capture_output=True, text=True, check=True)
    assert Path(result.stdout.strip()).is_relative_to(_site_packages(installed))
    version = _pipegen(installed, clone, "--version")
    assert version.returncode == 0 and "0.1.0" in version.stdout


@pytest.mark.parametrize("command", sorted(INVOCATIONS))
def test_subcommand_runs_from_the_install(installed: Path, clone: Path, command: str) -> None:
    result = _pipegen(installed, clone, *INVOCATIONS[command])
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode in (0, 1), result.stderr
    assert result.stdout.strip(), f"pipegen {command} printed nothing"
