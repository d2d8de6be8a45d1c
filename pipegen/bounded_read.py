"""Reading the files a user names: regular files only, and never more than a bound.

A steps file linked to /dev/zero grew pipegen until the kernel killed it, and
a FIFO in the steps folder blocked it forever. A file is opened without
blocking (a FIFO's open would wait for a writer), checked to be a regular
file, and read up to the bound and one byte more, so a file that grows while
it is read is refused too.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO

from pipegen.errors import DeclarationError
from pipegen.model import Location

MAX_BYTES = 32 * 1024 * 1024  # a declaration file or pipeline: vLLM's largest is under 1 MiB
MAX_LIST_BYTES = 256 * 1024 * 1024  # a --files-from list: a million changed paths
_CHUNK = 64 * 1024  # what is read past the size fstat gave (to see the end): a buffer this size, not the bound

_KINDS = {stat.S_IFDIR: "a folder", stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket"}


class Refused(OSError):
    """A file pipegen will not read; str() is the reason alone (no errno prefix), as `strerror` is."""

    def __init__(self, why: str):
        super().__init__(errno.EINVAL, why)

    def __str__(self) -> str:
        return str(self.strerror)


def not_a_file(path: str) -> str:
    """What is at `path` when it is there but no regular file can be read through it; "" otherwise."""
    if not os.path.lexists(path) or os.path.isfile(path):
        return ""
    try:
        return _KINDS.get(stat.S_IFMT(os.stat(path).st_mode), "a special file")
    except OSError as exc:  # a link loop, a link to nothing
        return f"a link that cannot be followed ({exc.strerror})"


def read_bytes(path: str, limit: int = MAX_BYTES) -> bytes:
    """The bytes of the regular file at `path` (links followed); Refused for anything else or anything
    larger than `limit`, OSError where it cannot be opened."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Refused(f"not a regular file: {_KINDS.get(stat.S_IFMT(info.st_mode), 'a special file')}")
        # A buffer of the file's size, not of the bound: read(limit + 1) took 32 MiB for each file, 3x slower
        # over vLLM's 2,500 sources; and os.read, no file object: 30% less again.
        data = os.read(fd, min(info.st_size, limit) + 1)
        more = os.read(fd, _CHUNK) if len(data) <= limit else b""  # most: b"", the end
        if more:  # a file that grew since (or a short read) is read on, to the bound
            grown = bytearray(data + more)
            while len(grown) <= limit and (more := os.read(fd, _CHUNK)):
                grown += more
            data = bytes(grown)
        return _within(data, limit)
    finally:
        os.close(fd)


def read_stream(handle: BinaryIO, limit: int = MAX_BYTES) -> bytes:
    """At most `limit` bytes of an open stream (stdin, a pipe); Refused when there are more."""
    return _within(handle.read(limit + 1), limit)


def _within(data: bytes, limit: int) -> bytes:
    if len(data) > limit:
        raise Refused(f"larger than {limit // (1024 * 1024)} MiB, pipegen's bound on what it reads")
    return data


def declaration_text(path: str, name: str) -> str:
    """A declaration file's text; a DeclarationError naming the file `name`, and for a byte that is not
    UTF-8 its line and column."""
    try:
        data = read_bytes(path)
    except FileNotFoundError:
        raise DeclarationError("file not found", Location(name), fix="check the path or create the file") from None
    except OSError as exc:
        raise DeclarationError(f"cannot read the file: {exc.strerror or exc}", Location(name),
                               fix="name a regular file (a link to one is followed)") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = data.rfind(b"\n", 0, exc.start) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        column = len(data[start:exc.start].decode("utf-8", "replace")) + 1
        raise DeclarationError(f"not UTF-8: the byte 0x{data[exc.start]:02x} (Latin-1 or another encoding?)",
                               Location(name, line, column), fix="save the file as UTF-8") from None
