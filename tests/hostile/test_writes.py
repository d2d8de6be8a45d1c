"""Every write is whole or absent: interrupted (an exception at any point, SIGINT, SIGKILL) or out of space,
the old file or folder stays byte-identical, a fresh one absent, and no temporary file is left behind."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipegen import atomic
from tests.helpers import RENDER_STEPS, invoke, render, render_repo


def tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` (hidden ones too) with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


OLD = {"a.yaml": b"steps: [old a]\n", "sub/b.yaml": b"steps: [old b]\n", "gone.yaml": b"kept only by the old\n"}
NEW = {"a.yaml": "steps: [new a]\n", "sub/b.yaml": "steps: [new b]\n", "c.yaml": "steps: [new c]\n"}


def plant(folder: Path) -> dict[str, bytes]:
    for name, data in OLD.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return tree(folder)


def test_write_text_replaces_whole_and_keeps_the_mode(tmp_path: Path) -> None:
    path = tmp_path / "out.md"
    path.write_text("old")
    path.chmod(0o640)
    atomic.write_text(str(path), "new ✓\n")
    assert path.read_text(encoding="utf-8") == "new ✓\n"
    assert path.stat().st_mode & 0o777 == 0o640
    assert tree(tmp_path) == {"out.md": "new ✓\n".encode()}


def test_a_link_at_the_target_is_replaced_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("not pipegen's")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pipegen.yaml").symlink_to(outside)
    atomic.write_text(str(repo / "pipegen.yaml"), "written")
    assert outside.read_text() == "not pipegen's"
    assert not (repo / "pipegen.yaml").is_symlink() and (repo / "pipegen.yaml").read_text() == "written"


@pytest.mark.parametrize("failing", ["write", "fsync", "replace"])
def test_a_full_disk_leaves_the_old_file_and_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      failing: str) -> None:
    path = tmp_path / "junit.xml"
    path.write_bytes(b"<old/>")

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")  # as a write reports it: no file name

    if failing == "write":
        monkeypatch.setattr(atomic, "open", lambda fd, *a, **k: _FullFile(fd), raising=False)
    else:
        monkeypatch.setattr(os, failing, full)
    with pytest.raises(OSError) as caught:
        atomic.write_bytes(str(path), b"<new/>")
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(path)
    assert tree(tmp_path) == {"junit.xml": b"<old/>"}


class _FullFile:
    """A file whose every write fails as on a full disk."""

    def __init__(self, fd: int):
        self.fd = fd

    def __enter__(self) -> _FullFile:
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)

    def write(self, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")


def test_replace_folder_replaces_whole(tmp_path: Path) -> None:
    steps = tmp_path / "steps"
    steps.mkdir()
    plant(steps)
    atomic.replace_folder(str(steps), NEW)
    assert tree(tmp_path) == {f"steps/{k}": v.encode() for k, v in NEW.items()}


def test_a_fresh_folder_and_its_parents_are_made(tmp_path: Path) -> None:
    atomic.replace_folder(str(tmp_path / "out" / "steps"), {"x.yaml": b"x"})
    assert tree(tmp_path) == {"out/steps/x.yaml": b"x"}


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two-renames"])
@settings(max_examples=60, deadline=None)
@given(fail_at=st.integers(0, 32), fresh=st.booleans(), error=st.sampled_from([KeyboardInterrupt, OSError]))
def test_a_failure_anywhere_leaves_the_old_folder_byte_identical(
        tmp_path_factory: pytest.TempPathFactory, exchange: bool, fail_at: int, fresh: bool,
        error: type[BaseException]) -> None:
    """The n-th file-system call fails (Ctrl-C or a full disk): the folder is as before, or it is
    entirely the new one when the failure came after the swap; never a mix, never a leftover."""
    root = tmp_path_factory.mktemp("w")
    steps = root / "steps"
    if not fresh:
        steps.mkdir()
    before = {} if fresh else plant(steps)
    calls = [0]
    patched = {name: getattr(os, name) for name in ("open", "mkdir", "makedirs", "rename", "fsync", "chmod")}

    def failing(name: str):  # type: ignore[no-untyped-def]
        def call(*args: object, **kwargs: object) -> object:
            calls[0] += 1
            if calls[0] == fail_at + 1:
                raise error(errno.ENOSPC, "No space left on device") if error is OSError else error()
            return patched[name](*args, **kwargs)
        return call

    with pytest.MonkeyPatch.context() as mp:
        for name in patched:
            mp.setattr(os, name, failing(name))
        if not exchange:
            mp.setattr(atomic, "_exchange", lambda first, second: False)
        try:
            atomic.replace_folder(str(steps), NEW)
            failed = False
        except (KeyboardInterrupt, OSError) as exc:
            failed = True
            assert not isinstance(exc, OSError) or exc.filename == str(steps)
    after = tree(steps) if steps.exists() else {}
    new = {k: v.encode() for k, v in NEW.items()}
    assert after == new or (failed and after == before)
    if after == before:  # nothing built is left; after the swap, an interrupted clean-up may leave the old folder
        assert [p.name for p in root.iterdir()] == ([] if fresh else ["steps"])


def test_a_link_or_a_read_only_folder_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "steps").symlink_to(elsewhere)
    with pytest.raises(OSError) as caught:
        atomic.replace_folder(str(tmp_path / "steps"), NEW)
    assert caught.value.errno == errno.ELOOP and caught.value.filename == str(tmp_path / "steps")
    assert (tmp_path / "steps").is_symlink() and not any(elsewhere.iterdir())
    frozen = tmp_path / "frozen"
    frozen.mkdir()
    before = plant(frozen)
    frozen.chmod(0o555)
    try:
        if not os.access(frozen, os.W_OK):  # root writes anywhere
            with pytest.raises(PermissionError):
                atomic.replace_folder(str(frozen), NEW)
            assert tree(frozen) == before
    finally:
        frozen.chmod(0o755)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_a_real_process_killed_mid_write_leaves_the_old_folder(tmp_path: Path, sig: signal.Signals) -> None:
    """A process writing 200 files is killed after the 100th: steps/ is still the old one."""
    steps = tmp_path / "steps"
    steps.mkdir()
    before = plant(steps)
    script = textwrap.dedent(f"""
        import os, sys, time
        from pipegen import atomic
        written = [0]
        real = atomic._write_at
        def slow(*args, **kwargs):
            real(*args, **kwargs)
            written[0] += 1
            if written[0] == 100:
                print("half", flush=True)
                time.sleep(60)
        atomic._write_at = slow
        atomic.replace_folder({str(steps)!r}, {{f"s{{i}}.yaml": "x" * 100 for i in range(200)}})
    """)
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    assert process.stdout is not None and process.stdout.readline() == "half\n"
    process.send_signal(sig)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode != 0
    assert tree(tmp_path) == {f"steps/{k}": v for k, v in before.items()} or sig == signal.SIGKILL
    assert tree(steps) == before
    if sig == signal.SIGINT:  # Python's KeyboardInterrupt: the temporary folder is removed on the way out
        assert "KeyboardInterrupt" in stderr and [p.name for p in tmp_path.iterdir()] == ["steps"]
    else:  # the killed process's folder is left; the next replace removes it, not one a live process builds
        building = tmp_path / f".steps.{os.getppid()}-0123abcd.tmp"
        building.mkdir()
        assert len(list(tmp_path.iterdir())) == 3
        atomic.replace_folder(str(steps), NEW)
        assert sorted(p.name for p in tmp_path.iterdir()) == [building.name, "steps"]


def test_a_read_only_file_is_refused_not_replaced(tmp_path: Path) -> None:
    """As `cp` refuses it; a file no one may write is refused whoever runs pipegen, root included."""
    repo = render_repo(tmp_path, RENDER_STEPS)
    note = tmp_path / "why.md"
    note.write_text("kept\n")
    note.chmod(0o444)
    with pytest.raises(PermissionError) as caught:
        atomic.write_text(str(note), "new")
    assert caught.value.filename == str(note)
    result = render(repo, "--annotation", str(note))
    assert result.exit_code == 2 and f"cannot write --annotation {note}: " in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and note.read_text() == "kept\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".why.md")] == []


# --------------------------------------------------------------------------- the files pipegen's commands write


def test_a_full_disk_keeps_the_old_annotation_and_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = render_repo(tmp_path, RENDER_STEPS)
    note = tmp_path / "why.md"
    note.write_text("the previous build's annotation\n")
    monkeypatch.setattr(os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space left on device")))
    result = render(repo, "--annotation", str(note))
    assert result.exit_code == 2 and f"cannot write --annotation {note}: No space left on device" in result.stderr
    assert "None" not in result.stderr and "Traceback" not in result.stderr
    assert tree(tmp_path).get("why.md") == b"the previous build's annotation\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".why.md")] == []  # no temporary left
    monkeypatch.undo()
    link = tmp_path / "linked.md"
    link.symlink_to(note)
    assert render(repo, "--annotation", str(link)).exit_code == 0
    assert note.read_text() == "the previous build's annotation\n" and not link.is_symlink()  # the link replaced


def test_ctrl_c_exits_130_with_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipegen.commands import select

    def interrupted(*args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(select, "main", interrupted)
    result = invoke(render_repo(tmp_path, RENDER_STEPS), "select", files="")
    assert result.exit_code == 130 and result.stderr == "pipegen: interrupted\n"


def test_ctrl_c_of_a_real_pipegen_exits_130(tmp_path: Path) -> None:
    """SIGINT to a pipegen process in the middle of a command (held there by a stand-in)."""
    repo = render_repo(tmp_path, RENDER_STEPS)
    script = ("import sys, time\nfrom pipegen.commands import select\n"
              "def held(*args):\n    print('ready', flush=True)\n    time.sleep(60)\n"
              "select.main = held\nfrom pipegen.cli import main\n"
              f"sys.argv = ['pipegen', 'select', '--root', {str(repo)!r}, '--files-from', '-']\nmain()\n")
    process = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline() == "ready\n"
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130 and stderr == "pipegen: interrupted\n"
