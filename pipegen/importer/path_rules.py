"""The path rules of the tools pipegen replaces, as `source_file_dependencies` entries selecting the same files.

pipegen's entries: a path is a prefix at a path boundary (`test` matches test/..., not tests/); an entry
with `*?[` is a gitignore glob (a pattern without `/` matches at any depth, and a folder it matches
brings every file below it). The tools read paths otherwise:

- Buildkite's `if_changed` (zzglob): the whole path; `*` and `?` stay within a folder, `**` crosses
  folders (also inside a name: `**.go`), `{a,b}` braces; no glob means exactly that file.
- The monorepo-diff plugin, by major version: `chronotc/` and `monebag/` v1 (bash) `grep "^PATH"`, a
  regular expression read as a prefix; `monebag/` v2.0.0-v2.0.3 a raw string prefix (`test` also
  matches tests/); later v2 and `buildkite-plugins/` v1 a doublestar glob (`**` only as a whole
  folder) when the path has a `*`, else the raw prefix; `regex_paths: true` a regular expression
  searched anywhere in the path, which no entry can express.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from pipegen.declarations.patterns import glob_regex, is_glob

GLOB = re.compile(r"[*?\[{]")
REGEX_CHARS = re.compile(r"[\^$*+?()\[\]{}|\\]")


class Untranslatable(ValueError):
    """A path rule no entry can express (the import names it and exits 1)."""


def expand_braces(pattern: str) -> list[str]:
    """`a/{b,c/d}/*.{go,md}` -> every alternative (nested braces, `\\,` kept literal)."""
    depth, start = 0, -1
    for index, char in enumerate(pattern):
        if char == "\\":
            continue
        if char == "{" and (index == 0 or pattern[index - 1] != "\\"):
            depth, start = depth + 1, index if depth == 0 else start
        elif char == "}" and depth and pattern[index - 1] != "\\":
            depth -= 1
            if depth == 0:
                head, body, tail = pattern[:start], pattern[start + 1:index], pattern[index + 1:]
                return [alt for part in _split_commas(body) for alt in expand_braces(head + part + tail)]
    return [pattern]


def _split_commas(body: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for index, char in enumerate(body):
        escaped = index > 0 and body[index - 1] == "\\"
        if char == "," and depth == 0 and not escaped:
            parts.append(current)
            current = ""
            continue
        depth += (char == "{" and not escaped) - (char == "}" and not escaped)
        current += char
    return [*parts, current]


def _anchor(entry: str) -> str:
    """A gitignore glob without an inner `/` matches at any depth: anchor it to the root, as the tools read it."""
    if entry.startswith("**/") or "/" in entry.rstrip("/"):
        return entry
    return "/" + entry


def glob_entries(pattern: str, crossing_stars: bool) -> list[str]:
    """A whole-path glob as gitignore entries (`crossing_stars`: zzglob's `**` crosses folders inside a name)."""
    out: list[str] = []
    for alt in expand_braces(pattern):
        variants: list[list[str]] = [[]]  # each a list of segments
        for segment in alt.split("/"):
            if "**" not in segment or segment == "**":
                variants = [v + [segment] for v in variants]
            elif not crossing_stars:  # doublestar: `**` inside a name is `*`
                variants = [v + [re.sub(r"\*+", "*", segment)] for v in variants]
            else:
                head, _, tail = segment.partition("**")
                tail = tail.replace("**", "*")
                crossing = [s for s in (f"{head}*" if head else "", "**", f"*{tail}" if tail else "") if s]
                variants = [v + extra for v in variants for extra in ([re.sub(r"\*+", "*", segment)], crossing)]
        for segments in variants:
            joined = _simpler("/".join(segments))
            entry = _anchor(joined) if GLOB.search(joined) else joined
            if entry not in out:
                out.append(entry)
    return out


def _simpler(glob: str) -> str:
    """The same files in a form pathspec reads right (it turns `**/*/**` into a pattern matching nothing)."""
    while "**/**" in glob:
        glob = glob.replace("**/**", "**")
    while glob.startswith("**/*/**"):
        glob = glob[3:]  # "some folder, then anything below it": a first folder, then anything
    return glob


def plain_or_glob(path: str) -> str:
    """A literal path as an entry: plain when it has no glob character, else escaped."""
    if not GLOB.search(path):
        return path
    return re.sub(r"([*?\[\]{}\\])", r"\\\1", path)


def prefix_entry(prefix: str) -> str:
    """A raw string prefix (`test` matches tests/ and test_x.py) as an entry selecting the same files."""
    escaped = re.sub(r"([*?\[\]{}\\])", r"\\\1", prefix)
    return _anchor(escaped + ("**" if prefix.endswith("/") or not prefix else "*"))


def grep_prefix_entry(regex: str) -> str:
    """monorepo-diff v1's `grep "^PATH"`: a `.` is any character; other regex syntax has no entry."""
    if REGEX_CHARS.search(regex):
        raise Untranslatable(f"watch path {regex!r} is a regular expression (monorepo-diff v1 greps '^PATH')")
    return prefix_entry(regex).replace(".", "?")  # escaping leaves a `.` as it is


def descendants_matched(entry: str, folders: Iterable[str]) -> list[str]:
    """The folders an include entry's gitignore reading matches (so it would bring files below them)."""

    if entry.endswith(("**", "/", "/**/*")) or entry == "**/*":  # `a/**/*` names every path below what it matches
        return []
    if not is_glob(entry):
        return [f for f in folders if f == entry.rstrip("/")]
    regex = glob_regex(entry)
    return [f for f in folders if regex.match(f) and not any(regex.match(p) for p in _parents(f))]


def _parents(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def guard(whole: Sequence[str], includes: Sequence[str], folders: Sequence[str]) -> tuple[list[str], list[str]]:
    """Exclusions that keep each whole-path include to the files it names (gitignore would take the files
    below a folder it matches), and notes where an exclusion would also drop another include's files."""
    excludes: list[str] = []
    notes: list[str] = []
    for entry in whole:
        matched = descendants_matched(entry, folders)
        if not matched:
            continue
        others = [e for e in includes if e != entry] + ([entry] if "**" in entry else [])  # `**/a` names a/a too
        clash = [f for f in matched if any(_reaches_below(o, f) for o in others)]
        if clash:
            notes.append(f"'{entry}' also selects the files below {clash[0]}/ here (an entry of the step "
                         "selects some of them, so no exclusion keeps the others out)")
            continue
        excludes.append(f"!{entry.rstrip('/')}/**")
    return excludes, notes


def _reaches_below(entry: str, folder: str) -> bool:
    probe = f"{folder}/x"
    if is_glob(entry):
        return bool(glob_regex(entry).match(probe)) or entry.lstrip("/").startswith(folder + "/")
    return probe.startswith(entry.rstrip("/") + "/") or entry.startswith(folder + "/")


def if_changed_rule(value: object, folders: Sequence[str]) -> tuple[list[str], list[str]]:
    """`if_changed` (a glob, a list, or include/exclude) -> (entries, notes). Untranslatable when malformed."""
    include, exclude = value, None
    if isinstance(value, dict):
        include, exclude = value.get("include"), value.get("exclude")
    includes = [e for p in _strings(include, "if_changed") for e in _zz(p)]
    excludes = [e for p in _strings(exclude, "if_changed exclude") for e in _zz(p)]
    return _finish(includes, excludes, folders, "if_changed", includes)


def _zz(pattern: str) -> list[str]:
    return glob_entries(pattern, crossing_stars=True) if GLOB.search(pattern) else [pattern]


def watch_rule(paths: object, skip: object, flavour: str, folders: Sequence[str]) -> tuple[list[str], list[str]]:
    """A monorepo-diff watch's `path` and `skip_path` as the plugin version (`flavour`) reads them."""
    includes: list[str] = []
    whole: list[str] = []  # the globs, read as whole paths (the rest are prefixes)
    notes: list[str] = []
    for path in _strings(paths, "watch path"):
        if flavour != "grep" and path.startswith("^"):
            notes.append(f"watch path {path!r} starts with '^': this plugin version reads it as a plain path, which "
                         "no file in the repository starts with, so it never selected the step (a regular expression "
                         "needs the plugin's regex_paths)")
        entries = _watch_entries(path, flavour)
        whole += entries if flavour == "glob" and "*" in path else []
        if flavour != "glob" or "*" not in path:
            boundary = path.rstrip("/")
            if not path.endswith("/") and entries[0] != boundary:
                notes.append(f"watch path {path!r} is a raw prefix for this plugin version: it also selects "
                             f"{boundary}* (e.g. {boundary}s/); written as {entries[0]!r} (pipegen's "
                             f"boundary-safe {boundary!r} would select {boundary} and {boundary}/ only)")
        includes += [e for e in entries if e not in includes]
    excludes = [e for p in _strings(skip, "skip_path") for e in _watch_entries(p, flavour)]
    entries, more = _finish(includes, excludes, folders, "watch", whole)
    return entries, notes + more


def _watch_entries(path: str, flavour: str) -> list[str]:
    if flavour == "grep":
        return [e for word in path.split() for e in [grep_prefix_entry(word)]]
    if flavour == "glob" and "*" in path:
        return glob_entries(path, crossing_stars=False)
    return [prefix_entry(path)]


def _finish(includes: list[str], excludes: list[str], folders: Sequence[str], what: str,
            whole: list[str]) -> tuple[list[str], list[str]]:
    notes: list[str] = []
    if what == "if_changed":
        for entry in includes:
            if not GLOB.search(entry) and entry.rstrip("/") in folders:
                notes.append(f"if_changed {entry!r} names a folder: Buildkite matches only that exact path, so a "
                             f"change inside it never selected the step (write '{entry.rstrip('/')}/**' to mean "
                             "the folder)")
    guards, clash = guard(whole, includes, folders)
    for entry in excludes:
        if descendants_matched(entry, folders):
            notes.append(f"the exclusion {entry!r} also drops the files below the folders it names ({what} "
                         "excludes only paths it matches whole)")
    return includes + [f"!{e}" for e in excludes] + guards, notes + clash


def _strings(value: object, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise Untranslatable(f"{what} must be a string or a list of strings")
