"""The metrics collector and MetricsView: against the real tritonserver's Prometheus endpoint,
and against small local servers that misbehave the ways a wrong URL or a sick server does."""

from __future__ import annotations

import json
import math
import socket
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from prometheus_client.parser import text_string_to_metric_families
from triton_doctor.checks import metrics
from triton_doctor.checks.metrics import parse_line, parse_metrics, scrape
from triton_doctor.checks.unavailable import SourceUnavailable
from triton_doctor.evidence import MetricSample, MetricsEvidence, MetricsScrape
from triton_doctor.triton.metrics_model import MetricsView

from tests.differential.cases import MODEL_PY
from tests.helpers import write_model
from tests.server_harness import TritonServer

CONFIG = """
backend: "python"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
"""
#: What tritonserver 2.51 prints on CPU by default.
CPU_FAMILIES = {
    "nv_inference_request_success", "nv_inference_request_failure", "nv_inference_count",
    "nv_inference_exec_count", "nv_inference_request_duration_us",
    "nv_inference_queue_duration_us", "nv_inference_compute_input_duration_us",
    "nv_inference_compute_infer_duration_us", "nv_inference_compute_output_duration_us",
    "nv_inference_pending_request_count", "nv_pinned_memory_pool_total_bytes",
    "nv_pinned_memory_pool_used_bytes", "nv_cpu_utilization", "nv_cpu_memory_total_bytes",
    "nv_cpu_memory_used_bytes",
}
SUMMARIES = {f"nv_inference_{stage}_summary_us" for stage in
             ("request", "queue", "compute_input", "compute_infer", "compute_output")}
REQUESTS = 5


# --- the real server ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(triton_server: Callable[..., TritonServer],
           tmp_path_factory: pytest.TempPathFactory) -> TritonServer:
    repository = tmp_path_factory.mktemp("metrics") / "repository"
    write_model(repository, "copy", CONFIG, {"1/model.py": MODEL_PY})
    return triton_server(repository, "--metrics-config=summary_latencies=true")


def _infer(server: TritonServer) -> None:
    body = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 4],
                        "data": [1.0, 2.0, 3.0, 4.0]}]}
    status, answer = server.post("/v2/models/copy/infer", json.dumps(body).encode())
    assert status == 200, answer


@pytest.fixture(scope="module")
def window(server: TritonServer) -> MetricsView:
    """Two scrapes with REQUESTS inferences in between.

    The server counts a request after its response is sent, so the second scrape is retried
    until the counters have caught up (or 10 s have passed, and the test fails).
    """
    first = scrape(server.metrics_url, timeout=5)
    for _ in range(REQUESTS):
        _infer(server)
    settled = ("nv_inference_count", "nv_inference_request_success",
               "nv_inference_request_summary_us_count")
    deadline = time.monotonic() + 10
    while True:
        view = MetricsView(MetricsEvidence(server.metrics_url,
                                           [first, scrape(server.metrics_url, timeout=5)]))
        if time.monotonic() > deadline or all(
                view.delta(name, model="copy") == REQUESTS for name in settled):
            return view
        time.sleep(0.05)


def test_counters_move_by_the_requests_sent(window: MetricsView) -> None:
    assert window.delta("nv_inference_count", model="copy") == REQUESTS
    assert window.delta("nv_inference_count", model="copy", version="1") == REQUESTS
    assert window.delta("nv_inference_request_success", model="copy") == REQUESTS
    assert window.delta("nv_inference_request_failure", model="copy") == 0
    assert window.delta("nv_inference_request_failure", reason="BACKEND") == 0
    assert window.delta("nv_inference_count", model="absent") is None
    assert window.value("nv_inference_request_summary_us_count", model="copy") == REQUESTS
    duration = window.delta("nv_inference_request_duration_us", model="copy", version="1")
    assert duration is not None and duration > 0


def test_families_on_cpu(window: MetricsView) -> None:
    assert window.names >= CPU_FAMILIES | SUMMARIES
    assert not {name for name in window.names if name.startswith(("nv_gpu_", "nv_energy_"))}
    # Failures are counted by reason; per_model sums over them.
    assert window.per_model("nv_inference_request_failure") == {("copy", "1"): 0.0}
    assert window.value("nv_pinned_memory_pool_total_bytes") is not None


def test_summary_quantiles(window: MetricsView) -> None:
    median = window.quantile("nv_inference_request_summary_us", "copy", 0.5)
    p99 = window.quantile("nv_inference_request_summary_us", "copy", 0.99, version="1")
    assert median is not None and p99 is not None and 0 < median <= p99
    assert window.quantile("nv_inference_request_summary_us", "copy", 0.42) is None
    assert window.quantile("nv_inference_request_summary_us", "copy", 0.5, version="2") is None


def _page(server: TritonServer) -> str:
    with urllib.request.urlopen(server.metrics_url, timeout=5) as response:
        return response.read().decode()


def test_real_page_takes_the_fast_path_and_agrees_with_prometheus_client(
    server: TritonServer, window: MetricsView, monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = _page(server)

    def slow(line: str) -> list[MetricSample] | None:
        raise AssertionError(f"a line of Triton's own page needed prometheus_client: {line}")

    with monkeypatch.context() as patch:
        patch.setattr(metrics, "parse_line", slow)
        fast = parse_metrics(text, 1.0)
    assert fast.bad_lines == 0 and fast.at == 1.0
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert fast.samples == [sample for line in lines for sample in parse_line(line) or []]
    # The whole page at once: the same samples, with counters renamed ``_total``.
    families = list(text_string_to_metric_families(text))
    renamed = {(s.name[:-6] if f.type == "counter" else s.name, json.dumps(s.labels), s.value)
               for f in families for s in f.samples}
    assert renamed == {(s.name, json.dumps(s.labels), s.value) for s in fast.samples}


# --- parsing -----------------------------------------------------------------------------------

#: Lines only prometheus_client reads (escapes, tabs, spaces, UTF-8 names) beside fast ones.
TRICKY = r"""# HELP nv_x help with "quotes" and \n
# TYPE nv_x counter
nv_x{model="a",version="1"} 3
nv_x{model="b",version="1"} 1e3 1712345678000
nv_x {model="c"} 4
nv_x{model="d"}	5
nv_x{model = "e", version="1"} 6
nv_x{model="f\"g\\h\ni"} 7
nv_x{model="j,k}l"} 8
nv_x{model="",} 9
nv_x{} 10
  nv_y 11
nv_z{le="+Inf"} +Inf
nv_z{le="0.5"} -Inf
nv_z{quantile="0.5"} NaN
nv_z 1.5e-3
nv_crlf 12
{"nv.utf8", model="m"} 13
nv_w{model="ünï"} 14
"""


def test_both_paths_agree_on_tricky_lines() -> None:
    text = TRICKY.replace("nv_crlf 12\n", "nv_crlf 12\r\n").replace("nv_y 11\n", "nv_y 11 \t\n")
    page = parse_metrics(text, 0.0)
    reference = [sample for line in TRICKY.splitlines()
                 if line.strip() and not line.startswith("#")
                 for sample in parse_line(line.strip()) or []]
    assert page.bad_lines == 0
    assert [(s.name, s.labels) for s in page.samples] == [(s.name, s.labels) for s in reference]
    values = [s.value for s in page.samples]
    assert values[:12] == [3.0, 1000.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, math.inf,
                           -math.inf]
    assert math.isnan(values[12]) and all(type(value) is float for value in values)
    by_name = {s.name: s for s in page.samples}
    assert page.samples[5].labels == {"model": 'f"g\\h\ni'}
    assert page.samples[6].labels == {"model": "j,k}l"}
    assert by_name["nv.utf8"].labels == {"model": "m"} and by_name["nv_crlf"].value == 12
    assert by_name["nv_w"].labels == {"model": "ünï"}


def test_garbage_lines_are_counted_and_the_rest_kept() -> None:
    text = "\n".join([
        "# TYPE nv_inference_count counter",
        'nv_inference_count{model="a",version="1"} 1',
        "<html>garbage</html>",
        'nv_inference_count{model="b",version="1"} 2',
        'nv_inference_count{model="c",version="1"} x',
        'nv_inference_count{model="d",model="d"} 3',
        'nv_inference_count{model="e"} 1_000',
        "nv_inference_count{model=f} 4",
        'nv_inference_count{model="g",version="1"} 5',
        "",
    ])
    # The whole-page parser gives up at the first bad line; this one goes on.
    with pytest.raises(ValueError):
        list(text_string_to_metric_families(text))
    scraped = parse_metrics(text, 0.0)
    assert scraped.bad_lines == 5
    assert [(s.labels["model"], s.value) for s in scraped.samples] == [
        ("a", 1.0), ("b", 2.0), ("g", 5.0)]
    assert all(s.name == "nv_inference_count" for s in scraped.samples)


def test_summary_and_histogram_samples_keep_their_names() -> None:
    text = """# TYPE nv_s summary
nv_s_count{model="m",version="1"} 3
nv_s_sum{model="m",version="1"} 25060
nv_s{model="m",version="1",quantile="0.99"} 373
# TYPE nv_h histogram
nv_h_bucket{model="m",version="1",le="10"} 1
nv_h_bucket{model="m",version="1",le="+Inf"} 3
nv_h_count{model="m",version="1"} 3
nv_h_sum{model="m",version="1"} 40.5
"""
    names = [(s.name, s.labels.get("quantile") or s.labels.get("le"))
             for s in parse_metrics(text, 0.0).samples]
    assert names == [("nv_s_count", None), ("nv_s_sum", None), ("nv_s", "0.99"),
                     ("nv_h_bucket", "10"), ("nv_h_bucket", "+Inf"), ("nv_h_count", None),
                     ("nv_h_sum", None)]


def test_samples_do_not_share_label_dicts() -> None:
    text = 'nv_a{model="m"} 1\nnv_b{model="m"} 2\n'
    first, second = parse_metrics(text, 0.0).samples
    first.labels["model"] = "changed"
    assert second.labels == {"model": "m"}


# --- scrape: what goes wrong -------------------------------------------------------------------

NODE_EXPORTER = "# TYPE go_goroutines gauge\ngo_goroutines 8\nprocess_open_fds 12\n"
GOOD = 'nv_inference_count{model="m",version="1"} 7\nnv_cpu_utilization 0.5\n'
ROUTES: dict[str, tuple[int, str, bytes]] = {
    "/metrics": (200, "text/plain; charset=utf-8", GOOD.encode()),
    "/partly": (200, "text/plain", (GOOD + "{{ broken\n").encode()),
    "/html": (200, "text/html", b"<!DOCTYPE html>\n<html><body>Grafana</body></html>\n"),
    "/json": (200, "application/json", b'{"error": "not found"}\n'),
    "/empty": (200, "text/plain", b""),
    "/comments": (200, "text/plain", b"# HELP nv_gpu_utilization GPU utilization\n"),
    "/node": (200, "text/plain", NODE_EXPORTER.encode()),
    "/fail": (500, "text/plain", b"Internal Server Error: metrics registry locked " * 20),
    # Served with a Content-Length ten times the body, then the connection closes.
    "/cut": (200, "text/plain", GOOD.encode()),
}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        status, content_type, body = ROUTES.get(self.path, (404, "text/plain", b"Not Found"))
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body) * (10 if self.path == "/cut" else 1)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


@pytest.fixture(scope="module")
def pages() -> Iterator[str]:
    """The base URL of a local HTTP server answering ROUTES."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _unavailable(url: str, timeout: float = 5) -> str:
    with pytest.raises(SourceUnavailable) as caught:
        scrape(url, timeout)
    message = str(caught.value)
    assert url in message
    return message


def test_good_page(pages: str) -> None:
    before = time.time()
    scraped = scrape(pages + "/metrics", 5)
    assert before <= scraped.at <= time.time()
    assert scraped.samples[0] == MetricSample("nv_inference_count", {"model": "m", "version": "1"},
                                              7.0)


def test_a_page_with_some_bad_lines_is_still_a_scrape(pages: str) -> None:
    scraped = scrape(pages + "/partly", 5)
    assert len(scraped.samples) == 2 and scraped.bad_lines == 1


@pytest.mark.parametrize(("path", "words"), [
    ("/html", ["did not return Prometheus text", "text/html", "'<!DOCTYPE html>'", ":8002"]),
    ("/json", ["did not return Prometheus text", "application/json"]),
    ("/empty", ["no sample from Triton (nv_*)", "metrics port"]),
    ("/comments", ["no sample from Triton"]),
    ("/node", ["2 samples, none of them from Triton", "--metrics-port"]),
    ("/fail", ["HTTP 500: Internal Server Error: metrics registry locked"]),
    ("/nowhere", ["HTTP 404 (Triton serves them at /metrics): Not Found"]),
    ("/cut", ["the connection closed before the page was complete"]),
])
def test_wrong_pages(pages: str, path: str, words: list[str]) -> None:
    message = _unavailable(pages + path)
    assert all(word in message for word in words), message


def test_http_error_body_is_cut(pages: str) -> None:
    message = _unavailable(pages + "/fail")
    assert len(message) < len(pages) + 300


def test_oversized_page_is_refused(pages: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics, "MAX_PAGE_BYTES", 16)
    assert "bytes read or declared); refused" in _unavailable(pages + "/metrics")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_connection_refused() -> None:
    message = _unavailable(f"http://127.0.0.1:{_free_port()}/metrics")
    assert "connection refused" in message and "--allow-metrics=true" in message


def test_not_a_url() -> None:
    with pytest.raises(SourceUnavailable, match="not-a-url"):
        scrape("not-a-url", 1)


def test_a_server_that_never_answers(silent_port: int) -> None:
    started = time.monotonic()
    message = _unavailable(f"http://127.0.0.1:{silent_port}/metrics", timeout=1.0)
    assert time.monotonic() - started < 2.0
    assert "sent no page within 1 s" in message


def test_a_server_that_trickles() -> None:
    """Headers, then a line every 0.2 s: the whole download is bounded, not each wait."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    done = threading.Event()

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
            while not done.wait(0.2):
                try:
                    connection.sendall(b"nv_x 1\n")
                except OSError:
                    return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    started = time.monotonic()
    try:
        message = _unavailable(f"http://127.0.0.1:{listener.getsockname()[1]}/m", timeout=1.0)
    finally:
        done.set()
        thread.join()
        listener.close()
    assert time.monotonic() - started < 2.0
    assert "bytes of its page in 1 s" in message


# --- MetricsView on recorded scrapes -----------------------------------------------------------


def _scrape(at: float, text: str) -> MetricsScrape:
    return parse_metrics(text, at)


def _view(*pages: str) -> MetricsView:
    return MetricsView(MetricsEvidence("u", [_scrape(10.0 * i, page) for i, page in
                                             enumerate(pages)]))


FIRST = """nv_inference_count{model="a",version="1"} 10
nv_inference_count{model="a",version="2"} 5
nv_inference_count{model="b",version="1"} 100
nv_inference_request_failure{model="a",reason="BACKEND",version="1"} 1
nv_inference_request_failure{model="a",reason="REJECTED",version="1"} 0
"""
LAST = """nv_inference_count{model="a",version="1"} 25
nv_inference_count{model="a",version="2"} 5
nv_inference_count{model="b",version="1"} 3
nv_inference_count{model="c",version="1"} 4
nv_inference_request_failure{model="a",reason="BACKEND",version="1"} 3
nv_inference_request_failure{model="a",reason="REJECTED",version="1"} 2
nv_inference_request_summary_us{model="a",version="1",quantile="0.99"} 900
nv_inference_request_summary_us{model="a",version="2",quantile="0.99"} 1200
nv_inference_request_summary_us{model="a",version="1",quantile="0.5"} NaN
nv_cpu_utilization 0.25
"""


def test_view_values_and_deltas() -> None:
    view = _view(FIRST, "", LAST)
    assert view.value("nv_inference_count") == 37
    assert view.value("nv_inference_count", model="a") == 30
    assert view.value("nv_inference_count", model="a", version="2") == 5
    assert view.value("nv_inference_count", model="zzz") is None
    assert view.value("nv_cpu_utilization") == 0.25
    assert view.delta("nv_inference_count", model="a") == 15
    # b went from 100 to 3: its server restarted or it was reloaded.
    assert view.delta("nv_inference_count", model="b") is None
    assert view.delta("nv_inference_count") is None
    # c appeared: loaded during the window, its counter started at 0.
    assert view.delta("nv_inference_count", model="c") == 4
    assert view.delta("nv_inference_request_failure", model="a") == 4
    assert view.delta("nv_inference_request_failure", reason="REJECTED") == 2
    assert view.delta("nv_inference_count", model="a", version="2") == 0
    assert view.per_model("nv_inference_request_failure") == {("a", "1"): 5}
    assert view.per_model("nv_cpu_utilization") == {}


def test_view_quantiles() -> None:
    view = _view(FIRST, LAST)
    # Two versions: a quantile cannot be summed, so the worst is given.
    assert view.quantile("nv_inference_request_summary_us", "a", 0.99) == 1200
    assert view.quantile("nv_inference_request_summary_us", "a", 0.99, version="1") == 900
    # NaN: no observation in the summary's window.
    assert view.quantile("nv_inference_request_summary_us", "a", 0.5) is None
    assert view.quantile("nv_inference_request_summary_us", "b", 0.99) is None


def test_view_with_one_scrape_or_none() -> None:
    one = _view(LAST)
    assert one.delta("nv_inference_count") is None
    assert one.value("nv_inference_count", model="c") == 4
    empty = MetricsView(MetricsEvidence("u", []))
    assert empty.value("nv_inference_count") is None and empty.per_model("x") == {}
    assert empty.quantile("x", "a", 0.5) is None and empty.names == frozenset()
