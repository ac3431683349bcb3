"""`check` must start fast: no TUI, live clients or model libraries on its path."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import DEMO

HEAVY = ("textual", "tritonclient.http", "tritonclient.grpc", "grpc", "docker", "pynvml", "onnx",
         "requests", "psutil", "prometheus_client", "numpy", "http.client", "ssl", "socket")


def test_check_does_not_import_heavy_modules() -> None:
    probe = (
        "import sys, runpy\n"
        f"sys.argv = ['triton-doctor', 'check', '--format', 'json', '--exit-zero', {str(DEMO)!r}]\n"
        "try:\n"
        "    runpy.run_module('triton_doctor', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "sys.stderr.write('HEAVY=' + ','.join(heavy))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, check=False)
    assert '"findings"' in proc.stdout
    assert proc.stderr.strip().endswith("HEAVY="), proc.stderr[-500:]
