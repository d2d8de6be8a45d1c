"""Arbitrary user text renders to YAML that reads back exactly (escaped for Buildkite's upload) and validates."""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipegen.buildkite.interpolation import interpolate
from pipegen.buildkite.keys import interpolated_key, valid_key
from pipegen.buildkite.upload_escape import Dollars
from pipegen.declarations.yamlio import load_text
from pipegen.errors import DeclarationError
from pipegen.hardware.inventory import parse_inventory
from pipegen.hardware.placement import jobs
from pipegen.model import ChangeSet, Decision, Declarations, Location, Reason, Selection, Settings, Step
from pipegen.render import fastyaml
from pipegen.render.output_check import check
from pipegen.render.page import build_page
from pipegen.render.templates import to_yaml
from pipegen.render.yaml_writer import scalar

NASTY = ["", " ", "a: b", "- x", "#", "# c", "'", '"', "\\", "\n", "\r\n", "\t", "{{ x }}", "{% if %}", "yes", "no",
         "null", "~", "0x1", "1e3", "012", ".inf", "true", "Off", "*a", "&a", "!tag", "|", ">", "%", "@", "`",
         "$FOO", "${FOO}", "$$", "$", "x$", "é", "日本", "🚀", "\u2028", "\u0085", "\ufeff", "\x00", "\x7f", "\u00a0",
         "---", "...", "? k", ": v", "[a]", "{a: 1}", "a #b", " lead", "trail ", "\\n", "\\u0041", "\ud7ff"]
text = st.one_of(st.sampled_from(NASTY), st.text(max_size=40),
                 st.lists(st.sampled_from(NASTY), max_size=4).map("".join))

INVENTORY = parse_inventory(load_text("""
default: cpu
families: {cpu: {vendor: cpu, queue: cpu-q, template: py}}
templates: {py: {kind: docker, image: "python:3.11"}}
""", "test"), "test")


def build(labels, commands, env, keys, groups, mode="block"):
    steps = []
    for i, label in enumerate(labels):
        steps.append(Step(key=keys[i], label=label, group=groups[i % len(groups)], location=Location("t.yaml", i + 1),
                          commands=tuple(commands[i % len(commands)] for _ in range(1)) if commands else (),
                          env=tuple(env), device="cpu"))
    decl = Declarations(steps=tuple(steps), settings=Settings(), layout="pipegen")
    decisions = tuple(Decision(s, "run" if i % 2 == 0 else "block", (Reason("t", "reason $X: ok"),))
                      for i, s in enumerate(steps))
    selection = Selection(decisions=decisions, changes=ChangeSet(()))
    return decl, build_page(decl, selection, jobs(decl, INVENTORY), unselected=mode)


def unique(values):
    seen = set()
    return [v for v in values if not (v in seen or seen.add(v))]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(labels=st.lists(text, min_size=1, max_size=4), commands=st.lists(text, min_size=1, max_size=3),
       env=st.lists(st.tuples(text, text), max_size=3).map(lambda pairs: list(dict(pairs).items())),
       keys=st.lists(text, min_size=4, max_size=4), groups=st.lists(text, min_size=1, max_size=2),
       mode=st.sampled_from(["block", "skip"]))
def test_user_text_reads_back_exactly_and_validates(labels, commands, env, keys, groups, mode):
    keys = unique(keys + [f"k{i}" for i in range(8)])[: len(labels)]
    try:
        decl, result = build(labels, commands, env, keys, groups, mode)
    except DeclarationError as exc:  # a backslash right before a `$`: no escaping delivers it
        assert "backslash right before '$'" in exc.message
        return
    text = to_yaml(result)
    data = check(text)  # Buildkite's schema, unique keys, depends_on targets, job limit
    assert yaml.safe_load(text) == data == fastyaml.load(text)
    d = Dollars()
    found = []
    for entry in data["steps"]:
        found += entry["steps"] if "group" in entry else [entry]
        if "group" in entry:
            assert entry["group"] in {d(groups[i % len(groups)]) for i in range(len(labels))}  # the groups used
    declared_by_key = {row.key: row.step for row in result.rows}
    commands_steps = [s for s in found if "commands" in s]
    assert len(commands_steps) == len(labels)  # one group per declared group: order is by group
    for step in commands_steps:
        declared = declared_by_key[step["key"]]
        assert step["label"] == d(declared.label) and interpolate(step["label"], {}) == declared.label
        assert step["commands"] == [d(c) for c in declared.commands]
        assert step.get("env", {}) == {d(k): d(v) for k, v in env}
        if "skip" in step:
            assert len(step["skip"]) <= 70
    assert len({s["key"] for s in found}) == len(found)


@settings(deadline=None)
@given(st.text(max_size=200))
def test_keys_are_always_valid(key):
    out = valid_key(key)
    import re

    if "$" in out:  # upload-time variables around valid key text: kept as written, for Buildkite to fill
        assert out == key and interpolated_key(key)
        return
    assert re.fullmatch(r"[A-Za-z0-9_:\-]+", out) and len(out) <= 100
    assert not re.fullmatch(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", out)
    assert valid_key(key) == out  # deterministic
    if re.fullmatch(r"[A-Za-z0-9_:\-]{1,100}", key) and not key.startswith("-") and not key.endswith("-") \
            and len(key) <= 91:
        assert out == key or out == key + "-k"


leaf = st.one_of(text, st.integers(-10**6, 10**6), st.booleans(), st.none())
structure = st.recursive(leaf, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(text, inner, max_size=3)), max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(structure)
def test_scalars_and_structures_read_back(value):
    from pipegen.render.yaml_writer import block, flow

    assert yaml.safe_load("v: " + scalar(value)) == {"v": value}
    assert yaml.safe_load("v: " + flow(value)) == {"v": value}
    assert json.loads(flow(value)) == value  # flow style is JSON, so the fast reader can take it
    if isinstance(value, (dict, list)) and value:
        lines = "v:\n" + block(value, 2)
        assert yaml.safe_load(lines) == {"v": value} == fastyaml.load(lines)


@settings(max_examples=300, deadline=None)
@given(structure)
def test_fast_reader_agrees_with_pyyaml_or_steps_aside(value):
    from pipegen.render.yaml_writer import block

    for doc in ("v: " + scalar(value), "v:\n" + block(value, 2), "- " + scalar(value) + "\n- x: 1\n  y:\n  - 2"):
        assert fastyaml.load(doc) == yaml.safe_load(doc)


def test_fast_reader_hands_other_yaml_to_pyyaml():
    for doc in ["a: &x 1\nb: *x\n", "a: |\n  text\n", "a: 'single'\n", "a:\n- 1\n- 2\n", "a: 1.5\n", "a: yes\n",
                "a: b # c\n", "a:\tb\n", "? a\n: b\n", "a: [1, 2.5]\n", "a: \"x\\x41\"\n", "- - 1\n  - 2\n- 3\n",
                "a: \"\\ud83d\\ude00\"\n", "a: \"multi\n  line\"\n", "a: plain\n  continued\n", "a: 0x1\n"]:
        try:
            expected = yaml.load(doc, Loader=yaml.CSafeLoader)  # what the fallback uses
        except yaml.YAMLError:
            try:
                fastyaml.load(doc)
            except DeclarationError:
                continue
            raise AssertionError(f"the fast reader accepted invalid YAML {doc!r}") from None
        assert fastyaml.load(doc) == expected, doc


@pytest.mark.parametrize("doc", ["---\na: 1\n", "%YAML 1.1\n---\na: 1\n", "a: 1\n...\n", "- 1\n---\n- 2\n", "a:\n  ---\n",
                                 'a: "x\x7fy"\n', 'a: "x\u2028y"\n', '- "x\x85y"\n', 'a: "\\ud800"\n', 'a: ["x\x7f"]\n'])
def test_the_fast_reader_leaves_markers_and_what_only_json_keeps_to_pyyaml(doc):
    """A directive or a document marker (no block takes its line), and in quotes a raw DEL, NEL or line
    separator or an escaped surrogate, which JSON reads and YAML does not: the fast reader reads none of
    them (it looks at the whole text once to know whether any string needs looking at)."""
    with pytest.raises(fastyaml.NotInDialect):
        fastyaml.Reader(doc).document()
