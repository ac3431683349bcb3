"""``triton-doctor config MODEL_DIR``: the configuration the server would run, or its refusal."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from google.protobuf import text_format
from triton_doctor.triton import model_config

from tests.helpers import GOOD_CONFIG, run_cli, write_model

AUTO_COMPLETING = '''
class TritonPythonModel:
    @staticmethod
    def auto_complete_config(auto_complete_model_config):
        for name in ["A", "B"]:
            auto_complete_model_config.add_input({"name": name, "data_type": "TYPE_INT64",
                                                  "dims": [-1]})
        auto_complete_model_config.add_output({"name": "C", "data_type": "TYPE_FP32",
                                               "dims": [1]})
        auto_complete_model_config.set_max_batch_size(16)
        auto_complete_model_config.set_dynamic_batching()
        return auto_complete_model_config

    def execute(self, requests):
        return []
'''


def _parse(text: str):  # type: ignore[no-untyped-def]
    config = model_config.new_config()
    text_format.Parse(text, config)
    return config


def test_prints_what_model_py_fills_in_for_a_model_without_config(tmp_path: Path) -> None:
    model = write_model(tmp_path, "ranker", None, {"1/model.py": AUTO_COMPLETING})
    proc = run_cli("config", str(model), "--gpus", "2")
    assert proc.returncode == 0, proc.stderr
    config = _parse(proc.stdout)
    assert config.backend == "python" and config.max_batch_size == 16
    assert [t.name for t in config.input] == ["A", "B"] and list(config.input[0].dims) == [-1]
    assert list(config.dynamic_batching.preferred_batch_size) == [16]
    group = config.instance_group[0]
    assert (group.name, group.count, list(group.gpus)) == ("ranker", 1, [0, 1])


def test_cpu_only_machine_gets_cpu_instances(tmp_path: Path) -> None:
    model = write_model(tmp_path, "ranker", None, {"1/model.py": AUTO_COMPLETING})
    config = _parse(run_cli("config", str(model), "--gpus", "0").stdout)
    assert config.instance_group[0].kind == config.instance_group[0].KIND_CPU


def test_disabled_auto_complete_prints_the_config_as_written(tmp_path: Path) -> None:
    model = write_model(tmp_path, "ranker", 'backend: "python"\n',
                        {"1/model.py": AUTO_COMPLETING})
    proc = run_cli("config", str(model), "--disable-auto-complete-config")
    config = _parse(proc.stdout)
    assert proc.returncode == 0, proc.stderr
    assert not config.input and config.max_batch_size == 0


def test_a_refused_model_exits_1_with_the_servers_words(tmp_path: Path) -> None:
    model = write_model(tmp_path, "ranker", 'backend: "python"\nmax_batch_size: 32\n',
                        {"1/model.py": AUTO_COMPLETING})
    proc = run_cli("config", str(model))
    assert proc.returncode == 1
    assert ("configuration specified max_batch_size 32, but in auto-complete-config function "
            "for model 'ranker' specified max_batch_size 16") in proc.stderr
    assert "Traceback" not in proc.stderr


def test_not_a_directory_is_a_usage_error(tmp_path: Path) -> None:
    proc = run_cli("config", str(tmp_path / "missing"))
    assert proc.returncode == 2 and "not a model directory" in proc.stderr


def test_gpu_ids_are_judged_only_for_a_machine_named(tmp_path: Path) -> None:
    """Shown as on one GPU by default, but `gpus: [0, 1]` is refused only by a machine
    known to have fewer GPUs."""
    config = ('backend: "python"\nmax_batch_size: 16\n'
              'instance_group [ { kind: KIND_GPU gpus: [ 0, 1 ] } ]\n')
    model = write_model(tmp_path, "ranker", config, {"1/model.py": AUTO_COMPLETING})
    unnamed = run_cli("config", str(model))
    assert unnamed.returncode == 0, unnamed.stderr
    assert list(_parse(unnamed.stdout).instance_group[0].gpus) == [0, 1]
    one = run_cli("config", str(model), "--gpus", "1")
    assert one.returncode == 1
    assert "specifies invalid or unsupported gpu id 1" in one.stderr


def test_output_file_gets_what_stdout_would(tmp_path: Path) -> None:
    model = write_model(tmp_path / "repo", "ranker", GOOD_CONFIG)
    printed = run_cli("config", str(model)).stdout
    proc = run_cli("config", str(model), "-o", str(tmp_path / "effective.pbtxt"))
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    assert (tmp_path / "effective.pbtxt").read_text() == printed
    unwritable = run_cli("config", str(model), "-o", str(tmp_path / "no" / "such.pbtxt"))
    assert unwritable.returncode == 2 and "Traceback" not in unwritable.stderr


def test_the_config_being_read_is_replaced_only_with_force(tmp_path: Path) -> None:
    model = write_model(tmp_path, "ranker", GOOD_CONFIG)
    config = model / "config.pbtxt"
    refused = run_cli("config", str(model), "-o", str(tmp_path / "." / "ranker" / "config.pbtxt"))
    assert refused.returncode == 2 and "--force" in refused.stderr, refused.stderr
    assert config.read_text() == GOOD_CONFIG
    forced = run_cli("config", str(model), "-o", str(config), "--force")
    assert forced.returncode == 0, forced.stderr
    assert _parse(config.read_text()) == _parse(run_cli("config", str(model)).stdout)


def test_stdout_redirected_onto_the_config_is_refused_even_with_force(tmp_path: Path) -> None:
    model = write_model(tmp_path, "ranker", GOOD_CONFIG)
    with (model / "config.pbtxt").open("w") as stdout:  # what `> DIR/config.pbtxt` does
        proc = subprocess.run([sys.executable, "-m", "triton_doctor", "config", str(model),
                               "--force"], stdout=stdout, stderr=subprocess.PIPE, text=True,
                              timeout=60, check=False)
    assert proc.returncode == 2 and "emptied" in proc.stderr, proc.stderr
