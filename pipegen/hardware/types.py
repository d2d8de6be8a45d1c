"""The hardware model: families, their templates, routes, the inventory, and a step placed as a Job. Data only.

An *inventory* names hardware families. A family has a vendor (nvidia, amd,
intel, apple, cpu, other), an architecture (sm_90, gfx942, ...), one agent
queue per GPU count it offers (CPU families: count 0) or agent tags that
choose its machines (`agents:`), and the template that wraps its jobs
(a docker plugin, a Kubernetes podSpec, or plain). inventory.py reads an
inventory (the file, the config's inline mapping, or the vLLM preset);
placement.py places a step on one of its families.
"""

from __future__ import annotations

import fnmatch
import re
from typing import TYPE_CHECKING, Any, Literal

from pipegen.frozen import frozen
from pipegen.model import Location, Step

if TYPE_CHECKING:
    from pipegen.hardware.build_spec import BuildSpec

# intel: Intel GPUs (oneAPI), apple: Apple silicon (Metal), other: any accelerator a fleet names by tag.
Vendor = Literal["nvidia", "amd", "intel", "apple", "cpu", "other"]
VENDORS: tuple[str, ...] = ("nvidia", "amd", "intel", "apple", "cpu", "other")
TemplateKind = Literal["docker", "kubernetes", "plain"]
TEMPLATE_KINDS: tuple[str, ...] = ("docker", "kubernetes", "plain")

DOCKER_PLUGIN = "docker#v5.12.0"  # a docker template's plugin unless it names one
_COUNT_SUFFIX = re.compile(r"^(?P<family>.+?)[_:](?P<count>[0-9]+)$")


@frozen
class SetupCommand:
    """A command run before a step's own; `min_gpus`: only on jobs with that many GPUs (all nodes)."""

    run: str
    min_gpus: int = 0


@frozen
class JobFields:
    """What a template sets on its jobs besides the plugin (inventory `job:`).

    env: added to the step's (values may use {gpus}); retry: conditions put
    before the step's own (or instead of them, retry_mode "replace");
    default_timeout/max_timeout: minutes when the step gives none / at most;
    runner + commands_env: the job runs `runner`, which finds the step's
    commands (setup and banners included) joined by ' && ' in that variable;
    block_waits: a block step for the job waits for the job's dependencies;
    banners: an `echo '+++ ...'` banner before each command (vLLM's log sections);
    lost_agent_retry: one automatic retry, after the step's own conditions, when the
    agent is lost (exit status -1), with this limit (0: none).
    Nothing here is on by default: a job has only what its step and template declare.
    """

    env: tuple[tuple[str, str], ...] = ()
    retry: Any = None
    retry_mode: str = "add"
    priority: int | None = None
    artifact_paths: tuple[str, ...] = ()
    default_timeout: int | None = None
    max_timeout: int | None = None
    runner: str | None = None
    commands_env: str | None = None
    block_waits: bool = False
    banners: bool = False
    lost_agent_retry: int = 0


@frozen
class Template:
    """How a family's jobs are wrapped.

    kind "docker": the docker plugin (`plugin`, default DOCKER_PLUGIN) with
    `image`, `gpus` (only for jobs that use GPUs), `volumes`, `environment`,
    `devices` and any further plugin options in `options` (verbatim).
    kind "kubernetes": a `kubernetes:` plugin with `pod_spec` (verbatim); the
    job's GPU count is filled into the first container's resource limits.
    kind "plain": no plugin; commands run on the agent.
    `setup`: commands run before the step's own (e.g. nvidia-smi).
    `job`: fields the template sets on its jobs (JobFields).
    `wrap`: a shell command with `{commands}`, which receives the step's
    commands joined by ' && ' as one quoted argument (vLLM's AMD runner).
    `file`: the Jinja template that renders the plugin (default `<kind>.j2`).
    """

    name: str
    kind: TemplateKind = "plain"
    plugin: str = DOCKER_PLUGIN
    image: str | None = None
    gpus: str | None = None
    volumes: tuple[str, ...] = ()
    environment: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()
    options: tuple[tuple[str, Any], ...] = ()
    pod_spec: Any = None
    setup: tuple[SetupCommand, ...] = ()
    wrap: str | None = None
    file: str | None = None
    job: JobFields = JobFields()

    @property
    def template_file(self) -> str:
        return self.file or f"{self.kind}.j2"


PLAIN = Template(name="plain")


@frozen
class Family:
    """A kind of machine: vendor, architecture, one queue per GPU count; or chosen by agent tags alone."""

    name: str
    vendor: Vendor
    # (GPU count, queue), sorted by count; CPU: ((0, queue),). Empty: the agent tags alone choose the
    # machines (a `queue` among them, or the agents' default queue), with any GPU count.
    queues: tuple[tuple[int, str], ...]
    template: Template = PLAIN
    arch: str | None = None
    agents: tuple[tuple[str, str], ...] = ()  # agent tags besides the queue (a tag family's queue among them)
    location: Location | None = None
    native: Template | None = None  # the template of its steps with `dind: false` (vLLM's native AMD jobs)

    @property
    def queue_map(self) -> dict[int, str]:
        return dict(self.queues)

    @property
    def gpu_counts(self) -> tuple[int, ...]:
        return tuple(n for n, _ in self.queues if n > 0)

    @property
    def has_gpus(self) -> bool:
        return bool(self.gpu_counts) or (not self.queues and self.vendor != "cpu")

    def queue(self, gpus: int) -> str | None:
        """The queue for `gpus` GPUs; 0 GPUs on a GPU family = its smallest queue."""
        table = self.queue_map
        if gpus in table:
            return table[gpus]
        if gpus == 0 and self.queues:
            return self.queues[0][1]
        return None


@frozen
class Route:
    """Steps without a device whose label or key matches go to `family`."""

    family: str
    label: str | None = None  # fnmatch glob
    key: str | None = None  # fnmatch glob

    def matches(self, step: Step) -> bool:
        if self.label is not None and not fnmatch.fnmatchcase(step.label, self.label):
            return False
        if self.key is not None and not fnmatch.fnmatchcase(step.key, self.key):
            return False
        return self.label is not None or self.key is not None


@frozen
class Inventory:
    families: tuple[Family, ...]
    default: str | None = None  # family of steps that name no hardware
    no_gpu: str | None = None  # family of no_gpu steps that name no hardware
    routes: tuple[Route, ...] = ()
    source: str = ""  # the file it came from, or "preset:vllm"
    build: BuildSpec | None = None  # how a build's facts change the jobs (build_context.py applies it)

    def family(self, name: str) -> Family | None:
        for family in self.families:
            if family.name == name:
                return family
        return None

    def names(self) -> list[str]:
        return [f.name for f in self.families]

    def resolve(self, device: str) -> tuple[Family, int | None] | None:
        """A device name -> (family, GPU count fixed by the name, or None)."""
        family = self.family(device)
        if family is not None:
            return family, None
        match = _COUNT_SUFFIX.match(device)
        if match:
            family = self.family(match["family"])
            if family is not None:
                return family, int(match["count"])
        return None


@frozen
class Job:
    """One step placed on one family: what render and run need to know."""

    step: Step
    family: Family
    gpus: int  # GPUs the job uses (0: none)
    queue: str | None  # None: Buildkite's default queue (no inventory)
    agents: tuple[tuple[str, str], ...] = ()  # all agent tags, queue first
    nodes: int = 1

    @property
    def template(self) -> Template:
        if self.family.native is not None and not self.step.dind:
            return self.family.native
        return self.family.template

    @property
    def uses_plugin(self) -> bool:
        """Whether the family's plugin (its container, its environment) wraps the job: not for a
        `no_plugin` step, nor across nodes (vLLM's multi-node script starts its own containers)."""
        return not self.step.no_plugin and self.nodes <= 1

    @property
    def vendor(self) -> str:
        return self.family.vendor

    @property
    def arch(self) -> str | None:
        return self.family.arch

    @property
    def hardware(self) -> str:
        """Short description, e.g. "mi355 x2" or "cpu"."""
        text = self.family.name
        if self.gpus:
            text += f" x{self.gpus}"
        if self.nodes > 1:
            text += f" ({self.nodes} nodes)"
        return text
