"""The differential fuzzer's full run: generated repositories, the real server, check.

    python bench/differential_fuzz.py --count 400 --seed 1 [--json out.json] [--only 17,42]

Prints the figures (verdict agreement, exact-reason agreement, false errors, misses) and
every disagreement with both texts; ``--json`` also writes them as JSON. The acceptance of
issue 12 is verdict >= 99 % (of every repository), exact reason >= 95 %, 0 false errors over
>= 400 repositories; a model-level false error, a repository the server gave no verdict on, a
check that crashed and a rule that crashed fail it too.
Needs the real server (the nvidia-pytriton wheel, as the tests do).
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.differential.fuzz_generate import generate
from tests.differential.fuzz_run import (
    ACCEPTANCE,
    SERVER_OPTIONS,
    as_json,
    figures,
    judge,
    report,
)
from tests.differential.oracle import SERVER_TARGET
from tests.server_harness import ServerInstall, TritonServer, locate_server_tree


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=400)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--batch", type=int, default=20, help="repositories per server")
    parser.add_argument("--only", default="", help="comma-separated repository numbers")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--keep", type=Path, help="keep the generated repositories here")
    args = parser.parse_args()
    servers: list[TritonServer] = []

    def terminate(*_: object) -> None:
        # Kill the server first: the in-flight loads then fail at once, where the unwinding
        # below would wait for them (up to their timeout) before stopping it.
        for server in servers:
            server.kill()
        sys.exit(143)

    signal.signal(signal.SIGTERM, terminate)
    tree = locate_server_tree()
    if tree is None:
        print("no tritonserver: pip install --no-deps nvidia-pytriton==0.7.0", file=sys.stderr)
        return 2
    indices = [int(i) for i in args.only.split(",") if i] or list(range(args.count))
    repositories = [generate(args.seed, i) for i in indices]
    with tempfile.TemporaryDirectory(prefix="td-fuzz-") as scratch:
        workdir = args.keep or Path(scratch)
        install = ServerInstall.prepare(tree, Path(scratch) / "tritonserver")

        def start(repository: Path) -> TritonServer:
            server = TritonServer(
                install,
                repository,
                Path(scratch) / f"server{len(servers)}",
                *SERVER_OPTIONS,
                wait_for="/v2/health/live",
            )
            servers.append(server)
            return server.start()

        began = time.monotonic()
        judgements = judge(
            repositories,
            start,
            workdir,
            batch_size=args.batch,
            progress=lambda line: print(line, file=sys.stderr, flush=True),
        )
        elapsed = time.monotonic() - began
    print(report(judgements, args.seed, SERVER_TARGET), end="")
    print(f"({elapsed:.0f} s)")
    if args.json is not None:
        args.json.write_text(as_json(judgements, args.seed, SERVER_TARGET), encoding="utf-8")
    print(f"acceptance ({ACCEPTANCE}):", "MET" if figures(judgements).met else "NOT MET")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
