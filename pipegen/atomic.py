"""Writes that either happen whole or not at all: every file and folder pipegen writes goes through here.

A file is written to a temporary name in its own folder, flushed to disk, then renamed over the target:
a reader, an interrupt (Ctrl-C, SIGKILL) or a full disk sees the old content or the new, never a part.
A link at the target is replaced, never followed: nothing outside the named path is written.
A folder is built whole beside its target, then swapped in with one rename (Linux's
renameat2(RENAME_EXCHANGE); elsewhere two renames, undone on failure). A failure removes what was built,
leaves the old folder byte-identical and a new one absent; the temporary folder a killed process left is
removed by the next replace beside it. A read-only file is refused, not replaced (as `cp` refuses it). Every
OSError names the target, not a temporary file (a full disk's error has no file name of its own).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import sys
from collections.abc import Iterator, Mapping

__all__ = ["replace_folder", "write_bytes", "write_text"]


def write_text(path: str, text: str, *, durable: bool = True, mode: int | None = None) -> None:
    """Replace the file at `path` with `text` (UTF-8). `durable`: flushed to disk before the rename
    (caches, verified when read, skip it). `mode`: the new file's permissions; by default an existing
    file's, else 0o666 less the umask. The folder must exist."""
    write_bytes(path, text.encode("utf-8"), durable=durable, mode=mode)


def write_bytes(path: str, data: bytes, *, durable: bool = True, mode: int | None = None) -> None:
    """Replace the file at `path` with `data`; see write_text. A read-only file is refused, as `cp` refuses
    it: one no one may write is refused whoever runs pipegen (root too), since it was marked so on purpose."""
    folder = os.path.dirname(path) or "."
    with _naming(path):
        _refuse_read_only(path)
        if mode is None:
            mode = _kept_mode(path)
        temporary = _write_new(folder, f".{os.path.basename(path)}.", data, durable, mode)
        try:
            os.replace(temporary, path)  # replaces a link itself: its target is never written
        except BaseException:
            _remove(temporary)
            raise
        if durable:
            _sync_folder(folder)


def replace_folder(target: str, files: Mapping[str, str | bytes]) -> None:
    """Make `target` a folder holding exactly `files` (relative path -> content; text as UTF-8), its
    missing parents created. The old folder is replaced whole, or left byte-identical on any failure;
    a link at `target` is refused (ELOOP), never followed."""
    parent = os.path.dirname(os.path.abspath(target))
    with _naming(target):
        if os.path.islink(target):
            raise OSError(errno.ELOOP, "is a link; pipegen replaces only a real folder", target)
        if os.path.lexists(target) and not os.path.isdir(target):
            raise NotADirectoryError(errno.ENOTDIR, "is not a folder", target)
        if os.path.isdir(target) and not os.access(target, os.W_OK | os.X_OK):  # read-only: kept so
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), target)
        os.makedirs(parent, exist_ok=True)
        _remove_stale(parent, os.path.basename(target))
        built = _new_folder(parent, _prefix(target), _kept_mode(target, folder=True))
        try:
            _fill(built, files)
            old = _swap_in(built, target)
        except BaseException:
            _rmtree(built)
            raise
        _sync_folder(parent)
        if old:
            _rmtree(old)


def _fill(built: str, files: Mapping[str, str | bytes]) -> None:
    """Write every file under `built`, each flushed; then the folders that name them."""
    folders = {built}
    for name, content in files.items():
        parts = name.replace(os.sep, "/").split("/")
        if os.path.isabs(name) or any(p in ("", ".", "..") for p in parts):
            raise OSError(errno.EINVAL, f"not a plain relative path: {name!r}", name)
        folder = os.path.join(built, *parts[:-1])
        os.makedirs(folder, exist_ok=True)
        folders.update(os.path.join(built, *parts[:i]) for i in range(1, len(parts)))
        data = content.encode("utf-8") if isinstance(content, str) else content
        _write_at(os.path.join(folder, parts[-1]), data, durable=True, mode=None)
    for folder in folders:
        _sync_folder(folder)


def _swap_in(built: str, target: str) -> str | None:
    """Put `built` at `target`; the old folder's new name (to remove), None when there was none."""
    if not os.path.lexists(target):
        os.rename(built, target)
        return None
    if _exchange(built, target):
        return built
    aside = _new_name(os.path.dirname(built), _prefix(target, "old."))
    os.rename(target, aside)
    try:
        os.rename(built, target)
    except BaseException:
        os.rename(aside, target)
        raise
    return aside


def _exchange(first: str, second: str) -> bool:
    """Swap two paths in one step (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    function = getattr(libc, "renameat2", None)
    if function is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    if function(at_fdcwd, os.fsencode(first), at_fdcwd, os.fsencode(second), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):  # the file system cannot: two renames instead
        return False
    raise OSError(code, os.strerror(code), second)


def _write_new(folder: str, prefix: str, data: bytes, durable: bool, mode: int | None) -> str:
    """A new temporary file in `folder` holding `data`; its path."""
    for _ in range(100):
        path = os.path.join(folder, prefix + os.urandom(4).hex() + ".tmp")
        try:
            _write_at(path, data, durable, mode)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(errno.EEXIST, "no free temporary name", folder)


def _write_at(path: str, data: bytes, durable: bool, mode: int | None) -> None:
    """Create `path` (never an existing file or link) holding `data`, with `mode` (None: 0o666 less
    the umask); removed again on any failure."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                 0o600 if mode is not None else 0o666)
    try:
        with open(fd, "wb", closefd=True) as handle:  # owns fd from here: closed on any failure below
            if mode is not None:
                os.fchmod(fd, mode)
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
    except BaseException:
        _remove(path)
        raise


def _new_folder(parent: str, prefix: str, mode: int | None) -> str:
    for _ in range(100):
        path = os.path.join(parent, prefix + os.urandom(4).hex() + ".tmp")
        try:
            os.mkdir(path, 0o700 if mode is not None else 0o777)
        except FileExistsError:
            continue
        try:
            if mode is not None:
                os.chmod(path, mode)
        except BaseException:
            os.rmdir(path)
            raise
        return path
    raise FileExistsError(errno.EEXIST, "no free temporary name", parent)


def _prefix(target: str, kind: str = "") -> str:
    """A temporary folder's name up to its random part: `.NAME.[old.]PID-`, so that a later run can tell one a
    killed process left (_remove_stale) from one a running process is building."""
    return f".{os.path.basename(target)}.{kind}{os.getpid()}-"


def _remove_stale(parent: str, name: str) -> None:
    """Remove the temporary folders beside `name` that a process no longer running left (SIGKILL, a power cut):
    a real folder of this user's, named as _prefix names them, whose process is gone."""
    stale = re.compile(rf"\.{re.escape(name)}\.(?:old\.)?(\d+)-[0-9a-f]{{8}}\.tmp\Z")
    with contextlib.suppress(OSError), os.scandir(parent) as entries:
        for entry in entries:
            found = stale.match(entry.name)
            if found and entry.is_dir(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_uid == \
                    os.geteuid() and not _running(int(found.group(1))):
                _rmtree(entry.path)


def _rmtree(path: str) -> None:
    import shutil  # imported here: a file write (each cache entry, each command's output) does not need it

    shutil.rmtree(path, ignore_errors=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):  # another user's process: running
        return True
    return True


def _refuse_read_only(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        info = os.lstat(path)
        if stat.S_ISREG(info.st_mode) and (not info.st_mode & 0o222 or not os.access(path, os.W_OK)):
            raise PermissionError(errno.EACCES, "is read-only; pipegen replaces only a file it may write", path)


def _new_name(parent: str, prefix: str) -> str:
    """A name in `parent` nothing holds now (for the moment the old folder is set aside)."""
    while True:
        path = os.path.join(parent, prefix + os.urandom(4).hex() + ".tmp")
        if not os.path.lexists(path):
            return path


def _kept_mode(path: str, folder: bool = False) -> int | None:
    """The permissions of what `path` holds (a regular file or folder, not a link); None when nothing."""
    with contextlib.suppress(OSError):
        info = os.lstat(path)
        if stat.S_ISDIR(info.st_mode) if folder else stat.S_ISREG(info.st_mode):
            return stat.S_IMODE(info.st_mode)
    return None


def _sync_folder(folder: str) -> None:
    """Flush a folder's entries (the rename) to disk; not every platform or file system can."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.remove(path)


@contextlib.contextmanager
def _naming(path: str) -> Iterator[None]:
    """Any OSError names `path`: the user's file, not a temporary name or None (a full disk's write)."""
    try:
        yield
    except OSError as exc:
        if exc.filename == path:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), path) from exc
