"""The NVML collector: the real library where it is absent, and recorded-shaped NVML answers.

No GPU here, so the answers come from ``fixtures/recorded/nvml/`` through a fake ``pynvml``
module. The fake borrows nvidia-ml-py's own error classes, constants and result structures and
only replaces the functions that would call the C library, so its errors and return shapes are
the real ones.
"""

from __future__ import annotations

import ctypes
import json
import sys
import types
from pathlib import Path
from typing import Any

import pynvml
import pytest
from triton_doctor.checks.gpu import collect_gpu
from triton_doctor.checks.unavailable import SourceUnavailable
from triton_doctor.evidence import GpuEvidence, GpuProcess

RECORDED = Path(__file__).resolve().parent.parent / "fixtures" / "recorded" / "nvml"


def _library_present() -> bool:
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return False
    return True


class FakeNvml(types.ModuleType):
    """``pynvml`` answering from a recorded JSON file, and logging the calls made.

    A device handle is an object with the device's index: the recorded file lists the devices
    in index order.
    """

    FUNCTIONS = (
        "nvmlInit", "nvmlShutdown", "nvmlSystemGetDriverVersion",
        "nvmlSystemGetCudaDriverVersion", "nvmlDeviceGetCount", "nvmlDeviceGetHandleByIndex",
        "nvmlDeviceGetName", "nvmlDeviceGetUUID", "nvmlDeviceGetCudaComputeCapability",
        "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetUtilizationRates", "nvmlDeviceGetMigMode",
        "nvmlDeviceGetTotalEccErrors", "nvmlDeviceGetComputeRunningProcesses",
    )

    def __init__(self, answers: dict[str, Any]) -> None:
        super().__init__("pynvml")
        for name, value in vars(pynvml).items():
            if name.startswith(("NVML_", "NVMLError", "NVMLLibraryMismatchError")):
                setattr(self, name, value)
        self.answers = answers
        self.calls: list[str] = []
        for name in self.FUNCTIONS:
            setattr(self, name, self._function(name))

    def _function(self, name: str) -> Any:
        def call(*args: Any) -> Any:
            self.calls.append(name)
            if name == "nvmlShutdown":
                return None
            if name == "nvmlDeviceGetHandleByIndex":
                return types.SimpleNamespace(index=args[0])
            if name.startswith("nvmlDevice") and name != "nvmlDeviceGetCount":
                handle, *rest = args
                answer = self.answers["devices"][handle.index][name]
            else:
                answer, rest = self.answers[name], []
            if isinstance(answer, dict) and "NVMLError" in answer:
                raise pynvml.NVMLError(answer["NVMLError"])
            return self._shape(name, answer, rest)
        return call

    @staticmethod
    def _shape(name: str, answer: Any, args: list[Any]) -> Any:
        """The Python object nvidia-ml-py returns for this call."""
        if name == "nvmlDeviceGetMemoryInfo":
            return pynvml.c_nvmlMemory_t(**answer)
        if name == "nvmlDeviceGetUtilizationRates":
            return pynvml.c_nvmlUtilization_t(**answer)
        if name == "nvmlDeviceGetCudaComputeCapability":
            return tuple(answer)
        if name == "nvmlDeviceGetTotalEccErrors":
            return answer[",".join(str(arg) for arg in args)]
        if name == "nvmlDeviceGetComputeRunningProcesses":
            return [pynvml.nvmlFriendlyObject(process) for process in answer]
        return answer


def _install(monkeypatch: pytest.MonkeyPatch, answers: dict[str, Any]) -> FakeNvml:
    fake = FakeNvml(answers)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    return fake


def _recorded(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((RECORDED / name).read_text())
    return data


def test_fake_mimics_the_real_binding() -> None:
    for name in FakeNvml.FUNCTIONS:
        assert callable(getattr(pynvml, name)), name
    assert pynvml.NVMLError(3).__class__ is pynvml.NVMLError_NotSupported
    assert pynvml.NVMLError(3).value == 3


@pytest.mark.skipif(_library_present(), reason="libnvidia-ml.so.1 is installed here")
def test_real_nvml_without_the_library_is_unavailable() -> None:
    with pytest.raises(SourceUnavailable) as caught:
        collect_gpu()
    message = str(caught.value)
    assert "NVML" in message
    assert "libnvidia-ml.so.1" in message
    assert "NVML Shared Library Not Found" in message


@pytest.mark.skipif(not _library_present(), reason="no NVIDIA driver here")
def test_real_nvml_on_a_gpu_machine() -> None:
    evidence = collect_gpu()
    assert evidence.driver_version
    assert all(device.memory_total_bytes > 0 for device in evidence.devices)


def test_two_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _install(monkeypatch, _recorded("a100-80gb-and-l4.json"))
    evidence = collect_gpu()
    assert evidence.driver_version == "550.90.07"
    assert evidence.cuda_driver_version == "12.4"
    a100, l4 = evidence.devices
    assert (a100.index, a100.name, a100.compute_capability) == (0, "NVIDIA A100 80GB PCIe", "8.0")
    assert a100.uuid == "GPU-5f3d8a2e-91c4-7b0e-2d6a-c8e41f9b7a13"
    assert (a100.memory_total_bytes, a100.memory_used_bytes) == (85899345920, 23286210560)
    assert a100.utilization_percent == 37
    assert a100.mig_enabled is False
    assert a100.ecc_uncorrected_errors == 0
    assert a100.processes == [GpuProcess(48211, 22548578304), GpuProcess(48377, None)]
    # The L4 has no MIG and answers NotSupported for the ECC counters: unknown, not zero.
    assert (l4.name, l4.compute_capability, l4.memory_total_bytes) == (
        "NVIDIA L4", "8.9", 24152899584)
    assert l4.mig_enabled is None
    assert l4.ecc_uncorrected_errors is None
    assert l4.processes == []
    assert evidence.errors == {"GPU 1 mig": "NotSupported", "GPU 1 ecc": "NotSupported"}
    assert fake.calls.count("nvmlInit") == fake.calls.count("nvmlShutdown") == 1


def test_failed_memory_query_keeps_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    _install(monkeypatch, _recorded("memory-info-fails.json"))
    evidence = collect_gpu()
    assert evidence.cuda_driver_version == "13.0"
    (device,) = evidence.devices
    assert (device.name, device.compute_capability, device.utilization_percent) == (
        "NVIDIA GB10", "12.1", 4)
    assert (device.memory_total_bytes, device.memory_used_bytes) == (0, 0)
    assert evidence.errors == {
        "GPU 0 memory": "NotSupported",
        "GPU 0 mig": "NotSupported",
        "GPU 0 ecc": "NotSupported",
        "GPU 0 processes": "NoPermission",
    }


def test_evidence_round_trips_through_json(monkeypatch: pytest.MonkeyPatch) -> None:
    from triton_doctor.evidence import from_jsonable, to_jsonable

    _install(monkeypatch, _recorded("a100-80gb-and-l4.json"))
    evidence = collect_gpu()
    text = json.dumps(to_jsonable(evidence))
    assert from_jsonable(GpuEvidence, json.loads(text)) == evidence


@pytest.mark.parametrize(("code", "words"), [
    (pynvml.NVML_ERROR_LIBRARY_NOT_FOUND, "libnvidia-ml.so.1 was not found"),
    (pynvml.NVML_ERROR_DRIVER_NOT_LOADED, "kernel driver is not loaded"),
    (pynvml.NVML_ERROR_NO_PERMISSION, "permission denied"),
    (pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH, "reboot"),
    (pynvml.NVML_ERROR_UNKNOWN, "NVML could not start: Unknown Error (Unknown)"),
])
def test_init_failures_say_why(monkeypatch: pytest.MonkeyPatch, code: int, words: str) -> None:
    fake = _install(monkeypatch, {"nvmlInit": {"NVMLError": code}})
    with pytest.raises(SourceUnavailable, match="NVML") as caught:
        collect_gpu()
    assert words in str(caught.value)
    assert "nvmlShutdown" not in fake.calls


def test_shutdown_even_when_counting_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = _recorded("a100-80gb-and-l4.json")
    answers["nvmlDeviceGetCount"] = {"NVMLError": pynvml.NVML_ERROR_GPU_IS_LOST}
    fake = _install(monkeypatch, answers)
    with pytest.raises(SourceUnavailable, match="could not count the GPUs: GPU is lost"):
        collect_gpu()
    assert fake.calls[-1] == "nvmlShutdown"


def test_package_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    with pytest.raises(SourceUnavailable, match="pip install nvidia-ml-py"):
        collect_gpu()


def test_captured_h200_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    """Answers captured from a real H200: the collector reads every field of a data-centre GPU."""
    _install(monkeypatch, _recorded("h200-idle.json"))
    evidence = collect_gpu()
    (device,) = evidence.devices
    assert (evidence.driver_version, evidence.cuda_driver_version) == ("580.159.04", "13.0")
    assert (device.name, device.compute_capability) == ("NVIDIA H200", "9.0")
    assert device.memory_total_bytes == 150754820096
    assert (device.mig_enabled, device.ecc_uncorrected_errors, device.processes) == (
        False, 0, [])
    assert evidence.errors == {}


def _judged_gpu(monkeypatch: pytest.MonkeyPatch, earlier: str, later: str) -> list[str]:
    from triton_doctor.catalogue import select_rules
    from triton_doctor.checks.live import with_trend
    from triton_doctor.engine import run
    from triton_doctor.evidence import Evidence

    _install(monkeypatch, _recorded(earlier))
    before = collect_gpu()
    _install(monkeypatch, _recorded(later))
    after = collect_gpu()
    with_trend(after, before)
    evidence = Evidence(gpu=after, unavailable={"server": "GPU only"})
    return [f"{f.rule} {f.message}" for f in run(evidence, select_rules(["TD7"], [])).findings]


def test_captured_h200_filling_up_is_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    (finding,) = _judged_gpu(monkeypatch, "h200-idle.json", "h200-95-percent-full.json")
    assert finding.startswith("TD701 GPU 0 (NVIDIA H200) has 95% of its memory in use")
    assert "+136587 MiB over the window" in finding
    assert "pid 468 136578 MiB" in finding


def test_captured_h200_idle_is_not_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _judged_gpu(monkeypatch, "h200-idle.json", "h200-idle.json") == []
