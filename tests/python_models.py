"""Small Python-backend models for the tests that run the real server, and for the recorded
incident (fixtures/generate/watch_snapshot.py).

``healthy_add`` loads and answers (OUTPUT0 = INPUT0 + 1); ``broken_init`` raises in
``initialize``, so the real server marks it UNAVAILABLE with the exception as its reason.
``SLOW_PY`` takes 50 ms per execution, ``ECHO_PY`` 2 ms, and :func:`failing_on_negative`
raises on the requests a test marks. :class:`Load` keeps client threads sending requests.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path

from tests.server_harness import TritonServer

ADD_PY = '''
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor(
            "OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy() + 1)])
            for r in requests]
'''
SLOW_PY = '''
import time
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        time.sleep(0.05)
        responses = []
        for request in requests:
            data = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            out = pb_utils.Tensor("OUTPUT0", data.astype(np.float32))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
'''
ECHO_PY = SLOW_PY.replace("time.sleep(0.05)", "time.sleep(0.002)")


def failing_on_negative(message: str) -> str:
    """A model that raises ``message`` for a request whose first value is negative.

    Raised, not returned: the server counts an error a model returns inside its response as a
    success (2.51), and only a raised one as a failure.
    """
    return f'''
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            data = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            if data.flat[0] < 0:
                raise ValueError({message!r})
            out = pb_utils.Tensor("OUTPUT0", data.astype(np.float32))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
'''


BROKEN_PY = '''
class TritonPythonModel:
    def initialize(self, args):
        raise RuntimeError("cannot open the tokenizer")

    def execute(self, requests):
        return []
'''
CONFIG = """backend: "python"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
"""
MODELS = {"healthy_add": ADD_PY, "broken_init": BROKEN_PY}
#: A Python model without batching, four FP32 in and out, on one CPU instance.
UNBATCHED = CONFIG.replace("max_batch_size: 8", "max_batch_size: 0")
#: An incident: ``slow`` takes 0.25 s a request on its one instance (eight clients swamp it:
#: TD611); ``broken`` has a zero dimension, refused at load (TD212, TD601).
INCIDENT = {
    "slow": (UNBATCHED, SLOW_PY.replace("time.sleep(0.05)", "time.sleep(0.25)")),
    "broken": (UNBATCHED.replace("dims: [ 4 ] } ]\noutput", "dims: [ 0 ] } ]\noutput"), ECHO_PY),
}


def write_models(repository: Path, models: Mapping[str, tuple[str, str]]) -> Path:
    """``models``: name -> (config.pbtxt, model.py of version 1)."""
    for name, (config, source) in models.items():
        (repository / name / "1").mkdir(parents=True)
        (repository / name / "config.pbtxt").write_text(config)
        (repository / name / "1" / "model.py").write_text(source)
    return repository


def write_repository(repository: Path, models: dict[str, str] = MODELS) -> Path:
    """``models``: name -> model.py source, each with :data:`CONFIG`."""
    return write_models(repository, {name: (CONFIG, source) for name, source in models.items()})


def wait_ready(url: str, model: str, timeout: float = 60.0) -> None:
    """Wait until ``model`` is READY (the server may answer /v2/health/live before)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{url}/v2/models/{model}/ready", timeout=5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def infer(url: str, model: str = "healthy_add", value: float = 1.0,
          batched: bool = True) -> int:
    """One request (a batch of one when ``batched``) of four ``value``; the HTTP status."""
    body = {"inputs": [{"name": "INPUT0", "shape": [1, 4] if batched else [4],
                        "datatype": "FP32", "data": [value] * 4}]}
    request = urllib.request.Request(f"{url}/v2/models/{model}/infer",
                                     data=json.dumps(body).encode(), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


class Load:
    """Client threads sending requests until stopped."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []

    def clients(self, count: int, send: Callable[[int], object], pause: float = 0.0) -> None:
        """``count`` threads calling ``send(n)`` for their n-th request, ``pause`` s apart."""
        def loop() -> None:
            sent = 0
            while not self.stop.is_set():
                send(sent)
                sent += 1
                self.stop.wait(pause)

        for _ in range(count):
            thread = threading.Thread(target=loop, daemon=True)
            thread.start()
            self.threads.append(thread)

    def end(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=60)


def kill(server: TritonServer) -> None:
    """SIGKILL the server's process group, then clean up as ``stop`` does: a graceful stop
    waits out the Python stubs (seconds per server) for nothing a test needs."""
    if server.process is not None and server.process.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(server.process.pid, signal.SIGKILL)
    server.stop()
