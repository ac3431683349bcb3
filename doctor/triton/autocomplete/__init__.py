"""Backend auto-complete: what a backend adds to the configuration at load, from its model.

With auto-complete on (the server's default), each backend may fill in what config.pbtxt
leaves out (ONNX Runtime and OpenVINO from the model file, Python from model.py's
``auto_complete_config``) and refuses what contradicts the model. The rules judge the result,
so what the server would fill in is never flagged, and the refusals carry the backend's words.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as default
from typing import Any

from triton_doctor.evidence import ModelFile, PythonSource
from triton_doctor.triton.autocomplete import onnx, openvino, python


@dataclass
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
