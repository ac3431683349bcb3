"""TD202 on TensorRT-LLM's templates: which unrendered parameters fail the load, and in whose
words (tensorrtllm_backend's all_models, v0.10.0 to v0.19.0)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import check_json, write_model

#: How the Python tensorrt_llm model reads its parameters: "${...}" becomes None.
GET_PARAMETER_MODEL = '''\
import json


def get_parameter(model_config, name):
    value = model_config["parameters"].get(name, {}).get("string_value", "")
    return None if value.startswith("${") else value


class TritonPythonModel:
    def initialize(self, args):
        model_config = json.loads(args["model_config"])
        tokenizer_dir = get_parameter(model_config, "tokenizer_dir")
        self.guided = tokenizer_dir is not None

    def execute(self, requests):
        return []
'''
#: How the preprocessing model reads gpt_model_path: only for a multimodal model.
MULTIMODAL_ONLY_MODEL = '''\
import json


class TritonPythonModel:
    def initialize(self, args):
        model_config = json.loads(args["model_config"])
        tokenizer_dir = model_config["parameters"]["tokenizer_dir"]["string_value"]
        visual = model_config["parameters"]["visual_model_path"]["string_value"]
        if visual != "${visual_model_path}":
            self.llm = model_config["parameters"]["gpt_model_path"]["string_value"]
        self.tokenizer_dir = tokenizer_dir

    def execute(self, requests):
        return []
'''


def _parameters(**values: str) -> str:
    return "".join(f'parameters {{ key: "{key}" value: {{ string_value: "{value}" }} }}\n'
                   for key, value in values.items())


def _findings(repo: Path, *args: str) -> list[dict[str, object]]:
    return [f for f in check_json(repo, *args)["findings"] if f["rule"] == "TD202"]


def test_a_parameter_read_through_a_none_making_helper_is_only_info(tmp_path: Path) -> None:
    config = ('backend: "python"\nmax_batch_size: 0\n'
              + _parameters(tokenizer_dir="${tokenizer_dir}"))
    write_model(tmp_path, "tensorrt_llm", config, {"1/model.py": GET_PARAMETER_MODEL})
    assert [f["severity"] for f in _findings(tmp_path)] == ["info"]


def test_a_path_read_only_for_multimodal_models_is_only_info(tmp_path: Path) -> None:
    config = ('backend: "python"\nmax_batch_size: 0\n' + _parameters(
        tokenizer_dir="/models/llama", visual_model_path="${visual_model_path}",
        gpt_model_path="${engine_dir}"))
    write_model(tmp_path, "preprocessing", config, {"1/model.py": MULTIMODAL_ONLY_MODEL})
    assert [f["severity"] for f in _findings(tmp_path)] == ["info"]


def test_the_trtllm_backends_words_only_from_the_release_that_has_them(tmp_path: Path) -> None:
    config = ('backend: "tensorrtllm"\nmax_batch_size: 8\n'
              + _parameters(gpt_model_path="${engine_dir}"))
    write_model(tmp_path, "tensorrt_llm", config, {"1/.gitkeep": ""})
    quoted = {version: [f.get("triton_message") for f in _findings(
        tmp_path, "--triton-version", version) if f["severity"] == "error"]
        for version in ("24.06", "24.07")}
    assert quoted == {"24.06": [None], "24.07": ["Both encoder and decoder model paths are empty"]}
