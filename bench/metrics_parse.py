"""Benchmark: parse a 50,000-sample Triton metrics page, against plain prometheus_client.

Builds a page shaped like a big production server's (many models and versions, the default
per-model families, failures by reason, GPU families, summaries for a few models), then times
``parse_metrics`` and a baseline that collects every sample with
``prometheus_client.parser.text_string_to_metric_families``, in the same process on the same
text: median of 5 after one warm-up run. Prints the figures, the ratio and PASS/MISS against
the target. Nothing here is a unit test.

    python bench/metrics_parse.py [--samples 50000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from triton_doctor.checks.metrics import parse_metrics

TARGET_S = 0.200

#: Families with one sample per model version (name, type), as tritonserver prints them.
PER_MODEL = [
    ("nv_inference_request_success", "counter"),
    ("nv_inference_count", "counter"),
    ("nv_inference_exec_count", "counter"),
    ("nv_inference_request_duration_us", "counter"),
    ("nv_inference_queue_duration_us", "counter"),
    ("nv_inference_compute_input_duration_us", "counter"),
    ("nv_inference_compute_infer_duration_us", "counter"),
    ("nv_inference_compute_output_duration_us", "counter"),
    ("nv_inference_pending_request_count", "gauge"),
    ("nv_model_load_duration_secs", "gauge"),
]
REASONS = ("OTHER", "BACKEND", "CANCELED", "REJECTED")
SUMMARIES = ("request", "queue", "compute_input", "compute_infer", "compute_output")
QUANTILES = ("0.5", "0.9", "0.95", "0.99", "0.999")
GPU_FAMILIES = ("nv_gpu_utilization", "nv_gpu_memory_total_bytes", "nv_gpu_memory_used_bytes",
                "nv_gpu_power_usage", "nv_gpu_power_limit", "nv_energy_consumption")
GPUS = [f"GPU-{index:08x}-1b2c-4d5e-8f90-a1b2c3d4e5f6" for index in range(8)]


def build_page(target_samples: int, seed: int = 7) -> tuple[str, int]:
    """(page, sample count): model versions are added until ``target_samples`` is reached."""
    rng = random.Random(seed)
    # Per model version: the single-sample families, failures by reason, and for one model
    # in 20 five summaries of 7 samples each (count, sum, 5 quantiles).
    per_version = len(PER_MODEL) + len(REASONS) + len(SUMMARIES) * (2 + len(QUANTILES)) / 20
    versions = int((target_samples - len(GPUS) * len(GPU_FAMILIES) - 7) / per_version)
    labels = []
    for index in range(versions):
        model = f"{rng.choice(['resnet', 'bert', 'ensemble', 'tokenizer', 'llm'])}_{index // 2}"
        uuid = f',gpu_uuid="{GPUS[index % len(GPUS)]}"' if index % 3 else ""
        labels.append(f'model="{model}"{uuid},version="{index % 2 + 1}"')
    lines: list[str] = []
    count = 0

    def family(name: str, kind: str, samples: list[str]) -> None:
        nonlocal count
        lines.append(f"# HELP {name} {name.replace('_', ' ')}")
        lines.append(f"# TYPE {name} {kind}")
        lines.extend(samples)
        count += len(samples)

    family("nv_inference_request_success", "counter",
           [f"nv_inference_request_success{{{label}}} {rng.randrange(10**9)}" for label in labels])
    family("nv_inference_request_failure", "counter", [
        f'nv_inference_request_failure{{{label},reason="{reason}"}} {rng.randrange(1000)}'
        for label in labels for reason in REASONS
    ])
    for name, kind in PER_MODEL[1:]:
        family(name, kind, [f"{name}{{{label}}} {rng.randrange(10**12)}" for label in labels])
    summarised = labels[::20]
    for stage in SUMMARIES:
        name = f"nv_inference_{stage}_summary_us"
        samples = []
        for label in summarised:
            samples.append(f"{name}_count{{{label}}} {rng.randrange(10**6)}")
            samples.append(f"{name}_sum{{{label}}} {rng.randrange(10**9)}")
            samples.extend(f'{name}{{{label},quantile="{q}"}} {rng.uniform(10, 1e5):.6g}'
                           for q in QUANTILES)
        family(name, "summary", samples)
    for name in GPU_FAMILIES:
        family(name, "gauge", [f'{name}{{gpu_uuid="{gpu}"}} {rng.uniform(0, 1e10):.6g}'
                               for gpu in GPUS])
    for name in ("nv_pinned_memory_pool_total_bytes", "nv_pinned_memory_pool_used_bytes",
                 "nv_cpu_utilization", "nv_cpu_memory_total_bytes", "nv_cpu_memory_used_bytes"):
        family(name, "gauge", [f"{name} {rng.uniform(0, 1e11):.6g}"])
    return "\n".join(lines) + "\n", count


def baseline(text: str) -> int:
    """What a user writes by hand: every sample of every family through prometheus_client."""
    from prometheus_client.parser import text_string_to_metric_families

    return sum(len(family.samples) for family in text_string_to_metric_families(text))


def median_seconds(run: Callable[[], object], repeat: int) -> float:
    run()  # warm-up: imports, regex compilation
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    text, count = build_page(args.samples)
    scrape = parse_metrics(text, 0.0)
    assert len(scrape.samples) == count == baseline(text) and scrape.bad_lines == 0
    # The same page with one line in 100 broken: the baseline cannot read it at all.
    broken = "\n".join(line + "}" if index % 100 == 50 else line
                       for index, line in enumerate(text.split("\n")))

    ours = median_seconds(lambda: parse_metrics(text, 0.0), args.repeat)
    theirs = median_seconds(lambda: baseline(text), args.repeat)
    damaged = median_seconds(lambda: parse_metrics(broken, 0.0), args.repeat)
    bad = parse_metrics(broken, 0.0).bad_lines

    print(f"page: {count:,} samples, {text.count(chr(10)):,} lines, {len(text) / 2**20:.1f} MiB")
    print(f"parse_metrics           {ours * 1000:8.1f} ms")
    print(f"prometheus_client       {theirs * 1000:8.1f} ms   ({theirs / ours:.1f}x parse_metrics)")
    print(f"parse_metrics, 1% bad   {damaged * 1000:8.1f} ms   ({bad:,} bad lines counted; "
          "prometheus_client gives up)")
    verdict = "PASS" if ours < TARGET_S else "MISS"
    print(f"{verdict}  parse_metrics {ours * 1000:.1f} ms < {TARGET_S * 1000:.0f} ms")


if __name__ == "__main__":
    main()
