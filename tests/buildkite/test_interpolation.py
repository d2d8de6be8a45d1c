"""buildkite/interpolation.py and upload_escape.py: Buildkite's upload interpolation, modelled, and render's escaping.

The model is checked against the rules buildkite/interpolate documents and its parser's tests state;
the escaping (Dollars) is then checked against the model for random strings: what render writes
reaches the job as declared. tests/render/test_upload_interpolation.py does it through the CLI.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipegen.buildkite.interpolation import InterpolationError, interpolate, unescaped, variables
from pipegen.buildkite.upload_escape import Dollars, Undeliverable

ENV = {"HOME": "/home/agent", "GROUP": "gpu tests", "EMPTY": "", "COMMIT": "0123456789abcdef", "é": "accent"}


@pytest.mark.parametrize("text, expected", [
    ("$HOME", "/home/agent"), ("${HOME}", "/home/agent"), ("a$HOME.b", "a/home/agent.b"),
    ("$UNSET|${UNSET}", "|"),  # unset is empty
    ("$$HOME", "$HOME"), ("\\$HOME", "$HOME"), ("$${HOME}", "${HOME}"), ("\\${HOME}", "${HOME}"),
    ("$$", "$"), ("\\$", "$"), ("$", "$"), ("a $ b", "a $ b"), ("$1 $_X $-", "$1 $_X $-"),  # not a name
    ("$(date)", "$(date)"), ("\\\\", "\\\\"), ("\\\\$HOME", "\\\\/home/agent"), ("\\x", "\\x"), ("x\\", "x\\"),
    ("${EMPTY:-d}|${UNSET:-d}|${HOME:-d}", "d|d|/home/agent"),
    ("${EMPTY-d}|${UNSET-d}|${HOME-d}", "|d|/home/agent"),
    ("${UNSET:-${HOME:-x}!}", "/home/agent!"), ("${UNSET:-a$$b}", "a$b"), ("${UNSET:-}", ""),
    ("${COMMIT:0:7}", "0123456"), ("${COMMIT:10}", "abcdef"), ("${COMMIT: -3}", "def"),
    ("${COMMIT: -3:2}", "de"), ("${COMMIT:2:-2}", "23456789abcd"), ("${COMMIT:99}", ""), ("${COMMIT: -99:2}", "01"),
    ("${HOME?must be set}", "/home/agent"), ("$é", "accent"),
    ("$${group#* }", "${group#* }"),  # an escaped brace is text, whatever is inside it
])
def test_the_model_follows_buildkites_documented_expansions(text, expected):
    assert interpolate(text, ENV) == expected


@pytest.mark.parametrize("text, says", [
    ("${group#* }", "got '#'"), ("${HOME:?x}", "offset"), ("${1}", "letter"), ("${}", "letter"),
    ("${HOME:-x", "close"), ("${HOME", "operator"), ("${HOME:x}", "offset"), ("${HOME:1:y}", "length"),
    ("${UNSET?is required}", "$UNSET: is required"), ("${UNSET?}", "$UNSET: not set"),
])
def test_what_makes_the_upload_fail(text, says):
    with pytest.raises(InterpolationError, match=re.escape(says)):
        interpolate(text, ENV)


def test_the_variables_a_text_expands_and_what_run_gives_the_shell():
    assert variables("a $A ${B:-$C} $$D \\$E $_F") == ["A", "B", "C"]
    assert variables("${bad#x}") == []
    assert unescaped("echo $$HOME $BUILDKITE_COMMIT \\$x ${A:-b}") == "echo $HOME $BUILDKITE_COMMIT $x ${A:-b}"


# Strings made of what the grammar reacts to.
PIECES = ["$", "\\", "{", "}", ":", "-", "?", "(", " ", "#", "HOME", "x", "_", "1", "é", "$$", "\\$", "${", ":-"]
texts = st.lists(st.sampled_from(PIECES), max_size=12).map("".join) | st.text(alphabet="$\\{}:-?a_1 ", max_size=20)
envs = st.dictionaries(st.sampled_from(["HOME", "x", "é", "A"]), st.text(alphabet="$\\{}a ", max_size=4))
ODD_BACKSLASH_BEFORE_DOLLAR = re.compile(r"(?<!\\)(\\\\)*\\\$")


@settings(max_examples=2000, deadline=None)
@given(texts, envs)
def test_escaped_text_comes_back_unchanged_whatever_the_agents_variables(text, env):
    try:
        escaped = Dollars()(text)
    except Undeliverable:
        # Only a backslash right before a `$` cannot be written: Buildkite drops it.
        assert ODD_BACKSLASH_BEFORE_DOLLAR.search(text)
        return
    assert interpolate(escaped, env) == text
    assert unescaped(escaped) == text  # what `pipegen run` gives the shell


@settings(max_examples=1000, deadline=None)
@given(texts, envs)
def test_kept_variables_are_filled_and_the_rest_arrives_as_declared(text, env):
    dollars = Dollars(["HOME"])
    try:
        escaped = dollars(text)
    except Undeliverable:
        return
    env = {k: v for k, v in env.items() if k != "HOME"}  # HOME kept but unset here: it expands to nothing
    # (or fails the upload, where the text says ${HOME?}: then it fails whatever else is set)
    assert upload(escaped, env) == upload(escaped, {**env, "x": "other"})  # only HOME is read
    if "$" not in re.sub(r"\$\{?HOME(?!\w)", "", text):  # every `$` is HOME's: Buildkite reads the text as written
        assert upload(escaped, {**env, "HOME": "H"}) == upload(text, {"HOME": "H"})


def upload(text: str, env: dict[str, str]) -> str:
    """What the upload makes of `text`: the interpolated text, or the error that fails the upload."""
    try:
        return interpolate(text, env)
    except InterpolationError as exc:
        return f"upload fails: {exc}"


def test_the_vllm_preset_passes_buildkite_syntax_through_but_refuses_what_fails_the_upload():
    vllm = Dollars(["*"])
    assert vllm("echo $$HOME ${BUILDKITE_COMMIT:0:7}") == "echo $$HOME ${BUILDKITE_COMMIT:0:7}"
    with pytest.raises(Undeliverable, match="upload fails"):
        vllm("echo ${g#* }")


def test_braces_nested_past_the_bound_are_one_message_not_a_traceback(tmp_path):
    """The parser recursed once per `${`: a label of 1,000 nested defaults was a RecursionError in render
    (and in import, which asks whether a value is upload-time)."""
    from tests.helpers import invoke, write_files

    deep = "${A:-" * 1000 + "x" + "}" * 1000
    with pytest.raises(InterpolationError, match="nested more than 100 deep"):
        interpolate(deep, {})
    assert variables(deep) == [] and variables("${A:-" * 100 + "x" + "}" * 100) == ["A"] * 100
    with pytest.raises(Undeliverable, match="nested more than 100 deep"):
        Dollars(["*"])(deep)
    write_files(tmp_path, {".buildkite/pipegen.yaml": "steps: [s.yaml]\ninterpolate: ['*']\n",
                           "s.yaml": f"steps:\n- {{label: '{deep}', key: a, commands: [x]}}\n"})
    result = invoke(tmp_path, "render", "--all", files="")
    assert result.exit_code != 0 and "nested more than 100 deep" in result.output, result.output
    assert "Traceback" not in result.output
