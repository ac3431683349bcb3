"""One collect-and-judge cycle of `check --url` against a real tritonserver with 20 models.

Starts the bundled tritonserver (the nvidia-pytriton wheel, as the tests do) on a repository of
20 Python models, sends some traffic, then times, in this process, what one `check --url`
cycle does besides waiting out its window: the server's index, configs, statistics and
shared-memory status twice, two metrics scrapes, the GPU, container and host probes, and every
live rule. Next to it, in the same run, the baseline a user would script: tritonclient.http
asking the index and each model's config and statistics. Prints medians of 15 cycles.

Usage: ``python bench/live_cycle.py [--models 20] [--repeat 15]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.server_harness import ServerInstall, TritonServer, locate_server_tree  # noqa: E402

MODEL_PY = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor(
            "OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy())])
            for r in requests]
"""
CONFIG = """backend: "python"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
dynamic_batching { }
"""
TARGET_MS = 150.0


def build(repository: Path, models: int) -> None:
    for index in range(models):
        directory = repository / f"model_{index:02d}" / "1"
        directory.mkdir(parents=True)
        (directory / "model.py").write_text(MODEL_PY)
        (directory.parent / "config.pbtxt").write_text(CONFIG)


def traffic(url: str, models: int) -> None:
    body = json.dumps({"inputs": [{"name": "INPUT0", "shape": [1, 4], "datatype": "FP32",
                                   "data": [1, 2, 3, 4]}]}).encode()
    for index in range(models):
        for _ in range(3):
            request = urllib.request.Request(f"{url}/v2/models/model_{index:02d}/infer",
                                             data=body, method="POST")
            urllib.request.urlopen(request, timeout=30).read()


def doctor_cycle(url: str, metrics_url: str) -> tuple[float, int]:
    from triton_doctor.catalogue import all_rules
    from triton_doctor.checks.live import LiveRequest, collect_live
    from triton_doctor.engine import run
    from triton_doctor.evidence import Evidence

    started = time.perf_counter()
    evidence = Evidence()
    collect_live(evidence, LiveRequest(url, metrics_url, window_s=0.0), sleep=lambda _: None)
    run(evidence, all_rules())
    return time.perf_counter() - started, len(evidence.server.models if evidence.server else [])


def baseline_cycle(url: str) -> float:
    import tritonclient.http as httpclient

    started = time.perf_counter()
    client = httpclient.InferenceServerClient(url.removeprefix("http://"))
    client.is_server_live()
    for entry in client.get_model_repository_index():
        if entry.get("state") == "READY":
            client.get_model_config(entry["name"])
    client.get_inference_statistics()
    client.close()
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    tree = locate_server_tree()
    if tree is None:
        print("the bundled tritonserver is not installed: pip install --no-deps "
              "nvidia-pytriton==0.7.0")
        return 2
    with tempfile.TemporaryDirectory() as work:
        work_dir = Path(work)
        build(work_dir / "models", args.models)
        install = ServerInstall.prepare(tree, work_dir / "server")
        with TritonServer(install, work_dir / "models", work_dir / "run",
                          startup_timeout=180) as server:
            traffic(server.http_url, args.models)
            doctor_cycle(server.http_url, server.metrics_url)  # warm-up: imports, connections
            baseline_cycle(server.http_url)
            doctor = [doctor_cycle(server.http_url, server.metrics_url) for _ in
                      range(args.repeat)]
            baseline = [baseline_cycle(server.http_url) for _ in range(args.repeat)]
    doctor_ms = statistics.median(seconds for seconds, _ in doctor) * 1000
    baseline_ms = statistics.median(baseline) * 1000
    models = doctor[0][1]
    print(f"live cycle against tritonserver with {models} models, median of {args.repeat}:")
    print(f"  doctor   (index, configs, stats and shm twice, 2 metrics scrapes, GPU, Docker, "
          f"/dev/shm, {args.models} models judged): {doctor_ms:.1f} ms")
    print(f"  baseline (tritonclient.http: index, configs, stats once): {baseline_ms:.1f} ms "
          f"({doctor_ms / baseline_ms:.1f}x the baseline's time)")
    verdict = "PASS" if doctor_ms < TARGET_MS else "MISS"
    print(f"{verdict}  one collect-and-judge cycle {doctor_ms:.1f} ms < {TARGET_MS:g} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
