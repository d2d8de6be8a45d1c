"""Compiling the patterns declarations hold, so a broken one is a declaration error at its line.

Dependency entries with glob characters are gitignore-style globs (pathspec);
vLLM's run-all patterns are Python regexes. Both are compiled once here, when
loading checks them, and matching (selection/matching.py) reuses the cache.
"""

from __future__ import annotations

import re
from functools import lru_cache

from pipegen.declarations.globs import GlobError, Matcher, compile_glob

GLOB_CHARS = frozenset("*?[")


def is_glob(entry: str) -> bool:
    return not GLOB_CHARS.isdisjoint(entry)


_DOT_SLASH = re.compile(r"^(?:\./+)+(?=.)")  # leading ./ (not a lone ./: that is the whole repository)
_SLASHES = re.compile(r"/{2,}")


def normal_entry(entry: str) -> str:
    """An entry as git's paths are written: `./src//x/` is `src/x/` (an exclusion keeps its '!').

    Changed files never start with `./`, so an entry that does would match nothing: a silent skip."""
    mark, body = ("!", entry[1:]) if entry.startswith("!") else ("", entry)
    return mark + _DOT_SLASH.sub("", _SLASHES.sub("/", body))


@lru_cache(maxsize=4096)
def glob_regex(entry: str) -> Matcher:
    """The matcher of a glob entry (`.match(path)`, linear in the path: declarations/globs.py); GlobError, a
    ValueError, for one git would not read or that cannot be matched safely."""
    return compile_glob(entry)


@lru_cache(maxsize=4096)
def pathspec_regex(entry: str) -> re.Pattern[str]:
    """A glob as git's pathspec reads it (fnmatch without FNM_PATHNAME: `*` and `?` cross "/"); fnmatch's
    translation matches in time linear in the path (atomic groups, no backtracking between stars)."""
    import fnmatch

    return re.compile(fnmatch.translate(entry))


@lru_cache(maxsize=4096)
def regex(pattern: str) -> re.Pattern[str]:
    """A compiled regex; ValueError (re.error is one) for an invalid one."""
    import warnings

    with warnings.catch_warnings():  # `[[:alpha:]]` is a literal set today: Python's FutureWarning is no message
        warnings.simplefilter("ignore", FutureWarning)
        return re.compile(pattern)


def glob_problem(entry: str) -> str | None:
    """Why a dependency entry (include or '!' exclusion) cannot be matched; None when it can."""
    body = entry[1:] if entry.startswith("!") else entry
    if not is_glob(body):
        return None
    try:
        glob_regex(body)
    except GlobError as exc:
        return f"invalid glob {entry!r}: {exc}"
    return None


def regex_problem(pattern: str) -> str | None:
    try:
        regex(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        return f"invalid regular expression {pattern!r}: {exc}"
    return None
