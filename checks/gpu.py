"""Collect the host's GPUs through NVML (the ``pynvml`` module of nvidia-ml-py).

NVML is what ``nvidia-smi`` reads: it needs the driver's ``libnvidia-ml.so.1`` and its kernel
module, so on a machine or container without them the whole part is unavailable, with the
reason in words. Once NVML is up, every per-device query is asked on its own: consumer and
older GPUs answer NotSupported for ECC or MIG as a matter of course, and one failed answer must
not hide the others.

NVML is started once per process, at the first read, and shut down at exit: ``watch`` reads
every second, and starting NVML costs more than the read. A start that failed is remembered
with its reason rather than retried at each poll.
"""

from __future__ import annotations

import atexit
import contextlib
import time
from collections.abc import Callable
from typing import Any, TypeVar

from triton_doctor.checks.unavailable import SourceUnavailable
from triton_doctor.evidence import GpuDevice, GpuEvidence, GpuProcess
from triton_doctor.records import record

T = TypeVar("T")

#: Why nvmlInit failed, by NVML error name, and what to do about it.
INIT_FAILURES = {
    "NVML_ERROR_LIBRARY_NOT_FOUND": (
        "NVML is not available: libnvidia-ml.so.1 was not found, so this machine has no NVIDIA "
        "driver, or this container was started without GPU access (docker run --gpus all, or "
        "the nvidia runtime)"
    ),
    "NVML_ERROR_DRIVER_NOT_LOADED": (
        "NVML is not available: the NVIDIA kernel driver is not loaded; check `nvidia-smi` and "
        "`dmesg`, and load the driver (modprobe nvidia) or reboot after installing it"
    ),
    "NVML_ERROR_NO_PERMISSION": (
        "NVML is not available: permission denied on the GPU device files (/dev/nvidia*); run "
        "as a user that may open them, or as root"
    ),
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH": (
        "NVML is not available: the NVML library and the loaded kernel driver are different "
        "versions (usually a driver upgrade without a reboot); reboot, or reload the nvidia "
        "kernel modules"
    ),
}


#: Seconds a failed start of NVML is remembered before it is tried again: a ``watch`` started
#: while the driver was still loading (a node coming up) sees the GPUs once it has.
RETRY_AFTER_S = 60.0


@record
class _Session:
    """This process's NVML: the started ``pynvml`` module, or why it could not start, and when
    it last tried."""

    pynvml: Any = None
    failure: str = ""
    failed_at: float = 0.0


_SESSION = _Session()


def collect_gpu() -> GpuEvidence:
    """Driver and CUDA driver versions, and each GPU's identity, memory, load and processes.

    Raises SourceUnavailable when NVML cannot start at all; a query that fails for one device
    is recorded in ``errors`` ("GPU 1 ecc": "NotSupported") and the rest is still collected.
    """
    return _read_gpus(_started())


def _started() -> Any:
    """The ``pynvml`` module with NVML up, started at the first call of the process."""
    session = _SESSION
    if session.pynvml is not None:
        return session.pynvml
    if not session.failure or time.monotonic() - session.failed_at >= RETRY_AFTER_S:
        session.failure = _start(session)
        session.failed_at = time.monotonic()
    if session.failure:
        raise SourceUnavailable(session.failure)
    return session.pynvml


def _start(session: _Session) -> str:
    """Start NVML into ``session``; the reason it could not, or ""."""
    try:
        import pynvml
    except ImportError:
        return ("NVML is not available: the nvidia-ml-py package is not installed "
                "(pip install nvidia-ml-py)")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as error:
        return _init_failure(pynvml, error)
    session.pynvml = pynvml
    atexit.register(_shutdown, pynvml)
    return ""


def _shutdown(pynvml: Any) -> None:
    with contextlib.suppress(pynvml.NVMLError):
        pynvml.nvmlShutdown()


def _init_failure(pynvml: Any, error: Any) -> str:
    for constant, sentence in INIT_FAILURES.items():
        if error.value == getattr(pynvml, constant):
            return f"{sentence}. NVML said: {error}."
    return f"NVML could not start: {error} ({_name(error)})."


def _name(error: BaseException) -> str:
    """``NVMLError_NotSupported`` -> ``NotSupported``: short enough for an errors entry."""
    return type(error).__name__.removeprefix("NVMLError_")


def _read_gpus(pynvml: Any) -> GpuEvidence:
    evidence = GpuEvidence()
    # Unversioned calls such as nvmlDeviceGetComputeRunningProcesses raise this (not an
    # NVMLError) when the driver predates the function version the binding asks for.
    failures = (pynvml.NVMLError, getattr(pynvml, "NVMLLibraryMismatchError", pynvml.NVMLError))

    def ask(key: str, call: Callable[..., T], *args: Any) -> T | None:
        try:
            return call(*args)
        except failures as error:
            evidence.errors[key] = _name(error)
            return None

    evidence.driver_version = ask("driver version", pynvml.nvmlSystemGetDriverVersion) or ""
    cuda = ask("cuda driver version", pynvml.nvmlSystemGetCudaDriverVersion)
    if cuda:
        # NVML encodes CUDA 12.4 as 12040 (1000 * major + 10 * minor).
        evidence.cuda_driver_version = f"{cuda // 1000}.{cuda % 1000 // 10}"
    try:
        count = pynvml.nvmlDeviceGetCount()
    except pynvml.NVMLError as error:
        raise SourceUnavailable(f"NVML started but could not count the GPUs: {error}.") from None
    for index in range(count):
        handle = ask(f"GPU {index}", pynvml.nvmlDeviceGetHandleByIndex, index)
        if handle is None:
            continue
        evidence.devices.append(_read_device(pynvml, index, handle, ask, evidence.errors))
    return evidence


def _read_device(pynvml: Any, index: int, handle: Any, ask: Callable[..., Any],
                 errors: dict[str, str]) -> GpuDevice:
    """One GPU; a field whose query failed keeps its default (0, "" or None)."""
    key = f"GPU {index}"
    device = GpuDevice(index=index)
    device.name = ask(f"{key} name", pynvml.nvmlDeviceGetName, handle) or ""
    device.uuid = ask(f"{key} uuid", pynvml.nvmlDeviceGetUUID, handle) or ""
    capability = ask(f"{key} compute capability", pynvml.nvmlDeviceGetCudaComputeCapability,
                     handle)
    if capability is not None:
        device.compute_capability = f"{capability[0]}.{capability[1]}"
    _read_memory(pynvml, handle, device, errors)
    utilization = ask(f"{key} utilization", pynvml.nvmlDeviceGetUtilizationRates, handle)
    if utilization is not None:
        device.utilization_percent = int(utilization.gpu)
    mig = ask(f"{key} mig", pynvml.nvmlDeviceGetMigMode, handle)
    if mig is not None:
        device.mig_enabled = mig[0] == pynvml.NVML_DEVICE_MIG_ENABLE
    device.ecc_uncorrected_errors = ask(
        f"{key} ecc", pynvml.nvmlDeviceGetTotalEccErrors, handle,
        pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, pynvml.NVML_VOLATILE_ECC,
    )
    processes = ask(f"{key} processes", pynvml.nvmlDeviceGetComputeRunningProcesses, handle)
    device.processes = [
        GpuProcess(pid=int(process.pid), used_bytes=process.usedGpuMemory)
        for process in processes or []
    ]
    return device


def _read_memory(pynvml: Any, handle: Any, device: GpuDevice, errors: dict[str, str]) -> None:
    """Memory through the v2 call where the binding and the driver have it (its ``used``
    leaves out the driver's reserved memory, which v1 counts as used), else through v1.

    A GPU on the host's memory (GB10, Jetson) has no device total: NVML answers 0 or
    NotSupported, and the device is marked unified rather than left at a 0-byte total.
    """
    def failed(error: Any) -> None:
        errors[f"GPU {device.index} memory"] = _name(error)
        device.memory_unified = error.value == pynvml.NVML_ERROR_NOT_SUPPORTED

    memory = None
    version = getattr(pynvml, "nvmlMemory_v2", None)  # absent from older nvidia-ml-py
    if version is not None:
        try:
            memory = pynvml.nvmlDeviceGetMemoryInfo(handle, version=version)
        except pynvml.NVMLError as error:
            if error.value not in (pynvml.NVML_ERROR_FUNCTION_NOT_FOUND,
                                   pynvml.NVML_ERROR_NOT_SUPPORTED):
                return failed(error)
        else:
            device.memory_reserved_bytes = int(memory.reserved)
    if memory is None:
        try:
            memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
        except pynvml.NVMLError as error:
            return failed(error)
    device.memory_total_bytes = int(memory.total)
    device.memory_used_bytes = int(memory.used)
    device.memory_unified = device.memory_total_bytes == 0
