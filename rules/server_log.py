"""TD8xx: what the server's log says went wrong, each problem once per model.

The log scan (``checks.log_scan``) gives each log line holding a rule's words to that rule,
and gathers the lines that say the same thing about the same model into one occurrence; each
rule here turns its occurrences into findings that say where in the log (first and last
line, how many times, over how long), what it means and what to do.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from triton_doctor.findings import Hit
from triton_doctor.registry import RULES, rule
from triton_doctor.rules._common import first_line
from triton_doctor.triton.server_log import seconds_between
from triton_doctor.triton.server_model import LiveView

if TYPE_CHECKING:
    from triton_doctor.live_evidence import LogOccurrence

MIB = 1024 * 1024
#: Python's words for an exception, as the stub passes them on: ``RuntimeError: why``.
PYTHON_EXCEPTION = re.compile(r"\b([A-Z]\w*(?:Error|Exception|Exit|Interrupt)): ?([^\n]*)")
#: TensorRT's words for a plan of another release: the plan's version, then the library's.
TENSORRT_VERSIONS = re.compile(r"expecting library version ([\w.]+) got ([\w.]+)")
TENSORRT_TAGS = re.compile(r"Current Version: (\d+), Serialized Engine Version: (\d+)")
SHM_REQUESTED = re.compile(r"to requested size \((\d+) bytes\)")
MODULE_MISSING = re.compile(r"No module named '([^']+)'")
ALLOCATION = re.compile(r"Tried to allocate ([\d.]+ ?[KMGT]i?B)|requested buffer of size (\d+)")
CLIENT_DTYPE = re.compile(r"input '([^']+)' data-type is '(\w+)', but model '[^']+' "
                          r"expects '(\w+)'")
BATCH_LIMIT = re.compile(r"batch-size must be <= (\d+)")


def _occurrences(view: LiveView, rule_id: str) -> list[LogOccurrence]:
    """The rule's occurrences. Lines that name no model (a traceback's own line, a table's
    continuation) are the same problem as the rule's lines that do: they make a finding of
    their own only when no line names a model."""
    assert view.log is not None
    mine = [o for o in view.log.occurrences if o.rule == rule_id]
    named = [o for o in mine if o.model]
    return named or mine


def _where(occurrence: LogOccurrence) -> str:
    """``line 12``, or ``lines 12-480, 37 times over 4 min 3 s``."""
    if occurrence.count == 1:
        return f"log line {occurrence.first_line}"
    span = seconds_between(occurrence.first_time, occurrence.last_time)
    over = f" over {_duration(span)}" if span and span >= 1 else ""
    return (f"log lines {occurrence.first_line}-{occurrence.last_line}, "
            f"{occurrence.count} times{over}")


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def _hit(view: LiveView, occurrence: LogOccurrence, said: str, fix: str,
         anonymous: str = "a model", **evidence: Any) -> Hit:
    """A finding about ``occurrence``: who (its model, else ``anonymous``), what (``said``),
    where in the log; the first line's message as the server's words."""
    assert view.log is not None
    subject = occurrence.model or anonymous
    return Hit(
        message=f"{subject}: {said} ({_where(occurrence)})",
        triton_message=occurrence.first_message,
        fix=fix,
        path=view.log.path or None,
        line=occurrence.first_line,
        model=occurrence.model or None,
        evidence={"count": occurrence.count, "first_line": occurrence.first_line,
                  "last_line": occurrence.last_line, "first_time": occurrence.first_time,
                  "last_time": occurrence.last_time,
                  "span_s": seconds_between(occurrence.first_time, occurrence.last_time),
                  **evidence},
    )


@rule("TD801", "model-load-failed", "error", "The log shows a model failing to load",
      scope="log", needs=("log",),
      log_says=("failed to load '", "Poll failed for model directory '"), relays_server=True)
def model_load_failed(view: LiveView) -> Iterator[Hit]:
    """
    What it checks: the server's `failed to load '<model>' version <n>: <reason>` lines (and
    `Poll failed for model directory '<model>'`, for a config refused before loading), once
    per model, with the rule that explains the reason where its words name one (as TD601 does
    for a live server); a load error another log rule knows (a missing Python module, a stub
    that cannot start, /dev/shm, a TensorRT plan) is that rule's.

    Why it matters: the model is not served: every request to it fails with "Request for
    unknown model", and with `--exit-on-error` (the default) the server stops at startup.

    Example: `failed to load 'ranker' version 1: Invalid argument: unable to find backend
    library for backend 'onnxruntime'` → explained by TD504: the image has no ONNX Runtime
    backend.

    Fix: the explaining rule's fix (`triton-doctor explain <id>`); `triton-doctor check` on the
    repository finds most load errors before the server does.
    """
    assert view.log is not None
    others = [o for o in view.log.occurrences if o.model and o.rule not in ("TD801", "TD802")]
    for occurrence in _occurrences(view, "TD801"):
        reason = occurrence.first_message.partition(": ")[2]
        if not reason and any(o.model == occurrence.model and o.first_line <= occurrence.last_line
                              for o in others):
            # Only the server's short "failed to load 'x'" is left here: the line with the
            # reason was another log rule's, whose finding says it.
            continue
        reason = reason or occurrence.first_message
        explained = occurrence.explained_by
        evidence: dict[str, Any] = {"explained_by": explained or None}
        said = f"failed to load: {first_line(reason, 200)}"
        exception = PYTHON_EXCEPTION.search(reason)
        if explained:
            fix = f"See `triton-doctor explain {explained}` ({RULES[explained].title})."
        elif exception:
            evidence["exception"] = exception.group(1)
            fix = (f"The model's Python code raised {exception.group(1)} while loading: the "
                   "traceback is in the message; fix model.py (initialize) or what it reads.")
        else:
            fix = ("Read the reason; `triton-doctor check` on the repository finds most load "
                   "errors before the server does.")
        if explained:
            said += f" (explained by {explained})"
        yield _hit(view, occurrence, said, fix, **evidence)


@rule("TD802", "server-exited-at-startup", "error", "The server exited while starting",
      scope="log", needs=("log",), server_says=("error: creating server:",))
def server_exited_at_startup(view: LiveView) -> Iterator[Hit]:
    """
    What it checks: the server's last words when it gives up starting, `error: creating
    server: <reason>`; most often `Internal - failed to load all models`: with
    `--exit-on-error` (the default) one model that fails to load stops the whole server.
    With `--exit-on-error=false` the server logs `failed to load all models` and serves the
    rest: that is not this finding.

    Why it matters: every model is down, not only the broken one; in Kubernetes the pod
    restarts in a loop (CrashLoopBackOff).

    Example: `error: creating server: Internal - failed to load all models` after one
    `failed to load 'tokenizer'` line → fix the tokenizer, or serve the rest meanwhile.

    Fix: fix what the reason names (the models the log says failed, each a finding of its
    own); to keep serving the other models meanwhile, start with `--exit-on-error=false` (and
    `--strict-readiness=false` so that the server reports ready).
    """
    assert view.log is not None
    for occurrence in _occurrences(view, "TD802"):
        reason = occurrence.first_message.partition("error: creating server:")[2].strip()
        # The server names every model that failed to load in a "failed to load '<model>'"
        # line, whichever rule explains it.
        failed = sorted({o.model for o in view.log.occurrences if o.model
                         and o.rule == "TD801" and o.first_line < occurrence.first_line})
        named = f"; models that failed: {', '.join(failed[:10])}" if failed else ""
        yield _hit(view, occurrence, f"exited while starting: {reason}{named}",
                   "Fix the models that failed to load (the findings above); to serve the others "
                   "meanwhile, start with --exit-on-error=false --strict-readiness=false.",
                   anonymous="the server", failed_models=failed)


@rule("TD803", "cuda-out-of-memory", "error", "The log shows GPU memory running out",
      scope="log", needs=("log",),
      server_says=("out of memory", "CUDA_ERROR_OUT_OF_MEMORY", "cudaErrorMemoryAllocation",
                   "OutOfMemoryError", "CUDNN_STATUS_ALLOC_FAILED",
                   "Failed to allocate memory for requested buffer"))
def cuda_out_of_memory(view: LiveView) -> Iterator[Hit]:
    """
    What it checks: out-of-memory errors from CUDA, PyTorch, TensorRT, cuDNN or ONNX
    Runtime's arena in the log, once per model, with the allocation that failed where the
    message gives it.

    Why it matters: loads fail or requests fail; memory that creeps up until this line
    (a growing cache, more instances, bigger batches) brings the whole GPU down.

    Example: `torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB` in a
    Python model → fewer instances, a smaller max_batch_size, or a bigger GPU.

    Fix: lower the model's instance count or max_batch_size, move models to another GPU
    (`instance_group { gpus: [...] }`), limit framework caches; `triton-doctor check --url`
    shows per-GPU memory (TD701).
    """
    for occurrence in _occurrences(view, "TD803"):
        wanted = ALLOCATION.search(occurrence.first_message)
        size = (wanted.group(1) or f"{int(wanted.group(2)) / MIB:.1f} MiB") if wanted else None
        said = "GPU memory ran out" + (f" allocating {size}" if size else "")
        yield _hit(view, occurrence, said,
                   "Lower the instance count or max_batch_size, move models to another GPU, or "
                   "give the server a GPU with more memory; see TD701 on a live server.",
                   allocation=size)


@rule("TD804", "python-stub-died", "error", "A Python model's stub process died",
      scope="log", needs=("log",),
      server_says=("' is not healthy", "Stub process is not healthy",
                   "Stub process is unhealthy and it will be restarted",
                   "Failed to initialize stub, stub process exited unexpectedly"))
def python_stub_died(view: LiveView) -> Iterator[Hit]:
    """
    What it checks: the Python backend's `Stub process '<instance>' is not healthy` (older
    releases: `Stub process is unhealthy and it will be restarted`; `Failed to initialize
    stub, stub process exited unexpectedly`): the process that runs a model's Python code died.
    While loading, the model fails to load with these words; while serving, 2.51 says them
    only to the client, in each failed request's error, so a log of the clients shows them.

    Why it matters: a stub that dies while loading leaves no Python traceback, only these
    words. One that dies while serving fails every request to that instance from then on:
    releases that restart the stub do so when a request finds it dead; 2.51 does not, and the
    model stays READY while every request fails.

    Example: a model that loads a 6 GB tokenizer cache per instance in a container limited to
    8 GB: the kernel's OOM killer ends the stub → `Stub process 'tok_0_0' is not healthy`.

    Fix: find what killed it: the kernel log (`dmesg`: "Out of memory: Killed process ...
    triton_python_backend_stub"), the container's memory limit (TD715), a crash in a native
    library the model calls, or a model environment (EXECUTION_ENV_PATH) built for another
    Python than the stub's; give the container more memory or the model fewer instances.
    """
    for occurrence in _occurrences(view, "TD804"):
        yield _hit(view, occurrence, "the Python stub process running it died",
                   "Look for what killed it: `dmesg` (the OOM killer names "
                   "triton_python_backend_stub), the container's memory limit, a crash in a "
                   "native library, an EXECUTION_ENV_PATH built for another Python; give it "
                   "more memory or fewer instances.")


@rule("TD805", "python-shm-too-small", "error",
      "The Python backend cannot get shared memory", scope="log", needs=("log",),
      server_says=("Unable to initialize shared memory key",
                   "Failed to increase the shared memory pool size"))
def python_shm_too_small(view: LiveView) -> Iterator[Hit]:
    """
    What it checks: the Python backend's `Unable to initialize shared memory key ... to
    requested size` (a model cannot load) and `Failed to increase the shared memory pool size`
    (a request cannot pass its tensors): /dev/shm is too small or full.

    Why it matters: each Python model instance keeps a region in /dev/shm (1 MiB at least,
    `shm-default-byte-size`) and grows it for large tensors; Docker gives containers a 64 MB
    /dev/shm, which a few instances or one large request fill.

    Example: `docker run` without `--shm-size` and four Python models of two instances each →
    `Unable to initialize shared memory key 'triton_python_backend_shm_region_...' to
    requested size (1048576 bytes)`.

    Fix: start the container with a larger /dev/shm (`--shm-size=1g`; in Kubernetes an
    `emptyDir` with `medium: Memory` mounted at /dev/shm) and remove leftover segments (TD712).
    """
    for occurrence in _occurrences(view, "TD805"):
        asked = SHM_REQUESTED.search(occurrence.first_message)
        requested = int(asked.group(1)) if asked else None
        size = _shm_size_for(requested)
        what = ("its Python stub could not get its shared-memory region"
                if "Unable to initialize" in occurrence.says
                else "a request could not grow its shared memory")
        if requested:
            what += f" of {requested / MIB:.0f} MiB" if requested >= MIB else \
                f" of {requested} bytes"
        fix = (f"Give the server a larger /dev/shm: docker run --shm-size={size} (Kubernetes: "
               "an emptyDir with medium: Memory and that sizeLimit, mounted at /dev/shm); "
               "remove leftover triton_python_backend_shm_* segments (TD712).")
        if requested and requested >= LARGE_REGION:
            fix += (f" Each instance asks for {requested / MIB:.0f} MiB at start: if that is "
                    "--backend-config=python,shm-default-byte-size, lower it instead.")
        yield _hit(view, occurrence, f"{what}: /dev/shm is too small or full", fix,
                   requested_bytes=requested, suggested_shm_size=size)


#: A region asked for at start this large is a setting (shm-default-byte-size), not a need.
LARGE_REGION = 256 * MIB


def _shm_size_for(requested: int | None) -> str:
    """A /dev/shm to ask for, in GiB: 1, or twice the region that failed, whichever is more
    (instances and the tensors in flight share it)."""
    needed = max(1024 * MIB, 2 * (requested or 0))
    return f"{-(-needed // (1024 * MIB))}g"


@rule("TD806", "no-temp-directory", "error", "No writable temporary directory for the server",
      scope="log", needs=("log",),
      server_says=("No usable temporary directory found",
                   "Failed to create temporary directory for Python environments"))
def no_temp_directory(view: LiveView) -> Iterator[Hit]:
    """
    What it checks: Python's `No usable temporary directory found in [...]`, raised in a
    Python model when neither TMPDIR nor /tmp, /var/tmp, /usr/tmp can be written, and the
    Python backend's `Failed to create temporary directory for Python environments` (it
    unpacks EXECUTION_ENV_PATH archives under /tmp; the server aborts).

    Why it matters: the model fails to load or its requests fail; it happens where the root
    filesystem is read-only (Kubernetes `readOnlyRootFilesystem: true`) or /tmp is full.

    Example: a pod with `readOnlyRootFilesystem: true` and no volume at /tmp → a tokenizer
    that unpacks to a temporary directory fails in initialize.

    Fix: mount a writable volume at /tmp (an `emptyDir`), or set TMPDIR to a writable
    directory in the server's environment; free space if /tmp is full.
    """
    for occurrence in _occurrences(view, "TD806"):
        yield _hit(view, occurrence, "no temporary directory could be written",
                   "Mount a writable volume at /tmp (Kubernetes: an emptyDir) or set TMPDIR to a "
                   "writable directory for the server; free space if /tmp is full.")


@rule("TD807", "python-module-missing", "error",
      "A Python model imports a module its environment lacks", scope="log", needs=("log",),
      server_says=("ModuleNotFoundError",))
def python_module_missing(view: LiveView) -> Iterator[Hit]:
    """
    What it checks: `ModuleNotFoundError: No module named '<module>'` in the log: a Python
    model imports a package the stub's Python environment does not have.

    Why it matters: the model does not load (an import at the top of model.py or in
    initialize), or each request that reaches the import fails.

    Example: model.py imports `transformers`, installed on the developer's machine but not in
    the `tritonserver:24.08-py3` image → `No module named 'transformers'`.

    Fix: install the package into the image (`pip install` in the Dockerfile) or pack it into
    the model's own environment (conda-pack, `EXECUTION_ENV_PATH` in its parameters).
    """
    for occurrence in _occurrences(view, "TD807"):
        named = MODULE_MISSING.search(occurrence.first_message)
        module = named.group(1) if named else None
        package = module.split(".", 1)[0] if module else None
        yield _hit(view, occurrence,
                   f"its Python code imports {module!r}, which its environment lacks"
                   if module else "its Python code imports a module its environment lacks",
                   (f"Install {package} into the server's image (pip install {package}; the "
                    "package's name on PyPI may differ from the module's) or into the model's "
                    "EXECUTION_ENV_PATH environment." if package else
                    "Install the missing package into the image or the model's environment."),
                   module=module)


@rule("TD808", "ensemble-deadlock", "error", "An ensemble request stalled on a missing output",
      scope="log", needs=("log",),
      server_says=("unexpected deadlock, at least one output is not set",))
def ensemble_deadlock(view: LiveView) -> Iterator[Hit]:
    """
    What it checks: the ensemble scheduler's `unexpected deadlock, at least one output is not
    set while no more ensemble steps can be made`: a step finished without producing a tensor
    that a later step or the ensemble's output needs.

    Why it matters: the request fails (HTTP 400) although every model "worked"; it hits only
    the requests for which the step leaves the output out, so it looks data-dependent.

    Example: a Python preprocessing step that returns only `input_ids` when the text is
    empty, while the next step also takes `attention_mask`.

    Fix: make every step return every output the ensemble maps (an empty tensor rather than
    none), or make the consuming input optional; `triton-doctor check` on the repository
    checks the mapping itself (TD401, TD412).
    """
    for occurrence in _occurrences(view, "TD808"):
        yield _hit(view, occurrence,
                   "an ensemble request stalled: a step left out an output that a later step or "
                   "the ensemble's output needs",
                   "Make each step return every output the ensemble maps (an empty tensor rather "
                   "than none), or mark the consuming input optional.")


@rule("TD809", "client-dtype-mismatch", "error", "Clients send an input in the wrong type",
      scope="log", needs=("log",), server_says=("' data-type is '",))
def client_dtype_mismatch(view: LiveView) -> Iterator[Hit]:
    """
    What it checks: the server's `inference input '<name>' data-type is '<sent>', but model
    '<model>' expects '<type>'`: requests rejected because a client sends an input in another
    type than the model's configuration declares.

    Why it matters: every such request fails with HTTP 400; nothing on the server is broken,
    so its health checks stay green while a client's feature is down.

    Example: a client building its input with `np.array([1, 2])` (int64) for an input declared
    `TYPE_INT32`.

    Fix: send the type the model expects (numpy dtype and the `InferInput(name, shape,
    datatype)` datatype), or change the model's config if the client is right.
    """
    for occurrence in _occurrences(view, "TD809"):
        found = CLIENT_DTYPE.search(occurrence.first_message)
        if found:
            name, sent, expected = found.groups()
            said = f"clients send input {name!r} as {sent}, the model expects {expected}"
            fix = (f"Send {name!r} as {expected} (tritonclient: InferInput({name!r}, shape, "
                   f"{expected!r}) with numpy data of that type), or declare the input "
                   f"TYPE_{expected.replace('BYTES', 'STRING')} if the clients are right.")
        else:
            name = sent = expected = None
            said = "clients send an input in a type the model does not expect"
            fix = "Send each input in the data type the model's config declares."
        yield _hit(view, occurrence, said, fix, input=name, sent=sent, expected=expected)


@rule("TD810", "client-batch-too-large", "error", "Clients send batches above max_batch_size",
      scope="log", needs=("log",), server_says=("inference request batch-size must be <=",))
def client_batch_too_large(view: LiveView) -> Iterator[Hit]:
    """
    What it checks: the server's `inference request batch-size must be <= <n> for '<model>'`:
    requests rejected because their first dimension exceeds the model's `max_batch_size`.

    Why it matters: those requests fail with HTTP 400; a client that batches more under load
    fails exactly when traffic peaks.

    Example: a client sending 64 images at once to a model with `max_batch_size: 32`.

    Fix: split client batches to at most max_batch_size, or raise max_batch_size (a TensorRT
    plan needs an optimization profile that covers it).
    """
    for occurrence in _occurrences(view, "TD810"):
        limit = BATCH_LIMIT.search(occurrence.first_message)
        most = int(limit.group(1)) if limit else None
        yield _hit(view, occurrence,
                   f"clients send batches larger than its max_batch_size of {most}"
                   if most is not None else "clients send batches larger than max_batch_size",
                   f"Split client batches to at most {most or 'max_batch_size'}, or raise "
                   "max_batch_size (a TensorRT plan needs a profile that covers it).",
                   max_batch_size=most)


@rule("TD811", "server-crashed", "error", "The server process crashed", scope="log",
      needs=("log",),
      server_says=("Signal (11) received", "Signal (6) received", "Signal (7) received",
                   "Signal (4) received", "Signal (8) received",
                   "terminate called after throwing an instance of"))
def server_crashed(view: LiveView) -> Iterator[Hit]:
    """
    What it checks: the server's `Signal (11) received.` (a segmentation fault; 6 is an
    abort, 7 a bus error, 4 an illegal instruction, 8 an arithmetic error) and C++'s
    `terminate called after throwing an instance of ...`: the process died. `Signal (15)` and
    `(2)` are a normal shutdown and are not reported.

    Why it matters: every model and every request in flight is gone at once; the container
    or pod restarts and, if the cause is a request, dies again on the next one.

    Example: a 4 MiB JSON request to a Python model → `Signal (11) received.` with the
    server's stack frames after it.

    Fix: read the lines just before (the last request or load) and the stack frames after it;
    update to a release that fixes the crash, or avoid the input that causes it (binary
    tensor data instead of large JSON requests), and report it upstream with the frames.
    """
    for occurrence in _occurrences(view, "TD811"):
        yield _hit(view, occurrence, f"the process crashed ({occurrence.says})",
                   "Read the lines before it (the last request or model load) and the stack "
                   "frames after it; avoid the input that triggers it, update the release, and "
                   "report it upstream with the frames.", anonymous="the server")


@rule("TD812", "shutdown-timed-out", "warning", "The server could not stop its models in time",
      scope="log", needs=("log",), server_says=("Exit timeout expired",))
def shutdown_timed_out(view: LiveView) -> Iterator[Hit]:
    """
    What it checks: the server's `failed to stop server: Internal - Exit timeout expired.
    Exiting immediately.`: at shutdown, models were still live when `--exit-timeout-secs`
    (default 30) ran out.

    Why it matters: requests in flight were cut off, and a model that does not stop is often a
    model that hangs: a Python stub that died or is stuck in execute keeps its model live.

    Example: a Python model whose stub was killed → `Timeout 0: Found 1 live models` and
    then the exit timeout.

    Fix: find the model that would not stop (the `Found N live models` lines before it, and
    TD804 for dead stubs); raise `--exit-timeout-secs` if requests legitimately take longer.
    """
    for occurrence in _occurrences(view, "TD812"):
        yield _hit(view, occurrence,
                   "exited with models still running: they did not stop within "
                   "--exit-timeout-secs",
                   "Find the model that would not stop (a hung execute, a dead Python stub: "
                   "TD804); raise --exit-timeout-secs if requests legitimately run longer.",
                   anonymous="the server")


@rule("TD813", "tensorrt-engine-rejected", "error", "TensorRT refused to deserialize a plan",
      scope="log", needs=("log",),
      server_says=("Serialization assertion", "Failed to deserialize cuda engine",
                   "Engine deserialization failed"),
      log_says=("not compatible with this version of TensorRT",))
def tensorrt_engine_rejected(view: LiveView) -> Iterator[Hit]:
    """
    What it checks: TensorRT's own refusals of a plan in the log: `The engine plan file is not
    compatible with this version of TensorRT, expecting library version X got Y`,
    `Serialization assertion ... Version tag does not match`, `Failed to deserialize cuda
    engine`, with the versions involved where the message gives them.

    Why it matters: the model does not load. A plan only runs on the TensorRT release (and GPU)
    it was built with; a container update or a plan built on a laptop breaks it.

    Example: a plan built with TensorRT 10.0 served by 24.08 (TensorRT 10.3) → `expecting
    library version 10.0.1.6 got 10.3.0.26`.

    Fix: rebuild the plan with the server's TensorRT (trtexec inside the same release's
    container), or serve it with the release it was built for; `triton-doctor check` reads
    the plan's version offline (TD501).
    """
    for occurrence in _occurrences(view, "TD813"):
        text = occurrence.first_message
        versions = TENSORRT_VERSIONS.search(text)
        tags = TENSORRT_TAGS.search(text)
        evidence: dict[str, Any] = {"explained_by": occurrence.explained_by or None}
        if versions:
            plan, server = versions.groups()
            said = (f"its TensorRT plan was built with TensorRT {plan}, the server runs "
                    f"TensorRT {server}")
            evidence.update(tensorrt_plan=plan, tensorrt_server=server)
        elif tags:
            server, plan = tags.groups()
            said = (f"its TensorRT plan has serialization version {plan}, the server's TensorRT "
                    f"reads {server}: built with another TensorRT release")
            evidence.update(serialization_plan=plan, serialization_server=server)
        else:
            said = "TensorRT could not deserialize its plan (another TensorRT release or GPU, " \
                   "or a damaged file)"
        yield _hit(view, occurrence, said,
                   "Rebuild the plan with the server's TensorRT (trtexec inside the same "
                   "release's container), or serve it with the release it was built with; "
                   "`triton-doctor check` reads a plan's version offline (TD501).",
                   **evidence)


@rule("TD814", "python-execute-failed", "error", "A Python model raises on requests",
      scope="log", needs=("log",), log_says=("Failed to process the request(s)",),
      relays_server=True)
def python_execute_failed(view: LiveView) -> Iterator[Hit]:
    """
    What it checks: the Python backend's `Failed to process the request(s) for model
    '<instance>', message: <exception>`: the model's `execute` raised, and every request of
    that call failed. A cause another log rule knows (memory running out, a missing module)
    is that rule's.

    Why it matters: clients get errors (HTTP 500) for whole batches, while the model stays
    READY and its health checks pass; the same line repeated thousands of times is the usual
    trace of a model that breaks on some inputs.

    Example: `Failed to process the request(s) for model 'tokenizer_0_0', message:
    ValueError: token id out of the vocabulary` 60 times in a minute → the tokenizer gets
    ids from another vocabulary.

    Fix: fix `execute` for those inputs (the traceback in the message points at the line);
    validate inputs and answer a bad request with `InferenceResponse(error=TritonError(...))`
    rather than raising, so that one bad request does not fail the batch it came in.
    """
    for occurrence in _occurrences(view, "TD814"):
        exception = PYTHON_EXCEPTION.search(occurrence.first_message)
        raised = (f"{exception.group(1)}: {first_line(exception.group(2), 120)}"
                  if exception else "an error")
        yield _hit(view, occurrence, f"requests failed: its execute raised {raised}",
                   "Fix execute for those inputs (the traceback in the message points at the "
                   "line); answer a bad request with InferenceResponse(error=TritonError(...)) "
                   "rather than raising, so one bad request does not fail its whole batch.",
                   exception=exception.group(1) if exception else None)
