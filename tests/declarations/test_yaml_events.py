"""yaml_events.build (yaml_parse._plain), the parse straight from libyaml's events: for every text it takes, the
values and marks the loaders give; every text it leaves (tags, merge keys, duplicates, errors) reads as before."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from pipegen.declarations import yaml_parse
from pipegen.declarations.yaml_events import Irregular
from pipegen.errors import DeclarationError
from tests.declarations.test_parse_cache import documents, located
from tests.helpers import FIXTURE, ROOT, needs_fixture


def loaders(text: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """What the loaders alone read (PyYAML's constructor), or the error they say."""
    with monkeypatch.context() as patched:
        patched.setattr(yaml_parse, "_plain", lambda *_: (_ for _ in ()).throw(Irregular()))
        return outcome(text)


def outcome(text: str) -> Any:
    try:
        return located(yaml_parse.parse(text, "f.yaml"))
    except DeclarationError as exc:
        return str(exc), exc.location


@given(documents, st.sampled_from([None, 2, 4]), st.booleans())
def test_a_document_reads_as_the_loaders_read_it(document: Any, indent: int | None, quoted: bool) -> None:
    text = yaml.safe_dump(document, indent=indent, default_flow_style=indent is None,
                          default_style='"' if quoted else None)
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert outcome(text) == loaders(text, monkeypatch)
    if not quoted:  # a quoted null or number is written with its tag (!!null "null"): the loaders read it
        yaml_parse._plain(text, "f.yaml")


BOMB = "a: &a [" + "x, " * 99 + "x]\n" + "".join(f"{n}: &{n} [*{p}, *{p}, *{p}, *{p}]\n" for p, n in zip("abcde", "bcdef", strict=True))
PLAIN = ["", "---\n", "x\n", "a: 1\n...\n", "%YAML 1.1\n---\na: 1\n", "a: |\n  x\nb: >-\n  z\n", "~: x\n",
         "- [1, 2.5, null, ~, true, 0x1f, 1_000, .inf, 0b101, 190:20:30, '1', \"t\"]\n", "a: 2001-12-14\n",
         "a:\n  - b: [1, {c: d}]\n    e: {}\n  - []\n", "[" * 98 + "]" * 98, "a: &x [1]\nb: *x\nc: [*x, 2]\n",
         "a: &x 1\nl:\n- *x\n", "a: &x 1\nm: {k: *x}\n", 'a: &x 1\nm: {"k":*x}\n', "a: &x-y_z 1\nb: *x-y_z\n",
         "a: &x 1\nb:\n  *x\n", "&k a: 1\nb: *k\n", "a: &x {b: &y [1]}\nc: [*y, *x, *y]\n", "a: &x 1\n"]
LEFT = ["a: 1\na: 2\n", "1: a\ntrue: b\n", "- {1: a, 1.0: b}\n", "? [1]\n: x\n", "? {a: 1}\n: x\n", "<<: {a: 1}\nb: 2\n",
        "a: !!str 1\n", "a: !foo x\n", "a: ! x\n", "a: 1\n---\nb: 2\n", "a: &x [*x]\n", "a: *y\n",
        "a: &x 1\n? *x\n: 2\n", "a: &x 1\nb: &x 2\n", "&r [*r]\n", "a: &x [1]\n<<: {b: *x}\n", BOMB,
        "a: [\n", "a: b: c\n", "\x07", ": x\n", "[" * 101 + "]" * 101, "a: =\n", "{a: 1, a: 2}"]


@pytest.mark.parametrize("text", PLAIN + LEFT)
def test_a_text_reads_as_the_loaders_read_it(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert outcome(text) == loaders(text, monkeypatch)
    if text in LEFT:
        with pytest.raises((Irregular, yaml.YAMLError)):
            yaml_parse._plain(text, "f.yaml")
    else:
        yaml_parse._plain(text, "f.yaml")


@needs_fixture
def test_real_files_read_as_the_loaders_read_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM's generated pipelines and pipegen's own presets (with and without aliases)."""
    paths = [*FIXTURE.rglob("*.yaml"), *(ROOT / "pipegen").rglob("*.yaml")]
    assert len(paths) > 10
    for path in paths:
        text = path.read_text()
        assert outcome(text) == loaders(text, monkeypatch), path


@pytest.mark.parametrize("text", ["a: 2001-13-45\n", "- 2001-02-30\n", "a: 0b_\n", "a: [0x_]\n"])
def test_a_date_or_number_python_cannot_make_is_a_declaration_error(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """PyYAML's constructor raises ValueError (not a YAML error) for these: one clear message, no traceback."""
    message, location = outcome(text)
    assert "a value YAML reads as a date or number is not one" in message and location.file == "f.yaml"
    assert loaders(text, monkeypatch) == (message, location)
