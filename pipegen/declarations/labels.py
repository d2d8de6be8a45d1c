"""The `labels:` section: pull-request labels as a selection input.

    labels:
      ready-run-all-tests: {run_all: true, nightly: true}   # everything, optional steps too
      perf: {only: [benchmarks]}                            # exactly these steps (and what they need)
      gpu: {add: [gpu-tests]}                               # these steps too, besides what the change selects

Buildkite gives a pull request's labels in $BUILDKITE_PULL_REQUEST_LABELS
(comma-separated), so no call to GitHub is needed.
"""

from __future__ import annotations

from typing import Any

from pipegen.declarations.field import Field
from pipegen.declarations.fields import Checker, boolean, check_fields, require_mapping, string_list
from pipegen.errors import DeclarationError
from pipegen.model import LabelRule, Location

LABEL_FIELDS: dict[str, Checker] = {
    "run_all": Field(boolean, "Every step runs.", default=False, example=True),
    "nightly": Field(boolean, "A nightly build: optional steps run too.", default=False, example=True),
    "only": Field(string_list, "Exactly these steps run (and what they depend on).", example=["benchmarks"]),
    "add": Field(string_list, "These steps run too (and what they depend on), optional or not.",
                 example=["gpu-tests"]),
}


def parse_labels(raw: Any, where: Location) -> tuple[LabelRule, ...]:
    if raw is None:
        return ()
    top = require_mapping(raw, where, "'labels'")
    rules = []
    for label, item in top.items():
        at = top.loc(label)
        if not str(label).strip():  # would match every build: no labels read as one empty label
            raise DeclarationError("a label name is empty", at, "write the pull-request label's name")
        fields = check_fields(require_mapping(item, at, f"label '{label}'"), LABEL_FIELDS, "label")
        if not (fields.get("run_all") or fields.get("nightly") or fields.get("only") or fields.get("add")):
            raise DeclarationError(f"label '{label}' asks for nothing", at,
                                   "give it 'run_all: true', 'nightly: true', 'only: [KEY, ...]' or 'add: [KEY, ...]'")
        rules.append(LabelRule(str(label), fields.get("run_all", False), fields.get("nightly", False),
                               tuple(fields.get("only", ())), tuple(fields.get("add", ()))))
    return tuple(rules)

