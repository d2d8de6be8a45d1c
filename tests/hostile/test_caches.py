"""Caches hold data, never code: a planted entry of any format pipegen ever used (pickle, marshal, Jinja's
bytecode) never runs, and an altered, foreign or loosely writable entry never changes a decision.

Every test plants into the cache folder a real `select`, `render` or `check` uses, then compares that
command's output with a run without a cache; a planted payload would create MARKER if it ever ran."""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import pickle
import shutil
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import pipegen.cache
from pipegen.cli import cli
from pipegen.graph import scan_cache
from tests.check.test_check_output import uncovered_repo
from tests.helpers import CLI_CONFIG, CLI_STEPS, check

CHANGED = "src/core/a.py\n"  # runs core (src/core/) and lint; a cached "srX/" would drop core


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "repo" / ".buildkite" / "steps").mkdir(parents=True)
    (tmp_path / "repo" / ".buildkite" / "pipegen.yaml").write_text(CLI_CONFIG)
    (tmp_path / "repo" / ".buildkite" / "steps" / "tests.yaml").write_text(CLI_STEPS)
    return tmp_path / "repo"


def cli_run(repo: Path, cache: Path | str, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [*args, "--root", str(repo), "--files-from", "-"], input=CHANGED,
                                env={"PIPEGEN_CACHE_DIR": str(cache)})
    return result.exit_code, result.stdout


class Plant:
    """A pickle that writes `marker` when it is loaded: what an attacker would leave."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return exec, (f"open({str(self.marker)!r}, 'w').write('ran')",)


def planted_code(marker: Path) -> bytes:
    """A marshalled code object that writes `marker` and would turn schema checking off."""
    return marshal.dumps(compile(f"open({str(marker)!r}, 'w').write('ran')\ndef validate(data):\n    return data\n",
                                 "<planted>", "exec"))


def entries(cache: Path) -> list[Path]:
    return sorted(p for p in cache.rglob("*") if p.is_file())


def reseal(entry: Path, change: bytes, to: bytes) -> None:
    """Alter an entry's content and write a matching hash, as someone with write access to it could."""
    header, key, _, content = entry.read_bytes().split(b"\n", 3)
    content = content.replace(change, to)
    entry.write_bytes(b"\n".join((header, key, hashlib.sha256(content).hexdigest().encode(), content)))


@pytest.mark.parametrize("command", ["select", "render"])
def test_planted_pickles_marshal_and_bytecode_never_run(repo: Path, tmp_path: Path, command: str) -> None:
    baseline = cli_run(repo, "", command)
    cache, marker = tmp_path / "cache", tmp_path / "MARKER"
    assert cli_run(repo, cache, command) == baseline  # fills the cache: its entry names are now known
    evil = pickle.dumps((Plant(marker), Plant(marker)))
    for entry in entries(cache):  # every entry, under its own valid key and hash, holding a pickle
        header, key = entry.read_bytes().split(b"\n")[:2]
        entry.write_bytes(b"\n".join((header, key, hashlib.sha256(evil).hexdigest().encode(), evil)))
        (entry.parent / (entry.stem + ".pickle")).write_bytes(evil)  # and where pipegen kept pickles before
    (cache / "jinja").mkdir()
    for name in ("pipeline.j2", "step.j2", "command.j2", "block.j2"):  # Jinja's bytecode cache files
        (cache / "jinja" / f"__jinja2_{hashlib.sha1(name.encode()).hexdigest()}.cache").write_bytes(
            b"j2" + evil + planted_code(marker))
    digest = hashlib.sha256((Path(pipegen.__file__).parent / "buildkite" / "buildkite-pipeline-schema.json").read_bytes())
    (cache / f"buildkite-schema-{digest.hexdigest()[:16]}-cpython-311-2.22.3-2.marshal").write_bytes(planted_code(marker))
    for _ in range(2):
        assert cli_run(repo, cache, command) == baseline
    assert not marker.exists()


def test_a_planted_schema_cannot_turn_validation_off(repo: Path, tmp_path: Path) -> None:
    """The old marshal cache's attack: a planted validate() that accepts anything. Invalid output still fails."""
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    for name in ("buildkite-schema.marshal", "compiled_schema.py", "compiled_schema.pyc"):
        (cache / name).write_bytes(planted_code(tmp_path / "MARKER"))
    templates = tmp_path / "tpl"
    templates.mkdir()
    (templates / "command.j2").write_text("- label: {{ item.label }}\n  key: {{ item.key }}\n  bogus_field: 1\n"
                                          "  command: {{ item.commands | join(' && ') }}\n")
    status, out = cli_run(repo, cache, "render", "--templates", str(templates))
    assert status == 1 and out == "" and not (tmp_path / "MARKER").exists()


def test_altered_content_with_a_valid_key_is_a_miss(repo: Path, tmp_path: Path) -> None:
    baseline = cli_run(repo, "", "select")
    cache = tmp_path / "cache"
    cli_run(repo, cache, "select")
    for entry in entries(cache):  # `src/` -> `srX/` behind the intact header: core would no longer run
        entry.write_bytes(entry.read_bytes().replace(b"src/", b"srX/"))
    assert cli_run(repo, cache, "select") == baseline


@pytest.mark.parametrize("how", ["group-writable", "world-writable", "another user's", "a link"])
def test_an_entry_anyone_else_could_have_written_is_ignored(repo: Path, tmp_path: Path, how: str) -> None:
    baseline = cli_run(repo, "", "select")
    cache = tmp_path / "cache"
    cli_run(repo, cache, "select")
    for entry in entries(cache):
        reseal(entry, b"src/", b"srX/")  # a consistent entry: only who could write it gives it away
        if how == "another user's":
            if os.geteuid() != 0:
                pytest.skip("changing a file's owner needs root")
            os.chown(entry, 12345, 12345)
            entry.chmod(0o600)
        elif how == "a link":
            aside = entry.with_suffix(".aside")
            entry.rename(aside)
            entry.symlink_to(aside)
        else:
            entry.chmod(0o620 if how == "group-writable" else 0o602)
    assert cli_run(repo, cache, "select") == baseline


def test_a_cache_folder_owned_by_another_user_is_not_used(repo: Path, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("changing a folder's owner needs root")
    baseline = cli_run(repo, "", "select")
    cache = tmp_path / "cache"
    cli_run(repo, cache, "select")
    for entry in entries(cache):
        reseal(entry, b"src/", b"srX/")
    for folder in (cache, *[p for p in cache.rglob("*") if p.is_dir()]):
        os.chown(folder, 12345, 12345)
    before = {p: p.read_bytes() for p in entries(cache)}
    assert cli_run(repo, cache, "select") == baseline
    assert {p: p.read_bytes() for p in entries(cache)} == before  # nothing read, nothing written there


def test_the_cache_is_private_under_a_loose_umask(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    old = os.umask(0o002)
    try:
        cli_run(repo, cache, "select")
    finally:
        os.umask(old)
    folders = [cache, *[p for p in cache.rglob("*") if p.is_dir()]]
    assert {stat.S_IMODE(p.stat().st_mode) for p in folders} == {0o700}
    assert entries(cache) and {stat.S_IMODE(p.stat().st_mode) for p in entries(cache)} == {0o600}


def test_a_folder_of_ours_made_loose_is_made_private_again(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "xdg" / "pipegen"  # pipegen's own folder under the XDG cache
    cache.mkdir(parents=True)
    cache.chmod(0o777)  # an older pipegen under umask 002
    baseline = cli_run(repo, "", "select")
    result = CliRunner().invoke(cli, ["select", "--root", str(repo), "--files-from", "-"], input=CHANGED,
                                env={"PIPEGEN_CACHE_DIR": None, "XDG_CACHE_HOME": str(tmp_path / "xdg")})
    assert (result.exit_code, result.stdout) == baseline and entries(cache)
    assert stat.S_IMODE(cache.stat().st_mode) & 0o077 == 0


def test_a_loose_folder_the_user_named_is_not_used_and_left_as_it_is(repo: Path, tmp_path: Path) -> None:
    """$PIPEGEN_CACHE_DIR names the user's folder: pipegen does not chmod it; others may write it, so it runs
    without a cache and says why, once."""
    cache = tmp_path / "shared-cache"
    cache.mkdir()
    cache.chmod(0o777)
    baseline = cli_run(repo, "", "select")
    result = CliRunner().invoke(cli, ["select", "--root", str(repo), "--files-from", "-"], input=CHANGED,
                                env={"PIPEGEN_CACHE_DIR": str(cache)})
    assert (result.exit_code, result.stdout) == baseline
    assert stat.S_IMODE(cache.stat().st_mode) == 0o777 and not any(cache.iterdir())
    assert result.stderr.count(f"WARNING: PIPEGEN_CACHE_DIR '{cache}' is writable by others") == 1, result.stderr
    assert f"fix: chmod go-w '{cache}'" in result.stderr


def test_a_fifo_or_a_huge_entry_is_a_miss_not_a_hang(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    baseline = cli_run(repo, "", "select")
    cache = tmp_path / "cache"
    cli_run(repo, cache, "select")
    for entry in entries(cache):
        entry.unlink()
        os.mkfifo(entry, 0o600)  # a read would block forever
    assert cli_run(repo, cache, "select") == baseline  # and the entries are written again, as files
    assert all(stat.S_ISREG(p.lstat().st_mode) for p in entries(cache))
    monkeypatch.setattr(pipegen.cache, "MAX_BYTES", 10)
    assert cli_run(repo, cache, "select") == baseline  # nothing fits: every entry is a miss


def test_import_scans_altered_planted_or_pickled_never_change_check(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    root = uncovered_repo(tmp_path)
    monkeypatch.setenv("PIPEGEN_CACHE_DIR", "")
    expected = check(root)
    cache = tmp_path / "cache"
    monkeypatch.setenv("PIPEGEN_CACHE_DIR", str(cache))
    assert check(root) == expected
    kept = cache / "check"  # check's kept reports: removed before each run, so that the scans are read
    entry = cache / "import-scans.json"
    scans = json.loads(pipegen.cache.load(str(entry), scan_cache.KEY) or b"")
    scans["scans"] = {sha: [] for sha in scans["scans"]}  # no imports anywhere: nothing would be uncovered
    forged = json.dumps(scans).encode()
    entry.write_bytes(pipegen.cache.MAGIC + scan_cache.KEY.encode() + b"\n" + b"0" * 64 + b"\n" + forged)
    shutil.rmtree(kept)
    assert check(root) == expected  # the hash does not match
    entry.write_bytes(pickle.dumps(Plant(tmp_path / "MARKER")))
    shutil.rmtree(kept)
    assert check(root) == expected and not (tmp_path / "MARKER").exists()


@pytest.mark.parametrize("how", ["altered", "resealed, group-writable", "resealed, a link", "a pickle"])
def test_a_kept_check_report_altered_planted_or_foreign_never_changes_check(tmp_path: Path, how: str) -> None:
    root = uncovered_repo(tmp_path)
    args = ["check", "--root", str(root)]
    expected = CliRunner().invoke(cli, args, env={"PIPEGEN_CACHE_DIR": ""}).output
    cache = tmp_path / "cache"
    assert CliRunner().invoke(cli, args, env={"PIPEGEN_CACHE_DIR": str(cache)}).output == expected
    [entry] = entries(cache / "check")
    if how == "altered":  # no finding left, behind the intact header
        entry.write_bytes(entry.read_bytes().replace(b"import-not-covered", b"import-not-cavered"))
    elif how == "a pickle":
        evil = pickle.dumps(Plant(tmp_path / "MARKER"))
        header, key = entry.read_bytes().split(b"\n")[:2]
        entry.write_bytes(b"\n".join((header, key, hashlib.sha256(evil).hexdigest().encode(), evil)))
    else:
        reseal(entry, b"import-not-covered", b"import-not-cavered")
        if how.endswith("link"):
            aside = entry.with_suffix(".aside")
            entry.rename(aside)
            entry.symlink_to(aside)
        else:
            entry.chmod(0o620)
    assert CliRunner().invoke(cli, args, env={"PIPEGEN_CACHE_DIR": str(cache)}).output == expected
    assert not (tmp_path / "MARKER").exists()


@settings(max_examples=40, deadline=None)
@given(position=st.integers(0, 10_000), byte=st.integers(0, 255))
def test_any_damaged_byte_is_a_miss(tmp_path_factory: pytest.TempPathFactory, position: int, byte: int) -> None:
    """One byte of an entry changed, anywhere (header, hash or content): never a different value."""
    folder = tmp_path_factory.mktemp("c")
    path = str(folder / "entry")
    content = json.dumps({"steps": [{"key": "core", "paths": ["src/core/"]}] * 20}).encode()
    pipegen.cache.store(path, "key 1", content)
    data = bytearray(Path(path).read_bytes())
    at = position % len(data)
    unchanged = data[at] == byte
    data[at] = byte
    Path(path).write_bytes(bytes(data))
    assert pipegen.cache.load(path, "key 1") == (content if unchanged else None)


def test_a_scan_made_in_this_run_is_reused_for_the_same_blob(tmp_path):
    """Two tracked files of one content are scanned once (the run's own scans pass the well-formed check)."""
    from pipegen.graph.scan_cache import ScanCache

    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text("import os\n")
    scans = ScanCache(str(tmp_path), {"a.py", "b.py"}, {"a.py": "1" * 40, "b.py": "1" * 40})
    assert scans.specs("a.py") == scans.specs("b.py")
    assert scans.added == 1


def test_the_parse_cache_keeps_at_most_its_bound_of_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One entry per file read: each temporary checkout adds some, so past MAX_SLOTS the oldest written go
    (down to 3/4 of it); the newest stays and is read back."""
    from pipegen.declarations import yaml_cache
    from pipegen.declarations.yamlio import load_file

    monkeypatch.setenv("PIPEGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(yaml_cache, "MAX_SLOTS", 8)
    for n in range(20):
        (tmp_path / f"f{n}.yaml").write_text(f"steps: [{n}]\n")
        assert load_file(str(tmp_path / f"f{n}.yaml")) == {"steps": [n]}
    slots = entries(tmp_path / "cache")
    assert 6 <= len(slots) <= 8
    newest, _, cached = yaml_cache.read(str(tmp_path / "f19.yaml"), str(tmp_path / "f19.yaml"), "steps: [19]\n")
    assert cached == {"steps": [19]} and Path(str(newest)) in slots
