"""pipegen's own inputs as dependencies: a change to what pipegen reads selects what it shapes. Pure.

A step's steps file is already one of its dependencies. The config, the
hardware inventory and a `--templates` folder are not any step's: without
this rule, editing them would select nothing, and a broken queue or template
would reach every later build unnoticed. The command edge says which paths
they are (`Input`); `decide` runs what each one shapes.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping

from pipegen.declarations.discover import DEFAULT_INVENTORY
from pipegen.frozen import frozen
from pipegen.model import Declarations

# Templates that render every step (a family's plugin template renders only that family's jobs).
EVERY_STEP_TEMPLATES = ("pipeline.j2", "command.j2", "block.j2")


@frozen
class Input:
    """A repository path pipegen reads (an entry: a file, or a folder and everything below it)."""

    entry: str
    what: str  # "the pipegen config", "the hardware inventory", "template docker.j2"
    keys: frozenset[str] | None = None  # the steps it shapes; None: every step (everything runs)


def own_inputs(decl: Declarations) -> tuple[Input, ...]:
    """The config and the inventory file of pipegen's format. The vLLM preset's config shapes no step
    (vLLM's generator reruns nothing when ci_config.yaml changes; decide says so in a warning), and
    its queue table ships inside pipegen."""
    settings = decl.settings
    if not decl.files:
        return ()
    if not settings.config_selects:
        out = [Input(decl.files[0], "the CI config (vLLM's generator reruns nothing for it)", frozenset())]
    else:
        out = [Input(decl.files[0], "the pipegen config")]
        if settings.hardware_inline is None:
            out.append(Input(settings.hardware_file or DEFAULT_INVENTORY, "the hardware inventory"))
    return tuple(i for i in (_normal(x) for x in out) if i)


def template_inputs(folder: str, names: Iterable[str], uses: Mapping[str, Iterable[str]]) -> tuple[Input, ...]:
    """A `--templates` folder (repository-relative): each of its files `names` (relative to it) shapes
    the steps in `uses` (a family template file -> the keys rendered through it), any other file
    (pipeline.j2, command.j2, block.j2, an included macro file) every step."""
    out = []
    for name in sorted(names):
        keys = None if name in EVERY_STEP_TEMPLATES or name not in uses else frozenset(uses[name])
        out.append(Input(posixpath.join(folder, name), f"template {name}", keys))
    return tuple(i for i in (_normal(x) for x in out) if i)


def _normal(item: Input) -> Input | None:
    """The entry as git prints paths; None for a path outside the repository (no change can touch it)."""
    entry = posixpath.normpath(item.entry)
    if posixpath.isabs(entry) or entry == "." or entry.startswith("../") or entry == "..":
        return None
    return Input(entry, item.what, item.keys)
