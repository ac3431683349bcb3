"""Model repositories for the differential tests, as data.

Each :class:`Case` is one model (plus, for an ensemble, the models it uses) written into a
shared repository at test time. Every model uses the Python backend, the only backend bundled
with the server we test against, so a refusal is about the configuration or the layout and
never about a missing backend.

``expect`` is a fragment of the reason the real server (2.51.0) gave when it refused the
case. The tests assert it first, so a server that changes its words (or starts accepting the
case) shows up as a failure of the oracle, not as a mysterious linter failure.

A broken case that a rule's failing fixture (fixtures/rules/<ID>/fail/) already shows is taken
from that fixture (:func:`from_fixture`), so the server confirms the fixture's failure; only
what no fixture covers is written here.

Never add a Python model without its ``model.py``: the server then hangs in LOADING forever.
Nor a case that can crash the server: see :data:`CRASHES_SERVER`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

MODEL_PY = '''\
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """Copies INPUT0 to OUTPUT0."""

    def execute(self, requests):
        responses = []
        for request in requests:
            data = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            out = pb_utils.Tensor("OUTPUT0", data.astype(np.float32))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
'''

INPUT = 'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]'
OUTPUT = 'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]'
CPU1 = "instance_group [ { kind: KIND_CPU count: 1 } ]"


@dataclass(frozen=True)
class Case:
    """One model to load. ``files`` maps paths relative to the repository root to contents.

    A path ending in ``/`` is an (empty) directory.
    """

    name: str
    files: Mapping[str, str]
    broken: str = ""
    """What is wrong with it, in words; empty for a good case."""
    expect: str = ""
    """Fragment of the server's refusal (broken cases only)."""
    extra_models: tuple[str, ...] = field(default=())
    """Other models the case's files define (an ensemble's steps): good, load with it."""


def config(
    name: str,
    *,
    header: str = 'backend: "python"',
    max_batch_size: str = "8",
    inputs: str = INPUT,
    outputs: str = OUTPUT,
    instances: str = CPU1,
    extra: str = "",
) -> str:
    """A config.pbtxt for a Python model; each keyword replaces one part of the good one."""
    lines = [f'name: "{name}"', header, f"max_batch_size: {max_batch_size}"]
    lines += [inputs, outputs, instances, extra]
    return "\n".join(line for line in lines if line) + "\n"


def python_model(
    directory: str, config_text: str | None, versions: tuple[str, ...] = ("1",)
) -> dict[str, str]:
    """Files for a Python model: ``config.pbtxt`` and ``<version>/model.py`` per version."""
    files = {f"{directory}/{v}/model.py": MODEL_PY for v in versions}
    if config_text is not None:
        files[f"{directory}/config.pbtxt"] = config_text
    return files


def ensemble_config(name: str, first: str, second: str) -> str:
    return f"""\
name: "{name}"
platform: "ensemble"
max_batch_size: 8
input [ {{ name: "IN" data_type: TYPE_FP32 dims: [ 4 ] }} ]
output [ {{ name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] }} ]
ensemble_scheduling {{
  step [
    {{
      model_name: "{first}"
      model_version: -1
      input_map {{ key: "INPUT0" value: "IN" }}
      output_map {{ key: "OUTPUT0" value: "MID" }}
    }},
    {{
      model_name: "{second}"
      model_version: -1
      input_map {{ key: "INPUT0" value: "MID" }}
      output_map {{ key: "OUTPUT0" value: "OUT" }}
    }}
  ]
}}
"""


STATE = 'input_name: "STATE_IN" output_name: "STATE_OUT" data_type: TYPE_FP32'


def sequence_state(*initial: str, dims: str = "[ 4 ]", states: int = 1) -> str:
    """``sequence_batching`` with ``states`` copies of one FP32 state (``initial_state``s)."""
    init = f" initial_state [ {', '.join(f'{{ {i} }}' for i in initial)} ]" if initial else ""
    state = f"{{ {STATE} dims: {dims}{init} }}"
    return "sequence_batching {\n  state [ " + ", ".join([state] * states) + " ]\n}"


ZERO_INIT = 'name: "zeros" data_type: TYPE_FP32 dims: [ 4 ] zero_data: true'

SIXTEEN_BYTES = "0123456789abcdef"
"""A data file of the right size for a TYPE_FP32 tensor of dims [ 4 ] (contents do not matter)."""


GOOD_CASES: list[Case] = [
    Case("good_plain", python_model("good_plain", config("good_plain"))),
    # A group without a kind runs on CPU where there is no GPU (TD231 and TD236 stay silent).
    Case("good_kindless_on_cpu_server", python_model(
        "good_kindless_on_cpu_server",
        config("good_kindless_on_cpu_server", instances="instance_group [ { count: 1 } ]"),
    )),
    # The Python backend's own library, found in its backend directory (TD505 stays silent).
    Case(
        "good_runtime_backend_library",
        python_model(
            "good_runtime_backend_library",
            config("good_runtime_backend_library", extra='runtime: "libtriton_python.so"'),
        ),
    ),
    Case(
        "good_dynamic_batching",
        python_model(
            "good_dynamic_batching",
            config(
                "good_dynamic_batching",
                instances="instance_group [ { kind: KIND_CPU count: 2 } ]",
                extra="dynamic_batching { max_queue_delay_microseconds: 100 }",
            ),
        ),
    ),
    Case(
        "good_ensemble",
        {
            "good_ensemble/config.pbtxt": ensemble_config(
                "good_ensemble", "good_ensemble_step_a", "good_ensemble_step_b"
            ),
            "good_ensemble/1/": "",
            **python_model("good_ensemble_step_a", config("good_ensemble_step_a")),
            **python_model("good_ensemble_step_b", config("good_ensemble_step_b")),
        },
        extra_models=("good_ensemble_step_a", "good_ensemble_step_b"),
    ),
    Case(
        "good_two_versions",
        python_model(
            "good_two_versions",
            config("good_two_versions", extra="version_policy: { all: {} }"),
            versions=("1", "2"),
        ),
    ),
    Case(
        "good_sequence_state",
        python_model(
            "good_sequence_state",
            config("good_sequence_state", extra=sequence_state(ZERO_INIT)),
        ),
    ),
    Case(
        "good_sequence_state_file",
        {
            **python_model(
                "good_sequence_state_file",
                config(
                    "good_sequence_state_file",
                    extra=sequence_state(
                        ZERO_INIT.replace("zero_data: true", 'data_file: "init.bin"')
                    ),
                ),
            ),
            "good_sequence_state_file/initial_state/init.bin": SIXTEEN_BYTES,
        },
    ),
]


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "rules"


def from_fixture(rule_id: str, model: str, what: str, expect: str, side: str = "fail") -> Case:
    """Model ``model`` of fixtures/rules/<rule_id>/fail/ as a broken case (or of ``pass/``,
    with ``side="pass"``, as a good one).

    Fixtures reuse model names and the cases share one repository, so the case is named
    ``<rule_id>_<model>`` (lower case; ``good_`` before it for ``pass/``), and its config's
    ``name`` follows the directory.
    """
    source = FIXTURES / rule_id / side / model
    name = f"{'good_' if side == 'pass' else ''}{rule_id.lower()}_{model}"
    files: dict[str, str] = {}
    for path in sorted(source.rglob("*")):
        relative = f"{name}/{path.relative_to(source).as_posix()}"
        if path.is_dir() and not any(path.iterdir()):
            files[f"{relative}/"] = ""
        elif path.is_file():
            files[relative] = path.read_text(encoding="utf-8")
    config_file = f"{name}/config.pbtxt"
    if config_file in files:
        renamed = re.sub(f'^name: "{model}"$', f'name: "{name}"', files[config_file], count=1,
                         flags=re.MULTILINE)
        files[config_file] = renamed
    return Case(name, files, what, expect)


MODEL_PY_GOOD: list[Case] = [
    from_fixture(rule_id, model, "", "", side="pass")
    for rule_id, model in (("TD310", "streaming_asr"), ("TD310", "ragged"),
                           ("TD313", "tokenizer"), ("TD313", "detokenizer"),
                           ("TD314", "postprocess"),
                           ("TD314", "postprocess_extra"), ("TD315", "detector"),
                           ("TD315", "reranker"), ("TD315", "classifier"), ("TD315", "embedder"),
                           ("TD316", "postprocess"))
]
"""model.py as the stub runs it, loaded READY (TD310, TD313-TD316): sequence control inputs,
implicit state and batch_input targets read by name; the model class imported from a sibling
module; initialize's checked lookups, and parameters read with a default; a configuration
changed before it is read (an output appended, defaults merged, a method of self filling
them); a later class statement replacing the model class; a package model/ beside model.py,
which Python imports first."""


WARMUP_GOOD: list[Case] = [
    from_fixture("TD247", model, "", "", side="pass")
    for model in ("image_classifier", "text_encoder", "reranker", "tokenizer", "detector",
                  "streaming_asr")
]
"""Warmup samples the server prepares and runs, loaded READY (TD247): -1 config dims fed a
fixed size, an optional input left out, strings from zero, random and file data, batch_size
up to max_batch_size, and a sequence control input keyed by name."""


def variant(
    name: str,
    what: str,
    expect: str,
    *,
    config_name: str | None = None,
    versions: tuple[str, ...] = ("1",),
    **parts: str,
) -> Case:
    """A single Python model whose config differs from the good one as ``parts`` says."""
    text = config(config_name or name, **parts)
    return Case(name, python_model(name, text, versions), what, expect)


def io(kind: str, body: str) -> str:
    """``input [ { <body> } ]`` or ``output [ ... ]`` with one tensor."""
    return f"{kind} [ {{ {body} }} ]"


FP32_4 = 'name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ]'
LABELLED = 'name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] label_filename: '

SEQ_CONTROL_REUSED = """\
sequence_batching {
  control_input [
    { name: "CTRL" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
    { name: "CTRL" control [ { kind: CONTROL_SEQUENCE_READY int32_false_true: [ 0, 1 ] } ] }
  ]
}"""

WARMUP_NO_SOURCE = """\
model_warmup [
  {
    name: "warm"
    batch_size: 1
    inputs { key: "INPUT0" value { data_type: TYPE_FP32 dims: [ 4 ] } }
  }
]"""

ENSEMBLE_STEP_ON_PYTHON = """\
ensemble_scheduling {
  step [
    {
      model_name: "good_plain"
      model_version: -1
      input_map { key: "INPUT0" value: "INPUT0" }
      output_map { key: "OUTPUT0" value: "OUTPUT0" }
    }
  ]
}"""


def sequence_control(*controls: str) -> str:
    """``sequence_batching`` with the given ``control_input`` entries."""
    return "sequence_batching {\n  control_input [\n    " + ",\n    ".join(controls) + "\n  ]\n}"


def control(name: str, body: str) -> str:
    """One control tensor ``name`` with one control ``{ <body> }``."""
    named = f'name: "{name}" ' if name else ""
    return f"{{ {named}control [ {{ {body} }} ] }}"


def warmup(inputs: str, batch_size: int = 1) -> str:
    """One ``model_warmup`` sample; ``inputs`` is the body of its ``inputs`` map entry."""
    return f'model_warmup [ {{ name: "warm" batch_size: {batch_size} inputs {{ {inputs} }} }} ]'


def parameter(key: str, value: str) -> str:
    return f'parameters {{ key: "{key}" value: {{ string_value: "{value}" }} }}'


def ensemble_case(name: str, what: str, expect: str, edit: Callable[[str], str]) -> Case:
    """An ensemble of two ``good_plain`` steps whose config ``edit`` breaks."""
    text = edit(ensemble_config(name, "good_plain", "good_plain"))
    return Case(name, {f"{name}/config.pbtxt": text, f"{name}/1/": ""}, what, expect)


def calls_ensemble(name: str, other: str) -> str:
    """An ensemble: ``good_plain``, then the ensemble ``other`` (whose tensors are IN/OUT)."""
    text = ensemble_config(name, "good_plain", other)
    text = text.replace('key: "INPUT0" value: "MID"', 'key: "IN" value: "MID"')
    return text.replace('key: "OUTPUT0" value: "OUT"', 'key: "OUT" value: "OUT"')


NO_VERSION = "at least one version must be available under the version policy of model"

BROKEN_CASES: list[Case] = [
    # Poll-time: the config cannot be read or fails ValidateModelConfig. The load answer is
    # only "failed to poll from model repository"; the reason is in the log.
    variant(
        "name_mismatch",
        "name in config.pbtxt differs from the directory name",
        "unexpected directory name 'name_mismatch' for model 'some_other_name', "
        "directory name must equal model name",
        config_name="some_other_name",
    ),
    variant(
        "enum_float32",
        "unknown enum value TYPE_FLOAT32 (numpy spelling)",
        'Unknown enumeration value of "TYPE_FLOAT32" for field "data_type"',
        inputs=io("input", 'name: "INPUT0" data_type: TYPE_FLOAT32 dims: [ 4 ]'),
    ),
    from_fixture(
        "TD203",
        "tokenizer",
        "wire dtype FP32 instead of the enum TYPE_FP32",
        'Unknown enumeration value of "FP32" for field "data_type"',
    ),
    from_fixture(
        "TD202",
        "preprocessing",
        "unrendered template placeholders in max_batch_size and a parameter",
        "Expected integer, got: $",
    ),
    variant(
        "unknown_field",
        "misspelt field max_queue_delay_ms in dynamic_batching",
        'Message type "inference.ModelDynamicBatching" has no field named "max_queue_delay_ms"',
        extra="dynamic_batching { max_queue_delay_ms: 100 }",
    ),
    from_fixture(
        "TD208",
        "postprocess",
        "max_batch_size -1",
        "'max_batch_size' must be non-negative value",
    ),
    variant(
        "preferred_gt_max",
        "preferred_batch_size larger than max_batch_size",
        "dynamic batching preferred size must be <= max batch size",
        extra="dynamic_batching { preferred_batch_size: [ 16 ] }",
    ),
    variant(
        "preferred_zero",
        "preferred_batch_size 0",
        "dynamic batching preferred size must be positive",
        extra="dynamic_batching { preferred_batch_size: [ 0 ] }",
    ),
    variant(
        "priority_default_out_of_range",
        "default_priority_level above priority_levels",
        "default priority level must be in range [1, 2]",
        extra="dynamic_batching { priority_levels: 2 default_priority_level: 5 }",
    ),
    variant(
        "priority_queue_policy_out_of_range",
        "priority_queue_policy for a level above priority_levels",
        "priority queue policy must have priority level in range [1, 2]",
        extra="dynamic_batching { priority_levels: 2 default_priority_level: 1 "
        "priority_queue_policy { key: 3 value: { max_queue_size: 1 } } }",
    ),
    variant(
        "preserve_ordering_delay",
        "preserve_ordering with a DELAY timeout action",
        "Queue policy can not have DELAY as timeout action when 'preserve_ordering' is true",
        extra="dynamic_batching { preserve_ordering: true default_queue_policy "
        "{ timeout_action: DELAY default_timeout_microseconds: 100 } }",
    ),
    variant(
        "seq_control_reused",
        "one sequence control tensor used for two control kinds",
        "sequence batching control tensor 'CTRL' is specified for multiple control kinds",
        extra=SEQ_CONTROL_REUSED,
    ),
    from_fixture(
        "TD223",
        "stateful_counter",
        "CONTROL_SEQUENCE_START without int32_false_true (or fp32/bool)",
        "sequence batching must specify either 'int32_false_true', 'fp32_false_true' or "
        "'bool_false_true' for CONTROL_SEQUENCE_START",
    ),
    variant(
        "platform_onnx",
        "unknown platform 'onnx'",
        "unexpected platform type 'onnx'",
        header='platform: "onnx"',
    ),
    variant(
        "platform_ensemble_backend_python",
        "platform ensemble together with backend python",
        "must have platform type 'ensemble' and empty backend type",
        header='platform: "ensemble"\nbackend: "python"',
    ),
    variant(
        "ensemble_scheduling_not_ensemble",
        "ensemble_scheduling on a Python model",
        "ensemble scheduling cannot be set for model 'ensemble_scheduling_not_ensemble' "
        "whose platform is not ensemble",
        extra=ENSEMBLE_STEP_ON_PYTHON,
    ),
    variant(
        "ensemble_without_scheduling",
        "platform ensemble without ensemble_scheduling",
        "ensemble scheduling must be set for ensemble ensemble_without_scheduling "
        "whose platform is ensemble",
        header='platform: "ensemble"',
        instances="",
        versions=(),
    ),
    from_fixture(
        "TD241",
        "llm_stream",
        "response_cache enabled on a decoupled model",
        "Response Cache does not currently support model td241_llm_stream with 'decoupled' "
        "transaction policy. Please disable the response cache.",
    ),
    Case(
        "empty_directory",
        {"empty_directory/": ""},
        "a directory with no config and no files: the backend cannot be determined",
        "Could not determine backend for model 'empty_directory' with no backend in model "
        "configuration. Expected model name of the form 'model.<backend_name>'.",
    ),
    # Version layout: reported in the load answer.
    from_fixture("TD104", "text_cleaner", "no version directory at all", NO_VERSION),
    variant("only_v1_dir", "only a version directory named 'v1'", NO_VERSION, versions=("v1",)),
    variant(
        "policy_specific_missing",
        "version_policy specific [2] when only 1/ exists",
        NO_VERSION,
        extra="version_policy: { specific: { versions: [ 2 ] } }",
    ),
    variant(
        "latest_zero",
        "version_policy latest with num_versions 0",
        NO_VERSION,
        extra="version_policy: { latest: { num_versions: 0 } }",
    ),
    # Load-time: ValidateModelIOConfig and instance/model creation. In the load answer.
    variant(
        "dims_empty",
        "input with empty dims",
        "model input 'INPUT0' must specify 'dims'",
        inputs=io("input", 'name: "INPUT0" data_type: TYPE_FP32 dims: [ ]'),
    ),
    variant(
        "dims_zero",
        "an input dimension of 0",
        "model input 'INPUT0' dimension must be integer >= 1, or -1 to indicate a "
        "variable-size dimension",
        inputs=io("input", 'name: "INPUT0" data_type: TYPE_FP32 dims: [ 0 ]'),
    ),
    variant(
        "dims_minus_two",
        "an output dimension of -2",
        "model output 'OUTPUT0' dimension must be integer >= 1, or -1 to indicate a "
        "variable-size dimension",
        outputs=io("output", 'name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -2 ]'),
    ),
    variant(
        "input_no_dtype",
        "input without data_type",
        "model input 'INPUT0' must specify 'data_type'",
        inputs=io("input", 'name: "INPUT0" dims: [ 4 ]'),
    ),
    variant(
        "output_no_name",
        "output without name",
        "model output must specify 'name'",
        outputs=io("output", "data_type: TYPE_FP32 dims: [ 4 ]"),
    ),
    variant(
        "reshape_count",
        "reshape with a different element count than dims",
        "model input 'INPUT0' has different size for dims and reshape",
        inputs=io("input", f"{FP32_4} reshape: {{ shape: [ 5 ] }}"),
    ),
    variant(
        "reshape_variable",
        "reshape with a different number of variable-size dims",
        "model input 'INPUT0' has different number of variable-size dimensions for dims and "
        "reshape",
        inputs=io(
            "input",
            'name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] reshape: { shape: [ -1, -1 ] }',
        ),
    ),
    variant(
        "reshape_empty_nonbatch",
        "empty reshape on a non-batching model",
        "model input 'INPUT0' cannot have empty reshape for non-batching model as scalar "
        "tensors are not supported",
        max_batch_size="0",
        inputs=io(
            "input", 'name: "INPUT0" data_type: TYPE_FP32 dims: [ 1 ] reshape: { shape: [ ] }'
        ),
    ),
    variant(
        "nhwc_two_dims",
        "input format FORMAT_NHWC with 2 dims",
        "model input NHWC/NCHW require 3 dims",
        inputs=io(
            "input", 'name: "INPUT0" data_type: TYPE_FP32 format: FORMAT_NHWC dims: [ 2, 2 ]'
        ),
    ),
    variant(
        "shape_tensor_python",
        "is_shape_tensor on a Python model input",
        "shape tensors are only supported for TensorRT platform",
        inputs=io(
            "input", 'name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] is_shape_tensor: true'
        ),
    ),
    variant(
        "batch_input_no_source",
        "batch_input without source_input",
        "batch input kind 'BATCH_ELEMENT_COUNT' expects 1 source input, got 0",
        extra='batch_input [ { kind: BATCH_ELEMENT_COUNT target_name: "COUNT" '
        "data_type: TYPE_FP32 } ]",
    ),
    variant(
        "batch_output_no_source",
        "batch_output without source_input",
        "batch output kind 'BATCH_SCATTER_WITH_INPUT_SHAPE' expects 1 source input, got 0",
        extra='batch_output [ { target_name: [ "OUTPUT0" ] '
        "kind: BATCH_SCATTER_WITH_INPUT_SHAPE } ]",
    ),
    variant(
        "cpu_with_gpus",
        "KIND_CPU instance group that lists gpus",
        "instance group cpu_with_gpus_0 of model cpu_with_gpus has kind KIND_CPU but "
        "specifies one or more GPUs",
        instances="instance_group [ { kind: KIND_CPU count: 1 gpus: [ 0 ] } ]",
    ),
    variant(
        "model_with_gpus",
        "KIND_MODEL instance group that lists gpus",
        "instance group model_with_gpus_0 of model model_with_gpus has kind KIND_MODEL but "
        "specifies one or more GPUs",
        instances="instance_group [ { kind: KIND_MODEL count: 1 gpus: [ 0 ] } ]",
    ),
    # The machine: this server has no GPUs, and the doctor judges with --gpus 0.
    from_fixture("TD236", "tokenizer", "KIND_GPU on a server without GPUs",
                 "instance group td236_tokenizer_0 of model td236_tokenizer has kind KIND_GPU "
                 "but no GPUs are available"),
    variant(
        "gpu_id_on_cpu_server",
        "KIND_GPU group naming GPU 0 on a server without GPUs",
        "instance group gpu_id_on_cpu_server_0 of model gpu_id_on_cpu_server specifies invalid "
        "or unsupported gpu id 0. GPUs with at least the minimum required CUDA compute "
        "compatibility of 6.000000 are: ",
        instances="instance_group [ { kind: KIND_GPU count: 1 gpus: [ 0 ] } ]",
    ),
    variant(
        "auto_with_gpus_on_cpu_server",
        "a group without a kind that lists gpus, on a server without GPUs: KIND_CPU",
        "instance group auto_with_gpus_on_cpu_server_0 of model auto_with_gpus_on_cpu_server "
        "has kind KIND_CPU but specifies one or more GPUs",
        instances="instance_group [ { count: 1 gpus: [ 0 ] } ]",
    ),
    variant(
        "profile_python",
        "TensorRT 'profile' in an instance group of a Python model",
        "specifies profile field which is only supported for TensorRT models",
        instances='instance_group [ { kind: KIND_CPU count: 1 profile: [ "0" ] } ]',
    ),
    variant(
        "label_missing",
        "label_filename that does not exist",
        "failed to open text file for read",
        outputs=io("output", f'{LABELLED}"labels.txt"'),
    ),
    variant(
        "warmup_no_source",
        "model_warmup input without a data source (zero_data, random_data or input_data_file)",
        "warmup setting expects input 'INPUT0' to have input_data_type set",
        extra=WARMUP_NO_SOURCE,
    ),
    # Ensembles: checked when the ensemble is loaded, reported in the load answer.
    Case(
        "ensemble_missing_step",
        {
            "ensemble_missing_step/config.pbtxt": ensemble_config(
                "ensemble_missing_step", "good_plain", "no_such_model"
            ),
            "ensemble_missing_step/1/": "",
        },
        "an ensemble step names a model that is not in the repository",
        "ensemble ensemble_missing_step contains models that are not available or ambiguous: "
        "no_such_model",
    ),
    Case(
        "ensemble_bad_mapping",
        {
            "ensemble_bad_mapping/config.pbtxt": ensemble_config(
                "ensemble_bad_mapping", "good_plain", "good_plain"
            ).replace('key: "INPUT0" value: "MID"', 'key: "INPUT_WRONG" value: "MID"'),
            "ensemble_bad_mapping/1/": "",
        },
        "an ensemble step maps to an input its model does not have",
        "in ensemble ensemble_bad_mapping, ensemble tensor MID is mapping to non-existing "
        "input INPUT_WRONG in model good_plain",
    ),
    # More of ValidateModelConfig (TD223 sequence controls and strategies, TD222, TD241) and
    # a field 2.51 does not know (model_metrics): poll-time, in the log.
    variant(
        "seq_corrid_fp32",
        "CONTROL_SEQUENCE_CORRID with data_type TYPE_FP32",
        "unexpected data type for control CONTROL_SEQUENCE_CORRID for seq_corrid_fp32. Allowed "
        "data types are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and TYPE_STRING",
        extra=sequence_control(
            control("CORRID", "kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_FP32")
        ),
    ),
    variant(
        "seq_corrid_false_true",
        "CONTROL_SEQUENCE_CORRID with int32_false_true",
        "sequence batching must not specify either 'int32_false_true', 'fp32_false_true' or "
        "'bool_false_true' for CONTROL_SEQUENCE_CORRID",
        extra=sequence_control(
            control(
                "CORRID",
                "kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 int32_false_true: [ 0, 1 ]",
            )
        ),
    ),
    variant(
        "seq_control_three_values",
        "CONTROL_SEQUENCE_START with three int32_false_true entries",
        "sequence batching control 'int32_false_true' must have exactly 2 entries for "
        "CONTROL_SEQUENCE_START",
        extra=sequence_control(
            control("START", "kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1, 2 ]")
        ),
    ),
    variant(
        "seq_control_two_value_fields",
        "CONTROL_SEQUENCE_START with both int32_false_true and fp32_false_true",
        "sequence batching specifies more than one from 'int32_false_true', 'fp32_false_true' and "
        "'bool_false_true' for CONTROL_SEQUENCE_START",
        extra=sequence_control(
            control(
                "START",
                "kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] fp32_false_true: [ 0, 1 ]",
            )
        ),
    ),
    variant(
        "seq_control_unnamed",
        "a sequence control tensor without a name",
        "sequence batching control tensor must have a name",
        extra=sequence_control(
            control("", "kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ]")
        ),
    ),
    variant(
        "seq_control_kind_twice",
        "two control tensors of kind CONTROL_SEQUENCE_START",
        "sequence batching specifies multiple CONTROL_SEQUENCE_START tensors",
        extra=sequence_control(
            control("START", "kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ]"),
            control("START2", "kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ]"),
        ),
    ),
    variant(
        "seq_oldest_preferred_gt_max",
        "sequence_batching oldest with preferred_batch_size above max_batch_size",
        "sequence batching preferred batch size must be <= max batch size",
        extra="sequence_batching { oldest { preferred_batch_size: [ 16 ] } }",
    ),
    variant(
        "seq_oldest_preferred_zero",
        "sequence_batching oldest with preferred_batch_size 0",
        "sequence batching preferred batch size must be positive",
        extra="sequence_batching { oldest { preferred_batch_size: [ 0 ] } }",
    ),
    variant(
        "seq_direct_utilization",
        "sequence_batching direct with minimum_slot_utilization 1.5",
        "sequence batching minimum slot utilization must be in range (0.0, 1.0]",
        extra="sequence_batching { direct { minimum_slot_utilization: 1.5 } }",
    ),
    variant(
        "cache_sequence",
        "response_cache enabled on a sequence-batched model",
        "Response Cache does not currently support model cache_sequence with sequence batching "
        "scheduler. Please disable the response cache.",
        extra="response_cache { enable: true }\nsequence_batching { }",
    ),
    variant(
        "preserve_ordering_priorities",
        "preserve_ordering with two priority levels",
        "Only one priority level is allowed when 'preserve_ordering' is true",
        extra="dynamic_batching { preserve_ordering: true priority_levels: 2 "
        "default_priority_level: 1 }",
    ),
    # Parameters, environment and runtime of the Python model (TD245, TD246, TD113): load
    # time, in the load answer.
    from_fixture(
        "TD245",
        "tracker",
        "TRITON_BATCH_STRATEGY_PATH together with sequence_batching",
        "TRITON_BATCH_STRATEGY_PATH cannot be specified with sequence batcher, using default "
        "batching strategy",
    ),
    from_fixture(
        "TD246",
        "tokenizer",
        "EXECUTION_ENV_PATH names env/, which exists but has no bin/activate",
        "env/bin/activate does not exist. The Python environment should contain an 'activate' "
        "script.",
    ),
    variant(
        "python_env_missing",
        "EXECUTION_ENV_PATH names env/, which does not exist",
        "Failed to get the canonical path for ",
        extra=parameter("EXECUTION_ENV_PATH", "$$TRITON_MODEL_DIRECTORY/env"),
    ),
    variant(
        "python_env_archive_missing",
        "EXECUTION_ENV_PATH names env.tar.gz, which does not exist",
        "Failed to get the canonical path for ",
        extra=parameter("EXECUTION_ENV_PATH", "$$TRITON_MODEL_DIRECTORY/env.tar.gz"),
    ),
    # model.py as the stub runs it (TD313-TD316): the stub imports the file as module
    # '<version>.<file name>' and asks it for TritonPythonModel, then runs initialize.
    from_fixture(
        "TD313",
        "tokenizer",
        "model.py defines TritonPythonModle (a typo), no TritonPythonModel",
        "AttributeError: module '1.model' has no attribute 'TritonPythonModel'",
    ),
    Case(
        "py_class_missing_empty",
        {
            "py_class_missing_empty/config.pbtxt": config("py_class_missing_empty"),
            "py_class_missing_empty/3/model.py": "",
        },
        "version 3's model.py is empty",
        "AttributeError: module '3.model' has no attribute 'TritonPythonModel'",
    ),
    Case(
        "py_class_missing_named",
        {
            "py_class_missing_named/config.pbtxt": config(
                "py_class_missing_named", extra='default_model_filename: "my_impl.py"'
            ),
            "py_class_missing_named/1/my_impl.py": MODEL_PY.replace(
                "class TritonPythonModel:", "class Model:"
            ),
        },
        "default_model_filename my_impl.py, whose class is named Model",
        "AttributeError: module '1.my_impl' has no attribute 'TritonPythonModel'",
    ),
    from_fixture(
        "TD314",
        "postprocess",
        "initialize subscripts get_output_config_by_name(model_config, 'OUTPUT'); the config's "
        "output is OUTPUT0",
        "TypeError: 'NoneType' object is not subscriptable",
    ),
    from_fixture(
        "TD315",
        "detector",
        "initialize reads parameter score_threshold, which config.pbtxt does not set",
        "KeyError: 'score_threshold'",
    ),
    from_fixture(
        "TD316",
        "postprocess",
        "initialize raises its own exception when parameter mode is missing, and config.pbtxt "
        "does not set it",
        "TritonModelException: the parameter mode is required",
    ),
    Case(
        "py_parameter_inline",
        {
            "py_parameter_inline/config.pbtxt": config(
                "py_parameter_inline", extra=parameter("OTHER", "x")
            ),
            "py_parameter_inline/1/model.py": MODEL_PY.replace(
                "    def execute(",
                "    def initialize(self, args):\n"
                "        import json\n\n"
                '        self.key = json.loads(args["model_config"])["parameters"]["KEY"]'
                '["string_value"]\n\n'
                "    def execute(",
            ),
        },
        "initialize reads json.loads(args['model_config'])['parameters']['KEY']; the config "
        "sets only OTHER",
        "KeyError: 'KEY'",
    ),
    Case(
        "runtime_escapes",
        {
            **python_model(
                "runtime_escapes",
                config("runtime_escapes", extra='runtime: "../libtriton_escape.so"'),
            ),
            "runtime_escapes/libtriton_escape.so": "not a library\n",
        },
        "runtime '../libtriton_escape.so': a file in the model directory, named from 1/",
        "backend library name '../libtriton_escape.so' escapes backend directory",
    ),
    variant(
        "runtime_outside_missing",
        "runtime '../lib/libtriton_python.so' outside the model directory, and not there",
        "unable to find backend library '../lib/libtriton_python.so' for model "
        "'runtime_outside_missing'",
        extra='runtime: "../lib/libtriton_python.so"',
    ),
    # runtime as a bare name, a Python-based backend, repository agents (TD505-TD507). The
    # agent is looked up at poll time: its words are in the log.
    from_fixture(
        "TD505",
        "resize",
        "runtime 'libtriton_pytorch.so' for the Python backend, in no directory searched",
        "unable to find backend library 'libtriton_pytorch.so' for model 'td505_resize', "
        "searched: ",
    ),
    from_fixture(
        "TD506",
        "detector",
        "runtime 'model.py' with backend python: the backend's directory has no model.py",
        "unable to find Python backend based backend library 'model.py' for model "
        "'td506_detector', searched: '/opt/tritonserver/backends/python/model.py'",
    ),
    from_fixture(
        "TD507",
        "classifier",
        "repository agent 'checksums', which no image ships",
        "unable to find 'libtritonrepoagent_checksums.so' for repo agent 'checksums', "
        "searched: /opt/tritonserver/repoagents",
    ),
    # Warmup (TD243, TD247): prepared when the instance is created, in the load answer. A sample
    # that is refused only when it runs (batch_size too big) is in CRASHES_SERVER.
    variant(
        "warmup_variable_dims",
        "model_warmup input with a -1 dim",
        "warmup setting expects all variable-size dimensions are specified for input 'INPUT0'",
        extra=warmup('key: "INPUT0" value { data_type: TYPE_FP32 dims: [ -1 ] zero_data: true }'),
    ),
    variant(
        "warmup_file_missing",
        "model_warmup input_data_file that is not in warmup/",
        "warmup/in.bin: No such file or directory",
        extra=warmup(
            'key: "INPUT0" value { data_type: TYPE_FP32 dims: [ 4 ] input_data_file: "in.bin" }'
        ),
    ),
    Case(
        "warmup_file_short",
        {
            **python_model(
                "warmup_file_short",
                config(
                    "warmup_file_short",
                    extra=warmup(
                        'key: "INPUT0" value { data_type: TYPE_FP32 dims: [ 4 ] '
                        'input_data_file: "in.bin" }'
                    ),
                ),
            ),
            "warmup_file_short/warmup/in.bin": "abcd",
        },
        "model_warmup input_data_file of 4 bytes for an input of 16 bytes",
        "warmup setting expects 16 bytes, but the data provided from in.binonly has 4 bytes",
    ),
    variant(
        "warmup_unknown_input",
        "model_warmup feeding an input the model does not have",
        "expected 1 inputs but got 0 inputs for model 'warmup_unknown_input'",
        extra=warmup('key: "INPUT9" value { data_type: TYPE_FP32 dims: [ 4 ] zero_data: true }'),
    ),
    # Warmup requests checked like a client's (TD247), before any is sent: in the load answer.
    from_fixture(
        "TD247",
        "image_classifier",
        "model_warmup dims that include the batch dimension (max_batch_size 8)",
        "unexpected shape for input 'pixel_values' for model 'td247_image_classifier'. "
        "Expected [-1,3,224,224], got [1,1,3,224,224]",
    ),
    from_fixture(
        "TD247",
        "text_encoder",
        "model_warmup input of TYPE_INT32 for a TYPE_INT64 input",
        "[request id: <id_unknown>] inference input 'input_ids' data-type is 'INT32', but "
        "model 'td247_text_encoder' expects 'INT64'",
    ),
    from_fixture(
        "TD247",
        "reranker",
        "model_warmup that leaves out a required input (the model has an optional one too)",
        "expected number of inputs between 2 and 3 but got 1 inputs for model "
        "'td247_reranker'. Got input(s) ['query'], but missing required input(s) ['document']",
    ),
    from_fixture(
        "TD247",
        "tokenizer",
        "model_warmup TYPE_STRING data file of 3 bytes (no room for a 4-byte length)",
        "incomplete string length indicator for inference input 'text' for model "
        "'td247_tokenizer', expecting 4 bytes but only 3 bytes available.",
    ),
    # Inputs, outputs, batch_input / batch_output (TD215, TD221): load time, in the load
    # answer; output_format and label_twice do not parse (poll time, in the log).
    variant(
        "non_linear_io_python",
        "is_non_linear_format_io on a Python model input",
        "Non-linear IO format is only supported for the TensorRT platform",
        inputs=io("input", f"{FP32_4} is_non_linear_format_io: true"),
    ),
    variant(
        "batch_input_int64",
        "batch_input with data_type TYPE_INT64",
        "batch input data type must be TYPE_INT32 or TYPE_FP32",
        extra='batch_input [ { kind: BATCH_ELEMENT_COUNT target_name: "COUNT" '
        'data_type: TYPE_INT64 source_input: [ "INPUT0" ] } ]',
    ),
    variant(
        "batch_input_unknown_source",
        "batch_input whose source_input is not an input",
        "unknown source input name 'NOPE'",
        extra='batch_input [ { kind: BATCH_ELEMENT_COUNT target_name: "COUNT" '
        'data_type: TYPE_FP32 source_input: [ "NOPE" ] } ]',
    ),
    variant(
        "batch_output_unknown_target",
        "batch_output whose target is not a declared output",
        "unknown target output name 'NOPE'",
        extra='batch_output [ { target_name: [ "NOPE" ] kind: BATCH_SCATTER_WITH_INPUT_SHAPE '
        'source_input: [ "INPUT0" ] } ]',
    ),
    variant(
        "batch_output_target_twice",
        "batch_output naming the same target twice",
        "target output name 'OUTPUT0' can only be specified once",
        extra='batch_output [ { target_name: [ "OUTPUT0", "OUTPUT0" ] '
        'kind: BATCH_SCATTER_WITH_INPUT_SHAPE source_input: [ "INPUT0" ] } ]',
    ),
    variant(
        "output_format",
        "an output with format (only inputs have one)",
        'Message type "inference.ModelOutput" has no field named "format"',
        outputs=io(
            "output", 'name: "OUTPUT0" data_type: TYPE_FP32 format: FORMAT_NHWC dims: [ 4 ]'
        ),
    ),
    Case(
        "label_twice",
        {
            **python_model(
                "label_twice",
                config(
                    "label_twice",
                    outputs=io("output", f'{LABELLED}"labels.txt" label_filename: "labels.txt"'),
                ),
            ),
            "label_twice/labels.txt": "a\nb\nc\nd\n",
        },
        "label_filename given twice for one output",
        'Non-repeated field "label_filename" is specified multiple times',
    ),
    # Ensembles of good_plain steps (TD401, TD411-TD415): load time, in the load answer,
    # except instance_group and a tensor written twice (poll time, in the log).
    ensemble_case(
        "ensemble_version_missing",
        "an ensemble step pins version 2 of a model that has only 1/",
        "ensemble 'ensemble_version_missing' depends on 'good_plain' whose required version 2 is "
        "not loaded",
        lambda text: text.replace("model_version: -1", "model_version: 2", 1),
    ),
    ensemble_case(
        "ensemble_dtype_mismatch",
        "ensemble input TYPE_INT32 mapped to a TYPE_FP32 step input",
        "in ensemble ensemble_dtype_mismatch, ensemble tensor IN: inconsistent data type: "
        "TYPE_INT32 is inferred from model ensemble_dtype_mismatch while TYPE_FP32 is inferred "
        "from model good_plain",
        lambda text: text.replace('"IN" data_type: TYPE_FP32', '"IN" data_type: TYPE_INT32'),
    ),
    ensemble_case(
        "ensemble_output_twice",
        "two steps write the same ensemble tensor",
        "ensemble tensor 'MID' can appear in an output map only once for ensemble "
        "'ensemble_output_twice' step 1",
        lambda text: text.replace('value: "OUT"', 'value: "MID"'),
    ),
    ensemble_case(
        "ensemble_batch_too_big",
        "ensemble max_batch_size 16 over steps that allow 8",
        "ensemble ensemble_batch_too_big allows maximum batch size 16, but it contains model "
        "good_plain which only allows maximum batch size to be 8",
        lambda text: text.replace("max_batch_size: 8", "max_batch_size: 16"),
    ),
    ensemble_case(
        "ensemble_instance_group",
        "instance_group on an ensemble",
        "instance group should not be specified for ensemble 'ensemble_instance_group'",
        lambda text: text + CPU1 + "\n",
    ),
    Case(
        "ensemble_cycle",
        {
            "ensemble_cycle/config.pbtxt": calls_ensemble("ensemble_cycle", "ensemble_cycle_back"),
            "ensemble_cycle/1/": "",
            "ensemble_cycle_back/config.pbtxt": calls_ensemble(
                "ensemble_cycle_back", "ensemble_cycle"
            ),
            "ensemble_cycle_back/1/": "",
        },
        "two ensembles that call each other",
        "circular dependency between ensembles: ",
    ),
]

HIDDEN_DIRECTORY = Case(
    ".ipynb_checkpoints",
    {
        **python_model("good_plain", config("good_plain")),
        ".ipynb_checkpoints/notes-checkpoint.ipynb": "{}\n",
    },
    "a hidden directory at the repository root is polled as a model; with the default "
    "--exit-on-error=true the whole server exits",
    "failed to load all models",
)
"""Needs a whole-repository start in the default model-control mode (its own server run).

The server apparently reads '.ipynb_checkpoints' as a name of the form 'model.<backend>'
(backend 'ipynb_checkpoints'): it passes the backend check that an empty visible directory
fails, and fails on its missing versions instead.
"""

RATE_LIMITED_TWICE = """\
instance_group [
  {
    kind: KIND_CPU
    count: 1
    rate_limiter { resources [ { name: "R" global: true count: 1 }, { name: "R" count: 1 } ] }
  }
]"""

DIFFERENT_WORDS: list[Case] = [
    variant(
        "label_outside",
        "label_filename '../x.txt' pointing outside the model directory (and missing)",
        "failed to open text file for read",
        outputs=io("output", f'{LABELLED}"../x.txt"'),
    ),
    variant(
        "metrics_no_family",
        "model_metrics metric_control with an empty family (a field newer than 2.51)",
        'Message type "inference.ModelConfig" has no field named "model_metrics"',
        extra='model_metrics { metric_control [ { metric_identifier { family: "" } } ] }',
    ),
    variant(
        "batch_input_unknown_kind",
        "batch_input kind given as the number 99",
        "attempt to access JSON non-string as string",
        extra='batch_input [ { kind: 99 target_name: "B" data_type: TYPE_FP32 '
        'source_input: [ "INPUT0" ] } ]',
    ),
]
"""Refused by both, but in other words; triton-doctor quotes current Triton:

* label_outside: 2.51 only fails to open the file; current Triton first checks that the label
  path stays inside the model directory (model.cc).
* metrics_no_family: 2.51 has no model_metrics field, so its config does not even parse;
  current Triton validates the metric control.
* batch_input_unknown_kind: with auto-complete on, 2.51 trips over its own JSON handling; with
  --disable-auto-complete-config it says core's "unknown batch input kind ''", which
  triton-doctor quotes.
"""

ACCEPTED_SILENTLY: list[Case] = [
    # Suggested as broken, but 2.51.0 loads them READY without a word in the log. Kept as
    # facts: a linter may warn about them, but must not claim the server refuses them.
    from_fixture(
        "TD243",
        "preprocess",
        "model_warmup sample without batch_size (0): skipped, logged only at --log-verbose=1",
        "",
    ),
    variant(
        "warmup_extra_key",
        "model_warmup feeding INPUT0 and INPUT9, which is no input (passed on as an extra)",
        "",
        extra='model_warmup [ { name: "warm" batch_size: 1 '
        'inputs { key: "INPUT0" value { data_type: TYPE_FP32 dims: [ 4 ] zero_data: true } } '
        'inputs { key: "INPUT9" value { data_type: TYPE_FP32 dims: [ 4 ] zero_data: true } } } ]',
    ),
    variant(
        "platform_ort_backend_python",
        "platform onnxruntime_onnx together with backend python (runs as python)",
        "",
        header='platform: "onnxruntime_onnx"\nbackend: "python"',
    ),
    variant(
        "rate_limiter_global_and_device",
        "a rate-limiter resource declared both global and per-device (--rate-limit=off)",
        "",
        instances=RATE_LIMITED_TWICE,
    ),
    from_fixture(
        "TD226", "postprocess", "dynamic_batching on a model with max_batch_size 0", ""
    ),
    variant(
        "duplicate_output",
        "two outputs with the same name",
        "",
        outputs='output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] }, '
        '{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]',
    ),
    variant(
        "instance_count_zero",
        "instance_group count 0 (one instance is created anyway)",
        "",
        instances="instance_group [ { kind: KIND_CPU count: 0 } ]",
    ),
    variant(
        "ragged_nonbatching",
        "allow_ragged_batch on a model with max_batch_size 0",
        "",
        max_batch_size="0",
        inputs=io(
            "input", 'name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] allow_ragged_batch: true'
        ),
    ),
    variant(
        "oldest_zero_candidates",
        "sequence_batching oldest with max_candidate_sequences 0",
        "",
        extra="sequence_batching { oldest { max_candidate_sequences: 0 } }",
    ),
]

CRASHES_SERVER: list[Case] = [
    Case(
        "python_model_file_missing",
        {
            "python_model_file_missing/config.pbtxt": config("python_model_file_missing"),
            "python_model_file_missing/1/model.py.bak": MODEL_PY,
        },
        "a Python model whose version holds model.py.bak, not model.py (the load hangs)",
        "Failed to preinitialize Python stub: Python model file not found in '",
    ),
    variant(
        "state_two_initial",
        "a sequence state with two initial_state entries",
        "initial_state field for state input 'STATE_IN' must contain exactly one or zero element. "
        "Found '2' elements.",
        extra=sequence_state(ZERO_INIT, ZERO_INIT.replace('"zeros"', '"zeros2"')),
    ),
    variant(
        "state_initial_dtype",
        "initial_state data_type differs from the state's",
        "The data type used for 'initial_state' field of state 'STATE_IN' does not match the "
        "state data type.",
        extra=sequence_state(ZERO_INIT.replace("TYPE_FP32", "TYPE_INT32")),
    ),
    variant(
        "state_initial_no_name",
        "initial_state without a name",
        "Field 'name' must be set when using initial_state for state input 'STATE_IN'.",
        extra=sequence_state(ZERO_INIT.replace('name: "zeros" ', "")),
    ),
    variant(
        "state_initial_rank",
        "initial_state with 2 dims for a state of 1 dim",
        "Number of dimensions in 'initial_state' doesn't match the size of 'state' dimensions for "
        "state input 'STATE_IN'. 2 != 1",
        extra=sequence_state(ZERO_INIT.replace("[ 4 ]", "[ 2, 2 ]")),
    ),
    variant(
        "state_initial_variable",
        "initial_state with a -1 dim (state dims [ -1 ])",
        "'initial_state' field for state input name 'STATE_IN' contains variable dimensions.",
        extra=sequence_state(ZERO_INIT.replace("[ 4 ]", "[ -1 ]"), dims="[ -1 ]"),
    ),
    variant(
        "state_initial_dim_mismatch",
        "initial_state dims [ 5 ] for a state of dims [ 4 ]",
        "'initial_state' dim for input name 'STATE_IN' doesn't match 'state' dim description. 5 "
        "!= 4",
        extra=sequence_state(ZERO_INIT.replace("[ 4 ]", "[ 5 ]")),
    ),
    variant(
        "state_initial_no_source",
        "initial_state with neither zero_data nor data_file",
        "initial_state setting expects state'STATE_IN' to have state_data set",
        extra=sequence_state(ZERO_INIT.replace(" zero_data: true", "")),
    ),
    variant(
        "state_initial_file_missing",
        "initial_state data_file that is not in initial_state/",
        "initial_state/init.bin: No such file or directory",
        extra=sequence_state(ZERO_INIT.replace("zero_data: true", 'data_file: "init.bin"')),
    ),
    Case(
        "state_initial_file_short",
        {
            **python_model(
                "state_initial_file_short",
                config(
                    "state_initial_file_short",
                    extra=sequence_state(
                        ZERO_INIT.replace("zero_data: true", 'data_file: "init.bin"')
                    ),
                ),
            ),
            "state_initial_file_short/initial_state/init.bin": "abcd",
        },
        "initial_state data_file of 4 bytes for a state of 16 bytes",
        "initial_state setting expects 16 bytes, but the data provided from init.binonly has 4 "
        "bytes.",
    ),
    variant(
        "state_name_twice",
        "two sequence states with the same input_name",
        "State input name 'STATE_IN' specified more than once.",
        extra=sequence_state(ZERO_INIT, states=2),
    ),
    variant(
        "warmup_batch_too_big",
        "model_warmup batch_size 16 on a model with max_batch_size 8",
        "failed to run warmup sample 'warm': batch size 16 for 'warmup_batch_too_big_0_0', max "
        "allowed is 8",
        extra=warmup(
            'key: "INPUT0" value { data_type: TYPE_FP32 dims: [ 4 ] zero_data: true }',
            batch_size=16,
        ),
    ),
]
"""Refused, but NOT loaded by the tests: loading them can crash 2.51 (SIGSEGV), and with it
every other case, or hang it. ``expect`` is what the server said in runs it survived (in the
load answer, after ``Invalid argument: `` or ``Internal: ``), or logged while it hung.

* ``python_model_file_missing`` (TD108): the load never answers and the model stays LOADING
  until the server is killed; the stub logs ``Failed to preinitialize Python stub: Python
  model file not found in '<model dir>/1/model.py'`` (``ModelContext::Init`` in the Python
  backend's ``src/pb_stub.cc``, the path as ``StubLauncher::Initialize`` forms it: the model
  directory, the version printed unsigned, ``default_model_filename`` or ``model.py``).

* ``state_*`` (TD244): 2.51 checks ``sequence_batching.state`` when it creates the sequence
  batcher, after the model's instances exist; the failure tears the half-built model down
  (``TritonModel::~TritonModel`` -> ``ClearBackgroundInstances`` -> ``~TritonModelInstance``
  -> ``TritonBackendThread::StopBackendThread``), which now and then crashes before the
  reason is logged: in 1 of 50 one-model runs, 1 of 7 runs loading the ten one at a time,
  2 of 3 runs loading them 8 at a time, and both runs loading 16 or 24 copies of one of them
  8 at a time. The same state with a valid ``initial_state`` loads READY
  (``good_sequence_state*``); TRITON_BATCH_STRATEGY_PATH with a sequence batcher
  (``td245_tracker``), also refused after the instances exist, never crashed it (64 loads of
  an inline equivalent, 8 at a time).
* ``warmup_batch_too_big`` (TD247): the warmup requests are really sent and refused, and the
  instance torn down after them (``ConstructAndInitializeInstance`` -> ``~TritonModelInstance``
  -> ``StopBackendThread``) often crashes: in 5 of 12 runs of this module, and in both runs
  loading 8 copies one at a time, within the first three. The other warmup failures are
  found before any request is sent, and never crashed it (60 loads, 8 at a time).
"""


# --- model.py's auto_complete_config (TD309), tensor names (TD310), auto-completed steps ---


def auto_complete_py(body: str, execute: str = MODEL_PY) -> str:
    """``execute``'s model.py with a static ``auto_complete_config(config)`` running ``body``.

    ``body`` is written at the function's indentation (8 spaces are added to each line).
    """
    indented = "".join(f"        {line}\n" if line else "\n" for line in body.splitlines())
    method = f"\n    @staticmethod\n    def auto_complete_config(config):\n{indented}"
    return execute + method


FILL_IO = """\
config.add_input({"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [4]})
config.add_output({"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [4]})
return config"""


def auto_complete_model(
    name: str, body: str, config_text: str | None, execute: str = MODEL_PY
) -> dict[str, str]:
    """A Python model whose ``1/model.py`` has ``auto_complete_config`` (``body``)."""
    files = {f"{name}/1/model.py": auto_complete_py(body, execute)}
    if config_text is not None:
        files[f"{name}/config.pbtxt"] = config_text
    return files


def refused_by_auto_complete(name: str, what: str, expect: str, body: str, **parts: str) -> Case:
    """A Python model whose ``auto_complete_config`` (``body``) contradicts its config."""
    return Case(name, auto_complete_model(name, body, config(name, **parts)), what, expect)


NO_IO = {"inputs": "", "outputs": ""}

AUTO_COMPLETE_REFUSED: list[Case] = [
    refused_by_auto_complete(
        "ac_mbs_lower",
        "auto_complete_config sets max_batch_size 4 below config.pbtxt's 8",
        "configuration specified max_batch_size 8, but in auto-complete-config "
        "function for model 'ac_mbs_lower' specified max_batch_size 4",
        "config.set_max_batch_size(4)\nreturn config",
    ),
    refused_by_auto_complete(
        "ac_dynamic_with_sequence",
        "auto_complete_config sets dynamic batching on a sequence-batched model",
        "Configuration specified scheduling_choice as 'sequence_batching', but "
        "auto-complete-config function for model 'ac_dynamic_with_sequence' tries to "
        "set scheduling_choice as 'dynamic_batching'",
        "config.set_dynamic_batching()\nreturn config",
        extra="sequence_batching { }",
    ),
    refused_by_auto_complete(
        "ac_input_dtype",
        "auto_complete_config adds INPUT0 as TYPE_INT32, config.pbtxt has TYPE_FP32",
        "unable to load model 'ac_input_dtype', configuration expects datatype "
        "TYPE_FP32 for input 'INPUT0', model provides TYPE_INT32",
        'config.add_input({"name": "INPUT0", "data_type": "TYPE_INT32", "dims": [4]})\n'
        "return config",
    ),
    refused_by_auto_complete(
        "ac_output_dims",
        "auto_complete_config adds OUTPUT0 with dims [16], config.pbtxt has [ 4 ]",
        "model 'ac_output_dims', tensor 'OUTPUT0': the model expects dims [16] but "
        "the model configuration specifies dims [4]",
        'config.add_output({"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [16]})\n'
        "return config",
    ),
    refused_by_auto_complete(
        "ac_input_optional",
        "auto_complete_config adds INPUT0 optional, config.pbtxt's INPUT0 is not",
        "model 'ac_input_optional', tensor 'INPUT0': the model expects optional True "
        "but the model configuration specifies optional False",
        'config.add_input({"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [4], '
        '"optional": True})\nreturn config',
    ),
    refused_by_auto_complete(
        "ac_input_no_name",
        "auto_complete_config adds an input without a name",
        "input in auto-complete-config function for model 'ac_input_no_name' is "
        "missing 'name' property.",
        'config.add_input({"data_type": "TYPE_FP32", "dims": [4]})\nreturn config',
    ),
    refused_by_auto_complete(
        "ac_input_no_dtype",
        "auto_complete_config adds an input without data_type",
        "input 'INPUT1' in auto-complete-config function for model "
        "'ac_input_no_dtype' is missing 'data_type' property.",
        'config.add_input({"name": "INPUT1", "dims": [4]})\nreturn config',
    ),
    refused_by_auto_complete(
        "ac_output_no_dims",
        "auto_complete_config adds an output without dims",
        "output 'OUTPUT1' in auto-complete-config function for model "
        "'ac_output_no_dims' is missing 'dims' property.",
        'config.add_output(dict(name="OUTPUT1", data_type="TYPE_FP32"))\nreturn config',
    ),
    refused_by_auto_complete(
        "ac_input_bad_property",
        "auto_complete_config adds an input with a 'format' property",
        "input 'INPUT0' in auto-complete-config function for model "
        "'ac_input_bad_property' contains property other than 'name', 'data_type', "
        "'dims' and 'optional'.",
        'config.add_input({"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [4], '
        '"format": "FORMAT_NONE"})\nreturn config',
    ),
    refused_by_auto_complete(
        "ac_output_optional",
        "auto_complete_config adds an output with 'optional' (inputs only)",
        "output 'OUTPUT0' in auto-complete-config function for model "
        "'ac_output_optional' contains property other than 'name', 'data_type' and "
        "'dims'.",
        'config.add_output({"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [4], '
        '"optional": False})\nreturn config',
    ),
    refused_by_auto_complete(
        "ac_policy_bad_key",
        "set_model_transaction_policy with a key other than 'decoupled'",
        "model transaction property in auto-complete-config function for model "
        "'ac_policy_bad_key' contains property other than 'decoupled'.",
        "config.set_model_transaction_policy(dict(decoupled=False, sequence=True))\nreturn config",
    ),
    refused_by_auto_complete(
        "ac_decoupled_mismatch",
        "auto_complete_config sets decoupled False, config.pbtxt says decoupled: true",
        "trying to change decoupled property in auto-complete-config for model "
        "'ac_decoupled_mismatch', which is already set to 'True'.",
        'config.set_model_transaction_policy({"decoupled": False})\nreturn config',
        extra="model_transaction_policy { decoupled: true }",
    ),
    refused_by_auto_complete(
        "ac_decoupled_empty_policy",
        "auto_complete_config sets decoupled True, config.pbtxt has an empty "
        "model_transaction_policy",
        "trying to change decoupled property in auto-complete-config for model "
        "'ac_decoupled_empty_policy', which is already set to 'False'.",
        'config.set_model_transaction_policy({"decoupled": True})\nreturn config',
        extra="model_transaction_policy { }",
    ),
    refused_by_auto_complete(
        "ac_no_return",
        "auto_complete_config does not return the config",
        "auto_complete_config function in model 'ac_no_return' must return a valid "
        "pb.ModelConfig object.",
        FILL_IO.replace("\nreturn config", ""),
        **NO_IO,
    ),
    Case(
        "py_syntax_error",
        {
            "py_syntax_error/config.pbtxt": config("py_syntax_error"),
            "py_syntax_error/1/model.py": MODEL_PY.replace("def execute(self, requests):",
                                                           "def execute(self, requests)"),
        },
        "model.py does not parse (a colon missing after def execute(...))",
        "SyntaxError: expected ':' (model.py, line 8)",
    ),
    refused_by_auto_complete(
        "ac_extra_no_name",
        "auto_complete_config adds an input without a name and with an unknown property ('shape')",
        "Internal: KeyError: 'name'",
        'config.add_input({"data_type": "TYPE_FP32", "dims": [4], "shape": [4]})\nreturn config',
    ),
]

LOOPED = """\
inputs = [dict(name="INPUT0", data_type="TYPE_FP32", dims=[4])]
outputs = [{"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [4]}]
for tensor in inputs:
    config.add_input(tensor)
for tensor in outputs:
    config.add_output(tensor)
config.set_max_batch_size(8)
config.set_dynamic_batching()
return config"""

BRANCHED = """\
declared = config.as_dict()
names = [tensor["name"] for tensor in declared["input"]]
inputs = [{"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [-1]}]
outputs = [{"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [4]}]
for tensor in inputs:
    if tensor["name"] not in names:
        config.add_input(tensor)
if not declared["output"]:
    config.add_output(outputs[0])
if declared["max_batch_size"] == 0:
    config.set_max_batch_size(2)
names.append("unused")
return config"""
"""The Python backend's README pattern: add only what the config lacks. Its INPUT0 dims
([-1]) differ from config.pbtxt's ([ 4 ]), but that add_input is never reached."""

AUTO_COMPLETE_GOOD: list[Case] = [
    Case(
        "ac_good_fill_io",
        auto_complete_model(
            "ac_good_fill_io",
            FILL_IO.replace("return", "config.set_dynamic_batching()\nreturn"),
            config("ac_good_fill_io", **NO_IO),
        ),
    ),
    Case("ac_good_no_config", auto_complete_model("ac_good_no_config", LOOPED, None)),
    Case(
        "ac_good_same_io",
        auto_complete_model(
            "ac_good_same_io",
            FILL_IO.replace("return", "config.set_max_batch_size(8)\nreturn"),
            config("ac_good_same_io", max_batch_size="4"),
        ),
    ),
    Case(
        "ac_good_branches",
        auto_complete_model("ac_good_branches", BRANCHED, config("ac_good_branches", outputs="")),
    ),
    Case(
        "ac_good_decoupled_fill",
        auto_complete_model(
            "ac_good_decoupled_fill",
            "config.set_model_transaction_policy(dict(decoupled=False))\nreturn config",
            config("ac_good_decoupled_fill"),
        ),
    ),
    Case(
        "good_ensemble_auto",
        {
            "good_ensemble_auto/config.pbtxt": ensemble_config(
                "good_ensemble_auto", "good_ensemble_auto_step", "good_ensemble_auto_step"
            ),
            "good_ensemble_auto/1/": "",
            **auto_complete_model(
                "good_ensemble_auto_step", FILL_IO, config("good_ensemble_auto_step", **NO_IO)
            ),
        },
        extra_models=("good_ensemble_auto_step",),
    ),
    Case(
        "good_ensemble_auto_nocfg",
        {
            "good_ensemble_auto_nocfg/config.pbtxt": ensemble_config(
                "good_ensemble_auto_nocfg", "good_ensemble_auto_nocfg_step", "good_plain"
            ),
            "good_ensemble_auto_nocfg/1/": "",
            **auto_complete_model(
                "good_ensemble_auto_nocfg_step",
                FILL_IO.replace("return", "config.set_max_batch_size(8)\nreturn"),
                None,
            ),
        },
        extra_models=("good_ensemble_auto_nocfg_step",),
    ),
]

INT32_IO = FILL_IO.replace("TYPE_FP32", "TYPE_INT32", 1)

AUTO_COMPLETED_ENSEMBLES: list[Case] = [
    Case(
        "ensemble_auto_dtype",
        {
            "ensemble_auto_dtype/config.pbtxt": ensemble_config(
                "ensemble_auto_dtype", "ensemble_auto_dtype_step", "good_plain"
            ),
            "ensemble_auto_dtype/1/": "",
            **auto_complete_model(
                "ensemble_auto_dtype_step", INT32_IO, config("ensemble_auto_dtype_step", **NO_IO)
            ),
        },
        "the step's auto_complete_config declares INPUT0 TYPE_INT32; the ensemble feeds FP32",
        "in ensemble ensemble_auto_dtype, ensemble tensor IN: inconsistent data type: "
        "TYPE_FP32 is inferred from model ensemble_auto_dtype while TYPE_INT32 is "
        "inferred from model ensemble_auto_dtype_step",
    ),
    Case(
        "ensemble_auto_nocfg_dtype",
        {
            "ensemble_auto_nocfg_dtype/config.pbtxt": ensemble_config(
                "ensemble_auto_nocfg_dtype", "ensemble_auto_nocfg_dtype_step", "good_plain"
            ),
            "ensemble_auto_nocfg_dtype/1/": "",
            **auto_complete_model(
                "ensemble_auto_nocfg_dtype_step",
                INT32_IO.replace("return", "config.set_max_batch_size(8)\nreturn"),
                None,
            ),
        },
        "a step without config.pbtxt whose auto_complete_config declares INPUT0 TYPE_INT32",
        "in ensemble ensemble_auto_nocfg_dtype, ensemble tensor IN: inconsistent data "
        "type: TYPE_FP32 is inferred from model ensemble_auto_nocfg_dtype while "
        "TYPE_INT32 is inferred from model ensemble_auto_nocfg_dtype_step",
    ),
]

UNKNOWN_OUTPUT_PY = MODEL_PY.replace('Tensor("OUTPUT0"', 'Tensor("OUTPUT1"')


@dataclass(frozen=True)
class InferenceProbe:
    """A model the server loads READY, then one inference request: INPUT0, FP32 [ 1, 4 ]."""

    case: Case
    error: str = ""
    """Fragment of the request's error; empty when the request must succeed."""
    outputs: tuple[str, ...] = ("OUTPUT0",)
    """The outputs a successful answer carries."""
    warns: bool = False
    """Whether triton-doctor must warn TD310 (python-tensor-name-unknown) for it."""


TENSOR_NAME_PROBES: list[InferenceProbe] = [
    InferenceProbe(
        from_fixture(
            "TD310",
            "postprocess",
            "model.py reads input 'input0' and returns 'output0'; the config's are INPUT0, OUTPUT0",
            "",
        ),
        error="AttributeError: 'NoneType' object has no attribute 'as_numpy'",
        warns=True,
    ),
    InferenceProbe(
        Case(
            "names_output_unknown",
            {
                "names_output_unknown/1/model.py": UNKNOWN_OUTPUT_PY,
                "names_output_unknown/config.pbtxt": config("names_output_unknown"),
            },
            "model.py returns output 'OUTPUT1'; the config's output is OUTPUT0",
        ),
        outputs=(),
        warns=True,
    ),
    InferenceProbe(Case("names_known", python_model("names_known", config("names_known")))),
]
"""TD310: an unknown tensor name does not stop the model from loading. The request to a model
that reads an unknown input fails; a tensor returned under an unknown output name is dropped
without a word, and the answer (HTTP 200) has no outputs at all."""

DISAGREEMENTS: dict[str, str] = {}
"""Cases where triton-doctor does not (yet) agree with the server: strict xfail, so a fix
shows up as XPASS and the entry must then go."""


def config_case(name: str, **parts: str) -> Case:
    """A good Python model for the effective-config comparison (``parts`` as in config())."""
    return Case(name, python_model(name, config(name, **parts)))


EFFECTIVE_CONFIG_CASES: list[Case] = [
    config_case("cfg_plain"),
    Case("cfg_no_config", auto_complete_model("cfg_no_config", LOOPED, None)),
    Case("cfg_no_config_bare", python_model("cfg_no_config_bare", None)),
    Case(
        "cfg_fill_io",
        auto_complete_model(
            "cfg_fill_io",
            FILL_IO.replace(
                "return", "config.set_max_batch_size(8)\nconfig.set_dynamic_batching()\nreturn"
            ),
            config("cfg_fill_io", max_batch_size="0", **NO_IO),
        ),
    ),
    Case(
        "cfg_branches",
        auto_complete_model("cfg_branches", BRANCHED, config("cfg_branches", outputs="")),
    ),
    Case(
        "cfg_decoupled",
        auto_complete_model(
            "cfg_decoupled",
            "config.set_model_transaction_policy(dict(decoupled=False))\nreturn config",
            config("cfg_decoupled", instances=""),
        ),
    ),
    config_case(
        "cfg_groups", instances="instance_group [ { kind: KIND_CPU count: 2 }, { count: 0 } ]"
    ),
    config_case("cfg_no_groups", max_batch_size="0", instances=""),
    config_case("cfg_sequence", extra="sequence_batching { }"),
    config_case("cfg_oldest", extra="sequence_batching { oldest { } }"),
    config_case("cfg_dynamic", extra="dynamic_batching { }"),
    Case(
        "cfg_ensemble",
        {
            "cfg_ensemble/config.pbtxt": ensemble_config(
                "cfg_ensemble", "cfg_plain", "cfg_fill_io"
            ),
            "cfg_ensemble/1/": "",
        },
    ),
]
"""Good models whose configuration as served (``GET /v2/models/<m>/config``, CPU only) is
compared with ``triton-doctor config MODEL_DIR --gpus 0``."""


# --- Ensemble tensors across steps (TD415-TD417): core's ValidateEnsembleConfig, at load time,
# in the load answer ---


def from_fixture_repository(rule_id: str, model: str, what: str, expect: str) -> Case:
    """Model ``model`` of fixtures/rules/<rule_id>/fail/ with the other models there (an
    ensemble's steps), each renamed ``<rule_id>_<directory>``, the steps' model_name with it."""
    source = FIXTURES / rule_id / "fail"
    names = {d.name: f"{rule_id.lower()}_{d.name}" for d in sorted(source.iterdir()) if d.is_dir()}
    files: dict[str, str] = {}
    for old, new in names.items():
        for path in sorted((source / old).rglob("*")):
            if path.is_file():
                text = path.read_text(encoding="utf-8")
                if path.name == "config.pbtxt":
                    for before, after in names.items():
                        text = re.sub(f'^name: "{before}"$', f'name: "{after}"', text,
                                      flags=re.MULTILINE)
                        text = text.replace(f'model_name: "{before}"', f'model_name: "{after}"')
                files[f"{new}/{path.relative_to(source / old).as_posix()}"] = text
    name = names[model]
    others = tuple(sorted(set(names.values()) - {name}))
    return Case(name, files, what, expect, extra_models=others)


def one_tensor_step(
    name: str, dims: str, *, max_batch_size: str = "8", extra: str = ""
) -> dict[str, str]:
    """A Python model like good_plain whose INPUT0 and OUTPUT0 have ``dims``."""
    tensor = f"data_type: TYPE_FP32 dims: {dims}"
    text = config(
        name,
        max_batch_size=max_batch_size,
        inputs=io("input", f'name: "INPUT0" {tensor}'),
        outputs=io("output", f'name: "OUTPUT0" {tensor}'),
        extra=extra,
    )
    return python_model(name, text)


def ensemble_tensors_case(
    name: str, what: str, expect: str, steps: tuple[str, str],
    *edits: tuple[str, str], models: Mapping[str, str] | None = None,
) -> Case:
    """An ensemble IN → ``steps[0]`` → MID → ``steps[1]`` → OUT (``ensemble_config``) with
    ``edits`` applied (each old text must be there), plus the step models' ``models`` files."""
    text = ensemble_config(name, *steps)
    for old, new in edits:
        assert old in text, f"{name}: {old!r} not in the ensemble's config"
        text = text.replace(old, new, 1)
    files = {f"{name}/config.pbtxt": text, f"{name}/1/": "", **(models or {})}
    extra = tuple(sorted({path.split("/")[0] for path in models or {}}))
    return Case(name, files, what, expect, extra_models=extra)


ENSEMBLE_IN = 'name: "IN" data_type: TYPE_FP32 dims: [ 4 ] }'
ENSEMBLE_OUT = 'name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] }'
UNBATCHED = ("max_batch_size: 8", "max_batch_size: 0")
DECOUPLED = "model_transaction_policy { decoupled: true }"

DUPLICATE_OUTPUT = (
    'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] },\n'
    '         { name: "OUTPUT0" data_type: TYPE_%s dims: [ 4 ] } ]'
)

ENSEMBLE_TENSORS_REFUSED: list[Case] = [
    ensemble_tensors_case(
        "ensemble_step_output_twice",
        "the first step declares OUTPUT0 twice, alike: both are mapped to MID",
        "in ensemble ensemble_step_output_twice, multiple outputs in model "
        "ensemble_step_output_twice_step are mapped to the same ensemble tensor MID",
        ("ensemble_step_output_twice_step", "good_plain"),
        models=python_model("ensemble_step_output_twice_step",
                            config("ensemble_step_output_twice_step",
                                   outputs=DUPLICATE_OUTPUT % "FP32")),
    ),
    ensemble_tensors_case(
        "ensemble_step_output_twice_types",
        "the first step declares OUTPUT0 twice, as FP32 then BOOL: the second contradicts the "
        "first",
        "in ensemble ensemble_step_output_twice_types, ensemble tensor MID: inconsistent data "
        "type: TYPE_FP32 is inferred from model ensemble_step_output_twice_types_step while "
        "TYPE_BOOL is inferred from model ensemble_step_output_twice_types_step",
        ("ensemble_step_output_twice_types_step", "good_plain"),
        models=python_model("ensemble_step_output_twice_types_step",
                            config("ensemble_step_output_twice_types_step",
                                   outputs=DUPLICATE_OUTPUT % "BOOL")),
    ),
    ensemble_tensors_case(
        "ensemble_step_no_inputs",
        "the first step's config lists no inputs and its model.py adds none: IN maps to "
        "nothing",
        "in ensemble ensemble_step_no_inputs, ensemble tensor IN is mapping to non-existing "
        "input INPUT0 in model ensemble_step_no_inputs_step",
        ("ensemble_step_no_inputs_step", "good_plain"),
        models=python_model("ensemble_step_no_inputs_step",
                            config("ensemble_step_no_inputs_step", inputs="")),
    ),
    ensemble_tensors_case(
        "ensemble_step_no_outputs",
        "the second step's config lists no outputs and its model.py adds none: OUT comes "
        "from nothing",
        "in ensemble ensemble_step_no_outputs, ensemble tensor OUT is mapped from non-existing "
        "output OUTPUT0 in model ensemble_step_no_outputs_step",
        ("good_plain", "ensemble_step_no_outputs_step"),
        models=python_model("ensemble_step_no_outputs_step",
                            config("ensemble_step_no_outputs_step", outputs="")),
    ),
    ensemble_tensors_case(
        "ensemble_shape_mid",
        "good_plain writes MID as [4]; the next step reads INPUT0 as [7, 1]",
        "in ensemble ensemble_shape_mid, ensemble tensor MID: inconsistent shape: [-1,4] is "
        "inferred from model good_plain while [-1,7,1] is inferred from model "
        "ensemble_shape_mid_step",
        ("good_plain", "ensemble_shape_mid_step"),
        (ENSEMBLE_OUT, 'name: "OUT" data_type: TYPE_FP32 dims: [ 7, 1 ] }'),
        models=one_tensor_step("ensemble_shape_mid_step", "[ 7, 1 ]"),
    ),
    ensemble_tensors_case(
        "ensemble_shape_output",
        "the ensemble output OUT is [5]; the step writes [4] (outputs are compared first)",
        "in ensemble ensemble_shape_output, ensemble tensor OUT: inconsistent shape: [-1,5] is "
        "inferred from model ensemble_shape_output while [-1,4] is inferred from model good_plain",
        ("good_plain", "good_plain"),
        (ENSEMBLE_OUT, 'name: "OUT" data_type: TYPE_FP32 dims: [ 5 ] }'),
    ),
    ensemble_tensors_case(
        "ensemble_shape_reshape",
        "the ensemble input IN is [4] reshaped to [2, 2]: the reshape is what the steps see",
        "in ensemble ensemble_shape_reshape, ensemble tensor IN: inconsistent shape: [-1,2,2] "
        "is inferred from model ensemble_shape_reshape while [-1,4] is inferred from model "
        "good_plain",
        ("good_plain", "good_plain"),
        (ENSEMBLE_IN, 'name: "IN" data_type: TYPE_FP32 dims: [ 4 ] reshape { shape: [ 2, 2 ] } }'),
    ),
    ensemble_tensors_case(
        "ensemble_shape_unbatched",
        "a non-batching ensemble's IN is [5]; the batching step's INPUT0 is [-1, 4]",
        "in ensemble ensemble_shape_unbatched, ensemble tensor IN: inconsistent shape: [5] is "
        "inferred from model ensemble_shape_unbatched while [-1,4] is inferred from model "
        "good_plain",
        ("good_plain", "good_plain"),
        UNBATCHED,
        (ENSEMBLE_IN, 'name: "IN" data_type: TYPE_FP32 dims: [ 5 ] }'),
    ),
    ensemble_tensors_case(
        "ensemble_shape_auto",
        "the step's auto_complete_config declares INPUT0 as [7]; the ensemble feeds [4]",
        "in ensemble ensemble_shape_auto, ensemble tensor IN: inconsistent shape: [-1,4] is "
        "inferred from model ensemble_shape_auto while [-1,7] is inferred from model "
        "ensemble_shape_auto_step",
        ("ensemble_shape_auto_step", "good_plain"),
        models=auto_complete_model(
            "ensemble_shape_auto_step",
            FILL_IO.replace("[4]", "[7]"),
            config("ensemble_shape_auto_step", **NO_IO),
        ),
    ),
    ensemble_tensors_case(
        "ensemble_dtype_output",
        "the ensemble output OUT is TYPE_INT32 and [9]; the step writes TYPE_FP32 [4]: the data "
        "type is checked first, and against the ensemble's declaration",
        "in ensemble ensemble_dtype_output, ensemble tensor OUT: inconsistent data type: "
        "TYPE_INT32 is inferred from model ensemble_dtype_output while TYPE_FP32 is inferred "
        "from model good_plain",
        ("good_plain", "good_plain"),
        (ENSEMBLE_OUT, 'name: "OUT" data_type: TYPE_INT32 dims: [ 9 ] }'),
    ),
    ensemble_tensors_case(
        "ensemble_versions_missing",
        "two steps pin versions 3 and 2 of good_plain, which has only 1/: the highest is named",
        "ensemble 'ensemble_versions_missing' depends on 'good_plain' whose required version 3 "
        "is not loaded.",
        ("good_plain", "good_plain"),
        ("model_version: -1", "model_version: 3"),
        ("model_version: -1", "model_version: 2"),
    ),
    from_fixture_repository(
        "TD417",
        "llm",
        "a step reads the decoupled step's TOKENS and the ensemble input PROMPT",
        "in ensemble td417_llm, step of model 'td417_llm' receives inputs originated from "
        "different decoupled models",
    ),
    ensemble_tensors_case(
        "ensemble_decoupled_outputs",
        "one ensemble output comes out of a decoupled step, the other from IN through "
        "good_plain",
        "in ensemble ensemble_decoupled_outputs, step of model 'ensemble_decoupled_outputs' "
        "receives inputs originated from different decoupled models",
        ("ensemble_decoupled_outputs_step", "good_plain"),
        ('output [ { name: "OUT"', 'output [ { name: "MID" data_type: TYPE_FP32 dims: [ 4 ] }, '
         '{ name: "OUT"'),
        ('input_map { key: "INPUT0" value: "MID" }', 'input_map { key: "INPUT0" value: "IN" }'),
        models=one_tensor_step("ensemble_decoupled_outputs_step", "[ 4 ]", extra=DECOUPLED),
    ),
]

INHERITED_AUTO_COMPLETE = MODEL_PY.replace(
    "class TritonPythonModel:",
    "class Declares:\n    @staticmethod\n    def auto_complete_config(config):\n"
    + "".join(f"        {line}\n" for line in FILL_IO.splitlines())
    + "\n\nclass TritonPythonModel(Declares):",
)
COMPUTED_OUTPUT = """\
for name in EXTRA:
    config.add_output({"name": name, "data_type": "TYPE_FP32", "dims": [4]})
return config"""

ENSEMBLE_TENSORS_GOOD: list[Case] = [
    ensemble_tensors_case(
        "good_ensemble_inherited_io",
        "", "",
        ("good_ensemble_inherited_io_step", "good_plain"),
        models={
            "good_ensemble_inherited_io_step/config.pbtxt":
                config("good_ensemble_inherited_io_step", **NO_IO),
            "good_ensemble_inherited_io_step/1/model.py": INHERITED_AUTO_COMPLETE,
        },
    ),
    ensemble_tensors_case(
        "good_ensemble_computed_output",
        "", "",
        ("good_ensemble_computed_output_step", "good_plain"),
        ('output_map { key: "OUTPUT0" value: "MID" }',
         'output_map { key: "OUTPUT1" value: "MID" }'),
        models={
            "good_ensemble_computed_output_step/config.pbtxt":
                config("good_ensemble_computed_output_step"),
            "good_ensemble_computed_output_step/1/model.py":
                'EXTRA = ["OUTPUT1"]\n' + auto_complete_py(COMPUTED_OUTPUT),
        },
    ),
    ensemble_tensors_case(
        "good_ensemble_unbatched_steps",
        "", "",
        ("good_ensemble_unbatched_steps_step", "good_ensemble_unbatched_steps_step"),
        models=one_tensor_step(
            "good_ensemble_unbatched_steps_step", "[ 8, 4 ]", max_batch_size="0"
        ),
    ),
    ensemble_tensors_case(
        "good_ensemble_unbatched",
        "", "",
        ("good_plain", "good_plain"),
        UNBATCHED,
        (ENSEMBLE_IN, 'name: "IN" data_type: TYPE_FP32 dims: [ 3, 4 ] }'),
        (ENSEMBLE_OUT, 'name: "OUT" data_type: TYPE_FP32 dims: [ -1, 4 ] }'),
    ),
    ensemble_tensors_case(
        "good_ensemble_reshape",
        "", "",
        ("good_ensemble_reshape_step", "good_ensemble_reshape_step"),
        (ENSEMBLE_IN, 'name: "IN" data_type: TYPE_FP32 dims: [ 4 ] reshape { shape: [ 2, 2 ] } }'),
        (ENSEMBLE_OUT, 'name: "OUT" data_type: TYPE_FP32 dims: [ 2, 2 ] }'),
        models=one_tensor_step("good_ensemble_reshape_step", "[ 2, 2 ]"),
    ),
    ensemble_tensors_case(
        "good_ensemble_wildcard",
        "", "",
        ("good_plain", "good_plain"),
        (ENSEMBLE_IN, 'name: "IN" data_type: TYPE_FP32 dims: [ -1 ] }'),
    ),
    ensemble_tensors_case(
        "good_ensemble_decoupled",
        "", "",
        ("good_ensemble_decoupled_step", "good_plain"),
        models=one_tensor_step("good_ensemble_decoupled_step", "[ 4 ]", extra=DECOUPLED),
    ),
    ensemble_tensors_case(
        "good_ensemble_batching_computed",
        "", "",
        ("good_ensemble_batching_computed_step", "good_ensemble_batching_computed_step"),
        UNBATCHED,
        (ENSEMBLE_IN, 'name: "IN" data_type: TYPE_FP32 dims: [ -1, 4 ] }'),
        (ENSEMBLE_OUT, 'name: "OUT" data_type: TYPE_FP32 dims: [ -1, 4 ] }'),
        models=auto_complete_model(
            "good_ensemble_batching_computed_step",
            'config.set_max_batch_size(int("8"))\nreturn config',
            one_tensor_step("good_ensemble_batching_computed_step", "[ 4 ]", max_batch_size="0")[
                "good_ensemble_batching_computed_step/config.pbtxt"],
        ),
    ),
    ensemble_tensors_case(
        "good_ensemble_batching_conditional",
        "", "",
        ("good_ensemble_batching_conditional_step", "good_ensemble_batching_conditional_step"),
        models=auto_complete_model(
            "good_ensemble_batching_conditional_step",
            'if len("x") == 2:\n    config.set_max_batch_size(8)\n    config.set_dynamic_batching()'
            "\nreturn config",
            one_tensor_step("good_ensemble_batching_conditional_step", "[ -1, 4 ]",
                            max_batch_size="0")[
                "good_ensemble_batching_conditional_step/config.pbtxt"],
        ),
    ),
]
"""Loaded READY: a batching ensemble over non-batching steps of [8, 4] and a non-batching one
of [3, 4] over batching steps of [4] (shapes also match with the batch dimension in front, -1
matching 8 or 3), a reshaped input, a -1 dimension, a chain through a decoupled step, and
steps whose batching model.py decides at load: a computed set_max_batch_size (8: [-1, 4] fits
[4]) and one in a branch not taken ([-1, 4] unbatched fits the ensemble's batched [4])."""
