"""The repositories the differential fuzzer generates, before and after their mutations.

A base repository is one Python-backend model (config.pbtxt + ``<version>/model.py``) or an
ensemble of 2-3 Python steps. Every model name starts with the repository's prefix, so many
repositories share one explicit-mode server without clashing.

Configurations are kept as nested Python values and written as protobuf text format by
:func:`render`, so mutations edit fields rather than text; the text mutations (typos, stray
braces) work on the rendered text afterwards.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Enum",
    "Map",
    "ModelSpec",
    "RepositorySpec",
    "base_repository",
    "ensemble_config",
    "files_of",
    "python_config",
    "render",
    "tensor",
]


class Enum(str):
    """An enum value, written bare (``KIND_CPU``), not quoted."""


class Map(dict[Any, Any]):
    """A protobuf map field (string or integer keys), written as repeated ``field { key: ... }``."""


def _scalar(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Enum):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)


def _message(body: dict[str, Any], indent: int) -> list[str]:
    pad = "  " * indent
    lines: list[str] = []
    for key, value in body.items():
        if isinstance(value, Map):
            for map_key, map_value in value.items():
                key_text = _scalar(map_key)
                if isinstance(map_value, dict):
                    lines.append(f"{pad}{key} {{")
                    lines.append(f"{pad}  key: {key_text}")
                    lines.append(f"{pad}  value {{")
                    lines += _message(map_value, indent + 2)
                    lines.append(f"{pad}  }}")
                    lines.append(f"{pad}}}")
                else:
                    lines.append(f"{pad}{key} {{ key: {key_text} value: {_scalar(map_value)} }}")
        elif isinstance(value, dict):
            lines.append(f"{pad}{key} {{")
            lines += _message(value, indent + 1)
            lines.append(f"{pad}}}")
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            lines.append(f"{pad}{key} [")
            for position, item in enumerate(value):
                lines.append(f"{pad}  {{")
                lines += _message(item, indent + 2)
                lines.append(f"{pad}  }}" + ("," if position < len(value) - 1 else ""))
            lines.append(f"{pad}]")
        elif isinstance(value, list):
            lines.append(f"{pad}{key}: [ {', '.join(_scalar(v) for v in value)} ]")
        else:
            lines.append(f"{pad}{key}: {_scalar(value)}")
    return lines


def render(config: dict[str, Any]) -> str:
    """``config`` as protobuf text format, one field per line."""
    return "\n".join(_message(config, 0)) + "\n"


MODEL_PY = '''\
import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """Answers every request with zeros shaped like each configured output."""

    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.decoupled = pb_utils.using_decoupled_model_transaction_policy(config)
        self.outputs = [
            (o["name"], o["data_type"], [d if d > 0 else 1 for d in o["dims"]])
            for o in config.get("output", [])
        ]

    def _zeros(self, data_type, dims):
        if data_type == "TYPE_STRING":
            return np.full(dims, b"", dtype=np.object_)
        return np.zeros(dims, dtype=pb_utils.triton_string_to_numpy(data_type))

    def execute(self, requests):
        responses = []
        for request in requests:
            tensors = [pb_utils.Tensor(n, self._zeros(t, d)) for n, t, d in self.outputs]
            response = pb_utils.InferenceResponse(output_tensors=tensors)
            if self.decoupled:
                sender = request.get_response_sender()
                sender.send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            else:
                responses.append(response)
        return None if self.decoupled else responses
'''
"""The generated models' model.py: its execute never fails, whatever the config says.

A warmup request that the model fails makes 2.51 tear the instance down, which can crash
the server (see CRASHES_SERVER in cases.py); answering from the config avoids that path."""


@dataclass
class ModelSpec:
    """One model directory: its config (as values), model.py and version directories."""

    name: str
    config: dict[str, Any] | None
    model_py: str = MODEL_PY
    versions: list[str] = field(default_factory=lambda: ["1"])
    """Version directories; each gets ``model.py`` unless the model is an ensemble."""
    files: dict[str, str] = field(default_factory=dict)
    """Other files, relative to the model directory (a path ending in '/' is a directory)."""
    config_text: str | None = None
    """Set by a text mutation: written instead of rendering ``config``."""
    is_ensemble: bool = False
    """Generated as an ensemble (a mutation of its platform does not change this)."""


@dataclass
class RepositorySpec:
    """A repository being generated: its models and what was done to it."""

    prefix: str
    models: list[ModelSpec]
    mutations: list[str] = field(default_factory=list)

    def python_models(self) -> list[ModelSpec]:
        return [m for m in self.models if not m.is_ensemble]

    def ensemble(self) -> ModelSpec | None:
        return next((m for m in self.models if m.is_ensemble), None)


def tensor(
    name: str, data_type: str = "TYPE_FP32", dims: list[int] | None = None
) -> dict[str, Any]:
    return {"name": name, "data_type": Enum(data_type), "dims": [4] if dims is None else dims}


def python_config(name: str, max_batch_size: int = 8) -> dict[str, Any]:
    return {
        "name": name,
        "backend": "python",
        "max_batch_size": max_batch_size,
        "input": [tensor("INPUT0")],
        "output": [tensor("OUTPUT0")],
        "instance_group": [{"kind": Enum("KIND_CPU"), "count": 1}],
    }


def ensemble_config(name: str, steps: list[str], max_batch_size: int = 8) -> dict[str, Any]:
    """An ensemble that chains ``steps`` INPUT0 -> OUTPUT0, IN ... OUT."""
    wiring = []
    for position, step in enumerate(steps):
        source = "IN" if position == 0 else f"T{position}"
        target = "OUT" if position == len(steps) - 1 else f"T{position + 1}"
        wiring.append(
            {
                "model_name": step,
                "model_version": -1,
                "input_map": Map({"INPUT0": source}),
                "output_map": Map({"OUTPUT0": target}),
            }
        )
    return {
        "name": name,
        "platform": "ensemble",
        "max_batch_size": max_batch_size,
        "input": [tensor("IN")],
        "output": [tensor("OUT")],
        "ensemble_scheduling": {"step": wiring},
    }


def base_repository(rng: random.Random, prefix: str) -> RepositorySpec:
    """One plain Python model (60 %), or an ensemble of 2-3 Python steps."""
    if rng.random() < 0.6:
        name = f"{prefix}_m"
        return RepositorySpec(prefix, [ModelSpec(name, python_config(name))])
    steps = [f"{prefix}_s{i}" for i in range(rng.choice((2, 2, 3)))]
    models = [ModelSpec(step, python_config(step)) for step in steps]
    ensemble = f"{prefix}_e"
    models.append(
        ModelSpec(ensemble, ensemble_config(ensemble, steps), model_py="", is_ensemble=True)
    )
    return RepositorySpec(prefix, models)


def files_of(spec: RepositorySpec) -> dict[str, str]:
    """The repository's files; every version directory of a Python model has its model.py."""
    files: dict[str, str] = {}
    for model in spec.models:
        if model.config_text is not None:
            files[f"{model.name}/config.pbtxt"] = model.config_text
        elif model.config is not None:
            files[f"{model.name}/config.pbtxt"] = render(model.config)
        for version in model.versions:
            if model.is_ensemble:
                files[f"{model.name}/{version}/"] = ""
            else:
                files[f"{model.name}/{version}/model.py"] = model.model_py
        for relative, content in model.files.items():
            files[f"{model.name}/{relative}"] = content
    return files
