"""Job fields a build gives the step with one declared key. Data.

    build:
      environment: {REFRESH_SKIP: "0"}      # {env.REFRESH_SKIP}: the build's variable, or this default
      values: {refresh_timeout: "540"}
      variants: [{name: refresh-skip, env: {REFRESH_SKIP: "1"}, values: {refresh_timeout: "15"}}]
      keys:
        refresh-base:                       # the step declared with `key: refresh-base`
          env: {REFRESH_SKIP: "{env.REFRESH_SKIP}"}
          timeout_in_minutes: "{refresh_timeout}"

`env` is added to the job's, `timeout_in_minutes` replaces its timeout (its template's cap too).
vLLM's generator treats its `refresh-rocm-base-amd` step so.
"""

from __future__ import annotations

from typing import Any

from pipegen.declarations.fields import anything, check_fields, env_map, require_mapping
from pipegen.errors import UsageError
from pipegen.frozen import frozen

KEYED_FIELDS = ("env", "timeout_in_minutes")


@frozen
class Keyed:
    env: tuple[tuple[str, str], ...] = ()
    timeout_in_minutes: str | None = None  # text until the build's values fill it


def parse_keyed(raw: Any, where: Any) -> tuple[tuple[str, Keyed], ...]:
    out = []
    for key, item in require_mapping(raw, where, "build 'keys'").items():
        at = raw.loc(key)
        fields = check_fields(require_mapping(item, at, f"build key '{key}'"),
                                dict.fromkeys(KEYED_FIELDS, anything), "build key")
        timeout = fields.get("timeout_in_minutes")
        out.append((str(key), Keyed(env=env_map(fields.get("env") or {}, at),
                                    timeout_in_minutes=None if timeout is None else str(timeout))))
    return tuple(out)


def filled(keyed: Keyed, fill: Any, where: str) -> tuple[dict[str, str], int | None]:
    """The job's env and timeout for one build; a timeout that is no whole number is a usage error."""

    timeout = None if keyed.timeout_in_minutes is None else fill(keyed.timeout_in_minutes)
    if timeout is not None and not timeout.isdigit():
        raise UsageError(f"build key '{where}': timeout_in_minutes is {timeout!r}, not a whole number",
                         fix="give the value it names a number of minutes")
    return {k: fill(v) for k, v in keyed.env}, None if timeout is None else int(timeout)
