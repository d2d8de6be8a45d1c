"""This machine's hardware: the override syntax, and what torch reports."""

from __future__ import annotations

import importlib.abc
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from pipegen.errors import UsageError
from pipegen.hardware.detect import Machine, detect, from_torch, machine, parse_hardware


@pytest.mark.parametrize("text, expected", [
    ("cpu", Machine(source="s")),
    (" CPU ", Machine(source="s")),
    ("nvidia:sm_90:2", Machine("nvidia", "sm_90", 2, source="s")),
    ("nvidia:sm_100a", Machine("nvidia", "sm_100a", 1, source="s")),
    ("amd:gfx942:8", Machine("amd", "gfx942", 8, source="s")),
    ("AMD:GFX950", Machine("amd", "gfx950", 1, source="s")),
])
def test_parse_hardware(text: str, expected: Machine) -> None:
    assert parse_hardware(text, "s") == expected


@pytest.mark.parametrize("text", ["", "gpu", "nvidia", "nvidia:gfx942", "amd:sm_90", "amd:gfx942:0",
                                  "amd:gfx942:x", "amd:gfx942:2:1", "cpu:4"])
def test_parse_hardware_rejects(text: str) -> None:
    with pytest.raises(UsageError, match="cannot read hardware") as info:
        parse_hardware(text, "--hardware")
    assert "nvidia:sm_90:2" in info.value.fix


def test_flag_beats_environment_beats_detection() -> None:
    env = {"PIPEGEN_HARDWARE": "amd:gfx942:8"}
    assert machine("nvidia:sm_90", env) == Machine("nvidia", "sm_90", 1, source="--hardware")
    assert machine(None, env) == Machine("amd", "gfx942", 8, source="PIPEGEN_HARDWARE")


def _torch(hip: str | None, count: int, **props: object) -> SimpleNamespace:
    return SimpleNamespace(
        __version__="2.13.0",
        version=SimpleNamespace(hip=hip),
        cuda=SimpleNamespace(is_available=lambda: count > 0, device_count=lambda: count,
                             get_device_properties=lambda index: SimpleNamespace(**props)),
    )


def test_from_torch_nvidia() -> None:
    torch = _torch(None, 4, name="NVIDIA H100 80GB HBM3", major=9, minor=0)
    found = from_torch(torch)
    assert found == Machine("nvidia", "sm_90", 4, "NVIDIA H100 80GB HBM3")
    assert str(found) == "4 nvidia sm_90 GPUs (NVIDIA H100 80GB HBM3)"


def test_from_torch_rocm_drops_target_features() -> None:
    torch = _torch("6.3.0", 8, name="AMD Instinct MI300X", gcnArchName="gfx942:sramecc+:xnack-", major=9, minor=4)
    assert from_torch(torch) == Machine("amd", "gfx942", 8, "AMD Instinct MI300X")


def test_from_torch_without_gpus() -> None:
    found = from_torch(_torch(None, 0))
    assert (found.gpus, found.vendor, str(found)) == (0, "cpu", "CPU only")
    assert found.note == "torch 2.13.0 sees no GPU"


def test_without_torch_cpu_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` raise ImportError
    assert detect() == Machine(note="torch is not importable")


def test_broken_torch_is_cpu_only_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken:
        def __getattr__(self, name: str) -> Any:
            raise OSError("libcuda.so: cannot open shared object file")

    monkeypatch.setitem(sys.modules, "torch", Broken())
    found = detect()
    assert found.gpus == 0
    assert found.note == "torch could not query its GPUs (OSError: libcuda.so: cannot open shared object file)"


def test_torch_failing_to_import_is_cpu_only_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    class Failing(importlib.abc.MetaPathFinder):
        def find_spec(self, name: str, path: object, target: object = None) -> None:
            if name == "torch":
                raise OSError("libtorch_cuda.so: cannot open shared object file")

    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.setattr(sys, "meta_path", [Failing(), *sys.meta_path])
    assert detect() == Machine(note="torch failed to import (OSError: libtorch_cuda.so: cannot open shared object file)")


def test_this_machine() -> None:
    found = detect()  # whatever torch is installed here: consistent, never an error
    assert (found.gpus == 0) == (found.vendor == "cpu") == (found.arch is None)


def test_importing_pipegen_does_not_import_torch() -> None:
    code = ("import sys, pipegen, pipegen.cli, pipegen.hardware.detect, pipegen.run.local_plan, pipegen.run.process, pipegen.run.junit; "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
