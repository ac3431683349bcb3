"""``triton-doctor exporter``: check each server (or the fleet, through its engine) on the
interval and serve what fires, until SIGINT or SIGTERM (exit 0)."""

from __future__ import annotations

import gc
import signal
import threading
from collections.abc import Sequence

from prometheus_client import CollectorRegistry, ProcessCollector
from triton_doctor.commands import EXIT_OK, say
from triton_doctor.evidence import Evidence
from triton_doctor.exporter.checker import Checker
from triton_doctor.exporter.series import Ledger
from triton_doctor.exporter.web import ExporterServer
from triton_doctor.invocation import Invocation
from triton_doctor.registry import Rule


class ListenError(ValueError):
    """The address to serve on cannot be listened on (exit 2)."""


def serve(invocation: Invocation, base: Evidence) -> int:
    """Raises ListenError, before anything is served, when the address cannot be listened
    on."""
    rules = invocation.rules
    output = invocation.output
    listen = output.listen
    # A fleet is one check of its engine; servers are each checked on their own.
    servers = [invocation] if invocation.sources.fleet else invocation.per_server()
    registry = CollectorRegistry(auto_describe=False)
    checkers: list[Checker] = []
    try:
        server = ExporterServer(listen, registry, lambda: [c.report for c in checkers], rules)
    except OSError as error:  # taken, or not an address of this machine
        raise ListenError(f"cannot listen on {_shown(listen[0])}:{listen[1]}: "
                          f"{error.strerror or error}") from None
    port = server.server_address[1]
    ledger = Ledger(rules, _docs(rules, output.docs_url, _own_url(listen[0], port)),
                    output.interval_s)
    registry.register(ledger)
    ProcessCollector(registry=registry)  # the exporter's own memory and CPU, to watch it
    checkers += [Checker(one, base, ledger) for one in servers]
    # What is loaded by now (modules, rules, the repository) lives as long as the process:
    # kept out of the collector's full passes, which otherwise stop a scrape for tens of ms.
    gc.freeze()
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    threads = [threading.Thread(target=server.serve_forever, name="http", daemon=True)]
    threads += [threading.Thread(target=c.run, args=(stop, output.interval_s),
                                 name=c.instance, daemon=True) for c in checkers]
    for thread in threads:
        thread.start()
    checked = (f"the fleet through {checkers[0].instance}" if invocation.sources.fleet
               else ", ".join(c.instance for c in checkers))
    say(f"serving http://{_shown(listen[0])}:{port}/metrics for {checked} every "
        f"{output.interval_s:g} s")
    while not stop.wait(1.0):  # a timeout, so that signals are handled promptly
        pass
    server.shutdown()
    server.server_close()
    return EXIT_OK


def _docs(rules: Sequence[Rule], docs_url: str | None, own_url: str) -> dict[str, str]:
    """Each rule's documentation link: the published docs at its anchor, else this exporter's
    own page for it."""
    if docs_url:
        return {rule.id: f"{docs_url}#{rule.anchor}" for rule in rules}
    return {rule.id: f"{own_url}/rules/{rule.id}" for rule in rules}


def _own_url(host: str, port: int) -> str:
    """How alerts reach this exporter: its host name when it listens on every address."""
    import socket

    if host in ("0.0.0.0", "::"):
        host = socket.getfqdn()
    return f"http://{_shown(host)}:{port}"


def _shown(host: str) -> str:
    return f"[{host}]" if ":" in host else host
