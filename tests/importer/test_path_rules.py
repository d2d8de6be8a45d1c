"""The path rules of if_changed and the monorepo-diff plugin, written as entries that select the same files.

Each tool's reading is transcribed here independently (a regex per glob, as the tool's library reads
it) and checked against pipegen's own matching of the entries the import writes."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipegen.importer import path_rules
from pipegen.importer.expand import plugin_flavour
from pipegen.selection.matching import explain


def zz_regex(pattern: str, crossing: bool) -> str:
    """zzglob (crossing=True: `**` crosses folders anywhere) or doublestar (`**` only as a whole folder)."""
    out, index = "", 0
    while index < len(pattern):
        char = pattern[index]
        if pattern.startswith("**", index):
            starts = index == 0 or pattern[index - 1] == "/"
            whole = starts and (index + 2 == len(pattern) or pattern[index + 2] == "/")
            if crossing and starts and pattern.startswith("**/", index):  # zzglob: `**/` is also no folder
                out, index = out + "(?:.*/)?", index + 1
            elif crossing or not whole:
                out += ".*" if crossing else "[^/]*"
            elif index + 2 < len(pattern):  # `**/`: zero or more folders
                out, index = out + "(?:[^/]+/)*", index + 1
            else:
                out += ".*"
            index += 2
            continue
        if char == "{":
            end = pattern.index("}", index)
            alts = pattern[index + 1:end].split(",")
            out += "(?:" + "|".join(zz_regex(a, crossing) for a in alts) + ")"
            index = end + 1
            continue
        out += {"*": "[^/]*", "?": "[^/]"}.get(char, re.escape(char))
        index += 1
    return out


def selected(entries: list[str], path: str) -> bool:
    hit, dropped = explain(entries, path)
    return hit is not None and dropped is None


SEGMENTS = st.sampled_from(["a", "b", "ab", "*", "**", "?", "*.go", "a*", "{a,b}", "{x.go,b}", "**.go"])
NAMES = st.sampled_from(["a", "b", "ab", "x.go", "a.go", "ba", "abc"])
UNIVERSE = st.lists(st.lists(NAMES, min_size=1, max_size=4).map("/".join), min_size=1, max_size=12, unique=True)


def folders_of(files: list[str]) -> list[str]:
    return sorted({"/".join(f.split("/")[:i]) for f in files for i in range(1, f.count("/") + 1)})


@settings(max_examples=300, deadline=None)
@given(st.lists(SEGMENTS, min_size=1, max_size=3).map("/".join), UNIVERSE)
def test_if_changed_globs_select_what_buildkite_selects(pattern, files):
    files = [f for f in files if f not in folders_of(files)]  # a path is a file or a folder, not both
    entries, notes = path_rules.if_changed_rule(pattern, folders_of(files))
    reference = re.compile(zz_regex(pattern, crossing=True))
    for path in files:
        if reference.fullmatch(path):
            assert selected(entries, path), (pattern, entries, path)
        elif selected(entries, path):  # more than Buildkite selected: only below a folder, and said so
            assert any("also selects the files below" in note for note in notes), (pattern, entries, path)


@settings(max_examples=300, deadline=None)
@given(st.lists(SEGMENTS, min_size=1, max_size=3).map("/".join), st.sampled_from(["", "a", "ab", "a/", "a/b", "x.g"]),
       UNIVERSE)
def test_watch_paths_select_what_each_plugin_version_selects(pattern, prefix, files):
    files = [f for f in files if f not in folders_of(files)]
    folders = folders_of(files)
    glob, notes = path_rules.watch_rule(pattern, None, "glob", folders)
    raw, _ = path_rules.watch_rule(prefix or "a", None, "prefix", folders)
    reference = re.compile(zz_regex(pattern, crossing=False)) if "*" in pattern else None
    for path in files:
        plugin = bool(reference and reference.fullmatch(path)) or path.startswith(pattern)
        if plugin or not selected(glob, path):
            assert selected(glob, path) == plugin, (pattern, glob, path)
        else:
            assert any("also selects the files below" in note for note in notes), (pattern, glob, path)
        assert selected(raw, path) == path.startswith(prefix or "a"), (prefix, raw, path)


def test_a_raw_prefix_is_written_so_and_the_boundary_reading_is_named():
    # monebag/monorepo-diff v2.0.x: `test` also matches tests/ and test_x.py; pipegen's `test` would not.
    entries, notes = path_rules.watch_rule(["test", "api/"], None, "prefix", ["test", "tests"])
    assert entries == ["/test*", "api/**"]
    assert selected(entries, "tests/unit/a.py") and selected(entries, "test_x.py") and not selected(entries, "a/test")
    assert notes == ["watch path 'test' is a raw prefix for this plugin version: it also selects test* (e.g. "
                     "tests/); written as '/test*' (pipegen's boundary-safe 'test' would select test and test/ only)"]


def test_if_changed_star_stays_in_its_folder_and_a_folder_name_is_only_that_path():
    entries, notes = path_rules.if_changed_rule({"include": ["src/*", "Makefile", "lib"], "exclude": "src/gen.go"},
                                           ["src", "src/sub", "lib"])
    assert selected(entries, "src/a.go") and not selected(entries, "src/sub/b.go") and not selected(entries, "src/gen.go")
    assert selected(entries, "Makefile") and not selected(entries, "lib/x.go")
    assert notes == ["if_changed 'lib' names a folder: Buildkite matches only that exact path, so a change inside "
                     "it never selected the step (write 'lib/**' to mean the folder)"]


def test_a_glob_without_a_slash_matches_at_the_root_only():
    entries, _ = path_rules.if_changed_rule("*.md", [])
    assert selected(entries, "README.md") and not selected(entries, "docs/a.md")


def test_monorepo_diff_v1_reads_a_regular_expression_prefix():
    entries, _ = path_rules.watch_rule("app.js", None, "grep", [])
    assert selected(entries, "app.jsx") and selected(entries, "app_js/x")
    with pytest.raises(path_rules.Untranslatable, match="regular expression"):
        path_rules.watch_rule("app/(a|b)", None, "grep", [])


@pytest.mark.parametrize("name, flavour", [
    ("chronotc/monorepo-diff#v1.3.0", "grep"), ("monebag/monorepo-diff#v1.1.1", "grep"),
    ("monebag/monorepo-diff#v2.0.3", "prefix"), ("chronotc/monorepo-diff#v2.0.4", "glob"),
    ("monebag/monorepo-diff#v2.5.9", "glob"), ("monorepo-diff#v1.4.0", "glob"),
    ("buildkite-plugins/monorepo-diff#v1.11.1", "glob"),
])
def test_the_plugin_version_says_how_paths_are_read(name, flavour):
    assert plugin_flavour(name) == flavour


def test_a_glob_naming_everything_below_its_folders_needs_no_guard_and_no_note():
    # elastic/elastic-agent's `dev-tools/**/*`: every file below dev-tools/cmd/ matches it whole, as Buildkite
    # reads it, so gitignore bringing the folder's files selects nothing more (the import said it did).
    entries, notes = path_rules.if_changed_rule(["dev-tools/**/*", "magefile.go"], ["dev-tools", "dev-tools/cmd"])
    assert entries == ["dev-tools/**/*", "magefile.go"] and notes == []
    assert selected(entries, "dev-tools/cmd/x/main.go") and not selected(entries, "dev-tools")
    _, notes = path_rules.if_changed_rule("a/**/b", ["a", "a/b"])  # a/b/c is no match of the whole path: said so
    assert notes and "also selects the files below a/b/" in notes[0]
