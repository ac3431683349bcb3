"""Benchmark: the fast config.pbtxt reader against protobuf's text_format.

Times ``text_format.Parse`` and ``config_reader.read`` (doctor/triton/config_reader.py) on the
config.pbtxt files of a model repository and on 10,000 configs from the test generator
(tests/pbtxt_generator.py, every field of the schema in every spelling), in the same process
on the same texts: median of ``--repeat`` runs after a warm-up. Prints ms per config, the
speed-up, and the fallback rate (configs the reader declines, which then cost both). Nothing
here is a unit test.

    python bench/config_reader.py [REPO] [--models 1000] [--generated 10000] [--repeat 5]

Without REPO a repository of ``--models`` models is built with bench/build_repo.py in a
temporary directory.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from google.protobuf import text_format

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from triton_doctor.triton import config_reader, model_config  # noqa: E402

from tests.pbtxt_generator import config  # noqa: E402

TARGET_SPEEDUP = 4.0


def median_s(run: Callable[[], None], repeat: int) -> float:
    run()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(label: str, texts: list[str], repeat: int) -> float:
    """Print one set's figures; the speed-up."""
    message_class = model_config.schema().ModelConfig

    def parse_all() -> None:
        for text in texts:
            text_format.Parse(text, message_class())

    def read_all() -> None:
        for text in texts:
            config_reader.read(text, message_class)

    slow, fast = median_s(parse_all, repeat), median_s(read_all, repeat)
    declined = sum(config_reader.read(t, message_class) is None for t in texts)
    lines = sum(t.count("\n") + 1 for t in texts) / len(texts)
    per = 1000 / len(texts)
    print(f"{label}: {len(texts):,} configs, {lines:.0f} lines on average")
    print(f"  text_format      {slow * per:.4f} ms/config")
    print(f"  config_reader    {fast * per:.4f} ms/config   ({slow / fast:.1f}x faster)")
    print(f"  fallback         {declined / len(texts):.2%} ({declined} configs)")
    return slow / fast


def repository_texts(repo: Path) -> list[str]:
    paths = sorted(repo.glob("*/config.pbtxt")) + sorted(repo.glob("*/configs/*.pbtxt"))
    return [path.read_text(encoding="utf-8") for path in paths]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", nargs="?", type=Path, help="a model repository")
    parser.add_argument("--models", type=int, default=1000)
    parser.add_argument("--generated", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        repo = args.repo
        if repo is None:
            from build_repo import build

            repo = Path(scratch) / "repo"
            build(repo, args.models)
        texts = repository_texts(repo)
    speedup = measure(f"repository {args.repo or 'built by build_repo.py'}", texts, args.repeat)
    rng = random.Random(20261202)
    measure("generated", [config(rng)[0] for _ in range(args.generated)], args.repeat)
    verdict = "PASS" if speedup >= TARGET_SPEEDUP else "MISS"
    print(f"{verdict}  repository speed-up {speedup:.1f}x >= {TARGET_SPEEDUP:.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
