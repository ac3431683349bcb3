"""Benchmark: judge a 1 GB server log, against ``grep -c`` of the same words on the same file.

Writes a log shaped like a busy tritonserver's at ``--log-verbose=1`` (request lines for many
models, HTTP handler lines, periodic statistics) with incidents planted at known places (a
model failing to load, a stub dying, CUDA running out of memory, clients sending the wrong
type), then runs, as a user does, ``triton-doctor check --log FILE --format json`` and
``grep -c -F -f WORDS FILE`` with every run of words the log rules declare: the least work a
tool must do to find those lines. Prints wall time, peak RSS (``ru_maxrss`` of the child), the
ratio, whether every planted incident was found with its count, and PASS/MISS against the
targets (< 10 s, < 100 MB for 1 GB). Nothing here is a unit test.

    python bench/log_scan.py [--bytes 1e9] [--repeat 3] [--errors-every 100000,10,1] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from triton_doctor.catalogue import all_rules
from triton_doctor.server_words import log_words

TARGET_S = 10.0
TARGET_MB = 100.0
CACHE = Path(__file__).resolve().parent / ".cache"
MODELS = [f"{kind}_{index}" for kind in ("resnet", "bert", "tokenizer", "ranker", "llm")
          for index in range(40)]
#: Healthy lines of a verbose server, as templates; {n} (a request's address or id) differs on
#: every line, as it does in a real verbose log, so that no two texts repeat.
HEALTHY = (
    'I1201 {t} 77 http_server.cc:4580] "HTTP request: 2 /v2/models/{m}/infer"',
    'I1201 {t} 77 model_lifecycle.cc:328] "GetModel() \'{m}\' version -1"',
    'I1201 {t} 81 infer_request.cc:131] "[request id: {n}] Setting state from INITIALIZED to '
    'PENDING"',
    'I1201 {t} 81 infer_request.cc:905] "[request id: {n}] prepared: [0x0x7f3a{n:x}] '
    'request id: {n}, model: {m}, requested version: -1, actual version: 1, flags: 0x0, '
    'correlation id: 0, batch size: 4, priority: 0, timeout (us): 0"',
    'I1201 {t} 92 python_be.cc:1244] "model {m}, instance {m}_0_0, executing 4 requests"',
    'I1201 {t} 81 infer_response.cc:174] "[0x7f3a{n:x}] add response output: output: OUTPUT0, '
    'type: FP32, shape: [4,1000]"',
    'I1201 {t} 77 http_server.cc:1241] "HTTP using buffer for: \'OUTPUT0\', size: 16000, '
    'addr: 0x7f3a{n:x}"',
)
#: The incidents planted, each: (rule expected, model, line template).
INCIDENTS = (
    ("TD801", "ranker_3", 'E1201 {t} 77 model_lifecycle.cc:654] "failed to load \'ranker_3\' '
     'version 1: Internal: RuntimeError: cannot open the vocabulary\\n\\nAt:\\n  '
     '/models/ranker_3/1/model.py(14): initialize\\n"'),
    ("TD804", "tokenizer_7", 'E1201 {t} 92 python_be.cc:1356] "Stub process '
     '\'tokenizer_7_0_0\' is not healthy."'),
    ("TD803", "llm_1", 'E1201 {t} 92 pb_stub.cc:721] "Failed to process the request(s) for '
     'model \'llm_1_0_0\', message: torch.OutOfMemoryError: CUDA out of memory. Tried to '
     'allocate 2.00 GiB"'),
    ("TD809", "bert_2", 'E1201 {t} 77 http_server.cc:4582] "[request id: <id_unknown>] '
     'inference input \'INPUT0\' data-type is \'INT64\', but model \'bert_2\' expects '
     '\'INT32\'"'),
)


def build_log(path: Path, size: int, errors_every: int, seed: int = 11) -> dict[str, int]:
    """Write ``size`` bytes of log to ``path``; returns the planted lines per rule."""
    rng = random.Random(seed)
    planted = dict.fromkeys((rule for rule, _, _ in INCIDENTS), 0)
    # A pool of healthy lines, each made unique by the line's number when written.
    pool = [template.replace("{t}", f"{h:02d}:{m:02d}:{s:02d}.{rng.randrange(10**6):06d}")
            .replace("{m}", rng.choice(MODELS))
            for template in HEALTHY for h in (19, 20) for m in range(0, 60, 7)
            for s in range(0, 60, 13)]
    written = 0
    number = 0
    with path.open("w") as out:
        while written < size:
            lines = []
            for _ in range(10_000):
                number += 1
                if number % errors_every == 0:
                    rule, _, template = INCIDENTS[(number // errors_every) % len(INCIDENTS)]
                    planted[rule] += 1
                    lines.append(template.format(t="20:15:00.000001"))
                else:
                    lines.append(pool[rng.randrange(len(pool))].format(n=number))
            chunk = "\n".join(lines) + "\n"
            out.write(chunk)
            written += len(chunk)
    return planted


def timed(argv: list[str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MiB, stdout) of one child run. Its output goes to a file:
    GNU grep writing to /dev/null stops at the first match."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as captured:
        proc = subprocess.Popen(argv, stdout=captured, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        took = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        captured.seek(0)
        text = captured.read().decode()
    return took, usage.ru_maxrss / 1024, text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bytes", type=float, default=1e9)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--errors-every", default="100000,10,1",
                        help="one planted incident line every N lines; several N, one log each "
                        "(default 100000,10,1: a quiet log, an incident, every line an error)")
    parser.add_argument("--keep", action="store_true", help="keep the logs in bench/.cache/")
    args = parser.parse_args()
    all_rules()
    CACHE.mkdir(exist_ok=True)
    words = CACHE / "log-words.txt"
    words.write_text("".join(f"{word}\n" for word in log_words()))
    print(f"{len(log_words())} runs of words; grep -c -F -f {words} is the baseline")
    results = [judge(int(args.bytes), int(every), args.repeat, words, args.keep)
               for every in args.errors_every.split(",")]
    return 0 if all(results) else 1


def judge(size: int, every: int, repeat: int, words: Path, keep: bool) -> bool:
    """Time one log with an incident line every ``every`` lines; whether all were found."""
    log = CACHE / f"server-{size}-{every}.log"
    started = time.perf_counter()
    planted = build_log(log, size, every)
    print(f"\nlog: {log.stat().st_size / 1e9:.2f} GB, one incident line every {every} lines, "
          f"written in {time.perf_counter() - started:.1f} s")
    doctor = [str(Path(sys.executable).parent / "triton-doctor"), "check", "--log", str(log),
              "--format", "json", "--exit-zero"]
    grep = ["grep", "-c", "-F", "-f", str(words), str(log)]
    timed(grep)  # warm the page cache: both tools then read from memory
    runs: dict[str, list[tuple[float, float]]] = {"doctor": [], "grep": []}
    report = ""
    for _ in range(repeat):
        took, rss, report = timed(doctor)
        runs["doctor"].append((took, rss))
        runs["grep"].append(timed(grep)[:2])
    found: dict[str, int] = {}
    for finding in json.loads(report)["findings"]:
        found[finding["rule"]] = found.get(finding["rule"], 0) + finding["evidence"]["count"]
    doctor_s = statistics.median(t for t, _ in runs["doctor"])
    doctor_mb = max(m for _, m in runs["doctor"])
    grep_s = statistics.median(t for t, _ in runs["grep"])
    print(f"{'tool':<8}{'median s':>10}{'peak MB':>10}   runs (s)")
    for tool, measured in runs.items():
        print(f"{tool:<8}{statistics.median(t for t, _ in measured):>10.2f}"
              f"{max(m for _, m in measured):>10.1f}   "
              + " ".join(f"{t:.2f}" for t, _ in measured))
    print(f"doctor / grep -c: {doctor_s / grep_s:.1f}x")
    print(f"found {found}; planted {planted}: {'all found' if found == planted else 'MISMATCH'}")
    print(f"time {doctor_s:.2f} s (target < {TARGET_S:g} s): "
          f"{'PASS' if doctor_s < TARGET_S else 'MISS'}; memory {doctor_mb:.0f} MB "
          f"(target < {TARGET_MB:g} MB): {'PASS' if doctor_mb < TARGET_MB else 'MISS'}")
    if not keep:
        log.unlink()
    return found == planted


if __name__ == "__main__":
    raise SystemExit(main())
