"""The hardware of this machine: what `pipegen run` can place steps on.

CPU always; with torch importable, its GPUs: CUDA or ROCm, how many, and
their architecture (`sm_90` from the compute capability on NVIDIA,
`gfx942` from `gcnArchName` on ROCm). torch is imported here and only
when detection actually runs: `import pipegen` never pays for it.

`PIPEGEN_HARDWARE` or `--hardware` replaces detection, for tests and for
machines torch describes wrongly or not at all. The syntax is `cpu`, or
`VENDOR:ARCH[:GPUS]` (GPUS defaults to 1): `nvidia:sm_90:2`, `amd:gfx942:8`,
and for what detection does not look for, `intel:pvc` (oneAPI), `apple:m2`
(Metal) or `other:ARCH` (an accelerator a fleet names by tag).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pipegen.errors import UsageError
from pipegen.frozen import frozen

HARDWARE_ENV = "PIPEGEN_HARDWARE"
GPU_VENDORS = ("nvidia", "amd")  # what detection finds (through torch)
_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]*")
_ARCH = {"nvidia": re.compile(r"sm_\d+[a-z]?"), "amd": re.compile(r"gfx[0-9a-f]+"), "intel": _NAME, "apple": _NAME,
         "other": _NAME}
_SYNTAX = "write 'cpu' or VENDOR:ARCH[:GPUS], e.g. 'nvidia:sm_90:2', 'amd:gfx942:8', 'intel:pvc' or 'apple:m2'"


@frozen
class Machine:
    """This machine as placement sees it: one GPU vendor and architecture, and a count."""

    vendor: str = "cpu"  # "cpu" (no usable GPU), "nvidia" or "amd"; intel, apple, other only as --hardware says
    arch: str | None = None  # "sm_90", "gfx942"; None without GPUs
    gpus: int = 0
    name: str = ""  # the GPU's marketing name, when known
    source: str = "detected"  # how we know: "detected", "--hardware", "PIPEGEN_HARDWARE"
    note: str = ""  # why detection found no GPU, when it matters

    def __str__(self) -> str:
        if not self.gpus:
            return "CPU only"
        name = f" ({self.name})" if self.name else ""
        return f"{self.gpus} {self.vendor} {self.arch} GPU{'s' if self.gpus != 1 else ''}{name}"


def parse_hardware(text: str, source: str) -> Machine:
    """`cpu` | `VENDOR:ARCH[:GPUS]` -> Machine; anything else is a usage error."""
    parts = text.strip().lower().split(":")
    if parts == ["cpu"]:
        return Machine(source=source)
    if len(parts) in (2, 3) and parts[0] in _ARCH and _ARCH[parts[0]].fullmatch(parts[1]):
        count = parts[2] if len(parts) == 3 else "1"
        if count.isdigit() and int(count) > 0:
            return Machine(parts[0], parts[1], int(count), source=source)
    raise UsageError(f"{source}: cannot read hardware {text!r}", fix=_SYNTAX)


def machine(flag: str | None, environ: Mapping[str, str]) -> Machine:
    """The --hardware flag, else $PIPEGEN_HARDWARE, else what torch sees."""
    if flag:
        return parse_hardware(flag, "--hardware")
    if environ.get(HARDWARE_ENV):
        return parse_hardware(environ[HARDWARE_ENV], HARDWARE_ENV)
    return detect()


def detect() -> Machine:
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. torch's "Failed to initialize NumPy"
            import torch
    except ImportError:
        return Machine(note="torch is not importable")
    except Exception as exc:  # a broken torch install: run on CPU and say why, no traceback
        return Machine(note=f"torch failed to import ({type(exc).__name__}: {exc})")
    try:
        return from_torch(torch)
    except Exception as exc:  # e.g. a driver that torch finds but cannot query
        return Machine(note=f"torch could not query its GPUs ({type(exc).__name__}: {exc})")


def from_torch(torch: Any) -> Machine:
    """What a torch module reports (a parameter, so tests can pass a stand-in)."""
    hip = getattr(torch.version, "hip", None)
    if not torch.cuda.is_available():
        return Machine(note=f"torch {torch.__version__} sees no GPU")
    count = torch.cuda.device_count()
    props = torch.cuda.get_device_properties(0)
    if hip:
        # gcnArchName carries target features: "gfx942:sramecc+:xnack-".
        return Machine("amd", props.gcnArchName.split(":")[0], count, props.name)
    return Machine("nvidia", f"sm_{props.major}{props.minor}", count, props.name)
