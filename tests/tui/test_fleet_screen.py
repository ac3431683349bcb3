"""``watch --prometheus``: the fleet screen and the drill into one replica, driven with Pilot.

The fleet is built here as the collector lays one out (each replica's counters as two
statistics samples a window apart): four replicas serving resnet and bert, one of them ten
times slower on resnet than its peers (TD901), and a fifth that Prometheus cannot scrape
(TD904). The engine judges it as ``check --prometheus`` does.
"""

from __future__ import annotations

import copy
import json
import socket
import urllib.parse
from pathlib import Path

import pytest
from textual.pilot import Pilot
from triton_doctor import cli, snapshot
from triton_doctor.evidence import (
    Evidence,
    FleetEvidence,
    FleetReplica,
    FleetTarget,
    MetricsEvidence,
    MetricsScrape,
    ModelStats,
    ServerEvidence,
    ServerSample,
)
from triton_doctor.findings import Finding, Location, Severity
from triton_doctor.invocation import Fleet, Invocation, Output, Sources
from triton_doctor.tui import launch
from triton_doctor.tui.app import WatchApp
from triton_doctor.tui.findings import FindingsScreen
from triton_doctor.tui.fleet import (
    FLEET_INTERVAL_S,
    FleetApp,
    FleetScreen,
    FleetSource,
    cell,
    fleet_app,
)
from triton_doctor.tui.model import ModelScreen
from triton_doctor.tui.overview import OverviewScreen

from fixtures.generate.fleet_sim import Anomaly, FleetServer, prometheus_config
from fixtures.generate.fleet_sim import Fleet as SimulatedFleet
from tests.conftest import _missing
from tests.monitoring_harness import binary, get, start_prometheus, wait_until
from tests.tui.support import SIZE, Reads, column, judge, play, settle, table, text_of

AT, WINDOW_S = 1.7e9, 60.0
HEALTHY = {"resnet": (300, 20.0), "bert": (300, 30.0)}
SLOW, DOWN = "triton-3:8002", "triton-4:8002"
UNREACHABLE = "cannot connect to Prometheus at http://prometheus:9090: connection refused"


def replica(instance: str, models: dict[str, tuple[int, float]],
            queue_ms: float = 0.5) -> FleetReplica:
    """A replica whose models each had ``requests`` requests of ``ms`` each in the window,
    ``queue_ms`` of it in the queue."""
    before = [ModelStats(name, "1") for name in models]
    after = [ModelStats(name, "1", inference_count=requests, execution_count=requests,
                        success_count=requests, success_ns=int(requests * ms * 1e6),
                        queue_ns=int(requests * queue_ms * 1e6),
                        compute_infer_ns=int(requests * (ms - queue_ms) * 1e6))
             for name, (requests, ms) in models.items()]
    server = ServerEvidence(url=instance, live=True, ready=True, from_metrics=True, samples=[
        ServerSample(AT - WINDOW_S, before), ServerSample(AT, after)])
    metrics = MetricsEvidence(url=f"http://prometheus:9090 (instance {instance})",
                              scrapes=[MetricsScrape(AT - WINDOW_S), MetricsScrape(AT)])
    return FleetReplica(instance, server, metrics, versions={name: ["1"] for name in models})


def fleet_evidence(queue_ms: float = 0.5) -> Evidence:
    """The fleet; with ``queue_ms`` of 10 or more the replicas other than the slow one queue
    more than they compute (TD611 on each of their models)."""
    replicas = [replica(f"triton-{i}:8002", HEALTHY, queue_ms) for i in range(3)]
    replicas.append(replica(SLOW, {**HEALTHY, "resnet": (300, 200.0)}))
    targets = [FleetTarget(r.instance, "triton", 1.0, "up") for r in replicas]
    targets.append(FleetTarget(DOWN, "triton", 0.0, "down", "connection refused"))
    return Evidence(fleet=FleetEvidence("http://prometheus:9090", 'job="triton"', WINDOW_S, AT,
                                        targets, replicas))


def engine_unreachable() -> Evidence:
    evidence = Evidence()
    evidence.unavailable["fleet"] = evidence.unreachable["fleet"] = UNREACHABLE
    return evidence


def app_over(*evidence: Evidence, live: bool = False) -> FleetApp:
    reads = Reads(*(copy.deepcopy(e) for e in evidence))
    return FleetApp(FleetSource(collect=reads, judge=judge, title="prometheus test", live=live,
                                taken_at=AT), selector='job="triton"', window_s=WINDOW_S)


def fleet_rows(app: WatchApp) -> list[str]:
    return column(app, "#replicas", "replica")


# --- the table -------------------------------------------------------------------------------


def test_replicas_are_listed_worst_first_each_model_its_worst_finding() -> None:
    async def scenario() -> None:
        app = app_over(fleet_evidence())
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert isinstance(app.screen, FleetScreen)
            # The down replica (an error), then the outlier, then the healthy by name.
            assert fleet_rows(app) == [DOWN, SLOW, "triton-0:8002", "triton-1:8002",
                                       "triton-2:8002"]
            assert column(app, "#replicas", "up") == ["down", "up", "up", "up", "up"]
            assert column(app, "#replicas", "(replica)") == ["✗ TD904", "ok", "ok", "ok", "ok"]
            assert column(app, "#replicas", "model:resnet") == ["-", "! TD901", "ok", "ok",
                                                                "ok"]
            assert column(app, "#replicas", "model:bert") == ["-", "ok", "ok", "ok", "ok"]
            assert column(app, "#replicas", "req/s") == ["-", "10.0", "10.0", "10.0", "10.0"]
            assert column(app, "#fleet-firing", "rule") == ["TD904", "TD901"]

    play(scenario())


def test_a_replica_a_fleet_rule_singles_out_comes_before_one_with_more_findings() -> None:
    async def scenario() -> None:
        app = app_over(fleet_evidence(queue_ms=15.0))
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert fleet_rows(app) == [DOWN, SLOW, "triton-0:8002", "triton-1:8002",
                                       "triton-2:8002"]
            assert column(app, "#replicas", "findings") == ["1", "1", "2", "2", "2"]
            assert column(app, "#replicas", "model:resnet")[1:3] == ["! TD901", "! TD611"]
            assert column(app, "#replicas", "model:bert")[1:3] == ["ok", "! TD611"]

    play(scenario())


def test_a_cell_shows_the_worst_finding_and_how_many_more() -> None:
    def found(rule: str, severity: Severity) -> Finding:
        return Finding(rule, "x", severity, "x", None, None, Location(None), "m", None, None, {})

    shown = cell([found("TD611", Severity.WARNING), found("TD613", Severity.ERROR),
                  found("TD612", Severity.WARNING)], served=True)
    assert shown.plain == "✗ TD613 +2"
    assert cell([found("TD611", Severity.WARNING), found("TD901", Severity.WARNING)],
                served=True).plain == "! TD901 +1"
    assert (cell([], served=True).plain, cell([], served=False).plain) == ("ok", "-")


def test_the_header_names_the_engine_selector_window_and_replicas() -> None:
    async def scenario() -> None:
        app = app_over(fleet_evidence())
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            header = text_of(app, "#status")
            assert "prometheus test (http://prometheus:9090)" in header
            assert '{job="triton"}' in header
            assert "window 1m 00s" in header
            assert "5 replicas (4 up, 1 down)" in header
            assert "read 22:13:20Z" in header

    play(scenario())


def test_a_replica_that_becomes_the_worst_moves_to_the_top() -> None:
    healed = fleet_evidence()
    assert healed.fleet is not None
    healed.fleet.targets[-1].up = 1.0
    healed.fleet.replicas.append(replica(DOWN, HEALTHY))

    async def scenario() -> None:
        app = app_over(healed, fleet_evidence(), live=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert fleet_rows(app)[0] == SLOW
            assert column(app, "#replicas", "up")[-1] == "up"
            await pilot.press("r")
            await settle(app, pilot)
            assert fleet_rows(app)[:2] == [DOWN, SLOW]

    play(scenario())


# --- into a replica and back -------------------------------------------------------------------


def test_enter_shows_the_replicas_own_screens_and_esc_comes_back_to_the_fleet() -> None:
    async def scenario() -> None:
        app = app_over(fleet_evidence())
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("down", "enter")
            await settle(app, pilot)
            assert isinstance(app.screen, OverviewScreen)
            assert f"replica {SLOW}" in text_of(app, "#status")
            assert column(app, "#models", "model") == ["bert", "resnet"]
            assert column(app, "#models", "req/s") == ["5.0", "5.0"]
            assert column(app, "#firing", "rule") == ["TD901"]
            await pilot.press("down", "enter")
            await settle(app, pilot)
            assert isinstance(app.screen, ModelScreen) and app.screen.model == "resnet"
            assert column(app, "#model-findings", "rule") == ["TD901"]
            await pilot.press("escape", "escape")
            await settle(app, pilot)
            assert isinstance(app.screen, FleetScreen)
            assert app.replica is None and app.history is app.fleet
            assert f"replica {SLOW}" not in text_of(app, "#status")
            assert fleet_rows(app)[1] == SLOW

    play(scenario())


def test_a_down_replica_shows_as_out_of_reach_with_what_prometheus_says() -> None:
    async def scenario() -> None:
        app = app_over(fleet_evidence())
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("enter")
            await settle(app, pilot)
            assert isinstance(app.screen, OverviewScreen)
            assert "server unreachable" in text_of(app, "#status")
            assert "connection refused" in text_of(app, "#sources")
            assert column(app, "#firing", "rule") == ["TD904"]
            assert column(app, "#models", "model") == []

    play(scenario())


def test_a_replica_finding_in_the_fleets_findings_opens_that_replica() -> None:
    """f lists the fleet's findings; Enter on TD901 opens the slow replica's model screen, and
    Esc goes back through the replica's overview to the fleet's findings."""
    async def scenario() -> None:
        app = app_over(fleet_evidence())
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("f")
            await settle(app, pilot)
            assert column(app, "#findings", "rule") == ["TD904", "TD901"]
            await pilot.press("down", "enter")
            await settle(app, pilot)
            assert isinstance(app.screen, ModelScreen) and app.replica == SLOW
            await pilot.press("escape")
            assert isinstance(app.screen, OverviewScreen) and app.replica == SLOW
            await pilot.press("escape")
            await settle(app, pilot)
            assert isinstance(app.screen, FindingsScreen) and app.replica is None
            assert column(app, "#findings", "rule") == ["TD904", "TD901"]
            await pilot.press("escape")
            assert isinstance(app.screen, FleetScreen)

    play(scenario())


# --- the engine out of reach -------------------------------------------------------------------


def test_an_engine_out_of_reach_is_said_and_the_last_table_stays() -> None:
    async def scenario() -> None:
        app = app_over(fleet_evidence(), engine_unreachable(), live=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("r")
            await settle(app, pilot)
            header = text_of(app, "#status")
            assert f"engine unreachable: {UNREACHABLE}" in header
            assert "(table from 22:13:20Z)" in header
            assert len(fleet_rows(app)) == 5
            assert column(app, "#fleet-firing", "rule") == ["TD603"]
            assert app.is_running

    play(scenario())


def test_an_engine_out_of_reach_from_the_start_leaves_an_empty_table() -> None:
    async def scenario() -> None:
        app = app_over(engine_unreachable(), live=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert "engine unreachable" in text_of(app, "#status")
            assert fleet_rows(app) == []
            await pilot.press("enter")
            assert isinstance(app.screen, FleetScreen)

    play(scenario())


def _closed_port() -> int:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        return int(held.getsockname()[1])


def _headless(check: object) -> object:
    def run(app: WatchApp) -> None:
        async def scenario() -> None:
            async with app.run_test(size=SIZE) as pilot:
                await settle(app, pilot)
                await check(app, pilot)  # type: ignore[operator]

        play(scenario())

    return run


def test_watch_prometheus_on_a_closed_port_shows_the_engine_unreachable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the command line: the fleet screen, the engine said out of reach (TD603)."""
    seen: list[str] = []

    async def check(app: WatchApp, _: object) -> None:
        assert isinstance(app, FleetApp) and isinstance(app.screen, FleetScreen)
        seen.append(text_of(app, "#status"))
        assert column(app, "#fleet-firing", "rule") == ["TD603"]

    monkeypatch.setattr(launch, "_require_terminal", lambda command: None)
    monkeypatch.setattr(WatchApp, "run", _headless(check))
    url = f"http://127.0.0.1:{_closed_port()}"
    assert cli.main(["watch", "--prometheus", url, "--selector", '{job="triton"}',
                     "--window", "2m", "--timeout", "2"]) == 0
    assert seen and "engine unreachable" in seen[0]
    assert f"prometheus {url}" in seen[0] and '{job="triton"}' in seen[0]
    assert "window 2m 00s" in seen[0] and "every 5 s" in seen[0]


# --- snapshots ------------------------------------------------------------------------------


def test_watch_snapshot_of_a_fleet_shows_the_fleet_screen(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "fleet.json"
    snapshot.write(fleet_evidence(), str(path))
    seen: list[list[str]] = []

    async def check(app: WatchApp, _: object) -> None:
        assert isinstance(app.screen, FleetScreen)
        seen.append(fleet_rows(app))

    monkeypatch.setattr(launch, "_require_terminal", lambda command: None)
    monkeypatch.setattr(WatchApp, "run", _headless(check))
    assert cli.main(["watch", "--snapshot", str(path)]) == 0
    assert seen == [[DOWN, SLOW, "triton-0:8002", "triton-1:8002", "triton-2:8002"]]


def test_s_saves_the_whole_fleet_even_from_a_replicas_screen(tmp_path: Path) -> None:
    async def scenario() -> None:
        app = app_over(fleet_evidence())
        app.save_dir = str(tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("down", "enter")
            await settle(app, pilot)
            assert app.replica == SLOW
            await pilot.press("s")

    play(scenario())
    [saved] = tmp_path.glob("triton-doctor-*.json")
    fleet = json.loads(saved.read_text())["evidence"]["fleet"]
    assert len(fleet["replicas"]) == 4 and len(fleet["targets"]) == 5


# --- polling ------------------------------------------------------------------------------


@pytest.mark.parametrize(("asked", "polled"), [(1.0, FLEET_INTERVAL_S), (30.0, 30.0)])
def test_a_fleet_is_read_at_most_every_five_seconds(asked: float, polled: float) -> None:
    invocation = Invocation("watch", Sources(fleet=Fleet("http://prometheus:9090"),
                                             window_s=900.0), output=Output(interval_s=asked))
    assert fleet_app(invocation, Evidence()).interval_s == polled


def test_the_replica_tables_keep_no_log_key() -> None:
    async def scenario() -> None:
        app = app_over(fleet_evidence())
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert app.check_action("log", ()) is False
            assert table(app, "#replicas").row_count == 5

    play(scenario())


# --- end to end: the real Prometheus scraping the simulated fleet ------------------------------

E2E_WINDOW_S = 8


def _held(url: str) -> list[float]:
    """Samples of ``up`` Prometheus holds of each replica over the window and 3 s more."""
    query = urllib.parse.urlencode({"query": f'count_over_time(up{{job="sim"}}'
                                             f'[{E2E_WINDOW_S + 3}s])'})
    answer = json.loads(get(f"{url}/api/v1/query?{query}"))
    return [float(row["value"][1]) for row in answer["data"]["result"]]


def test_watch_prometheus_on_the_simulated_fleet(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    """Four simulated replicas under the real Prometheus: the down one first (TD904), then the
    one six times slower (TD901); Enter on it shows its two models with their traffic."""
    if binary("prometheus") is None:
        _missing("prometheus not found: apt-get install prometheus (scripts/test.sh does)")
    fleet = SimulatedFleet(4, 2, anomalies={2: Anomaly("slow", factor=6.0), 3: Anomaly("down")},
                  seed=16)
    seen: dict[str, list[str]] = {}

    async def check(app: WatchApp, pilot: Pilot[None]) -> None:
        seen["header"] = [text_of(app, "#status")]
        seen["rows"] = fleet_rows(app)
        seen["whole"] = column(app, "#replicas", "(replica)")
        seen["second"] = [str(cell) for cell in table(app, "#replicas").get_row_at(1)]
        await pilot.press("down", "enter")
        await settle(app, pilot)
        seen["models"] = column(app, "#models", "req/s")

    with FleetServer(fleet) as server:
        service = start_prometheus(prometheus_config(server.port, "sim", 4, 1.0), tmp_path)
        try:
            wait_until(lambda: len(held := _held(service.url)) == 4
                       and min(held) >= E2E_WINDOW_S + 2, 60, "Prometheus holding a window",
                       every=1.0)
            monkeypatch.setattr(launch, "_require_terminal", lambda command: None)
            monkeypatch.setattr(WatchApp, "run", _headless(check))
            assert cli.main(["watch", "--prometheus", service.url, "--selector",
                             '{job="sim"}', "--window", f"{E2E_WINDOW_S}s"]) == 0
        finally:
            service.stop()
    assert "4 replicas (3 up, 1 down)" in seen["header"][0], seen
    assert seen["rows"][:2] == ["triton-3:8002", "triton-2:8002"], seen
    assert seen["whole"][0] == "✗ TD904", seen
    assert any("TD901" in cell for cell in seen["second"]), seen
    assert len(seen["models"]) == 2 and "-" not in seen["models"], seen
