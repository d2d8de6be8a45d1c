"""What a dialect provides: the interface the engine reads a repository's CI files through.

A dialect is a module (as pre-commit's languages are) with:
- NAME: the layout it reads (Declarations.layout);
- claims(top): whether a config file, parsed, is written in it;
- load(source): the Declarations of that config and the files it names. Its key rules (the key of a
  step without one, `only_declared_keys`), its presets (Settings: selection rules, run-all patterns, the
  `hardware_preset`: the inventory its repositories start from, with its gate and command
  wrappers among the build variants) and its warnings are applied there, so that everything after
  loading reads only Declarations;
- page_order(steps): the order of the rendered pipeline's page (pipegen's own: as declared; vLLM's:
  groups by name, steps by label).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from pipegen.declarations.yaml_values import LocDict
from pipegen.model import Declarations, Step


class Source(NamedTuple):
    """A config file to load, as the engine found it."""

    root: str  # the repository root every path is relative to
    path: str  # the config file
    top: LocDict  # its parsed mapping
    docs: dict[str, Any]  # every file read -> its parse (a dialect adds its steps files; check reads lines there)
    environ: Mapping[str, str]  # the environment a dialect may read (vLLM's legacy mirror tag)


class Dialect(Protocol):
    NAME: str

    def claims(self, top: LocDict) -> bool: ...

    def load(self, source: Source) -> Declarations: ...

    def page_order(self, steps: Sequence[Step]) -> list[Step]: ...
