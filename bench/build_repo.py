"""Generate the benchmark's model repositories: a realistic, mostly valid mix of model kinds.

The repository has to look like one a team actually serves, or the figures say nothing: every
kind of file the doctor opens is there (ONNX graphs, TorchScript archives, TensorRT plan
headers, Python models, ensembles wiring them), with configs that agree with their model
files, so the doctor walks every reader and every rule instead of stopping at the first error.
The few deliberate mistakes (see ``MISTAKES``) keep the finding count non-zero and stable, so a
regression that makes everything an error shows up in the printed count.

Weights: ``big_bytes`` of initializers go into a few ONNX models, most of them embedded in the
.onnx (the hard case for ``onnx.load``, which reads and parses every byte), the rest in an
external data file. No single .onnx reaches protobuf's 2 GB limit. The bytes are streamed by
``fixtures/generate/onnx_models.build``, never held in memory.

Run as a script it builds one repository and prints its model count and size as JSON:
``python bench/build_repo.py OUT [--models N] [--big-bytes B]``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "fixtures" / "generate"))

import onnx_models  # noqa: E402  (fixture generators live outside any package)
import plan_headers  # noqa: E402

TORCHSCRIPT = ROOT / "fixtures" / "models" / "torchscript"
#: Largest embedded-weights .onnx written (protobuf refuses messages of 2 GiB and more).
MAX_EMBEDDED_BYTES = 1_500_000_000
#: Share of the weights kept inside .onnx files; the rest goes to one external-data model.
EMBEDDED_SHARE = 0.7
#: TensorRT releases the plans claim to come from (the 24.08 and 25.03 containers).
TRT_VERSIONS = ((10, 3, 0, 26), (10, 9, 0, 34))
#: One model in this many of each kind carries a realistic mistake.
MISTAKE_EVERY = 97


def shares(models: int) -> dict[str, int]:
    """How many models of each kind: roughly what a mixed production repository holds."""
    counts = {
        "ensemble": models // 10,
        "onnx": models * 35 // 100,
        "torch": models * 20 // 100,
        "trt": models * 15 // 100,
    }
    counts["python"] = models - sum(counts.values())
    return counts


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


# ---------------------------------------------------------------------------------------------
# ONNX models: three shapes of graph seen in practice


def onnx_variant(index: int) -> tuple[str, list, list, str]:
    """(kind, graph inputs, graph outputs, config.pbtxt body) for ONNX model ``index``.

    Kind "tabular" is what ensembles call: input "features" [16] FP32, output "score" [1].
    """
    kind = ("tabular", "vision", "text")[index % 3]
    batch = (4, 8, 16, 32)[index % 4]
    if kind == "tabular":
        return kind, [("features", "FLOAT", ["N", 16])], [("score", "FLOAT", ["N", 1])], f"""\
max_batch_size: {max(batch, 16)}
input [ {{ name: "features" data_type: TYPE_FP32 dims: [ 16 ] }} ]
output [ {{ name: "score" data_type: TYPE_FP32 dims: [ 1 ] }} ]
dynamic_batching {{ max_queue_delay_microseconds: 100 }}
instance_group [ {{ kind: KIND_CPU count: 2 }} ]
"""
    if kind == "vision":
        classes = (10, 100, 1000)[index % 3]
        side = (224, 256, 384)[index % 3]
        return kind, [("images", "FLOAT", ["N", 3, side, side])], \
            [("logits", "FLOAT", ["N", classes])], f"""\
max_batch_size: {batch}
input [
  {{
    name: "images"
    data_type: TYPE_FP32
    format: FORMAT_NCHW
    dims: [ 3, {side}, {side} ]
  }}
]
output [
  {{
    name: "logits"
    data_type: TYPE_FP32
    dims: [ {classes} ]
  }}
]
dynamic_batching {{
  preferred_batch_size: [ {batch // 2}, {batch} ]
  max_queue_delay_microseconds: 200
}}
instance_group [ {{ kind: KIND_GPU count: 1 gpus: [ 0 ] }} ]
"""
    hidden = (384, 768, 1024)[index % 3]
    tokens = [("input_ids", "INT64", ["N", "seq"]), ("attention_mask", "INT64", ["N", "seq"])]
    return kind, tokens, [("last_hidden_state", "FLOAT", ["N", "seq", hidden])], f"""\
max_batch_size: {batch}
input [
  {{ name: "input_ids" data_type: TYPE_INT64 dims: [ -1 ] }},
  {{ name: "attention_mask" data_type: TYPE_INT64 dims: [ -1 ] }}
]
output [ {{ name: "last_hidden_state" data_type: TYPE_FP32 dims: [ -1, {hidden} ] }} ]
dynamic_batching {{ max_queue_delay_microseconds: 500 }}
version_policy: {{ latest: {{ num_versions: 1 }} }}
"""


def build_onnx(repo: Path, name: str, index: int) -> None:
    _, inputs, outputs, body = onnx_variant(index)
    versions = (1, 2) if index % 5 == 0 else (1,)
    for version in versions:
        (repo / name / str(version)).mkdir(parents=True)
        onnx_models.build(str(repo / name / str(version) / "model.onnx"), inputs, outputs)
    platform = 'platform: "onnxruntime_onnx"' if index % 2 else 'backend: "onnxruntime"'
    if index % MISTAKE_EVERY == 1:  # a PyTorch-style input name on an ONNX model (TD304)
        body = body.replace(f'name: "{inputs[0][0]}"', 'name: "INPUT__0"', 1)
    write(repo / name / "config.pbtxt", f'name: "{name}"\n{platform}\n{body}')


def build_big_onnx(repo: Path, name: str, weight_bytes: int, external: bool) -> None:
    """An LLM-sized ONNX model: weights embedded in model.onnx, or in model.onnx.data."""
    (repo / name / "1").mkdir(parents=True)
    onnx_models.build(
        str(repo / name / "1" / "model.onnx"),
        [("input_ids", "INT64", ["N", "seq"]), ("attention_mask", "INT64", ["N", "seq"])],
        [("logits", "FLOAT", ["N", "seq", 32000])],
        initializer_bytes=weight_bytes, external_data=external,
    )
    write(repo / name / "config.pbtxt", f"""\
name: "{name}"
platform: "onnxruntime_onnx"
max_batch_size: 4
input [
  {{ name: "input_ids" data_type: TYPE_INT64 dims: [ -1 ] }},
  {{ name: "attention_mask" data_type: TYPE_INT64 dims: [ -1 ] }}
]
output [ {{ name: "logits" data_type: TYPE_FP32 dims: [ -1, 32000 ] }} ]
dynamic_batching {{ max_queue_delay_microseconds: 1000 }}
instance_group [ {{ kind: KIND_GPU count: 1 }} ]
""")


def big_parts(big_bytes: int) -> list[tuple[int, bool]]:
    """(bytes, external) per big model: most embedded, in files below MAX_EMBEDDED_BYTES."""
    if big_bytes <= 0:
        return []
    embedded = int(big_bytes * EMBEDDED_SHARE)
    files = max(2, math.ceil(embedded / MAX_EMBEDDED_BYTES))
    parts = [(embedded // files, False) for _ in range(files)]
    parts.append((big_bytes - sum(size for size, _ in parts), True))
    return parts


# ---------------------------------------------------------------------------------------------
# TorchScript, TensorRT, Python, ensembles


def build_torch(repo: Path, name: str, index: int) -> None:
    """Copies of the committed TorchScript fixtures, inputs named after forward()'s arguments."""
    (repo / name / "1").mkdir(parents=True)
    batch = (8, 16, 32)[index % 3]
    # Three ways users name the inputs; all bind correctly (by argument name, by __index, or
    # by dict key). script_net.pt is not used: its float argument is unservable (TD307).
    variant = index % 3
    source = "dict_input.pt" if variant == 2 else "traced_two_inputs.pt"
    shutil.copyfile(TORCHSCRIPT / source, repo / name / "1" / "model.pt")
    names = (("INPUT__0", "INPUT__1"), ("a", "b"), ("x", "y"))[variant]
    if index % MISTAKE_EVERY == 2:  # inputs bound by config order (TD311)
        names = ("mask", "ids")
    inputs = [(n, "TYPE_FP32", "-1") for n in names]
    outputs = [("OUTPUT__0", "TYPE_FP32", "-1")]
    io = "\n".join(
        f"{kind} [\n" + ",\n".join(f'  {{ name: "{n}" data_type: {t} dims: [ {d} ] }}'
                                   for n, t, d in tensors) + "\n]"
        for kind, tensors in (("input", inputs), ("output", outputs)))
    write(repo / name / "config.pbtxt", f"""\
platform: "pytorch_libtorch"
max_batch_size: {batch}
{io}
dynamic_batching {{ max_queue_delay_microseconds: 100 }}
instance_group [ {{ kind: KIND_GPU count: {1 + index % 2} }} ]
parameters: {{ key: "INFERENCE_MODE" value: {{ string_value: "true" }} }}
""")


def build_trt(repo: Path, name: str, index: int) -> None:
    """A TensorRT plan header (plus a little padding standing in for the engine)."""
    (repo / name / "1").mkdir(parents=True)
    version = TRT_VERSIONS[index % len(TRT_VERSIONS)]
    plan = plan_headers.build_plan(trt_version=version, cc=(8, 9), sms=58, padding=4096)
    (repo / name / "1" / "model.plan").write_bytes(plan)
    batch = (4, 8, 16)[index % 3]
    mistake = index % MISTAKE_EVERY == 3  # a TensorRT model on CPU instances (TD235)
    write(repo / name / "config.pbtxt", f"""\
platform: "tensorrt_plan"
max_batch_size: {batch}
input [ {{ name: "images" data_type: TYPE_FP16 dims: [ 3, 640, 640 ] }} ]
output [ {{ name: "detections" data_type: TYPE_FP16 dims: [ 100, 6 ] }} ]
dynamic_batching {{ preferred_batch_size: [ {batch} ] max_queue_delay_microseconds: 100 }}
instance_group [ {{ {"kind: KIND_CPU" if mistake else "kind: KIND_GPU gpus: [ 0 ]"} }} ]
""")


PYTHON_MODEL = '''\
"""{name}: feature extraction in front of a scorer."""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.model_config = json.loads(args["model_config"])
        output = pb_utils.get_output_config_by_name(self.model_config, "OUTPUT0")
        self.output_dtype = pb_utils.triton_string_to_numpy(output["data_type"])
        self.scale = {scale}

    def execute(self, requests):
        responses = []
        for request in requests:
            raw = pb_utils.get_input_tensor_by_name(request, "{input}").as_numpy()
            features = raw.reshape(raw.shape[0], 4, 16).mean(axis=1) * self.scale
            out = pb_utils.Tensor("OUTPUT0", features.astype(self.output_dtype))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses

    def finalize(self):
        pass
'''


def build_python(repo: Path, name: str, index: int) -> None:
    """Preprocessing models: INPUT0 [64] FP32 -> OUTPUT0 [16] FP32 (what ensembles feed on)."""
    mistake = index % MISTAKE_EVERY == 4  # model.py reads a tensor the config lacks (TD310)
    write(repo / name / "1" / "model.py", PYTHON_MODEL.format(
        name=name, scale=1 + index % 7, input="input0" if mistake else "INPUT0"))
    write(repo / name / "config.pbtxt", f"""\
backend: "python"
max_batch_size: 64
input [ {{ name: "INPUT0" data_type: TYPE_FP32 dims: [ 64 ] }} ]
output [ {{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] }} ]
dynamic_batching {{ max_queue_delay_microseconds: 100 }}
instance_group [ {{ kind: KIND_CPU count: {1 + index % 4} }} ]
""")


def build_ensemble(repo: Path, name: str, python_model: str, scorer: str) -> None:
    """RAW -> python preprocessing -> ONNX scorer -> SCORE, as served pipelines look."""
    (repo / name / "1").mkdir(parents=True)
    write(repo / name / "config.pbtxt", f"""\
name: "{name}"
platform: "ensemble"
max_batch_size: 16
input [ {{ name: "RAW" data_type: TYPE_FP32 dims: [ 64 ] }} ]
output [ {{ name: "SCORE" data_type: TYPE_FP32 dims: [ 1 ] }} ]
ensemble_scheduling {{
  step [
    {{
      model_name: "{python_model}"
      model_version: -1
      input_map {{ key: "INPUT0" value: "RAW" }}
      output_map {{ key: "OUTPUT0" value: "FEATURES" }}
    }},
    {{
      model_name: "{scorer}"
      model_version: -1
      input_map {{ key: "features" value: "FEATURES" }}
      output_map {{ key: "score" value: "SCORE" }}
    }}
  ]
}}
""")


#: What the deliberate mistakes are, for the README and the printed summary.
MISTAKES = (
    "ONNX: a PyTorch-style input name (TD304); TorchScript: inputs bound by order (TD311); "
    "TensorRT: CPU instances (TD235); Python: model.py reads an unknown input (TD310); "
    f"one model in {MISTAKE_EVERY} of each kind"
)


def build(repo: Path, models: int, big_bytes: int = 0) -> None:
    """Write a repository of ``models`` models into ``repo`` (which must not exist).

    The big models take the place of ONNX models of the mix; ``models=0`` writes only them.
    """
    repo.mkdir(parents=True)
    counts = shares(models)
    parts = big_parts(big_bytes)
    for number, (size, external) in enumerate(parts):
        build_big_onnx(repo, f"llm_{'external' if external else 'embedded'}_{number}", size,
                       external)
    onnx_names = []
    for index in range(counts["onnx"] - len(parts)):
        name = f"onnx_{onnx_variant(index)[0]}_{index:04d}"
        build_onnx(repo, name, index)
        onnx_names.append(name)
    scorers = [name for index, name in enumerate(onnx_names)
               if onnx_variant(index)[0] == "tabular" and index % MISTAKE_EVERY != 1]
    for index in range(counts["torch"]):
        build_torch(repo, f"torch_{index:04d}", index)
    for index in range(counts["trt"]):
        build_trt(repo, f"trt_detector_{index:04d}", index)
    pythons = []
    for index in range(counts["python"]):
        name = f"preprocess_{index:04d}"
        build_python(repo, name, index)
        if index % MISTAKE_EVERY != 4:
            pythons.append(name)
    for index in range(counts["ensemble"] if pythons and scorers else 0):
        build_ensemble(repo, f"pipeline_{index:04d}", pythons[index % len(pythons)],
                       scorers[index % len(scorers)])


def disk_bytes(repo: Path) -> int:
    """Bytes of every file under ``repo`` (what a deploy copies)."""
    return sum(os.path.getsize(os.path.join(top, name))
               for top, _, names in os.walk(repo) for name in names)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--models", type=int, default=1000)
    parser.add_argument("--big-bytes", type=float, default=0)
    args = parser.parse_args()
    build(args.out, args.models, int(args.big_bytes))
    print(json.dumps({"models": len(os.listdir(args.out)), "disk_bytes": disk_bytes(args.out)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
