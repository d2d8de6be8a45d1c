"""yamlio.load_file's parse cache: a cached read is the read it replaces, values and locations alike,
and a cache that is stale, broken or unwritable is only slower, never wrong."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from pipegen.declarations import yaml_parse
from pipegen.declarations.yamlio import LocDict, LocList, load_file
from pipegen.errors import DeclarationError

NESTED = """\
defaults: &defaults
  agents: {queue: cpu}
  env: {A: "1"}
steps:
  - label: one
    <<: *defaults
    commands:
      - echo 1
      - echo 2
  - label: two
    env: {B: x}
"""


def located(value: Any) -> Any:
    """The value with every location it carries, for comparing two reads: keys in their order, each scalar with
    its type (True == 1 == 1.0 to Python, and two dicts in another order are equal)."""
    if isinstance(value, LocDict):
        return ("map", value.file, tuple(value.mark),
                [(located(k), tuple(value.key_marks[k]), located(v)) for k, v in value.items()])
    if isinstance(value, LocList):
        return ("seq", value.file, tuple(value.mark), [(tuple(m), located(v)) for m, v in zip(value.item_marks, value, strict=True)])
    return type(value).__name__, value


def reads(path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path) -> tuple[Any, Any, Any]:
    """(without a cache, first read with one, second read with one: from the cache)."""
    monkeypatch.setenv("PIPEGEN_CACHE_DIR", "")
    plain = load_file(str(path), "steps.yaml")
    monkeypatch.setenv("PIPEGEN_CACHE_DIR", str(cache))
    return plain, load_file(str(path), "steps.yaml"), load_file(str(path), "steps.yaml")


def test_a_cached_read_equals_a_parse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "steps.yaml"
    path.write_text(NESTED)
    plain, first, cached = reads(path, monkeypatch, tmp_path / "cache")
    assert list((tmp_path / "cache" / "yaml").glob("*.json"))  # the second read came from it
    assert located(plain) == located(first) == located(cached)
    assert cached["steps"][0].loc("agents").line == 5  # a merged key is shown where it was merged in
    assert cached["steps"][1].loc("env").line == 11


scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8))
documents = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                         | st.dictionaries(st.text(min_size=1, max_size=6) | st.integers() | st.booleans(), inner,
                                         max_size=4), max_leaves=20)


@given(documents, st.sampled_from([None, 2, 4]))
def test_any_document_reads_back_the_same_from_the_cache(tmp_path_factory: pytest.TempPathFactory, document: Any,
                                                         indent: int | None) -> None:
    folder = tmp_path_factory.mktemp("doc")
    path = folder / "steps.yaml"
    path.write_text(yaml.safe_dump(document, indent=indent, default_flow_style=indent is None))
    with pytest.MonkeyPatch.context() as monkeypatch:
        plain, first, cached = reads(path, monkeypatch, folder / "cache")
    assert located(plain) == located(first) == located(cached)


def test_an_edited_file_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIPEGEN_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "steps.yaml"
    path.write_text("a: 1\n")
    assert load_file(str(path)) == {"a": 1}
    path.write_text("a: 2\n")  # same size, and within the same second: only the text tells
    assert load_file(str(path)) == {"a": 2}
    assert len(list((tmp_path / "cache" / "yaml").glob("*.json"))) == 1  # one slot per file, replaced


@pytest.mark.parametrize("damage", [b"", b"not a pickle", b"\x80\x05garbage"])
def test_a_broken_cache_entry_is_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: bytes) -> None:
    monkeypatch.setenv("PIPEGEN_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "steps.yaml"
    path.write_text(NESTED)
    load_file(str(path))
    (entry,) = (tmp_path / "cache" / "yaml").glob("*.json")
    entry.write_bytes(damage)
    assert load_file(str(path))["steps"][1]["env"] == {"B": "x"}


def test_an_unwritable_cache_is_no_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the folder would be")
    monkeypatch.setenv("PIPEGEN_CACHE_DIR", str(blocker))
    path = tmp_path / "steps.yaml"
    path.write_text("a: [1, 2]\n")
    assert load_file(str(path)) == {"a": [1, 2]}


def test_a_mistake_is_reported_on_every_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIPEGEN_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "steps.yaml"
    path.write_text("a: 1\na: 2\n")
    for _ in range(2):
        with pytest.raises(DeclarationError, match="duplicate key 'a'"):
            load_file(str(path))


def test_keys_that_are_not_text_are_cached_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`queues: {1: q}` (vLLM's hardware file): kept as pairs, read back with int keys, never parsed again."""
    from pipegen.declarations import yaml_parse

    path = tmp_path / "hardware.yaml"
    path.write_text('queues: {1: one, 2: two, null: none, 1.5: half}\nflags: {true: yes}\n"\\0pairs": [1]\n'
                    'x: {"\\0pairs": 2}\n')
    plain, first, cached = reads(path, monkeypatch, tmp_path / "cache")
    assert located(plain) == located(first) == located(cached)
    assert list(cached["queues"]) == [1, 2, None, 1.5] and list(cached["flags"]) == [True]
    monkeypatch.setattr(yaml_parse, "parse", lambda *args: pytest.fail("parsed again"))
    assert located(load_file(str(path), "steps.yaml")) == located(plain)


@pytest.mark.parametrize("text", ["a: &x [1]\nb: *x\n", "a: &x 1\nl:\n- *x\n", "a: &x 1\nl: [*x, 2]\n",
                                  "a: &x 1\nm: {k: *x}\n", 'a: &x 1\nm: {"k":*x}\n', "a: &x 1\nm: [1,*x]\n",
                                  "a: &x 1\n? *x\n: 2\n", "a: &x 1\nb:\n  *x\n", "a: &x-y_z 1\nb: *x-y_z\n"])
def test_every_alias_libyaml_reads_takes_the_parser_that_says_where_it_is_used(text):
    """yaml_parse picks PyYAML's own parser (which marks where each alias is used) by a pattern over the text:
    every alias libyaml's parser reads must match it (a '*' in `tests/*.py` or `ls * ` need not)."""
    events = list(yaml.parse(text, Loader=yaml.CSafeLoader))
    assert any(isinstance(e, yaml.AliasEvent) for e in events)
    assert yaml_parse._ALIAS.search(text)
    assert not yaml_parse._ALIAS.search("c: cd x && pytest tests/*.py\nd: |\n  ls * \n")


def test_new_entries_list_the_folder_once_until_the_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cold read of many files lists the cache folder at the first new entry, not at each (the bound itself:
    tests/hostile/test_caches.py)."""
    from pipegen import cache
    from pipegen.declarations import yaml_cache

    listed: list[str] = []
    real = cache.prune
    monkeypatch.setattr(cache, "prune", lambda folder, keep: listed.append(folder) or real(folder, keep))
    monkeypatch.setenv("PIPEGEN_CACHE_DIR", str(tmp_path / "cache"))
    for n in range(30):
        (tmp_path / f"f{n}.yaml").write_text(f"steps: [{n}]\n")
        assert load_file(str(tmp_path / f"f{n}.yaml")) == {"steps": [n]}
    assert listed == [str(tmp_path / "cache" / "yaml")] and yaml_cache.MAX_SLOTS > 30
