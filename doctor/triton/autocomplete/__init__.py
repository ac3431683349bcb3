"""Backend auto-complete: what a backend adds to the configuration at load, from its model.

With auto-complete on (the server's default), each backend may fill in what config.pbtxt
leaves out (ONNX Runtime and OpenVINO from the model file, Python from model.py's
``auto_complete_config``) and refuses what contradicts the model. The rules judge the result,
so what the server would fill in is never flagged, and the refusals carry the backend's words.
"""

from __future__ import annotations

from typing import Any

from triton_doctor.evidence import ModelFile, PythonSource
from triton_doctor.records import field as default
from triton_doctor.records import record
from triton_doctor.triton.autocomplete import onnx, openvino, python


@record
class Completion:
    """The configuration after the backend's auto-complete, and what the backend said."""

    config: Any
    #: The backend's refusal, in its words; the model does not load.
    error: str | None = None
    #: The field the refusal is about (for locating it in config.pbtxt).
    field: str | None = None
    #: What was filled in, one line each (``triton-doctor config`` prints them).
    filled: list[str] = default(default_factory=list)


def complete_backend(
    config: Any, model_file: ModelFile | None, source: PythonSource | None
) -> Completion:
    """Run the auto-complete of ``config.backend`` on a copy of ``config``."""
    completed = type(config)()
    completed.CopyFrom(config)
    result = Completion(completed)
    if config.backend == "python" and source is not None and source.auto_complete is not None:
        python.complete(result, source)
    elif config.backend == "onnxruntime" and model_file is not None:
        onnx.complete(result, model_file)
    elif config.backend == "openvino" and model_file is not None:
        openvino.complete(result, model_file)
    return result


#: Backends whose auto-complete leaves max_batch_size alone (PyTorch's only logs that it is
#: "not supported for pytorch backend").
KEEPS_MAX_BATCH_SIZE = frozenset({"pytorch"})


def max_batch_size_followed(
    config: Any, model_file: ModelFile | None, source: PythonSource | None
) -> bool:
    """Whether ``complete_backend`` leaves max_batch_size as the backend does: always for one
    written above 0 (a backend's auto-complete fills only a 0, which proto3 hands it for an
    unwritten one, and keeps or refuses any other) and for the backends followed from what was
    read; not when model.py's calls are computed, in a branch or not all followed, nor for a
    backend whose auto-complete is not modelled (TensorRT fills a 0 from the engine, which is
    not read)."""
    if (config.platform == "ensemble" or config.backend in KEEPS_MAX_BATCH_SIZE
            or config.max_batch_size > 0):
        return True
    if config.backend == "python":
        facts = source.auto_complete if source is not None else None
        return facts is None or (facts.exact and all(
            call.known and not call.conditional and type(call.argument) is int
            for call in facts.calls if call.method == "set_max_batch_size"
        ))
    if config.backend == "onnxruntime" and (config.input or config.batch_input) and config.output:
        return True  # its auto-complete does not run
    if config.backend in ("onnxruntime", "openvino"):
        return model_file is not None and None not in (model_file.inputs, model_file.outputs)
    return False
