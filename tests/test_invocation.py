"""Which value wins, per field: a flag, then the settings file, then a snapshot's saved value,
then what the live server (its release) and NVML (its GPU) reveal, then the default."""

from __future__ import annotations

from pathlib import Path

import pytest
from triton_doctor import snapshot
from triton_doctor.checks.collect import collect
from triton_doctor.cli import build_parser
from triton_doctor.evidence import (
    CheckOptions,
    Evidence,
    GpuDevice,
    GpuEvidence,
    HostEvidence,
    MetricSample,
    MetricsEvidence,
    MetricsScrape,
    ServerEvidence,
)
from triton_doctor.findings import Severity
from triton_doctor.invocation import Invocation, UsageError
from triton_doctor.settings import SettingsError
from triton_doctor.triton import profiles

#: The server's release, NVML's GPU, a snapshot's saved target, the settings', the flags':
#: a different value at every level, so a swapped precedence shows.
LIVE = Evidence(server=ServerEvidence(url="http://localhost:8000", version="2.47.0"),
                gpu=GpuEvidence(devices=[GpuDevice(index=0, compute_capability="9.0")]))
SAVED = CheckOptions(disable_auto_complete_config=True, triton_version="23.05",
                     gpu_compute_capability="7.5", extra_backends=["saved_backend"],
                     extra_repo_agents=["saved_agent"],
                     thresholds={"queue-ms": 1.0})
SETTINGS = ('triton-version = "24.01"\ngpu = "A100"\nbackends = ["set_backend"]\n'
            'repo-agents = ["set_agent"]\n'
            'model-config-name = "from_settings"\nfail-on = "warning"\nselect = ["TD2"]\n'
            'ignore = ["TD201"]\n[thresholds]\nqueue-ms = 2.0\n')
FLAGS = ("--triton-version", "24.08", "--gpu", "sm_89", "--model-config-name", "from_flag",
         "--fail-on", "info", "--select", "TD1,TD2", "--ignore", "TD101")


def _check(tmp_path: Path, *flags: str, settings: str = "", target: str = "repository"
           ) -> Invocation:
    """``check`` on a repository (or a snapshot) with ``flags`` and a settings file."""
    config = tmp_path / "settings.toml"
    config.write_text(settings)
    (tmp_path / "models").mkdir(exist_ok=True)
    read = [str(tmp_path / "models")] if target == "repository" else ["--snapshot", target]
    argv = ["check", *read, *flags, "--config", str(config)]
    return Invocation.from_args(build_parser().parse_args(argv))


def test_release_flag_then_settings_then_live_then_earlier_poll_then_default(
        tmp_path: Path) -> None:
    flagged = _check(tmp_path, *FLAGS, settings=SETTINGS)
    assert flagged.options_for(LIVE).triton_version == "24.08"
    set_only = _check(tmp_path, settings=SETTINGS)
    assert set_only.options_for(LIVE).triton_version == "24.01"
    bare = _check(tmp_path)
    assert bare.options_for(LIVE).triton_version == "24.06"  # 2.47.0 is 24.06
    earlier = CheckOptions(triton_version="23.05")
    assert bare.options_for(LIVE, earlier).triton_version == "24.06"
    assert bare.options_for(Evidence(), earlier).triton_version == "23.05"
    assert bare.options_for(Evidence()).triton_version == ""  # the newest known


def test_a_release_newer_than_the_table_is_not_revealed(tmp_path: Path) -> None:
    newer = Evidence(server=ServerEvidence(url="http://localhost:8000", version="9.99.0"))
    assert _check(tmp_path).options_for(newer).triton_version == ""


def test_gpu_flag_then_settings_then_nvml_then_earlier_poll_then_default(
        tmp_path: Path) -> None:
    assert _check(tmp_path, *FLAGS, settings=SETTINGS).options_for(LIVE) \
        .gpu_compute_capability == "8.9"
    assert _check(tmp_path, settings=SETTINGS).options_for(LIVE).gpu_compute_capability == "8.0"
    bare = _check(tmp_path)
    earlier = CheckOptions(gpu_compute_capability="7.5")
    assert bare.options_for(LIVE, earlier).gpu_compute_capability == "9.0"
    assert bare.options_for(Evidence(), earlier).gpu_compute_capability == "7.5"
    assert bare.options_for(Evidence()).gpu_compute_capability == ""


def test_a_snapshot_keeps_its_target_unless_a_flag_or_setting_names_another(
        tmp_path: Path) -> None:
    flagged = _check(tmp_path, *FLAGS, settings=SETTINGS,
                     target="x.json").options_for_snapshot(SAVED)
    assert (flagged.triton_version, flagged.gpu_compute_capability) == ("24.08", "8.9")
    set_only = _check(tmp_path, settings=SETTINGS, target="x.json").options_for_snapshot(SAVED)
    assert (set_only.triton_version, set_only.gpu_compute_capability) == ("24.01", "8.0")
    assert set_only.extra_backends == ["set_backend"]
    assert set_only.extra_repo_agents == ["set_agent"]
    assert set_only.thresholds == {"queue-ms": 2.0}
    kept = _check(tmp_path, target="x.json").options_for_snapshot(SAVED)
    assert (kept.triton_version, kept.gpu_compute_capability) == ("23.05", "7.5")
    assert kept.extra_backends == ["saved_backend"] and kept.thresholds == {"queue-ms": 1.0}
    assert kept.extra_repo_agents == ["saved_agent"]


def test_a_snapshots_target_beats_the_server_it_recorded(tmp_path: Path) -> None:
    """Replayed, the saved target stands: the recorded server is not asked again."""
    saved = tmp_path / "incident.json"
    snapshot.write(Evidence(server=LIVE.server, gpu=LIVE.gpu, options=SAVED), str(saved))
    options = collect(_check(tmp_path, target=str(saved))).options
    assert (options.triton_version, options.gpu_compute_capability) == ("23.05", "7.5")


def test_a_snapshots_unknown_release_is_a_usage_error_naming_the_flag(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--triton-version RELEASE"):
        _check(tmp_path, target="x.json").options_for_snapshot(CheckOptions(triton_version="1.0"))


def test_auto_complete_flag_or_setting_but_a_snapshot_keeps_how_its_server_ran(
        tmp_path: Path) -> None:
    assert not _check(tmp_path).options_for(LIVE).disable_auto_complete_config
    assert _check(tmp_path, "--disable-auto-complete-config").target \
        .disable_auto_complete_config
    assert _check(tmp_path, settings="disable-auto-complete-config = true\n").target \
        .disable_auto_complete_config
    replay = _check(tmp_path, "--disable-auto-complete-config", target="x.json")
    assert not replay.options_for_snapshot(CheckOptions()).disable_auto_complete_config
    assert replay.options_for_snapshot(SAVED).disable_auto_complete_config


def test_thresholds_backends_and_agents_come_from_settings(tmp_path: Path) -> None:
    options = _check(tmp_path, settings=SETTINGS).options_for(LIVE)
    assert options.thresholds == {"queue-ms": 2.0}
    assert options.extra_backends == ["set_backend"]
    assert options.extra_repo_agents == ["set_agent"]
    bare = _check(tmp_path).options_for(LIVE)
    assert (bare.thresholds, bare.extra_backends, bare.extra_repo_agents) == ({}, [], [])


def test_fail_on_flag_then_settings_then_error(tmp_path: Path) -> None:
    assert _check(tmp_path, *FLAGS, settings=SETTINGS).output.fail_on == Severity.INFO
    assert _check(tmp_path, settings=SETTINGS).output.fail_on == Severity.WARNING
    assert _check(tmp_path).output.fail_on == Severity.ERROR


def test_select_flag_replaces_settings_and_ignores_add_up(tmp_path: Path) -> None:
    flagged = {r.id for r in _check(tmp_path, *FLAGS, settings=SETTINGS).rules}
    assert "TD102" in flagged and "TD202" in flagged  # the flag's TD1 and TD2
    assert "TD101" not in flagged and "TD201" not in flagged  # both ignores
    set_only = {r.id for r in _check(tmp_path, settings=SETTINGS).rules}
    assert set_only and all(rule.startswith("TD2") for rule in set_only)
    assert "TD201" not in set_only
    assert len(_check(tmp_path).rules) > len(flagged)


def test_model_config_name_flag_then_settings_then_none(tmp_path: Path) -> None:
    def name(*flags: str, settings: str = "") -> str | None:
        return _check(tmp_path, *flags, settings=settings).sources.model_config_name

    assert name(*FLAGS, settings=SETTINGS) == "from_flag"
    assert name(settings=SETTINGS) == "from_settings"
    assert name() is None


def test_errors_come_in_the_order_they_are_fixed(tmp_path: Path) -> None:
    """The settings file, then the rules, then the target, then the sources."""
    with pytest.raises(ValueError, match="fail-on"):
        _check(tmp_path, "--select", "TD999", settings='fail-on = "never"\n')
    with pytest.raises(ValueError, match="no rule matches"):
        _check(tmp_path, "--select", "TD999", "--triton-version", "1.0")
    with pytest.raises(profiles.ProfileError):
        _check(tmp_path, "--triton-version", "1.0", "--url", "x", target="x.json")
    with pytest.raises(UsageError, match="give it alone"):
        _check(tmp_path, "--url", "x", target="x.json")


@pytest.mark.parametrize(("setting", "words"), [
    ('select = ["TD999"]\n', "no rule matches 'TD999'"),
    ('ignore = ["TD999"]\n', "no rule matches 'TD999'"),
    ('triton-version = "1.0"\n', "unknown Triton release '1.0'"),
    ('gpu = "sm_1000x"\n', "unknown GPU 'sm_1000x'"),
])
def test_a_value_from_the_settings_file_that_names_nothing_names_the_file(
        tmp_path: Path, setting: str, words: str) -> None:
    with pytest.raises(SettingsError) as raised:
        _check(tmp_path, settings=setting)
    assert str(raised.value).startswith(f"{tmp_path / 'settings.toml'}: {words}")


def test_the_same_value_from_a_flag_names_no_file(tmp_path: Path) -> None:
    for flags in (("--select", "TD999"), ("--triton-version", "1.0"), ("--gpu", "sm_1000x")):
        with pytest.raises(ValueError) as raised:
            _check(tmp_path, *flags)
        assert "settings.toml" not in str(raised.value)


def test_watch_takes_a_server_or_a_snapshot(tmp_path: Path) -> None:
    def watch(*argv: str) -> Invocation:
        return Invocation.from_args(build_parser().parse_args(["watch", *argv]))

    with pytest.raises(UsageError, match="one of them"):
        watch("--url", "x", "--snapshot", "y")
    with pytest.raises(UsageError, match="one of them"):
        watch()
    polled = watch("--url", "localhost:8000", "--interval", "2", "--save-dir", str(tmp_path))
    assert (polled.output.interval_s, polled.output.save_dir) == (2.0, str(tmp_path))
    assert polled.sources.url == "localhost:8000"
    # The TUI reads the terminal: the log cannot come on standard input.
    with pytest.raises(UsageError, match="standard input cannot be the log"):
        watch("--url", "localhost:8000", "--log", "-")


def test_watch_keeps_what_an_earlier_poll_revealed(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A poll that misses the server (a restart) is judged for the release and GPU the last
    poll that reached it revealed, not for the newest release."""
    from triton_doctor.checks import collect as collector
    from triton_doctor.checks import poll

    reached = Evidence(server=ServerEvidence(url="http://localhost:8000", version="2.47.0"),
                       gpu=GpuEvidence(devices=[GpuDevice(index=0, compute_capability="9.0")]))
    polls = iter([reached, Evidence(unavailable={"server": "connection refused"})])

    class Replayed:
        def __init__(self, request: object, log_from_end: bool = False) -> None:
            self.url = "http://localhost:8000"

        def poll(self) -> Evidence:
            return next(polls)

    monkeypatch.setattr(poll, "Poller", Replayed)
    config = tmp_path / "settings.toml"
    config.write_text("")
    invocation = Invocation.from_args(build_parser().parse_args(
        ["watch", "--url", "localhost:8000", "--config", str(config)]))
    poller = collector.LivePoller(invocation, collect(invocation, live=False))
    first, second = poller.poll(), poller.poll()
    assert (first.options.triton_version, first.options.gpu_compute_capability) == (
        "24.06", "9.0")
    assert (second.options.triton_version, second.options.gpu_compute_capability) == (
        "24.06", "9.0")


def test_gpu_count_flag_then_settings_then_local_nvml_then_earlier_poll_then_unknown(
        tmp_path: Path) -> None:
    """NVML's count names the server's machine only when the server runs here: a remote
    server's GPUs are not this machine's, and no NVML here is not no GPU there."""
    two_here = Evidence(server=LIVE.server, host=HostEvidence(),
                        gpu=GpuEvidence(devices=[GpuDevice(index=0), GpuDevice(index=1)]))
    assert _check(tmp_path, "--gpus", "0", settings="gpus = 4\n").options_for(two_here).gpus == 0
    assert _check(tmp_path, settings="gpus = 4\n").options_for(two_here).gpus == 4
    bare = _check(tmp_path)
    assert bare.options_for(two_here, CheckOptions(gpus=8)).gpus == 2
    assert bare.options_for(LIVE).gpus is None  # NVML here, but the server not known to be
    no_nvml = Evidence(server=LIVE.server, host=HostEvidence())
    assert bare.options_for(no_nvml).gpus is None
    assert bare.options_for(no_nvml, CheckOptions(gpus=8)).gpus == 8
    assert bare.options_for(Evidence()).gpus is None
    none_here = Evidence(server=LIVE.server, host=HostEvidence(), gpu=GpuEvidence(devices=[]))
    assert bare.options_for(none_here).gpus is None  # a sidecar given no GPUs


def test_the_servers_own_gpu_series_count_its_gpus(tmp_path: Path) -> None:
    """nv_gpu_* series name the GPUs the server uses, wherever it runs; none is not zero."""
    def scraped(*uuids: str) -> Evidence:
        samples = [MetricSample(name, {"gpu_uuid": uuid}, 1.0) for uuid in uuids
                   for name in ("nv_gpu_utilization", "nv_gpu_memory_total_bytes")]
        samples.append(MetricSample("nv_inference_count", {"model": "m", "version": "1"}, 3.0))
        return Evidence(server=LIVE.server, metrics=MetricsEvidence(
            url="http://localhost:8002/metrics", scrapes=[MetricsScrape(at=0.0, samples=samples)]))
    bare = _check(tmp_path)
    assert bare.options_for(scraped("GPU-a", "GPU-b", "GPU-c")).gpus == 3
    assert bare.options_for(scraped()).gpus is None
    assert _check(tmp_path, "--gpus", "1").options_for(scraped("GPU-a", "GPU-b")).gpus == 1


def test_a_snapshot_keeps_its_gpu_count_unless_a_flag_or_setting_names_another(
        tmp_path: Path) -> None:
    saved = CheckOptions(gpus=2)
    assert _check(tmp_path, target="x.json").options_for_snapshot(saved).gpus == 2
    assert _check(tmp_path, "--gpus", "0", target="x.json").options_for_snapshot(saved).gpus == 0
    assert _check(tmp_path, settings="gpus = 1\n",
                  target="x.json").options_for_snapshot(saved).gpus == 1
    with pytest.raises(UsageError, match="--gpus N"):
        _check(tmp_path, target="x.json").options_for_snapshot(CheckOptions(gpus=10**12))


def test_config_judges_for_a_machine_only_when_told(tmp_path: Path) -> None:
    """`config` shows groups as on one GPU by default, but judges no GPU count it was not
    given (see tests/test_config_command.py)."""
    (tmp_path / "m").mkdir()
    def gpus(*flags: str) -> int | None:
        argv = ["config", str(tmp_path / "m"), *flags]
        return Invocation.from_args(build_parser().parse_args(argv)).options_for(Evidence()).gpus
    assert gpus() is None
    assert gpus("--gpus", "0") == 0
