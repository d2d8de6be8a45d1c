"""Changed-file lists as tools write them: git's quoting, -z, a byte-order mark, UTF-16, CRLF, Windows
paths. Each is read as the path it names, or refused, or warned about by name; never dropped silently."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipegen.cli import cli
from pipegen.errors import UsageError
from pipegen.selection.file_list import read_list, unquote

from ..helpers import IDENTITY, commit_files, git, git_repo


def paths(data: bytes) -> list[str]:
    return [item.path for item in read_list(data, "-")]


def test_git_quoting_is_decoded_as_git_writes_it():
    assert paths(b'"caf\\303\\251.py"\n') == ["café.py"]
    assert paths(b'"a\\tb\\nc \\"d\\" \\\\e \\a\\b\\v\\f\\r \\177"\n') == ['a\tb\nc "d" \\e \x07\x08\x0b\x0c\r \x7f']
    assert paths(b'plain name.py\n') == ["plain name.py"]  # git does not quote spaces
    assert unquote(b'"\\377"') == "\udcff"  # a byte that is no UTF-8 survives as it is
    for invalid in (b'"a', b'"a\\q"', b'"a"b"', b'"\\4000"', b'"a\\"'):
        assert unquote(invalid) is None, invalid


def test_a_line_git_could_not_have_written_is_refused_naming_it():
    with pytest.raises(UsageError, match=r"line 2: '\"src/\\\\q\"' is not a path as git quotes it"):
        read_list(b'src/a.py\n"src/\\q"\n', "-")


def test_bom_utf16_crlf_and_windows_separators():
    assert paths(b"\xef\xbb\xbfsrc/a.py\r\nsrc/b.py\r\n") == ["src/a.py", "src/b.py"]
    assert paths("src\\pkg\\x.py\r\n".encode("utf-16")) == ["src/pkg/x.py"]  # Windows PowerShell's `>`
    assert paths("src/a.py\n".encode("utf-8-sig")) == ["src/a.py"]
    assert paths(b"a\\b.py\0c.py\0") == ["a\\b.py", "c.py"]  # -z: git quotes nothing, a backslash is a name's
    assert paths(b"x\xe2\x80\xa8y.py\n") == ["x\u2028y.py"]  # only \n ends a line (core.quotePath=false output)


CONFIG = "steps: [.buildkite/steps.yaml]\nbase_branch: main\n"
STEPS = """\
steps:
- {label: Src, key: src, commands: [make], source_file_dependencies: [src/]}
- {label: Docs, key: docs, commands: [make], source_file_dependencies: [doc/]}
"""


@pytest.fixture
def repo(tmp_path):
    return git_repo(tmp_path / "r", {".buildkite/pipegen.yaml": CONFIG, ".buildkite/steps.yaml": STEPS,
                                     "src/a.py": "", "src/gone.py": "", "doc/i.md": "", "README": ""})


def select(root, data: bytes, *args: str):
    return CliRunner().invoke(cli, ["select", "--root", str(root), "--format", "json", "--files-from", "-", *args],
                              input=data, env={"PIPEGEN_CACHE_DIR": ""})


def test_the_documented_pipe_selects_a_step_for_a_quoted_path(repo):
    # The documented pipe (docs/reference/selection.md) dropped any path git quotes: the step watching it did not run, and nothing was said.
    git(repo, "checkout", "-q", "-b", "feature")
    commit_files(repo, {"src/café\t\"x\".py": ""})
    shell = f"git diff --name-only --no-renames main...HEAD | {sys.executable} -m pipegen select --format json " \
            "--files-from -"
    done = subprocess.run(["bash", "-c", shell], cwd=repo, capture_output=True, text=True,
                          env={**os.environ, **IDENTITY, "PIPEGEN_CACHE_DIR": ""})
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["changed_files"] == ['src/café\t"x".py'] and data["warnings"] == [] and "WARNING" not in done.stderr
    assert {s["key"]: s["action"] for s in data["steps"]} == {"src": "run", "docs": "block"}


def test_a_path_that_names_nothing_is_a_warning_naming_it(repo):
    git(repo, "rm", "-q", "src/gone.py")
    result = select(repo, "src\\a.py\r\nsrc/gone.py\r\nREADME\r\nsrc/new.py\r\nC:\\work\\r\\x.py\r\nnowhere/y.py\r\n"
                          .encode("utf-16"))
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["changed_files"] == ["src/a.py", "src/gone.py", "README", "src/new.py", "C:/work/r/x.py",
                                     "nowhere/y.py"]
    # A tracked file, a deleted one, one a step's entry matches: known. The last two name nothing.
    unknown = [w for w in data["warnings"] if "names no tracked file" in w]
    assert len(unknown) == 1 and "'C:\\\\work\\\\r\\\\x.py'" in unknown[0] and "'nowhere/y.py'" in unknown[0]
    assert "README" not in unknown[0] and "WARNING: --files-from" in result.stderr


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(names=st.lists(st.text(st.characters(blacklist_characters="/\0", blacklist_categories=("Cs",)),
                              min_size=1, max_size=12).filter(lambda n: n not in (".", "..", ".git")
                                                              and len(n.encode()) < 200),
                      min_size=1, max_size=5, unique=True),
       folders=st.lists(st.sampled_from(["src", "doc", "other"]), min_size=5, max_size=5),
       quote_path=st.booleans())
def test_the_pipe_and_z_decide_as_the_direct_diff(tmp_path_factory, names, folders, quote_path):
    root = git_repo(tmp_path_factory.mktemp("names") / "r",
                    {".buildkite/pipegen.yaml": CONFIG, ".buildkite/steps.yaml": STEPS, "src/a.py": ""})
    git(root, "config", "core.quotePath", str(quote_path).lower())
    git(root, "checkout", "-q", "-b", "feature")
    commit_files(root, {f"{folder}/{name}": "x" for folder, name in zip(folders, names, strict=False)})
    direct = CliRunner().invoke(cli, ["select", "--root", str(root), "--format", "json", "--base", "main"],
                                env={"PIPEGEN_CACHE_DIR": ""})
    assert direct.exit_code == 0, direct.output
    expected = json.loads(direct.stdout)
    for z in ([], ["-z"]):
        listed = subprocess.run(["git", "diff", *z, "--name-only", "--no-renames", "main...HEAD"], cwd=root,
                                capture_output=True, check=True).stdout
        result = select(root, listed)
        assert result.exit_code == 0, result.output
        got = json.loads(result.stdout)
        assert sorted(got["changed_files"]) == sorted(expected["changed_files"]), z
        assert got["steps"] == expected["steps"] and got["warnings"] == expected["warnings"], z
