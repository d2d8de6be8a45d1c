"""A file's env written into its references (importer/definitions.py) reads text by Buildkite's own grammar
(buildkite/interpolation.py), in one pass; typed fields ask the same grammar whether a value is upload-time."""

from __future__ import annotations

import time

from pipegen.importer.definitions import substitute
from pipegen.importer.said import About, Said
from pipegen.importer.typed_fields import typed_fields
from pipegen.model import Location

W = Location("w")


def test_references_are_read_as_buildkite_reads_them():
    defined = {"Q": "${Q:-linux}"}
    # `\\` is text: the `$Q` after it expands (it was read as `\$`, an escape)
    assert substitute("a\\\\$Q", defined, [], W) == "a\\\\${Q:-linux}"
    assert substitute("$$Q \\$Q $(Q) ${Q} ${X:-$Q}", defined, [], W) == "$$Q \\$Q $(Q) ${Q:-linux} ${X:-${Q:-linux}}"
    problems: list[Said] = []
    assert substitute("${Q:0:3}", defined, problems, W) == "${Q:0:3}" and "has no form" in problems[0].message


def test_a_long_text_is_written_in_one_pass():
    """Each character was appended to a new copy of the text: a megabyte took about a minute."""
    text = "x" * 1_000_000 + "$Q" + "$$" * 1000
    start = time.perf_counter()
    assert substitute(text, {"Q": "1"}, [], W) == "x" * 1_000_000 + "1" + "$$" * 1000
    assert time.perf_counter() - start < 5


def test_braces_nested_past_the_parser_bound_are_left_as_written():
    """interpolation.MAX_NESTING bounds the grammar's depth, and so this module's (a RecursionError is not caught):
    a reference nested 1,000 deep, or a definition so nested, is Buildkite's to read, not a traceback."""
    deep = "${A:-" * 1000 + "$Q" + "}" * 1000
    problems: list[Said] = []
    assert substitute(deep, {"Q": "1"}, problems, W) == deep and problems == []
    assert substitute("${Q:-x}", {"Q": deep}, problems, W) == deep and problems == []  # taken: it is never empty


def test_only_a_variable_buildkite_expands_makes_a_typed_field_upload_time():
    missing: list[Said] = []
    fields = {"soft_fail": "${ALLOW_FAIL?}", "timeout_in_minutes": "$ 5", "priority": "\\$P"}
    typed_fields(fields, About(Location("p.yml", 1), "step 'x'"), None, missing)
    assert "soft_fail" not in fields and "takes its value when Buildkite interpolates" in missing[0].message
    assert len(missing) == 1 and fields == {"timeout_in_minutes": "$ 5", "priority": "\\$P"}
