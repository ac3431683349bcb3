"""The flags of the exporter and of alerts: what they take, and the usage error (exit 2) for
what they do not."""

from __future__ import annotations

import argparse

import pytest
from triton_doctor.flag_types import alert_groups, duration, listen_address, positive_duration


@pytest.mark.parametrize("text", ["30s", "5m", "1h30m", "0s", "2d", "1500ms"])
def test_prometheus_durations_are_kept_as_written(text: str) -> None:
    assert duration(text) == text


@pytest.mark.parametrize("text", ["", "5", "m", "5 m", "30m1h", "-5m", "1.5h"])
def test_what_prometheus_does_not_read_as_a_duration_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="Prometheus duration"):
        duration(text)


@pytest.mark.parametrize("text", ["0s", "0m0s", "00h"])
def test_a_range_of_zero_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="more than 0"):
        positive_duration(text)
    assert positive_duration("90s") == "90s"


@pytest.mark.parametrize(("text", "address"), [
    (":9780", ("0.0.0.0", 9780)), ("127.0.0.1:0", ("127.0.0.1", 0)),
    ("[::1]:9780", ("::1", 9780)), ("exporter.local:80", ("exporter.local", 80))])
def test_listen_addresses(text: str, address: tuple[str, int]) -> None:
    assert listen_address(text) == address


@pytest.mark.parametrize("text", ["9780", "host:", "host:http", "host:65536"])
def test_what_is_not_an_address_to_listen_on_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="HOST:PORT"):
        listen_address(text)


def test_alert_groups_keep_their_order_and_refuse_others() -> None:
    assert alert_groups("exporter,metrics") == ("metrics", "exporter")
    assert alert_groups("exporter") == ("exporter",)
    for text in ("", "metrics,fleet"):
        with pytest.raises(argparse.ArgumentTypeError):
            alert_groups(text)
