"""The fields of a hardware inventory (`.buildkite/hardware.yaml`, or `hardware:` inline in the config):
what hardware/inventory.py checks each mapping with, described for the generated reference."""

from __future__ import annotations

from pipegen.declarations.field import Field
from pipegen.declarations.fields import Checker, anything, optional_string, string, string_list, tag_map
from pipegen.hardware.types import DOCKER_PLUGIN, TEMPLATE_KINDS, VENDORS

INVENTORY_FIELDS: dict[str, Checker] = {
    "default": Field(string, "The family of steps that name no hardware.", example="cpu"),
    "no_gpu": Field(string, "The family of no_gpu steps that name no hardware.", example="cpu"),
    "templates": Field(anything, "Named wrappers of jobs (fields below), that families name.",
                       example={"py": {"kind": "docker", "image": "python:3.12"}}, words="mapping of name: template"),
    "families": Field(anything, "The hardware families (fields below), by name (required).",
                      example={"cpu": {"vendor": "cpu", "queue": "cpu-queue"}}, words="mapping of name: family"),
    "routes": Field(anything, "Families of steps that name no hardware, by label or key glob (fields below).",
                    example=[{"label": ":docker:*", "family": "cpu"}], words="list of routes"),
    "build": Field(anything, "The build context: values, variants and variables one build applies to its jobs "
                   "(pipegen render's reference).", example={"values": {"registry": "public.ecr.aws/x"}},
                   words="mapping"),
}
ROUTE_FIELDS: dict[str, Checker] = {
    "label": Field(string, "A glob on the step's label (fnmatch).", example=":docker:*"),
    "key": Field(string, "A glob on the step's key (fnmatch).", example="build-*"),
    "family": Field(string, "The family such a step runs on (required, with label or key).", example="cpu"),
}
FAMILY_FIELDS: dict[str, Checker] = {
    "vendor": Field(anything, f"Who makes its accelerator: {', '.join(VENDORS)} (cpu: no GPUs).", example="amd",
                    words=" | ".join(VENDORS)),
    "arch": Field(optional_string, "Its GPU architecture (pipegen run matches this machine's).", example="gfx950"),
    "queue": Field(string, "The Buildkite queue of its jobs, whatever their GPU count.", example="cpu-queue"),
    "queues": Field(anything, "A queue per GPU count.", example={1: "mi355-1", 8: "mi355-8"},
                    words="mapping of GPU count: queue"),
    "template": Field(anything, "The template that wraps its jobs: a name under templates, or one inline.",
                      default="plain", example="rocm", words="template name, or a template mapping"),
    "agents": Field(tag_map, "Agent tags that choose its machines (its jobs get exactly these, the step's after "
                    "them); not with queue or queues.", example={"queue": "juliagpu", "cuda": "*"}),
    "description": Field(anything, "What it is, for people.", example="AMD MI355X, 8 per node", words="any"),
    "native": Field(string, "The template of its steps with dind: false.", example="rocm-native"),
}
TEMPLATE_FIELDS: dict[str, Checker] = {
    "kind": Field(anything, "How it wraps a job.", default="plain", example="docker",
                  words=" | ".join(TEMPLATE_KINDS)),
    "plugin": Field(optional_string, "The docker plugin and its version.", default=DOCKER_PLUGIN,
                    example="docker#v5.12.0"),
    "image": Field(optional_string, "The container image (docker: required).",
                   example="rocm/vllm-ci:$BUILDKITE_COMMIT"),
    "gpus": Field(optional_string, "The docker plugin's gpus.", example="all"),
    "volumes": Field(string_list, "Docker volumes.", example=["/dev/shm:/dev/shm"]),
    "environment": Field(string_list, "Variables passed into the container.", example=["HF_TOKEN"]),
    "devices": Field(string_list, "Devices passed into the container.", example=["/dev/kfd", "/dev/dri"]),
    "options": Field(anything, "More of the docker plugin's options, as it names them.",
                     example={"always-pull": True}, words="mapping"),
    "pod_spec": Field(anything, "The Kubernetes pod spec (kubernetes: required; `{gpus}` is the job's count).",
                      example={"containers": [{"image": "img:1"}]}, words="mapping"),
    "podSpec": Field(anything, "pod_spec's other name.", example={"containers": [{"image": "img:1"}]},
                     words="mapping"),
    "setup": Field(anything, "Commands run before the step's own: strings, or {run: CMD, min_gpus: N}.",
                   example=["nvidia-smi"], words="list of commands"),
    "wrap": Field(optional_string, "A plain template's command line around the step's commands ({commands}).",
                  example="bash run.sh {commands}"),
    "file": Field(optional_string, "The Jinja template that writes its jobs.", example="kubernetes-patch.j2"),
    "description": Field(anything, "What it is, for people.", example="ROCm container", words="any"),
    "job": Field(anything, "Fields set on every job it wraps (below).", example={"banners": True},
                 words="mapping of job fields"),
}
