"""The exporter's HTTP endpoints: /metrics for Prometheus, /findings for the values behind an
alert, /rules/ID for a rule's documentation (the alerts' runbook links), / to say what is here.

A scrape only reads the ledger (series are made from the latest checks under one lock), so it
never waits on a server being checked.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder
from triton_doctor import __version__
from triton_doctor.commands import say
from triton_doctor.registry import Rule


class ExporterServer(HTTPServer):
    """Serves each connection on one of a few threads kept for the purpose: a new thread per
    scrape, for days, spreads the allocator over more and more arenas (memory that grows
    without a leak), and a flood of connections must not become a flood of threads. IPv6 when
    the host is an IPv6 address."""

    #: Connections served at once; more wait their turn (a scrape takes milliseconds).
    WORKERS = 4

    def __init__(self, address: tuple[str, int], registry: CollectorRegistry,
                 reports: Callable[[], list[dict[str, Any]]], rules: Sequence[Rule]) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.registry = registry
        self.reports = reports
        self.rules = {rule.id: rule for rule in rules}
        self._workers = ThreadPoolExecutor(self.WORKERS, thread_name_prefix="http")
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        self._workers.submit(self._serve, request, client_address)

    def _serve(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except OSError:  # the client went away mid-answer: nothing to tell anyone
            pass
        except Exception as error:  # a defect: the client's connection closes, the rest serves
            say(f"answering {client_address[0]}: internal error ({type(error).__name__}: "
                f"{error}); please report it")
        finally:
            self.shutdown_request(request)

    def server_close(self) -> None:
        super().server_close()
        self._workers.shutdown(wait=False, cancel_futures=True)


class _Handler(BaseHTTPRequestHandler):
    server: ExporterServer
    server_version = f"triton-doctor/{__version__}"
    #: Seconds a connection may sit idle: each holds one of the few threads.
    timeout = 10

    def do_GET(self) -> None:
        path = urlsplit(self.path).path.rstrip("/") or "/"
        if path == "/metrics":
            encoder, content_type = choose_encoder(self.headers.get("Accept", ""))
            self._send(200, content_type, encoder(self.server.registry))
        elif path == "/findings":
            body = json.dumps({"servers": self.server.reports()}, indent=2) + "\n"
            self._send(200, "application/json", body.encode())
        elif path.startswith("/rules/"):
            rule = self.server.rules.get(unquote(path[len("/rules/"):]).upper())
            if rule is None:
                self._send(404, "text/plain; charset=utf-8", b"no such rule\n")
            else:
                text = f"{rule.id} {rule.name} ({rule.severity}): {rule.title}\n\n{rule.doc}\n"
                self._send(200, "text/plain; charset=utf-8", text.encode())
        elif path == "/":
            self._send(200, "text/plain; charset=utf-8", _INDEX.encode())
        else:
            self._send(404, "text/plain; charset=utf-8", b"not found; see /\n")

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes every few seconds would flood stderr; failures are the checks' to say."""


_INDEX = """triton-doctor exporter
/metrics      the findings and the checks' health, for Prometheus (scrape with honor_labels)
/findings     the latest findings in full: messages with their values, fixes (JSON)
/rules/TD611  a rule's documentation
"""
