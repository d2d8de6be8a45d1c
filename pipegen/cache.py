"""Where pipegen keeps what it parsed or scanned (declaration parses, check's import scans): data, never code.

Trust model: an entry is bytes that pipegen decodes as JSON (never pickle, marshal or exec), and it is used
only when all of these hold, else it is a miss (a slower run, never an error):
- the cache folder is a real folder (not a link) owned by this user and writable by no one else: pipegen
  creates it 0700, makes a folder of its own private again (the default folder or a subfolder, one an
  older pipegen made under umask 002), and uses none owned by anyone else; a folder the user named
  ($PIPEGEN_CACHE_DIR) that others may write is not used, with a warning, and its mode left as it is;
- the entry is a regular file owned by this user, writable by no one else, under MAX_BYTES;
- it holds the key the reader asks for (what the entry was computed from, pipegen's version included) and
  the sha256 of its content, both checked before the content is decoded.
Someone who can write as this user can change anything this user runs; no one else can plant an entry.
Entries are written whole (pipegen.atomic), 0600.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import stat
import sys

from pipegen import atomic

MAGIC = b"pipegen cache 1\n"
MAX_BYTES = 64 << 20  # vLLM's largest entry (import scans) is about 1 MB


def cache_dir() -> str | None:
    """The cache folder: $PIPEGEN_CACHE_DIR ('' = none), else pipegen under the XDG cache."""
    chosen = os.environ.get("PIPEGEN_CACHE_DIR")
    if chosen is not None:
        return chosen or None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pipegen")


def entry_path(*parts: str) -> str | None:
    """The path of an entry under the cache folder (parts: subfolders, then the file name), its folders
    created private; None when there is no cache or a folder on the way is not this user's own."""
    root = cache_dir()
    if not root:
        return None
    folder = os.path.join(root, *parts[:-1])
    named = bool(os.environ.get("PIPEGEN_CACHE_DIR"))  # the user's folder: never chmod-ed
    private = _private(root, ours=not named) and (folder == root or _private(folder))
    return os.path.join(folder, parts[-1]) if private else None


def load(path: str, key: str) -> bytes | None:
    """The content stored at `path` under `key`, verified; None for anything else."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not _own(info) or not stat.S_ISREG(info.st_mode) or info.st_size > MAX_BYTES:
            return None
        with open(fd, "rb", closefd=False) as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    header = MAGIC + key.encode() + b"\n"
    if not data.startswith(header):
        return None
    digest, _, content = data[len(header):].partition(b"\n")
    return content if digest == hashlib.sha256(content).hexdigest().encode() else None


def store(path: str, key: str, content: bytes) -> None:
    """Keep `content` at `path` under `key` (whole, 0600); a failure costs only speed."""
    if "\n" in key:
        raise ValueError("a cache key is one line")
    digest = hashlib.sha256(content).hexdigest().encode()
    with contextlib.suppress(OSError):
        atomic.write_bytes(path, b"".join((MAGIC, key.encode(), b"\n", digest, b"\n", content)), durable=False,
                           mode=0o600)


def prune(folder: str, keep: int) -> int:
    """Past `keep` entries in `folder` (one entry_path made), remove the oldest written down to 3/4 of
    `keep` (the next prune is then many new entries away); a failure costs only speed. Returns the
    entries left (0 when the folder cannot be read)."""
    try:
        with os.scandir(folder) as found:
            files = [entry for entry in found if entry.is_file(follow_symlinks=False)]
        if len(files) <= keep:
            return len(files)
        by_age = sorted(files, key=lambda entry: entry.stat(follow_symlinks=False).st_mtime_ns)
    except OSError:
        return 0
    for entry in by_age[:len(files) - keep * 3 // 4]:
        with contextlib.suppress(OSError):
            os.remove(entry.path)
    return keep * 3 // 4


def _own(info: os.stat_result) -> bool:
    """Owned by this user and writable by no one else."""
    return info.st_uid == os.geteuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _private(folder: str, ours: bool = True) -> bool:
    """`folder` exists (made 0700 if missing), is a real folder, this user's, and no one else can write it.
    `ours`: pipegen's own folder, made private again where it is loose; else a loose one is refused."""
    try:
        try:
            info = os.lstat(folder)
        except FileNotFoundError:
            os.makedirs(folder, mode=0o700)
            info = os.lstat(folder)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            return False
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not ours:
            _refused(folder)
            return False
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):  # ours, made under a loose umask: private from now on
            os.chmod(folder, 0o700)
    except OSError:
        return False
    return True


@functools.cache  # once a run
def _refused(folder: str) -> None:
    sys.stderr.write(f"pipegen: WARNING: PIPEGEN_CACHE_DIR {folder!r} is writable by others: pipegen runs "
                     f"without its cache and leaves the folder as it is\n  fix: chmod go-w {folder!r}, or name "
                     "a folder of your own\n")
