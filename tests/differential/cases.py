"""Model repositories for the differential tests, as data.

Each :class:`Case` is one model (plus, for an ensemble, the models it uses) written into a
shared repository at test time. Every model uses the Python backend, the only backend bundled
with the server we test against, so a refusal is about the configuration or the layout and
never about a missing backend.

``expect`` is a fragment of the reason the real server (2.51.0) gave when it refused the
case. The tests assert it first, so a server that changes its words (or starts accepting the
case) shows up as a failure of the oracle, not as a mysterious linter failure.

Never add a Python model without its ``model.py``: the server then hangs in LOADING forever.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

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


GOOD_CASES: list[Case] = [
    Case("good_plain", python_model("good_plain", config("good_plain"))),
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
]


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

SEQ_CONTROL_NO_VALUES = """\
sequence_batching {
  control_input [ { name: "START" control [ { kind: CONTROL_SEQUENCE_START } ] } ]
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
    variant(
        "wire_dtype",
        "wire dtype FP32 instead of the enum TYPE_FP32",
        'Unknown enumeration value of "FP32" for field "data_type"',
        inputs=io("input", 'name: "INPUT0" data_type: FP32 dims: [ 4 ]'),
    ),
    variant(
        "template_mbs",
        "unrendered template placeholder in max_batch_size",
        "Expected integer, got: $",
        max_batch_size="${mbs}",
    ),
    variant(
        "unknown_field",
        "misspelt field max_queue_delay_ms in dynamic_batching",
        'Message type "inference.ModelDynamicBatching" has no field named "max_queue_delay_ms"',
        extra="dynamic_batching { max_queue_delay_ms: 100 }",
    ),
    variant(
        "negative_mbs",
        "max_batch_size -1",
        "'max_batch_size' must be non-negative value",
        max_batch_size="-1",
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
    variant(
        "seq_control_no_values",
        "CONTROL_SEQUENCE_START without int32_false_true (or fp32/bool)",
        "sequence batching must specify either 'int32_false_true', 'fp32_false_true' or "
        "'bool_false_true' for CONTROL_SEQUENCE_START",
        extra=SEQ_CONTROL_NO_VALUES,
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
    variant(
        "cache_decoupled",
        "response_cache enabled on a decoupled model",
        "Response Cache does not currently support model cache_decoupled with 'decoupled' "
        "transaction policy. Please disable the response cache.",
        extra="response_cache { enable: true }\nmodel_transaction_policy { decoupled: true }",
    ),
    Case(
        "empty_directory",
        {"empty_directory/": ""},
        "a directory with no config and no files: the backend cannot be determined",
        "Could not determine backend for model 'empty_directory' with no backend in model "
        "configuration. Expected model name of the form 'model.<backend_name>'.",
    ),
    # Version layout: reported in the load answer.
    variant("no_version_dir", "no version directory at all", NO_VERSION, versions=()),
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

NEWER_WORDING: list[Case] = [
    variant(
        "label_outside",
        "label_filename '../x.txt' pointing outside the model directory (and missing)",
        "failed to open text file for read",
        outputs=io("output", f'{LABELLED}"../x.txt"'),
    ),
]
"""Refused by both, but in other words: 2.51 only fails to open the file, while current
Triton checks first that the label path stays inside the model directory (model.cc), and
triton-doctor quotes the current message."""

ACCEPTED_SILENTLY: list[Case] = [
    # Suggested as broken, but 2.51.0 loads them READY without a word in the log. Kept as
    # facts: a linter may warn about them, but must not claim the server refuses them.
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
    variant(
        "dynamic_batching_mbs0",
        "dynamic_batching on a model with max_batch_size 0",
        "",
        max_batch_size="0",
        extra="dynamic_batching { }",
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
