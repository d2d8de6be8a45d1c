"""Jobs on hardware: which agent queue and which wrapper each Step gets. Pure.

`place(step, inventory)` turns one Step into one Job (hardware/types.py); `jobs(decl, inventory)`
places every step and fails with one DeclarationError naming the step and what is missing.

A step names its hardware with `device` (a family, or FAMILY_N / FAMILY:N
for "family with N GPUs", which is how vLLM writes AMD pools such as
`mi300_2`) and `num_devices`; `no_gpu` asks for the family's machine
without GPUs. A step without a device goes to a route that matches its
label or key, else the inventory's `default` family.
"""

from __future__ import annotations

from pipegen.declarations.discover import DEFAULT_INVENTORY
from pipegen.errors import DeclarationError, suggest
from pipegen.hardware.types import Family, Inventory, Job
from pipegen.model import Declarations, Step

# Where a wait, block, input or trigger step goes: no agent runs it.
NO_HARDWARE = Family(name="none", vendor="cpu", queues=())


def place(step: Step, inventory: Inventory) -> Job:
    """The job of one step: its family, GPU count and queue, or a DeclarationError."""
    if step.kind != "command":
        return Job(step=step, family=NO_HARDWARE, gpus=0, queue=None)
    family, fixed = _family_of(step, inventory)
    requested = step.num_devices
    if fixed is not None and requested is not None and requested != fixed:
        raise _missing(step, f"device '{step.device}' means {fixed} GPU(s) but num_devices is {requested}",
                       f"set num_devices: {fixed}, or use device '{family.name}_{requested}'")
    if not family.has_gpus:
        if (fixed or requested) and not step.no_gpu:
            raise _missing(step, f"asks for {fixed or requested} GPU(s) on '{family.name}', which has no GPUs",
                           f"drop num_devices, or pick a GPU family ({_gpu_families(inventory)})")
        gpus = 0
    elif step.no_gpu:
        gpus = 0
    else:
        gpus = fixed or requested or 1
    queue = family.queue(gpus)
    if queue is None and family.queues:
        offered = ", ".join(str(n) for n in family.gpu_counts) or "none"
        raise _missing(step, f"asks for {gpus} GPU(s) on '{family.name}', which has queues for {offered} GPU(s)",
                       f"use one of those counts, or add a queue for {gpus} GPUs to '{family.name}' "
                       f"in {inventory.source}")
    if queue is None:  # a family chosen by tags may name its queue among them
        queue = dict(family.agents).get("queue")
    agents = [("queue", queue)] if queue is not None else []
    agents += [(k, v) for k, v in family.agents if k != "queue"]
    agents += [(k, v) for k, v in step.agent_tags if k != "queue" and k not in dict(family.agents)]
    return Job(step=step, family=family, gpus=gpus, queue=queue, agents=tuple(agents), nodes=step.num_nodes or 1)


def jobs(decl: Declarations, inventory: Inventory) -> list[Job]:
    """Place every step, in order."""
    return [place(step, inventory) for step in decl.steps]


def _family_of(step: Step, inventory: Inventory) -> tuple[Family, int | None]:
    if step.device is None:
        name = None
        for route in inventory.routes:
            if route.matches(step):
                name = route.family
                break
        if name is None:
            name = inventory.no_gpu if step.no_gpu and inventory.no_gpu else inventory.default
        if name is None:
            raise _missing(step, "names no hardware and the inventory has no default family",
                           "add 'hardware: [FAMILY]' to the step, or 'default: FAMILY' to "
                           f"{inventory.source or DEFAULT_INVENTORY}")
        family = inventory.family(name)
        assert family is not None, name  # checked when the inventory loads
        return family, None
    resolved = inventory.resolve(step.device)
    if resolved is None:
        known = inventory.names()
        hint = suggest(step.device, known, "families") if known else f"create {DEFAULT_INVENTORY}"
        raise _missing(step, f"asks for hardware '{step.device}', which no family in "
                             f"{inventory.source or DEFAULT_INVENTORY} provides",
                       hint)
    return resolved


def _gpu_families(inventory: Inventory) -> str:
    return ", ".join(f.name for f in inventory.families if f.has_gpus) or "the inventory has none"


def _missing(step: Step, what: str, fix: str) -> DeclarationError:
    return DeclarationError(f"step '{step.key}' {what}", step.location, fix)
