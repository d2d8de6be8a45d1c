"""A gate: one step a build variant adds, which the jobs that need a given step also wait for. Data.

    variants:
      - name: pull-request
        pull_request: true
        gate:
          key: pre-commit
          group: GitHub pre-commit check
          label: ":github: GitHub pre-commit check"
          queue: small_cpu_queue_premerge
          command: "python3 check.py {commit}"   # {value}s of the build context; written as is
          gates: "*image-build*"   # a job that depends on a step whose key matches (and is none itself)

vLLM's generator adds such a step on every pull request: a poll of GitHub's pre-commit check that
runs beside the image builds, and every test that waits for an image build waits for it too.
"""

from __future__ import annotations

from typing import Any

from pipegen.declarations.fields import check_fields, require_mapping, string
from pipegen.errors import DeclarationError
from pipegen.frozen import frozen

GATE_FIELDS = ("key", "group", "label", "queue", "command", "gates")


@frozen
class Gate:
    key: str
    group: str
    label: str
    queue: str
    command: str
    gates: str  # fnmatch glob on the keys a job depends on


def parse_gate(raw: Any, where: Any) -> Gate:
    fields = check_fields(require_mapping(raw, where, "a variant's 'gate'"),
                            dict.fromkeys(GATE_FIELDS, string), "gate")
    missing = [name for name in GATE_FIELDS if not fields.get(name)]
    if missing:
        raise DeclarationError(f"a gate needs {', '.join(missing)}", where,
                               "give it key, group, label, queue, command and gates (a key glob)")
    return Gate(**fields)
