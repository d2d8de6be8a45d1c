"""A command wrapper: lines a build variant puts around every command of every job. Data.

    variants:
      - name: timed
        env: {TIME_COMMANDS: "1"}
        wrap:
          before: ["export T0=$$(date +%s)"]     # after the setup, before the first command
          command: "time ( {command}\n)"          # each command; also {index}, {total}, {preview_b64}
          after: ["echo took $$(($$(date +%s) - T0))s"]
          except_vendors: [amd]                  # jobs on these vendors' hardware are left alone

The texts are Buildkite syntax (`$$` for the shell's `$`) and may use the build's `{value}`s;
`{command}` is the command as the job runs it, `{index}`/`{total}` its place, `{preview_b64}` the
base64 of its banner's text. Wrappers apply in variant order, a later one around an earlier one.
vLLM's generator has two: `CONTINUE_ON_FAILURE=1` (the preset's `continue-on-failure`) and, on
`main`, ci-infra's OpenTelemetry helper, which stays vLLM's to declare (docs/reference/vllm.md).
"""

from __future__ import annotations

import base64
import re
from typing import Any

from pipegen.declarations.fields import check_fields, require_mapping, string, string_list
from pipegen.errors import DeclarationError
from pipegen.frozen import frozen

_FIELD = re.compile(r"\{(command|index|total|preview_b64)\}")


@frozen
class Wrap:
    before: tuple[str, ...] = ()
    command: str = "{command}"
    after: tuple[str, ...] = ()
    except_vendors: tuple[str, ...] = ()

    def around(self, command: str, index: int, total: int, preview: str) -> str:
        fields = {"command": command, "index": str(index), "total": str(total),
                  "preview_b64": base64.b64encode(preview.encode()).decode()}
        return _FIELD.sub(lambda m: fields[m[1]], self.command)  # one pass: a command's own "{index}" stays


def parse_wrap(raw: Any, where: Any) -> Wrap:
    checkers = {"before": string_list, "command": string, "after": string_list, "except_vendors": string_list}
    fields = check_fields(require_mapping(raw, where, "a variant's 'wrap'"), checkers, "wrap")
    if "{command}" not in fields.get("command", "{command}"):
        raise DeclarationError("a wrap's 'command' must hold {command}", where,
                               "write e.g. 'command: \"time {command}\"'")
    return Wrap(**fields)


def filled(wrap: Wrap, fill: Any) -> Wrap:
    """The wrapper with the build's {value}s in its texts (its own {command}, {index}, ... stay)."""
    return Wrap(before=tuple(fill(list(wrap.before))), command=fill(wrap.command), after=tuple(fill(list(wrap.after))),
                except_vendors=wrap.except_vendors)
