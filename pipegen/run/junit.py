"""JUnit XML for Buildkite Test Engine and any JUnit reader. Pure.

One <testcase> per case, inside one <testsuite> inside <testsuites>.
Output can hold terminal colour codes and other control characters that
XML 1.0 forbids; they are removed, or a reader rejects the whole file.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Literal

from pipegen.frozen import frozen

Outcome = Literal["passed", "failure", "skipped"]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@frozen
class Case:
    name: str
    classname: str
    seconds: float
    outcome: Outcome
    message: str = ""  # why it failed or was skipped
    kind: str = ""  # failure type, e.g. "timed out"
    output: str = ""  # shown with a failure
    file: str = ""  # where the case is declared


def xml_text(text: str) -> str:
    return _NOT_XML.sub("", _ANSI.sub("", text))


def junit_xml(suite_name: str, cases: Sequence[Case]) -> bytes:
    failures = sum(c.outcome == "failure" for c in cases)
    skipped = sum(c.outcome == "skipped" for c in cases)
    seconds = f"{sum(c.seconds for c in cases):.3f}"
    root = ET.Element("testsuites", name=suite_name, tests=str(len(cases)), failures=str(failures), time=seconds)
    suite = ET.SubElement(root, "testsuite", name=suite_name, tests=str(len(cases)), failures=str(failures),
                          errors="0", skipped=str(skipped), time=seconds)
    for case in cases:
        attrs = {"classname": case.classname, "name": case.name, "time": f"{case.seconds:.3f}"}
        if case.file:
            attrs["file"] = case.file
        element = ET.SubElement(suite, "testcase", attrs)
        if case.outcome == "failure":
            failure = ET.SubElement(element, "failure", message=xml_text(case.message), type=case.kind or "failure")
            failure.text = xml_text(case.output)
        elif case.outcome == "skipped":
            ET.SubElement(element, "skipped", message=xml_text(case.message))
    ET.indent(root)
    xml: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return xml
