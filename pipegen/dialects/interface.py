"""What a dialect provides: the interface the engine reads a repository's CI files through.

A dialect is a module (as pre-commit's languages are) with:
- NAME: the layout it reads (Declarations.layout);
- claims(top): whether a config file, parsed, is written in it;
- load(source): the Declarations of that config and the files it names. Its key rules (the key of a
  step without one), its presets (Settings: selection rules, run-all patterns,
  `hardware_preset`: the dialect whose dialects/NAME/hardware.yaml, with its queues, gate and command
  wrappers, a repository's inventory extends), the steps it leaves out (Step.dialect_skip) and its
  warnings are applied there, so that everything after loading reads only Declarations;
- check_keys(decl, keys): a UsageError for keys a build names (--only, a label's) that the dialect's
  own generator would refuse (vLLM's: a key derived from a label); `any_key` where every key is known;
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

    def check_keys(self, decl: Declarations, keys: Sequence[str]) -> None: ...

    def page_order(self, steps: Sequence[Step]) -> list[Step]: ...


def any_key(decl: Declarations, keys: Sequence[str]) -> None:
    """check_keys of a dialect that knows a step by any of its keys (pipegen's own)."""
