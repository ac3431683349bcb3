"""The naive baseline: the repository check a user writes by hand, to compare the doctor with.

It does what a first script does, with the libraries everyone reaches for: parse each
config.pbtxt with protobuf's ``text_format`` into tritonclient's ``ModelConfig``, ``onnx.load``
each ONNX model (weights and external data included, as ``onnx.load`` does by default) and
compare its input and output names with the config's. TorchScript is skipped: reading it needs
torch, which is no dependency of either tool (a user's script would pay for ``import torch``
and ``torch.jit.load`` on top). TensorRT plans are skipped too (TensorRT needs a GPU), and
Python models are only configs. So the baseline does strictly less work than the doctor.

Usage: ``python bench/baseline.py REPO``; prints a JSON summary on stdout.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from typing import Any

import onnx
from google.protobuf import text_format

DEFAULT_FILES = {
    "onnxruntime_onnx": "model.onnx", "onnxruntime": "model.onnx",
    "pytorch_libtorch": "model.pt", "pytorch": "model.pt",
    "tensorrt_plan": "model.plan", "tensorrt": "model.plan",
    "python": "model.py",
}


def model_config_class() -> Any:
    """tritonclient's ModelConfig: the documented import, else the generated file without grpc.

    ``tritonclient.grpc`` refuses to import without grpc (``tritonclient[http]`` installs lack
    it), so like ``doctor/triton/model_config.py`` we then load ``model_config_pb2.py`` from its
    file.
    """
    try:
        from tritonclient.grpc import model_config_pb2  # type: ignore[import-not-found]
        return model_config_pb2.ModelConfig
    except (ImportError, RuntimeError):
        pass
    spec = importlib.util.find_spec("tritonclient")
    assert spec is not None and spec.submodule_search_locations
    path = os.path.join(next(iter(spec.submodule_search_locations)), "grpc", "model_config_pb2.py")
    module_spec = importlib.util.spec_from_file_location("model_config_pb2", path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module.ModelConfig


def check_onnx(path: str, config: Any) -> list[str]:
    """Problems between an ONNX file and its config, the way a hand-written check finds them."""
    model = onnx.load(path)
    initializers = {tensor.name for tensor in model.graph.initializer}
    inputs = {value.name for value in model.graph.input} - initializers
    outputs = {value.name for value in model.graph.output}
    problems = [f"{path}: unknown input {tensor.name}" for tensor in config.input
                if tensor.name not in inputs]
    problems += [f"{path}: unknown output {tensor.name}" for tensor in config.output
                 if tensor.name not in outputs]
    return problems


def main() -> int:
    repo = sys.argv[1]
    model_config = model_config_class()
    counts = {"models": 0, "configs": 0, "onnx_loaded": 0, "skipped_torchscript": 0,
              "skipped_tensorrt": 0, "python": 0, "ensembles": 0}
    problems: list[str] = []
    names = sorted(entry for entry in os.listdir(repo) if os.path.isdir(os.path.join(repo, entry)))
    for name in names:
        counts["models"] += 1
        model_dir = os.path.join(repo, name)
        config = model_config()
        try:
            with open(os.path.join(model_dir, "config.pbtxt")) as handle:
                text_format.Parse(handle.read(), config)
        except (OSError, text_format.ParseError) as error:
            problems.append(f"{name}: {error}")
            continue
        counts["configs"] += 1
        kind = config.platform or config.backend
        if kind == "ensemble":
            counts["ensembles"] += 1
            steps = config.ensemble_scheduling.step
            problems += [f"{name}: step {step.model_name} missing" for step in steps
                         if step.model_name not in names]
            continue
        versions = [v for v in os.listdir(model_dir) if v.isdigit()]
        for version in versions:
            filename = config.default_model_filename or DEFAULT_FILES.get(kind, "")
            path = os.path.join(model_dir, version, filename)
            if not os.path.isfile(path):
                problems.append(f"{name}: {path} missing")
            elif filename.endswith(".onnx"):
                counts["onnx_loaded"] += 1
                problems += check_onnx(path, config)
            elif filename.endswith(".pt"):
                counts["skipped_torchscript"] += 1
            elif filename.endswith(".plan"):
                counts["skipped_tensorrt"] += 1
            else:
                counts["python"] += 1
    print(json.dumps({**counts, "problems": len(problems)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
