"""The bit-mask file index agrees with the plain matcher (matching.entry_matches)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pipegen.check.file_index import FileIndex
from pipegen.selection.matching import entry_matches

PARTS = st.sampled_from(["a", "ab", "a.b", "b", "tests", "test_x.py", "x.py", "a-b", "a_b"])
PATHS = st.lists(PARTS, min_size=1, max_size=4).map("/".join)
ENTRIES = st.one_of(
    PATHS,
    PATHS.map(lambda p: p + "/"),
    PATHS.map(lambda p: p + "*"),
    PATHS.map(lambda p: p.rsplit("/", 1)[0] + "/**/*.py"),
    st.sampled_from(["", "/", "a.", "te", "**/x.py"]),
)


@settings(max_examples=300, deadline=None)
@given(paths=st.lists(PATHS, max_size=30), entry=ENTRIES, kind=st.sampled_from(["entry", "raw", "regex"]))
def test_masks_match_the_plain_rule(paths, entry, kind):
    if kind == "regex" and "*" in entry:
        entry = entry.replace("*", ".*")
    index = FileIndex(paths)
    expected = sorted(p for p in set(paths) if entry_matches(entry, p, kind))
    assert index.files(index.matches(entry, kind)) == expected


@settings(max_examples=300, deadline=None)
@given(paths=st.lists(PATHS, max_size=30), pattern=st.lists(st.sampled_from(
    ["a", "b", "s", "/", ".", "_", "?", "*", "+", "|", "{0,1}", "(a|b)", "x.py", "tests"]), min_size=1, max_size=6).map("".join))
def test_regex_masks_match_re_match(paths, pattern):
    """Quantifiers and alternation: the literal prefix the index narrows by must not lose a match."""
    import re

    try:
        re.compile(pattern)
    except re.error:
        return
    index = FileIndex(paths)
    assert index.files(index.matches(pattern, "regex")) == sorted(p for p in set(paths) if re.match(pattern, p))


def test_regex_prefix_keeps_optional_characters_and_alternatives():
    index = FileIndex(["test/foo.py", "b.py", "setup.py", "{x}/a.py"])
    assert index.files(index.matches("tests?/foo", "regex")) == ["test/foo.py"]
    assert index.files(index.matches("a|b", "regex")) == ["b.py"]
    assert index.files(index.matches("x*setup", "regex")) == ["setup.py"]
    assert index.files(index.matches("{x}", "regex")) == ["{x}/a.py"]


def test_folders_and_names():
    index = FileIndex(["a/b/c.py", "a/b/d.py", "a/e.py", "f/b/c.py"])
    assert index.is_dir("a/b") and not index.is_dir("a/e.py") and not index.is_dir("")
    assert index.children("a") == {"b", "e.py"}
    assert sorted(index.named("b")) == ["a/b/", "f/b/"]
    assert sorted(index.named("c.py")) == ["a/b/c.py", "f/b/c.py"]
