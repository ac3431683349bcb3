"""The fuzzer's mutations: each changes one thing users get wrong (or right) in a repository.

A mutation edits a :class:`RepositorySpec` in place and returns what it did, in words, or None
when it does not apply (an ensemble mutation on a single model). Roughly half of them make the
server refuse the repository; which ones do is for the server to say, never for this module.

What is never generated, because the server (2.51) cannot judge it safely:

* a version directory of a Python model without model.py (the load hangs forever), and any
  version directory name the server might read as a number (``1.0``, ``01``, ``-1``): it would
  look for a model.py that is not there;
* anything in CRASHES_SERVER of cases.py: a sequence state's ``initial_state`` other than one
  valid zero-data entry, a warmup batch larger than max_batch_size;
* a warmup request the model fails: the generated model.py answers every request.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from tests.differential.fuzz_spec import (
    Enum,
    Map,
    ModelSpec,
    RepositorySpec,
    render,
    tensor,
)

__all__ = ["MUTATIONS", "TEXT_MUTATIONS", "mutate"]

Mutation = Callable[[random.Random, RepositorySpec], "str | None"]

DATA_TYPES = (
    "TYPE_FP32",
    "TYPE_FP16",
    "TYPE_FP64",
    "TYPE_INT8",
    "TYPE_INT32",
    "TYPE_INT64",
    "TYPE_UINT8",
    "TYPE_BOOL",
    "TYPE_STRING",
)


def _model(rng: random.Random, spec: RepositorySpec) -> ModelSpec:
    return rng.choice(spec.python_models())


def _config(rng: random.Random, spec: RepositorySpec) -> tuple[ModelSpec, dict[str, Any]]:
    """A Python model that has a config (one is always left with one)."""
    models = [m for m in spec.python_models() if m.config is not None] or spec.python_models()
    model = rng.choice(models)
    if model.config is None:
        model.config = {"name": model.name, "backend": "python"}
    return model, model.config


def _io(config: dict[str, Any], kind: str) -> dict[str, Any] | None:
    tensors = config.get(kind)
    return tensors[0] if isinstance(tensors, list) and tensors else None


# --- max_batch_size, inputs and outputs ---------------------------------------------------


def max_batch_size(rng: random.Random, spec: RepositorySpec) -> str:
    model, config = _config(rng, spec)
    value = rng.choice((0, 0, 1, 4, 16, -1))
    config["max_batch_size"] = value
    return f"{model.name}: max_batch_size {value}"


def dims(rng: random.Random, spec: RepositorySpec) -> str | None:
    model, config = _config(rng, spec)
    kind = rng.choice(("input", "output"))
    io = _io(config, kind)
    if io is None:
        return None
    value = rng.choice(([-1], [2, 2], [-1, 4], [1], [0], [-2], [], [4, 0]))
    io["dims"] = value
    return f"{model.name}: {kind} {io['name']} dims {value}"


def data_type(rng: random.Random, spec: RepositorySpec) -> str | None:
    model, config = _config(rng, spec)
    kind = rng.choice(("input", "output"))
    io = _io(config, kind)
    if io is None:
        return None
    value = rng.choice((*DATA_TYPES, "TYPE_INVALID"))
    io["data_type"] = Enum(value)
    return f"{model.name}: {kind} {io['name']} data_type {value}"


def reshape(rng: random.Random, spec: RepositorySpec) -> str | None:
    model, config = _config(rng, spec)
    io = _io(config, rng.choice(("input", "output")))
    if io is None:
        return None
    shape = rng.choice(([2, 2], [4], [1, 4], [3], [8]))
    io["reshape"] = {"shape": shape}
    return f"{model.name}: {io['name']} dims {io.get('dims')} reshape {shape}"


def input_flag(rng: random.Random, spec: RepositorySpec) -> str | None:
    model, config = _config(rng, spec)
    io = _io(config, "input")
    if io is None:
        return None
    flag, value = rng.choice(
        (
            ("optional", True),
            ("allow_ragged_batch", True),
            ("is_shape_tensor", True),
            ("format", Enum("FORMAT_NCHW")),
            ("format", Enum("FORMAT_NHWC")),
        )
    )
    io[flag] = value
    return f"{model.name}: input {io['name']} {flag}: {value}"


def second_tensor(rng: random.Random, spec: RepositorySpec) -> str:
    model, config = _config(rng, spec)
    kind = rng.choice(("input", "output"))
    name = rng.choice((f"{kind.upper()}1", f"{kind.upper()}0"))
    config.setdefault(kind, []).append(tensor(name, rng.choice(DATA_TYPES), [rng.choice((2, -1))]))
    return f"{model.name}: a second {kind} named {name}"


def no_tensors(rng: random.Random, spec: RepositorySpec) -> str:
    model, config = _config(rng, spec)
    kind = rng.choice(("input", "output"))
    config.pop(kind, None)
    return f"{model.name}: no {kind} at all"


def label_file(rng: random.Random, spec: RepositorySpec) -> str | None:
    model, config = _config(rng, spec)
    io = _io(config, "output")
    if io is None:
        return None
    io["label_filename"] = "labels.txt"
    if rng.random() < 0.5:
        model.files["labels.txt"] = "cat\ndog\nbird\nfish\n"
        return f"{model.name}: output label_filename labels.txt (present)"
    return f"{model.name}: output label_filename labels.txt (absent)"


# --- instances and scheduling ---------------------------------------------------------------


def instance_group(rng: random.Random, spec: RepositorySpec) -> str:
    model, config = _config(rng, spec)
    group: dict[str, Any] = {
        "kind": Enum(rng.choice(("KIND_CPU", "KIND_GPU", "KIND_AUTO", "KIND_MODEL")))
    }
    group["count"] = rng.choice((1, 2, 0, -1))
    if rng.random() < 0.3:
        group["gpus"] = [0]
    if rng.random() < 0.2:
        group["name"] = "workers"
    config["instance_group"] = [group]
    return f"{model.name}: instance_group {group}"


def dynamic_batching(rng: random.Random, spec: RepositorySpec) -> str:
    model, config = _config(rng, spec)
    config.pop("sequence_batching", None)
    batching: dict[str, Any] = {}
    if rng.random() < 0.5:
        batching["max_queue_delay_microseconds"] = rng.choice((0, 100, 5000))
    choice = rng.choice(("plain", "preferred", "preferred", "priority", "policy", "ordering"))
    if choice == "preferred":
        batching["preferred_batch_size"] = [rng.choice((1, 2, 4, 8, 16, 0))]
    elif choice == "priority":
        levels = rng.choice((2, 3))
        batching["priority_levels"] = levels
        batching["default_priority_level"] = rng.choice((1, levels, levels + 2))
        if rng.random() < 0.4:
            level = rng.choice((1, levels + 1))
            batching["priority_queue_policy"] = Map({level: {"max_queue_size": 4}})
    elif choice == "policy":
        batching["default_queue_policy"] = {
            "timeout_action": Enum(rng.choice(("REJECT", "DELAY"))),
            "default_timeout_microseconds": 1000,
            "allow_timeout_override": rng.random() < 0.5,
            "max_queue_size": rng.choice((0, 16)),
        }
    elif choice == "ordering":
        batching["preserve_ordering"] = True
        batching["default_queue_policy"] = {
            "timeout_action": Enum(rng.choice(("REJECT", "DELAY"))),
            "default_timeout_microseconds": 100,
        }
    config["dynamic_batching"] = batching
    return f"{model.name}: dynamic_batching {batching}"


def _control(name: str, kind: str, rng: random.Random) -> dict[str, Any]:
    control: dict[str, Any] = {"kind": Enum(kind)}
    if kind == "CONTROL_SEQUENCE_CORRID":
        if rng.random() < 0.8:
            control["data_type"] = Enum(rng.choice(("TYPE_UINT64", "TYPE_STRING", "TYPE_FP32")))
    else:
        how = rng.choice(("int32", "int32", "fp32", "bool", "none", "both"))
        if how in ("int32", "both"):
            control["int32_false_true"] = [0, 1]
        if how in ("fp32", "both"):
            control["fp32_false_true"] = [0, 1]
        if how == "bool":
            control["bool_false_true"] = [False, True]
    return {"name": name, "control": [control]}


def sequence_batching(rng: random.Random, spec: RepositorySpec) -> str:
    model, config = _config(rng, spec)
    config.pop("dynamic_batching", None)
    batching: dict[str, Any] = {}
    kinds = (
        "CONTROL_SEQUENCE_START",
        "CONTROL_SEQUENCE_READY",
        "CONTROL_SEQUENCE_END",
        "CONTROL_SEQUENCE_CORRID",
    )
    controls = []
    for kind in rng.sample(kinds, rng.choice((0, 1, 2))):
        name = "CTRL" if rng.random() < 0.15 else kind.rsplit("_", 1)[-1]
        controls.append(_control(name, kind, rng))
    if controls:
        batching["control_input"] = controls
    strategy = rng.choice(("none", "direct", "oldest"))
    if strategy == "direct":
        batching["direct"] = {"max_queue_delay_microseconds": 100}
    elif strategy == "oldest":
        batching["oldest"] = {
            "max_candidate_sequences": rng.choice((1, 4)),
            "preferred_batch_size": [rng.choice((2, 4, 32))],
        }
    if rng.random() < 0.3:
        batching["max_sequence_idle_microseconds"] = 5000000
    if rng.random() < 0.3:
        state: dict[str, Any] = {
            "input_name": "STATE_IN",
            "output_name": "STATE_OUT",
            "data_type": Enum("TYPE_FP32"),
            "dims": [4],
        }
        if rng.random() < 0.5:
            state["initial_state"] = [
                {"name": "zeros", "data_type": Enum("TYPE_FP32"), "dims": [4], "zero_data": True}
            ]
        batching["state"] = [state]
    config["sequence_batching"] = batching
    return f"{model.name}: sequence_batching {batching}"


def warmup(rng: random.Random, spec: RepositorySpec) -> str | None:
    model, config = _config(rng, spec)
    io = _io(config, "input")
    if io is None:
        return None
    name, data_type, dims = io["name"], str(io["data_type"]), list(io.get("dims", []))
    sample: dict[str, Any] = {
        "data_type": Enum(data_type),
        "dims": [4 if d < 0 else d for d in dims],
    }
    source = rng.choice(("zero", "random", "file", "file_missing", "dtype", "dims", "name"))
    if source == "dtype":
        sample["data_type"] = Enum("TYPE_INT8" if data_type != "TYPE_INT8" else "TYPE_INT32")
    elif source == "dims":
        sample["dims"] = [19]
    elif source == "name":
        name = "WARM_ONLY"
    if source in ("file", "file_missing"):
        sample["input_data_file"] = "input0.bin"
        if source == "file":
            model.files["warmup/input0.bin"] = "\0" * 64
    else:
        sample["random_data" if source == "random" else "zero_data"] = True
    config["model_warmup"] = [{"name": "warm", "batch_size": 1, "inputs": Map({name: sample})}]
    return f"{model.name}: model_warmup ({source})"


# --- other fields -----------------------------------------------------------------------------


def parameters(rng: random.Random, spec: RepositorySpec) -> str:
    model, config = _config(rng, spec)
    key, value = rng.choice(
        (
            ("threshold", "0.5"),
            ("mode", "fast"),
            ("EXECUTION_ENV_PATH", "$$TRITON_MODEL_DIRECTORY/env.tar.gz"),
            ("FORCE_CPU_ONLY_INPUT_TENSORS", "no"),
            ("tokenizer_dir", "${TOKENIZER_DIR}"),
        )
    )
    config.setdefault("parameters", Map())[key] = {"string_value": value}
    return f"{model.name}: parameter {key} = {value!r}"


def version_policy(rng: random.Random, spec: RepositorySpec) -> str:
    model, config = _config(rng, spec)
    if rng.random() < 0.5:
        model.versions.append("2")
    policy: dict[str, Any] = rng.choice(
        (
            {"latest": {"num_versions": 2}},
            {"all": {}},
            {"specific": {"versions": [1]}},
            {"specific": {"versions": [3]}},
            {"specific": {"versions": [1, 3]}},
        )
    )
    config["version_policy"] = policy
    return f"{model.name}: versions {model.versions}, version_policy {policy}"


def response_cache(rng: random.Random, spec: RepositorySpec) -> str:
    model, config = _config(rng, spec)
    config["response_cache"] = {"enable": True}
    return f"{model.name}: response_cache enabled"


def decoupled(rng: random.Random, spec: RepositorySpec) -> str:
    model, config = _config(rng, spec)
    config["model_transaction_policy"] = {"decoupled": rng.random() < 0.8}
    return f"{model.name}: model_transaction_policy {config['model_transaction_policy']}"


def batch_io(rng: random.Random, spec: RepositorySpec) -> str:
    model, config = _config(rng, spec)
    if rng.random() < 0.6:
        entry: dict[str, Any] = {
            "kind": Enum(
                rng.choice(
                    (
                        "BATCH_ELEMENT_COUNT",
                        "BATCH_ACCUMULATED_ELEMENT_COUNT",
                        "BATCH_MAX_ELEMENT_COUNT_AS_SHAPE",
                    )
                )
            ),
            "target_name": [rng.choice(("BATCH_COUNT", "INPUT0"))],
            "data_type": Enum(rng.choice(("TYPE_FP32", "TYPE_INT32", "TYPE_INT64"))),
            "source_input": [rng.choice(("INPUT0", "MISSING"))],
        }
        config["batch_input"] = [entry]
        return f"{model.name}: batch_input {entry}"
    out: dict[str, Any] = {
        "target_name": [rng.choice(("OUTPUT0", "MISSING"))],
        "kind": Enum("BATCH_SCATTER_WITH_INPUT_SHAPE"),
        "source_input": [rng.choice(("INPUT0", "MISSING"))],
    }
    config["batch_output"] = [out]
    return f"{model.name}: batch_output {out}"


def platform_backend(rng: random.Random, spec: RepositorySpec) -> str:
    model, config = _config(rng, spec)
    choice = rng.choice(("no_backend", "onnx_platform", "both", "runtime"))
    if choice == "no_backend":
        config.pop("backend", None)
    elif choice == "onnx_platform":
        config["platform"] = "onnx"
    elif choice == "both":
        config["platform"] = "ensemble"
    else:
        config["runtime"] = rng.choice(("model.py", "libtriton_missing.so"))
    return f"{model.name}: {choice} {config.get('platform', config.get('runtime', ''))}"


# --- layout -------------------------------------------------------------------------------------


def layout(rng: random.Random, spec: RepositorySpec) -> str:
    model = _model(rng, spec)
    choice = rng.choice(
        ("extra_version", "odd_version", "only_odd", "assets", "no_versions", "version_zero")
    )
    if choice == "extra_version":
        model.versions.append(rng.choice(("2", "3", "10")))
    elif choice == "odd_version":
        model.versions.append(rng.choice(("v1", "latest", "backup")))
    elif choice == "only_odd":
        model.versions = [rng.choice(("v1", "latest"))]
    elif choice == "assets":
        model.files["assets/vocab.txt"] = "a\nb\n"
    elif choice == "no_versions":
        model.versions = []
    else:
        model.versions = ["0"]
    return f"{model.name}: {choice} {model.versions}"


def config_name(rng: random.Random, spec: RepositorySpec) -> str:
    model, config = _config(rng, spec)
    choice = rng.choice(("other", "omitted", "case"))
    if choice == "other":
        config["name"] = f"{model.name}_x"
    elif choice == "omitted":
        config.pop("name", None)
    else:
        config["name"] = model.name.upper()
    return f"{model.name}: config name {config.get('name')!r}"


def no_config(rng: random.Random, spec: RepositorySpec) -> str | None:
    if spec.ensemble() is not None:
        return None
    model = _model(rng, spec)
    model.config = None
    return f"{model.name}: no config.pbtxt"


# --- model.py ---------------------------------------------------------------------------------

INITIALIZE = "    def initialize(self, args):\n"


def model_py(rng: random.Random, spec: RepositorySpec) -> str:
    model, config = _config(rng, spec)
    choice = rng.choice(
        (
            "class_renamed",
            "class_alias",
            "empty",
            "syntax",
            "param_missing",
            "param_raise",
            "param_present",
            "output_missing",
            "output_present",
            "auto_complete_contradicts",
            "auto_complete_agrees",
            "auto_complete_batch",
        )
    )
    text = model.model_py
    read = INITIALIZE + '        model_config = json.loads(args["model_config"])\n'
    if choice.startswith("class"):
        text = text.replace("class TritonPythonModel:", "class Model:")
        if choice == "class_alias":
            text += "\n\nTritonPythonModel = Model\n"
    elif choice == "empty":
        text = ""
    elif choice == "syntax":
        text = text.replace("def execute(self, requests):", "def execute(self, requests)")
    elif choice == "param_raise":
        check = (
            '        if "MODE" not in model_config.get("parameters", {}):\n'
            '            raise pb_utils.TritonModelException("the parameter MODE is required")\n'
        )
        text = text.replace(INITIALIZE, read + check)
    elif choice.startswith("param"):
        lookup = '        self.key = model_config["parameters"]["MODE"]["string_value"]\n'
        text = text.replace(INITIALIZE, read + lookup)
        if choice == "param_present":
            config.setdefault("parameters", Map())["MODE"] = {"string_value": "fast"}
    elif choice.startswith("output"):
        name = "OUTPUT0" if choice == "output_present" else "SCORES"
        lookup = (
            f'        self.kind = pb_utils.get_output_config_by_name(model_config, "{name}")'
            '["data_type"]\n'
        )
        text = text.replace(INITIALIZE, read + lookup)
    elif choice == "auto_complete_batch":
        text += (
            "\n    @staticmethod\n    def auto_complete_config(auto_complete_model_config):\n"
            f"        auto_complete_model_config.set_max_batch_size({rng.choice((2, 8, 16))})\n"
            "        return auto_complete_model_config\n"
        )
    else:
        dims = "[4]" if choice == "auto_complete_agrees" else "[8]"
        text += (
            "\n    @staticmethod\n    def auto_complete_config(auto_complete_model_config):\n"
            '        auto_complete_model_config.add_input({"name": "INPUT0", '
            f'"data_type": "TYPE_FP32", "dims": {dims}}})\n'
            "        return auto_complete_model_config\n"
        )
    model.model_py = text
    return f"{model.name}: model.py {choice}"


# --- ensembles --------------------------------------------------------------------------------


def ensemble(rng: random.Random, spec: RepositorySpec) -> str | None:
    model = spec.ensemble()
    if model is None or model.config is None:
        return None
    config = model.config
    steps = config["ensemble_scheduling"]["step"]
    step = rng.choice(steps)
    choice = rng.choice(
        (
            "input_key",
            "output_key",
            "missing_model",
            "pinned_version",
            "pinned_existing",
            "batch_size",
            "dtype",
            "dims",
            "unused_input",
            "output_unproduced",
            "same_output",
            "backend",
        )
    )
    if choice == "input_key":
        step["input_map"] = Map({"INPUT9": next(iter(step["input_map"].values()))})
    elif choice == "output_key":
        step["output_map"] = Map({"OUTPUT9": next(iter(step["output_map"].values()))})
    elif choice == "missing_model":
        step["model_name"] = f"{spec.prefix}_absent"
    elif choice == "pinned_version":
        step["model_version"] = 2
    elif choice == "pinned_existing":
        step["model_version"] = 1
    elif choice == "batch_size":
        config["max_batch_size"] = rng.choice((0, 16))
    elif choice == "dtype":
        config["input"][0]["data_type"] = Enum(rng.choice(("TYPE_INT32", "TYPE_FP16")))
    elif choice == "dims":
        config["input"][0]["dims"] = rng.choice(([8], [-1], [2, 2]))
    elif choice == "unused_input":
        config["input"].append(tensor("EXTRA"))
    elif choice == "output_unproduced":
        config["output"][0]["name"] = "RESULT"
    elif choice == "same_output":
        for other in steps:
            other["output_map"] = Map({"OUTPUT0": "OUT"})
    else:
        config["backend"] = "python"
    return f"{model.name}: ensemble {choice} (step {step['model_name']})"


MUTATIONS: tuple[tuple[Mutation, int], ...] = (
    (max_batch_size, 3),
    (dims, 3),
    (data_type, 2),
    (reshape, 2),
    (input_flag, 2),
    (second_tensor, 2),
    (no_tensors, 1),
    (label_file, 1),
    (instance_group, 3),
    (dynamic_batching, 4),
    (sequence_batching, 4),
    (warmup, 3),
    (parameters, 2),
    (version_policy, 2),
    (response_cache, 1),
    (decoupled, 1),
    (batch_io, 2),
    (platform_backend, 1),
    (layout, 3),
    (config_name, 2),
    (no_config, 1),
    (model_py, 4),
    (ensemble, 6),
)
"""Each mutation with its weight: how often it is drawn."""


# --- the config's text --------------------------------------------------------------------------


def typo(rng: random.Random, text: str) -> tuple[str, str]:
    wrong, right = rng.choice(
        (
            ("max_batch_sizes:", "max_batch_size:"),
            ("dim:", "dims:"),
            ("instance_groups", "instance_group"),
            ("datatype:", "data_type:"),
            ("inputs [", "input ["),
            ("max_batch_size: 8.0", "max_batch_size: 8"),
        )
    )
    return text.replace(right, wrong, 1), f"field typo {wrong!r}"


def bad_enum(rng: random.Random, text: str) -> tuple[str, str]:
    wrong, right = rng.choice(
        (
            ("TYPE_FLOAT32", "TYPE_FP32"),
            ("FP32", "TYPE_FP32"),
            ("KIND_CPUS", "KIND_CPU"),
            ("kind: CPU", "kind: KIND_CPU"),
        )
    )
    return text.replace(right, wrong, 1), f"enum {wrong!r} for {right!r}"


def stray_brace(rng: random.Random, text: str) -> tuple[str, str]:
    choice = rng.choice(("extra", "missing", "quote", "oneof"))
    if choice == "extra":
        return text + "}\n", "a stray '}' at the end"
    if choice == "missing":
        position = text.rfind("]")
        return text[:position] + text[position + 1 :], "the last ']' missing"
    if choice == "quote":
        return text.replace('"', "", 1), "an unterminated string"
    return text + "dynamic_batching { }\nsequence_batching { }\n", "two scheduling choices"


TEXT_MUTATIONS: tuple[Callable[[random.Random, str], tuple[str, str]], ...] = (
    typo,
    bad_enum,
    stray_brace,
)


def mutate(rng: random.Random, spec: RepositorySpec) -> None:
    """0-2 field mutations, then (one time in eight) a mutation of a config's text."""
    mutations, weights = zip(*MUTATIONS, strict=True)
    count = rng.choices((0, 1, 2), weights=(1, 6, 3))[0]
    while len(spec.mutations) < count:
        done = rng.choices(mutations, weights=weights)[0](rng, spec)
        if done is not None:
            spec.mutations.append(done)
    if rng.random() < 0.125:
        model = rng.choice([m for m in spec.models if m.config is not None] or spec.models)
        if model.config is not None:
            rendered = render(model.config)
            text, done = rng.choice(TEXT_MUTATIONS)(rng, rendered)
            if text != rendered:  # a replacement finds nothing to replace in some configs
                model.config_text = text
                spec.mutations.append(f"{model.name}: config text, {done}")
