"""Gitignore globs matched in time linear in the path's length.

pathspec turns a glob into a backtracking regex: `*a*a*a*b` against a long
run of `a` takes time exponential in the number of `*`. So a glob with one
unbounded wildcard keeps pathspec's regex (it cannot backtrack more than
linearly); one with several gets the same regex with each folder name's
inner wildcards committed (`_committed`: still Python's fast C matcher);
the rare rest (two `**`, or a set that matches '/', such as `[!a]`) runs on
a Pike VM over the same regex tokens: each character of the path advances
every live state once, so the cost is path length x glob length. A
property test holds all three to pathspec's regex.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Protocol

MAX_GLOB = 1000  # characters: the VM's cost is path x glob, so a glob's own length is bounded too

Char = Callable[[str], bool]
# VM instructions: ("char", test, next) | ("split", a, b) | ("end", next) ($) | ("match",)
Op = tuple[object, ...]

_DOT: Char = "\n".__ne__  # the regex's `.`
_NOT_SLASH: Char = "/".__ne__  # `[^/]`
_SLASH: Char = "/".__eq__


class Matcher(Protocol):
    def match(self, path: str, /) -> object: ...


class GlobError(ValueError):
    """A glob git would not read, or pipegen cannot match safely; the message says which and why."""


def compile_glob(body: str, vm: bool = False) -> Matcher:
    """The matcher of a gitignore glob (no leading '!'): `.match(path)` is truthy where pathspec's regex
    matches. GlobError for one that cannot be matched. `vm`: the Pike VM whatever the glob (tests)."""
    if len(body) > MAX_GLOB:
        raise GlobError(f"a glob longer than {MAX_GLOB} characters")
    posix = re.search(r"\[:[a-z]+:\]", body)
    if posix:
        raise GlobError(f"POSIX class {posix.group()} (pathspec reads it as a set of characters, git as a class)")
    parts = _parts(body)
    if vm:
        return _Program(parts)
    if sum(part in ("[^/]*", "[^/]+", "(?:/.+)?") for part in parts) > 1:
        return _committed(parts) or _Program(parts)
    import pathspec  # only declarations with glob entries pay for this import

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # `[[` in a set: a literal '[' today
        regex = pathspec.GitIgnoreSpec.from_lines([body]).patterns[0].regex
    if regex is None:
        raise GlobError("an unclosed '['")
    return regex


def _parts(body: str) -> list[str]:
    """The regex pieces pathspec's GitIgnoreSpecPattern joins for `body`, one token each."""
    text = body if body.endswith("\\ ") else body.rstrip()
    if text.startswith("#"):
        raise GlobError("gitignore reads a glob starting with '#' as a comment: it names nothing")
    if not text or text == "/":
        raise GlobError("a glob that names nothing")
    text = text[1:] if text.startswith("!") else text
    segs = text.split("/")
    is_dir = not segs[-1]
    if not segs[0]:
        del segs[0]
    elif (len(segs) == 1 or (len(segs) == 2 and not segs[1])) and segs[0] != "**":
        segs.insert(0, "**")
    if not segs:
        raise GlobError("a glob that names nothing")
    if not segs[-1]:
        segs[-1] = "**"
    segs = [s for i, s in enumerate(segs) if not (i and s == "**" and segs[i - 1] == "**")]
    if segs in (["**"], ["**", "*"], ["**", "*", "**"]):  # pathspec's shortcuts for "everything"
        return ["(?P<ps_d>/)"] if is_dir else ["."] if segs != ["**", "*", "**"] else ["/"]
    parts: list[str] = []
    end = len(segs) - 1
    for i, seg in enumerate(segs):
        if seg == "**":
            parts.append("^(?:.+/)?" if i == 0 else "(?:/.+)?" if i < end else "(?P<ps_d>/)" if is_dir else "/")
            continue
        if i and segs[i - 1] != "**" or i > 1:
            parts.append("/")
        parts += ["[^/]+"] if seg == "*" else _segment(seg)
        if i == end:
            parts.append("(?:(?P<ps_d>/)|$)")
    return parts


def _segment(seg: str) -> list[str]:
    """pathspec's translation of one path segment's glob, one regex token per item."""
    out: list[str] = []
    i, end = 0, len(seg)
    while i < end:
        char = seg[i]
        i += 1
        if char == "\\":
            if i == end:
                raise GlobError("a trailing '\\'")
            out.append(re.escape(seg[i]))
            i += 1
        elif char in "*?":
            out.append("[^/]*" if char == "*" else "[^/]")
        elif char == "[":
            j = i + (i < end and seg[i] in "!^")
            j += j < end and seg[j] == "]"
            j = seg.find("]", j)
            if j < 0:
                raise GlobError("an unclosed '['")
            negate = seg[i] in "!^"
            out.append("[" + "^" * negate + seg[i + negate:j + 1].replace("\\", "\\\\"))
            _char_test(out[-1])  # a set Python's re refuses ([z-a]) is refused here, with why
            i = j + 1
        else:
            out.append(re.escape(char))
    return out


_CROSSING = ("^(?:.+/)?", "(?:/.+)?")  # the wildcards that span folders: `**`


def _committed(parts: list[str]) -> re.Pattern[str] | None:
    """pathspec's regex with each folder name's inner wildcards committed to their leftmost match, so it
    cannot backtrack; None where that would change what it matches.

    `*P1*P2*P3` within a name: placing each inner piece at its leftmost match loses no match when no
    piece can match a '/' (so all of it stays in the name) and a `**` (which spans names) is not
    tried against another one: then each `**` choice costs one pass over the names after it, and a
    name with one `*` one pass over itself. A lookahead captured and consumed is an atomic group
    before Python 3.11.
    """
    if sum(part in _CROSSING for part in parts) > 1:
        return None
    out: list[str] = []
    name: list[str] = []
    for part in [*parts, "/"]:
        if part in _CROSSING or part.startswith(("/", "(?:(?P<ps_d>", "(?P<ps_d>")):
            out += _commit_name(name, len(out))
            out.append(part)
            name = []
        elif part.startswith("[") and part not in ("[^/]", "[^/]*", "[^/]+") and _char_test(part)("/"):
            return None  # a set that matches '/': a piece may straddle names
        else:
            name += ["[^/]", "[^/]*"] if part == "[^/]+" else [part]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # `[[` in a set: a literal '[' today
        return re.compile("".join(out[:-1]))


def _commit_name(tokens: list[str], at: int) -> list[str]:
    """One name's tokens, its pieces between the first and the last `*` committed (atomic)."""
    stars = [i for i, token in enumerate(tokens) if token == "[^/]*"]
    if len(stars) < 2:
        return tokens
    out = tokens[:stars[0]]
    for n, (start, end) in enumerate(zip(stars, stars[1:], strict=False)):
        group = f"pg{at}_{n}"
        out.append(f"(?=(?P<{group}>[^/]*?{''.join(tokens[start + 1:end])}))(?P={group})")
    return out + tokens[stars[-1]:]


def _char_test(token: str) -> Char:
    if token == ".":
        return _DOT
    if token == "[^/]":
        return _NOT_SLASH
    if len(token) == 1:
        return token.__eq__
    if token.startswith("\\"):
        return token[1].__eq__
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return re.compile(token).fullmatch  # type: ignore[return-value]
    except re.error as exc:
        raise GlobError(f"the set {token}: {exc}") from None


class _Program:
    """A compiled Pike VM: `.match(path)` is True when the regex would match a prefix of `path`."""

    def __init__(self, parts: list[str]):
        self.ops: list[Op] = []
        for token in parts:
            self._emit(token)
        self.ops.append(("match",))
        self.literals = _literal_runs(parts)

    def _emit(self, token: str) -> None:
        ops, n = self.ops, len(self.ops)
        if token == "^(?:.+/)?":  # split -> (. then loop or '/') | past
            ops += [("split", n + 1, n + 4), ("char", _DOT, n + 2), ("split", n + 1, n + 3), ("char", _SLASH, n + 4)]
        elif token == "(?:/.+)?":
            ops += [("split", n + 1, n + 4), ("char", _SLASH, n + 2), ("char", _DOT, n + 3), ("split", n + 2, n + 4)]
        elif token in ("[^/]*", "[^/]+"):
            loop = n + (token == "[^/]+")
            ops += [("char", _NOT_SLASH, n + 1)] if token == "[^/]+" else []
            ops += [("split", loop + 1, loop + 2), ("char", _NOT_SLASH, loop)]
        elif token == "(?:(?P<ps_d>/)|$)":
            ops += [("split", n + 1, n + 2), ("char", _SLASH, n + 3), ("end", n + 3)]
        else:
            ops.append(("char", _char_test("/" if token == "(?P<ps_d>/)" else token), n + 1))

    def match(self, path: str, /) -> bool:
        if not all(literal in path for literal in self.literals):  # most paths: no VM step at all
            return False
        ops, size = self.ops, len(path)
        at_end = size - (path.endswith("\n"))  # `$` matches before a final newline too
        live = {0}
        for pos in range(size + 1):
            waiting: list[int] = []
            seen: set[int] = set()
            stack = list(live)
            while stack:
                pc = stack.pop()
                if pc in seen:
                    continue
                seen.add(pc)
                op = ops[pc]
                kind = op[0]
                if kind == "match":
                    return True
                if kind == "split":
                    stack += [op[1], op[2]]  # type: ignore[list-item]
                elif kind == "end":
                    if pos >= at_end:
                        stack.append(op[1])  # type: ignore[arg-type]
                else:
                    waiting.append(pc)
            if pos == size:
                return False
            char = path[pos]
            live = {ops[pc][2] for pc in waiting if ops[pc][1](char)}  # type: ignore[misc,operator]
            if not live:
                return False
        return False


def _literal_runs(parts: list[str]) -> list[str]:
    """The runs of literal tokens in `parts`, longest first: each token is a piece the regex matches in turn
    (an optional part is a token of its own), so every run is in any path it matches."""
    runs, run = [], ""
    for token in parts:
        char = token if token == "/" or len(token) == 1 and token != "." else \
            token[1] if len(token) == 2 and token[0] == "\\" else None
        if char is None:
            runs.append(run)
            run = ""
        else:
            run += char
    return sorted(filter(None, [*runs, run]), key=len, reverse=True)
