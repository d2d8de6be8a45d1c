"""An inventory's `build:` section as declared (build_context.py parses it and applies it to one build),
and the facts of a build it is applied to. Apart from build_context so the hardware model can name it.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Mapping
from typing import Any

from pipegen.frozen import frozen
from pipegen.hardware.build_gate import Gate
from pipegen.hardware.build_keyed import Keyed
from pipegen.hardware.build_wrap import Wrap


@frozen
class Variant:
    name: str
    branch: str | None = None  # fnmatch glob on the build's branch
    env: tuple[tuple[str, str], ...] = ()  # every variable must have this value
    values: tuple[tuple[str, str], ...] = ()
    docker_options: tuple[tuple[str, Any], ...] = ()  # added to every docker template
    priority: int | None = None  # every job's priority where its template and step set none
    omit: tuple[str, ...] = ()  # fields dropped from every job (vLLM's SKIP_TIMEOUT: timeout_in_minutes)
    pull_request: bool | None = None  # only on (true) or off (false) a pull request's build
    branch_env: str | None = None  # only where the branch is this (non-empty) variable's value
    gate: Gate | None = None
    wrap: Wrap | None = None

    def matches(self, info: BuildInfo) -> bool:
        if self.branch is not None and not fnmatch.fnmatchcase(info.branch, self.branch):
            return False
        if self.pull_request is not None and (info.pull_request not in ("", "false")) != self.pull_request:
            return False
        if self.branch_env is not None and not (info.branch and info.env.get(self.branch_env) == info.branch):
            return False
        return all(info.env.get(k) == v for k, v in self.env)


@frozen
class BuildSpec:
    values: tuple[tuple[str, str], ...] = ()
    variants: tuple[Variant, ...] = ()
    variables: tuple[tuple[str, str], ...] = ()
    variables_when: tuple[tuple[str, str], ...] = ()  # the values the variables need
    branch_pattern: str | None = None
    quotes: str | None = None  # "double": ' -> "
    preview: str = "blank"  # "blank" | "delete"
    environment: tuple[tuple[str, str], ...] = ()  # build variables read as {env.NAME}, with their defaults
    keys: tuple[tuple[str, Keyed], ...] = ()  # job fields of the step with a declared key (build_keyed.py)


@frozen
class BuildInfo:
    """What Buildkite says about the build (read from the environment at the edge)."""

    branch: str = ""
    commit: str = ""
    pull_request: str = ""
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> BuildInfo:
        return cls(branch=environ.get("BUILDKITE_BRANCH", ""), commit=environ.get("BUILDKITE_COMMIT", ""),
                   pull_request=environ.get("BUILDKITE_PULL_REQUEST", ""), env=dict(environ))
