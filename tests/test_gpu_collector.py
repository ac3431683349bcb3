"""The NVML collector: the real library where it is absent, and recorded-shaped NVML answers.

No GPU here, so the answers come from ``fixtures/recorded/nvml/`` through a fake ``pynvml``
module. The fake borrows nvidia-ml-py's own error classes, constants and result structures and
only replaces the functions that would call the C library, so its errors and return shapes are
the real ones. Each test starts a fresh NVML session (the collector keeps one per process), and
the collector's exit hooks are kept here, to be run by the test, rather than at the real exit.
"""

from __future__ import annotations

import ctypes
import inspect
import json
import sys
import types
from pathlib import Path
from typing import Any

import pynvml
import pytest
from triton_doctor.checks import gpu
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
    in index order. The v2 memory call is logged as ``nvmlDeviceGetMemoryInfo_v2``, the name of
    the NVML function the binding calls for it.
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
        self.nvmlMemory_v2 = pynvml.nvmlMemory_v2
        self.answers = answers
        self.calls: list[str] = []
        for name in self.FUNCTIONS:
            setattr(self, name, self._function(name))

    def _function(self, name: str) -> Any:
        def call(*args: Any, version: int | None = None) -> Any:
            called = name
            if name == "nvmlDeviceGetMemoryInfo" and version:
                assert version == pynvml.nvmlMemory_v2
                called = "nvmlDeviceGetMemoryInfo_v2"
            self.calls.append(called)
            if name == "nvmlShutdown":
                return None
            if name == "nvmlDeviceGetHandleByIndex":
                return types.SimpleNamespace(index=args[0])
            if name.startswith("nvmlDevice") and name != "nvmlDeviceGetCount":
                handle, *rest = args
                answers = self.answers["devices"][handle.index]
                # A recording without the v2 answer stands for a driver without the function.
                answer = answers.get(called, {"NVMLError": pynvml.NVML_ERROR_FUNCTION_NOT_FOUND})
            else:
                answer, rest = self.answers[name], []
            if isinstance(answer, dict) and "NVMLError" in answer:
                raise pynvml.NVMLError(answer["NVMLError"])
            return self._shape(called, answer, rest)
        return call

    @staticmethod
    def _shape(name: str, answer: Any, args: list[Any]) -> Any:
        """The Python object nvidia-ml-py returns for this call."""
        if name == "nvmlDeviceGetMemoryInfo":
            return pynvml.c_nvmlMemory_t(**answer)
        if name == "nvmlDeviceGetMemoryInfo_v2":
            return pynvml.c_nvmlMemory_v2_t(version=pynvml.nvmlMemory_v2, **answer)
        if name == "nvmlDeviceGetUtilizationRates":
            return pynvml.c_nvmlUtilization_t(**answer)
        if name == "nvmlDeviceGetCudaComputeCapability":
            return tuple(answer)
        if name == "nvmlDeviceGetTotalEccErrors":
            return answer[",".join(str(arg) for arg in args)]
        if name == "nvmlDeviceGetComputeRunningProcesses":
            return [pynvml.nvmlFriendlyObject(process) for process in answer]
        return answer


@pytest.fixture(autouse=True)
def exit_hooks(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """A fresh NVML session for each test; what the collector asks to run at exit."""
    hooks: list[Any] = []
    monkeypatch.setattr(gpu, "_SESSION", gpu._Session())
    monkeypatch.setattr(gpu, "atexit", types.SimpleNamespace(
        register=lambda function, *args: hooks.append(lambda: function(*args))))
    return hooks


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
    # The v2 memory call: a version argument, NVML's _v2 function, and a reserved field.
    assert "version" in inspect.signature(pynvml.nvmlDeviceGetMemoryInfo).parameters
    assert '"nvmlDeviceGetMemoryInfo_v2"' in inspect.getsource(pynvml.nvmlDeviceGetMemoryInfo)
    assert "reserved" in dict(pynvml.c_nvmlMemory_v2_t._fields_)
    assert pynvml.NVMLError(13).__class__ is pynvml.NVMLError_FunctionNotFound


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
    # The v2 call: used leaves out what the driver reserves (v1 said 23286210560 used).
    assert (a100.memory_total_bytes, a100.memory_used_bytes, a100.memory_reserved_bytes) == (
        85899345920, 22692716544, 593494016)
    assert a100.memory_unified is False
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
    assert fake.calls.count("nvmlDeviceGetMemoryInfo_v2") == 2
    assert "nvmlDeviceGetMemoryInfo" not in fake.calls


def test_failed_memory_query_keeps_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    _install(monkeypatch, _recorded("memory-info-fails.json"))
    evidence = collect_gpu()
    assert evidence.cuda_driver_version == "13.0"
    (device,) = evidence.devices
    assert (device.name, device.compute_capability, device.utilization_percent) == (
        "NVIDIA GB10", "12.1", 4)
    assert (device.memory_total_bytes, device.memory_used_bytes) == (0, 0)
    assert device.memory_unified is True
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


def test_nvml_starts_once_and_stops_at_exit(
        monkeypatch: pytest.MonkeyPatch, exit_hooks: list[Any]) -> None:
    fake = _install(monkeypatch, _recorded("h200-idle.json"))
    readings = [collect_gpu() for _ in range(3)]
    assert readings[0] == readings[2]
    assert fake.calls.count("nvmlDeviceGetCount") == 3
    assert fake.calls.count("nvmlInit") == 1
    assert "nvmlShutdown" not in fake.calls
    for hook in exit_hooks:
        hook()
    assert fake.calls.count("nvmlShutdown") == 1


def test_a_failed_start_is_remembered(
        monkeypatch: pytest.MonkeyPatch, exit_hooks: list[Any]) -> None:
    fake = _install(monkeypatch, {"nvmlInit": {"NVMLError": pynvml.NVML_ERROR_DRIVER_NOT_LOADED}})
    messages = []
    for _ in range(3):
        with pytest.raises(SourceUnavailable) as caught:
            collect_gpu()
        messages.append(str(caught.value))
    assert len(set(messages)) == 1
    assert "kernel driver is not loaded" in messages[0]
    assert fake.calls == ["nvmlInit"]
    assert exit_hooks == []


def test_a_failed_start_is_tried_again_after_a_while(
        monkeypatch: pytest.MonkeyPatch, exit_hooks: list[Any]) -> None:
    """A driver still loading when watch started: NVML is tried again RETRY_AFTER_S later."""
    _install(monkeypatch, {"nvmlInit": {"NVMLError": pynvml.NVML_ERROR_DRIVER_NOT_LOADED}})
    with pytest.raises(SourceUnavailable):
        collect_gpu()
    fake = _install(monkeypatch, _recorded("h200-idle.json"))
    with pytest.raises(SourceUnavailable):  # remembered: not tried again yet
        collect_gpu()
    assert fake.calls == []
    monkeypatch.setattr(gpu, "RETRY_AFTER_S", 0.0)
    assert collect_gpu().devices
    assert fake.calls.count("nvmlInit") == 1


def test_a_missing_package_is_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    with pytest.raises(SourceUnavailable, match="pip install nvidia-ml-py"):
        collect_gpu()
    fake = _install(monkeypatch, _recorded("h200-idle.json"))
    with pytest.raises(SourceUnavailable, match="pip install nvidia-ml-py"):
        collect_gpu()
    assert fake.calls == []


def test_counting_fails_and_nvml_stays_up(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = _recorded("a100-80gb-and-l4.json")
    answers["nvmlDeviceGetCount"] = {"NVMLError": pynvml.NVML_ERROR_GPU_IS_LOST}
    fake = _install(monkeypatch, answers)
    with pytest.raises(SourceUnavailable, match="could not count the GPUs: GPU is lost"):
        collect_gpu()
    answers["nvmlDeviceGetCount"] = 2
    assert len(collect_gpu().devices) == 2
    assert fake.calls.count("nvmlInit") == 1
    assert "nvmlShutdown" not in fake.calls


def test_v1_memory_where_the_driver_lacks_v2(monkeypatch: pytest.MonkeyPatch) -> None:
    """The H200 recordings hold no v2 answer: served as FunctionNotFound, v1 is read."""
    fake = _install(monkeypatch, _recorded("h200-idle.json"))
    (device,) = collect_gpu().devices
    assert (device.memory_used_bytes, device.memory_reserved_bytes) == (644939776, None)
    assert fake.calls.count("nvmlDeviceGetMemoryInfo_v2") == 1
    assert fake.calls.count("nvmlDeviceGetMemoryInfo") == 1
    assert collect_gpu().errors == {}


def test_v1_memory_where_v2_is_not_supported(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = _recorded("a100-80gb-and-l4.json")
    answers["devices"][0]["nvmlDeviceGetMemoryInfo_v2"] = {
        "NVMLError": pynvml.NVML_ERROR_NOT_SUPPORTED}
    _install(monkeypatch, answers)
    evidence = collect_gpu()
    a100, l4 = evidence.devices
    assert (a100.memory_used_bytes, a100.memory_reserved_bytes) == (23286210560, None)
    assert (l4.memory_used_bytes, l4.memory_reserved_bytes) == (4194304, 505479168)
    assert "GPU 0 memory" not in evidence.errors


def test_v1_memory_with_a_binding_without_v2(monkeypatch: pytest.MonkeyPatch) -> None:
    """nvidia-ml-py before the v2 call: no nvmlMemory_v2, and no version argument to pass."""
    fake = _install(monkeypatch, _recorded("a100-80gb-and-l4.json"))
    del fake.nvmlMemory_v2
    a100, _ = collect_gpu().devices
    assert (a100.memory_used_bytes, a100.memory_reserved_bytes) == (23286210560, None)
    assert "nvmlDeviceGetMemoryInfo_v2" not in fake.calls


def test_a_v2_failure_other_than_absence_is_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = _recorded("a100-80gb-and-l4.json")
    answers["devices"][1]["nvmlDeviceGetMemoryInfo_v2"] = {
        "NVMLError": pynvml.NVML_ERROR_GPU_IS_LOST}
    fake = _install(monkeypatch, answers)
    evidence = collect_gpu()
    l4 = evidence.devices[1]
    assert (l4.memory_total_bytes, l4.memory_unified) == (0, False)
    assert evidence.errors["GPU 1 memory"] == "GpuIsLost"
    assert "nvmlDeviceGetMemoryInfo" not in fake.calls


def test_unified_memory_with_a_zero_total(monkeypatch: pytest.MonkeyPatch) -> None:
    from triton_doctor.evidence import from_jsonable, to_jsonable

    _install(monkeypatch, _recorded("unified-memory-zero-total.json"))
    evidence = collect_gpu()
    (device,) = evidence.devices
    assert (device.memory_unified, device.memory_total_bytes, device.memory_reserved_bytes) == (
        True, 0, 0)
    assert device.utilization_percent == 61
    assert "GPU 0 memory" not in evidence.errors
    text = json.dumps(to_jsonable(evidence))
    assert '"memory_unified": true' in text
    assert from_jsonable(GpuEvidence, json.loads(text)) == evidence


@pytest.mark.parametrize("recording", ["unified-memory-zero-total.json", "memory-info-fails.json"])
def test_unified_memory_is_not_judged(monkeypatch: pytest.MonkeyPatch, recording: str) -> None:
    assert _judged_gpu(monkeypatch, recording, recording) == []


@pytest.mark.parametrize("recording", ["unified-memory-zero-total.json", "memory-info-fails.json"])
def test_unified_memory_is_shown_as_such(monkeypatch: pytest.MonkeyPatch, recording: str) -> None:
    from triton_doctor.tui.gpu import gpu_facts

    _install(monkeypatch, _recorded(recording))
    evidence = collect_gpu()
    (device,) = evidence.devices
    facts = gpu_facts(device, evidence.driver_version, evidence.cuda_driver_version, [], 0.9).plain
    assert "unified memory" in facts
    assert "0%" not in facts
    assert _overview_memory(evidence) == ["unified memory", "-"]


def test_device_memory_is_shown_with_its_reserve(monkeypatch: pytest.MonkeyPatch) -> None:
    from triton_doctor.tui.gpu import gpu_facts

    _install(monkeypatch, _recorded("a100-80gb-and-l4.json"))
    evidence = collect_gpu()
    facts = gpu_facts(evidence.devices[0], "", "", [], 0.9).plain
    assert "26%  21.1 of 80.0 GiB, 566 MiB reserved by the driver" in facts
    assert "unified" not in facts
    assert _overview_memory(evidence)[1] == "21.1/80.0 GiB"


def _overview_memory(evidence: GpuEvidence) -> list[str]:
    """The overview's memory gauge and size cells of the first GPU, as text."""
    from triton_doctor.evidence import Evidence
    from triton_doctor.result import Result
    from triton_doctor.tui.overview import gpu_rows
    from triton_doctor.tui.state import Frame, History

    frame = Frame(0.0, Evidence(gpu=evidence), Result())
    (_, cells), *_ = gpu_rows(frame, History())
    return [str(cell) for cell in cells[2:4]]


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

    fake = _install(monkeypatch, _recorded(earlier))
    before = collect_gpu()
    fake.answers = _recorded(later)  # the same NVML session, a second later
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
