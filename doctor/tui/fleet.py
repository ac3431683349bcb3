"""``watch --prometheus``: a fleet of replicas as one table, each replica's own screens a key away.

Each poll reads the fleet from Prometheus and judges it once (fleet rules and, per replica, the
live rules). The read thread also cuts the judged fleet into one Frame per replica (its Evidence
as the live rules read it, the findings naming it), so that Enter on a replica shows the
overview, model and findings screens ``watch --url`` has, over that replica's own History.
"""

from __future__ import annotations

import os
import time
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Footer, Label, Static
from triton_doctor.catalogue import find_rule
from triton_doctor.evidence import Evidence, FleetEvidence, FleetReplica, FleetTarget
from triton_doctor.findings import Finding, Severity
from triton_doctor.invocation import Invocation
from triton_doctor.printable import printable
from triton_doctor.records import field, record
from triton_doctor.result import Result
from triton_doctor.triton.fleet_model import FleetView
from triton_doctor.tui.app import WatchApp
from triton_doctor.tui.overview import OverviewScreen
from triton_doctor.tui.screen import FrameScreen
from triton_doctor.tui.sources import Source
from triton_doctor.tui.state import Frame, History, frame_time, watch_key
from triton_doctor.tui.tables import Row, fill, new_table, original_key, set_columns
from triton_doctor.tui.text import (
    SEVERITY_MARKS,
    SEVERITY_STYLES,
    clipped,
    clock,
    duration,
    number,
    severity,
)

#: The least time between two reads of a fleet: Prometheus's series change once a scrape
#: (15 s or more, usually) and every read is a handful of range queries over the whole fleet.
FLEET_INTERVAL_S = 5.0
#: The column of the findings about a replica as a whole (its GPU, whether it is up).
WHOLE = "(replica)"
FIXED_COLUMNS = ("replica", "up", "req/s", "findings", WHOLE)
FIRING_COLUMNS = ("severity", "rule", "replica", "model", "message")


@record(frozen=True)
class FleetFrame(Frame):
    """A judged fleet reading and, by instance, each replica's part of it."""

    replicas: dict[str, Frame] = field(default_factory=dict)


def fleet_frame(at: float, evidence: Evidence, result: Result) -> FleetFrame:
    """Cut the fleet into replica Frames: each replica's Evidence and the findings naming it
    (their model tables worked out here, in the read thread, not in the UI's)."""
    fleet = evidence.fleet
    if fleet is None:
        return FleetFrame(at, evidence, result)
    view = FleetView(fleet, evidence.options)
    read = {replica.instance: replica for replica in fleet.replicas}
    targets = {target.instance: target for target in fleet.targets}
    replicas: dict[str, Frame] = {}
    for instance in sorted(read.keys() | targets.keys()):
        replica = read.get(instance)
        own = replica_alone(view, replica, targets.get(instance), evidence)
        found = [f for f in result.findings if f.instance == instance]
        frame = Frame(at, own, Result(findings=found))
        _ = frame.models  # worked out now, in the read thread
        replicas[instance] = frame
    return FleetFrame(at, evidence, result, replicas)


def replica_alone(view: FleetView, replica: FleetReplica | None, target: FleetTarget | None,
                  evidence: Evidence) -> Evidence:
    """One replica as the live rules read one server; one with no series at the window's
    end (down, or gone) as a server out of reach, with what Prometheus says of it."""
    if replica is not None:
        own = view.replica_evidence(replica)
    else:
        own = Evidence(options=evidence.options)
        own.unavailable["server"] = _why_unread(target)
    own.repository = evidence.repository
    return own


def _why_unread(target: FleetTarget | None) -> str:
    if target is None or target.up is None:
        return "it no longer reports to Prometheus (its target is gone)"
    error = f": {target.last_error}" if target.last_error else ""
    return f"Prometheus cannot scrape it (up {target.up:g}){error}"


@record
class FleetSource(Source):
    """A Source whose readings are FleetFrames."""

    def read(self) -> FleetFrame:
        evidence = self.collect()
        at = frame_time(evidence, self.taken_at if self.taken_at is not None else time.time())
        return fleet_frame(at, evidence, self.judge(evidence))


# --- the table -----------------------------------------------------------------------------


@record(frozen=True)
class ReplicaRow:
    """One replica as the fleet table shows it."""

    instance: str
    #: "up", "down" (Prometheus cannot scrape it), "gone" (it stopped reporting), "?" unknown.
    up: str
    requests_per_s: float | None
    findings: list[Finding]
    #: The models with traffic counters on this replica.
    served: frozenset[str]

    @property
    def worst(self) -> Severity | None:
        return max((f.severity for f in self.findings), default=None)

    @property
    def outlier(self) -> bool:
        """A fleet rule singles it out (slower, skewed, imbalanced, down, filling up)."""
        return any(_is_fleet_rule(f.rule) for f in self.findings)

    def about(self, model: str | None) -> list[Finding]:
        return [f for f in self.findings if f.model == model]


def _is_fleet_rule(rule_id: str) -> bool:
    found = find_rule(rule_id)
    return found is not None and found.scope == "fleet"


def replica_rows(frame: FleetFrame) -> list[ReplicaRow]:
    """The replicas, the worst first: by their worst finding, those a fleet rule singles out
    before the rest, then by how many findings they have, then by name."""
    fleet = frame.evidence.fleet
    targets = {t.instance: t for t in fleet.targets} if fleet else {}
    rows = []
    for instance, replica in frame.replicas.items():
        rates = [row.requests_per_s for row in replica.models if row.requests_per_s is not None]
        rows.append(ReplicaRow(
            instance=instance, up=_up(targets.get(instance)),
            requests_per_s=sum(rates) if rates else None,
            findings=replica.firing, served=frozenset(row.name for row in replica.models)))
    return sorted(rows, key=lambda r: (-(r.worst if r.worst is not None else -1),
                                       not r.outlier, -len(r.findings), r.instance))


def _up(target: FleetTarget | None) -> str:
    if target is None:
        return "?"
    if target.up is None:
        return "gone"
    return "up" if target.up else "down"


def model_columns(frame: FleetFrame) -> list[str]:
    """Every model a replica serves or a finding about a replica names, by name."""
    names = {row.name for replica in frame.replicas.values() for row in replica.models}
    names |= {f.model for replica in frame.replicas.values() for f in replica.result.findings
              if f.model}
    return sorted(names)


def table_rows(rows: list[ReplicaRow], models: list[str]) -> list[Row]:
    return [(row.instance, (
        row.instance, Text(row.up, style=_UP_STYLES.get(row.up, "dim")),
        number(row.requests_per_s), str(len(row.findings)) if row.findings else "-",
        cell(row.about(None), served=True),
        *(cell(row.about(model), served=model in row.served) for model in models),
    )) for row in rows]


_UP_STYLES = {"up": "green", "down": "bold red", "gone": "yellow"}


def cell(findings: list[Finding], served: bool) -> Text:
    """The worst finding's severity mark and rule (and how many more); "ok" where none fires
    on a model the replica serves, "-" where it does not serve it."""
    if not findings:
        return Text("ok", style="green") if served else Text("-", style="dim")
    worst = max(findings, key=lambda f: (f.severity, _is_fleet_rule(f.rule), f.rule))
    shown = Text(f"{SEVERITY_MARKS[worst.severity]} {worst.rule}",
                 style=SEVERITY_STYLES[worst.severity])
    if len(findings) > 1:
        shown.append(f" +{len(findings) - 1}", style="dim")
    return shown


def firing_rows(frame: Frame | None) -> list[Row]:
    if frame is None:
        return []
    return [(watch_key(f), (severity(f.severity), f.rule, f.instance or "(fleet)",
                            f.model or "-", clipped(f.message)))
            for f in sorted(frame.result.findings,
                            key=lambda f: (-f.severity, f.instance or "", f.model or "",
                                           f.rule))]


# --- the screen and the app ----------------------------------------------------------------


class FleetScreen(FrameScreen):
    """``watch --prometheus``'s first screen: a row per replica, a column per model."""

    DEFAULT_CSS: ClassVar[str] = """
    FleetScreen #replicas { height: 2fr; }
    FleetScreen #fleet-firing { height: 1fr; }
    FleetScreen .heading { text-style: bold; margin-top: 1; }
    """

    @property
    def fleet_app(self) -> FleetApp:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield from self.status_bar()
        yield Label("Replicas  (worst first; each cell the worst finding: ✗ error, ! warning; "
                    "Enter: the replica's screens)", classes="heading")
        yield new_table("replicas", FIXED_COLUMNS)
        yield Label("Firing  (Enter: the finding in full)", classes="heading")
        yield new_table("fleet-firing", FIRING_COLUMNS)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#replicas", DataTable).focus()

    def on_screen_resume(self) -> None:
        self.fleet_app.leave_replica()
        super().on_screen_resume()

    def show(self, history: History) -> None:
        """Drawn from the fleet's own frames whatever ``history`` is: a read can land between
        leaving a replica's screen and this one's resuming."""
        app = self.fleet_app
        self.query_one("#status", Static).update(fleet_line(app))
        frame = app.last_read
        replicas = self.query_one("#replicas", DataTable)
        models = model_columns(frame) if frame else []
        set_columns(replicas, [(name, Text(name)) for name in FIXED_COLUMNS]
                    + [(f"model:{name}", Text(printable(name))) for name in models])
        fill(replicas, table_rows(replica_rows(frame), models) if frame else [])
        fill(self.query_one("#fleet-firing", DataTable), firing_rows(app.fleet.latest))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        key = original_key(event.row_key.value or "")
        if event.data_table.id == "replicas":
            self.fleet_app.enter_replica(key)
        else:
            from triton_doctor.tui.findings import FindingsScreen

            self.app.push_screen(FindingsScreen(select=key))


def fleet_line(app: FleetApp) -> Text:
    """Where the series come from (engine, selector, window), the replicas, and how the last
    read went: an engine out of reach says so, and the table below is then the last one read."""
    line = Text.assemble((" triton-doctor ", "bold reverse"), " ",
                         (printable(app.source.title), "bold"))
    frame, good = app.fleet.latest, app.last_read
    fleet = good.evidence.fleet if good else None
    selector = fleet.selector if fleet else app.selector
    window = fleet.window_s if fleet else app.window_s
    if fleet is not None and fleet.url not in app.source.title:
        line.append(f" ({printable(fleet.url)})")
    line.append(f"  {{{printable(selector)}}}" if selector else "  every series")
    if window is not None:
        line.append(f"  window {duration(window)}")
    if good is not None:
        line.append(f"  {_counts(good)}")
    if frame is None:
        return line.append("  reading…" if not app.last_error else
                           f"  last read failed: {printable(app.last_error)}",
                           style="dim" if not app.last_error else "bold red")
    if frame.evidence.fleet is None:
        why = frame.evidence.unavailable.get("fleet", "not read")
        line.append(f"  engine unreachable: {printable(why)}", style="bold red")
        if good is not None:
            line.append(f"  (table from {clock(good.at)})", style="dim")
    else:
        line.append(f"  read {clock(frame.at)}", style="dim")
        if frame.evidence.fleet.errors or frame.evidence.fleet.warnings:
            line.append("  partial answer", style="bold yellow")
    if app.source.live:
        line.append(f"  every {app.interval_s:g} s", style="dim")
    if app.paused:
        line.append("  PAUSED", style="bold black on yellow")
    if app.last_error:
        line.append(f"  last read failed: {printable(app.last_error)}", style="bold red")
    return line


def _counts(frame: FleetFrame) -> str:
    states = [_up(t) for t in frame.evidence.fleet.targets] if frame.evidence.fleet else []
    count = len(frame.replicas)
    parts = [f"{states.count(state)} {state}" for state in ("up", "down", "gone")
             if states.count(state)]
    return f"{count} replica{'' if count == 1 else 's'}" + (
        f" ({', '.join(parts)})" if parts else "")


class FleetApp(WatchApp):
    """The watch app over a fleet: the fleet screen first; Enter on a replica shows the usual
    screens over that replica's History until Esc comes back to the fleet."""

    def __init__(self, source: FleetSource, interval_s: float = FLEET_INTERVAL_S,
                 save_dir: str = ".", selector: str = "", window_s: float | None = None,
                 ) -> None:
        super().__init__(source, interval_s=interval_s, save_dir=save_dir)
        #: The fleet's own frames; ``history`` is this one or the replica's shown.
        self.fleet = self.history
        self.replicas: dict[str, History] = {}
        #: The replica whose screens are shown, and how deep the screen stack was below them.
        self.replica: str | None = None
        self._entered_at = 0
        #: The latest reading that reached the engine (the table stays while it is away).
        self.last_read: FleetFrame | None = None
        #: What the invocation asked for, shown until a read says what the engine used.
        self.selector, self.window_s = selector, window_s

    def get_default_screen(self) -> FleetScreen:
        return FleetScreen()

    def remember(self, frame: Frame) -> None:
        self.fleet.add(frame)
        if not isinstance(frame, FleetFrame) or frame.evidence.fleet is None:
            return
        self.last_read = frame
        for instance, replica in frame.replicas.items():
            self.replicas.setdefault(instance, History()).add(replica)

    def heading(self) -> str:
        title = self.source.title
        return title if self.replica is None else f"{title}  replica {self.replica}"

    def saved_frame(self) -> Frame | None:
        """The whole fleet, whichever screen shows: ``watch --snapshot`` replays it here."""
        return self.fleet.latest

    def enter_replica(self, instance: str) -> None:
        """Show ``instance``'s overview (and what opens from it) over its own History."""
        if instance not in self.replicas:
            return
        self.replica, self.history = instance, self.replicas[instance]
        self._entered_at = len(self.screen_stack)
        self.push_screen(OverviewScreen())

    def leave_replica(self) -> None:
        self.replica, self.history = None, self.fleet

    def open_finding(self, finding: Finding) -> None:
        """From the fleet's findings, a finding about a replica opens that replica first."""
        if self.replica is None and finding.instance in self.replicas:
            assert finding.instance is not None
            self.enter_replica(finding.instance)
        super().open_finding(finding)

    def action_go_back(self) -> None:
        super().action_go_back()
        if self.replica is not None and len(self.screen_stack) <= self._entered_at:
            self.leave_replica()
            self._redraw()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """No log here: a fleet is read from Prometheus alone."""
        if action == "log":
            return False
        return super().check_action(action, parameters)


def fleet_app(invocation: Invocation, base: Evidence) -> FleetApp:
    """The app for ``watch --prometheus`` (a poll every max(--interval, FLEET_INTERVAL_S)), or
    for ``watch --snapshot`` of a fleet's snapshot (``base``, judged once, not polled)."""
    sources = invocation.sources
    if sources.snapshot:
        source = FleetSource(collect=lambda: base, judge=invocation.judge,
                             title=f"snapshot {sources.snapshot}", live=False,
                             taken_at=os.path.getmtime(sources.snapshot))
        fleet: FleetEvidence | None = base.fleet
        return FleetApp(source, save_dir=invocation.output.save_dir,
                        selector=fleet.selector if fleet else "",
                        window_s=fleet.window_s if fleet else None)
    from triton_doctor.checks.collect import hide_credentials

    asked = sources.fleet
    assert asked is not None
    from triton_doctor.checks.collect import FleetPoller

    source = FleetSource(collect=FleetPoller(invocation, base).poll,
                         judge=invocation.judge, title=f"prometheus {hide_credentials(asked.url)}",
                         live=True)
    return FleetApp(source, interval_s=max(invocation.output.interval_s, FLEET_INTERVAL_S),
                    save_dir=invocation.output.save_dir, selector=asked.selector.strip(" {}"),
                    window_s=sources.window_s)
