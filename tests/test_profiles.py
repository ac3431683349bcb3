"""The release profile: finding a release and a GPU's compute capability from what users type,
the facts docs/profiles-sources.md gives a source for, and TD501's comparison of TensorRT
versions built on them."""

from __future__ import annotations

from pathlib import Path

import pytest
from triton_doctor.catalogue import select_rules
from triton_doctor.checks.repository import collect_repository
from triton_doctor.engine import run
from triton_doctor.evidence import CheckOptions, Evidence
from triton_doctor.findings import Finding
from triton_doctor.triton import profiles

from fixtures.generate.plan_headers import build_plan
from tests.helpers import DEMO, run_cli


@pytest.mark.parametrize(
    ("given", "container"),
    [("24.08", "24.08"), ("2.49.0", "24.08"), ("2.49", "24.08"), ("r24.08", "24.08"),
     ("v2.49.0", "24.08"), ("nvcr.io/nvidia/tritonserver:24.08-py3", "24.08"),
     ("25.07", "25.07"), ("2.59.1", "25.07"), ("22.12", "22.12"), ("2.29.0", "22.12"),
     ("nvcr.io/nvidia/tritonserver:21.02-py3", "21.02"), ("2.7.0", "21.02"),
     (None, profiles.NEWEST.container)],
)
def test_find_release(given: str | None, container: str) -> None:
    assert profiles.find_release(given).container == container


# 21.01 was never released: 2.6.0 is 20.12, 2.7.0 is 21.02 (build.py at v2.6.0 and v2.7.0).
@pytest.mark.parametrize("given", ["19.01", "21.01", "2.99.0", "latest", "24.13"])
def test_unknown_release_is_refused(given: str) -> None:
    with pytest.raises(profiles.ProfileError, match="unknown Triton release"):
        profiles.find_release(given)


@pytest.mark.parametrize(
    ("given", "capability"),
    [("sm_80", "8.0"), ("sm_89", "8.9"), ("86", "8.6"), ("8.9", "8.9"), ("A100", "8.0"),
     ("NVIDIA A100-SXM4-80GB", "8.0"), ("Tesla T4", "7.5"), ("L40S", "8.9"), ("H100", "9.0"),
     ("sm_100", "10.0"), ("NVIDIA GeForce RTX 4090", "8.9"), ("A10G", "8.6")],
)
def test_compute_capability(given: str, capability: str) -> None:
    assert profiles.compute_capability(given) == capability


def test_unknown_gpu_is_refused() -> None:
    with pytest.raises(profiles.ProfileError, match="unknown GPU"):
        profiles.compute_capability("Voodoo2")


def test_every_release_is_consistent() -> None:
    """Containers are unique and ordered, and server versions follow their numbering: minor =
    YY*12+MM-247 up to 25.06, 25.07 is 2.59.1, then YY*12+MM-248."""
    containers = [r.container for r in profiles.RELEASES]
    assert containers == sorted(containers) and len(set(containers)) == len(containers)
    for release in profiles.RELEASES:
        year, month = (int(part) for part in release.container.split("."))
        minor = int(release.triton.split(".")[1])
        offset = 247 if (year, month) <= (25, 6) else 248
        if release.container == "25.07":
            assert release.triton == "2.59.1"
            continue
        assert minor == year * 12 + month - offset, release


@pytest.mark.parametrize(("flag", "value"), [("--triton-version", "19.01"), ("--gpu", "Voodoo2")])
def test_cli_refuses_unknown_targets_with_exit_2(flag: str, value: str) -> None:
    proc = run_cli("check", str(DEMO), flag, value)
    assert proc.returncode == 2
    assert "triton-doctor: unknown" in proc.stderr and "Traceback" not in proc.stderr


# What docs/profiles-sources.md gives a source for: (container, Triton, ONNX Runtime) from
# build.py's TRITON_VERSION_MAP at each tag; TensorRT as a log or a maintainer quotes it.
@pytest.mark.parametrize(("container", "triton", "onnxruntime"), [
    ("21.02", "2.7.0", "1.6.0"), ("21.04", "2.9.0", "1.7.1"), ("21.06", "2.11.0", "1.8.0"),
    ("21.08", "2.13.0", "1.8.1"), ("21.10", "2.15.0", "1.9.0"), ("21.12", "2.17.0", "1.10.0"),
    ("22.04", "2.21.0", "1.10.0"), ("22.05", "2.22.0", "1.11.1"), ("22.07", "2.24.0", "1.12.0"),
    ("22.09", "2.26.0", "1.12.1"), ("22.10", "2.27.0", "1.13.1"), ("22.12", "2.29.0", "1.13.1"),
])
def test_old_releases_as_build_py_gives_them(container: str, triton: str,
                                             onnxruntime: str) -> None:
    release = profiles.find_release(container)
    assert (release.triton, release.onnxruntime) == (triton, onnxruntime)


@pytest.mark.parametrize(("container", "tensorrt"), [
    ("22.03", "8.2.3"), ("22.04", "8.2.4"), ("23.04", "8.6.1.2"), ("23.05", "8.6.1.2"),
    ("24.02", "8.6.3.1"), ("24.03", "8.6.3.1"), ("24.04", "8.6.3.1"), ("24.05", "10.0.1.6"),
])
def test_confirmed_tensorrt_versions(container: str, tensorrt: str) -> None:
    """Each confirmed cell, to the components TensorRT compares; every other is unconfirmed."""
    release = profiles.find_release(container)
    assert container in profiles.TENSORRT_CONFIRMED
    assert profiles.tensorrt_compared(release.tensorrt, release.tensorrt) == tensorrt


def test_backends_of_old_images() -> None:
    """OpenVINO came in 2.8.0 (21.03), FIL in 2.11.0 (21.06); TensorFlow left after 25.02."""
    backends = {c: profiles.find_release(c).backends for c in ("21.02", "21.03", "21.06", "25.03")}
    assert {"openvino", "fil"}.isdisjoint(backends["21.02"])
    assert "openvino" in backends["21.03"] and "fil" not in backends["21.03"]
    assert {"fil", "openvino", "dali", "tensorflow"} <= backends["21.06"]
    assert "tensorflow" not in backends["25.03"]


@pytest.mark.parametrize(("container", "limits"), [
    ("21.02", (7, 13)), ("21.06", (7, 14)), ("21.10", (8, 15)), ("22.05", (8, 16)),
    ("22.07", (8, 17)), ("23.05", (8, 19)),
])
def test_onnxruntime_limits_of_old_releases(container: str, limits: tuple[int, int]) -> None:
    assert profiles.onnxruntime_limits(profiles.find_release(container)) == limits


@pytest.mark.parametrize(("version", "server", "compared"), [
    ("8.2.4.2", "8.2.4.2", "8.2.4"), ("5.1.5.0", "5.1.2.2", "5.1.5"),
    ("8.6.1.6", "8.6.1.2", "8.6.1.6"), ("8.6.1.6", "10.0.1.6", "8.6.1.6"),
    ("8.6.1.6", "8.5.3", "8.6.1"),
])
def test_tensorrt_compares_the_build_from_8_6(version: str, server: str, compared: str) -> None:
    assert profiles.tensorrt_compared(version, server) == compared


def _td501(tmp_path: Path, plan_version: tuple[int, ...], release: str) -> list[Finding]:
    model = tmp_path / "detector"
    (model / "1").mkdir(parents=True)
    (model / "config.pbtxt").write_text('platform: "tensorrt_plan"\nmax_batch_size: 8\n')
    (model / "1" / "model.plan").write_bytes(build_plan(trt_version=plan_version, cc=(8, 6)))
    evidence = Evidence(repository=collect_repository(tmp_path),
                        options=CheckOptions(triton_version=release))
    return [f for f in run(evidence, select_rules(["TD501"], [])).findings if f.rule == "TD501"]


@pytest.mark.parametrize(("plan", "release", "severity", "triton"), [
    # A build of the same release is refused from 8.6 on (the 23.05 user report).
    ((8, 6, 1, 6), "23.05", "error", "expecting library version 8.6.1.2 got 8.6.1.6"),
    # Before 8.6 TensorRT compares and prints three components (the 22.04 user report).
    ((8, 2, 3, 0), "22.04", "error", "expecting library version 8.2.4 got 8.2.3"),
    # Another major.minor fails on the serialization tag, whose words are not quoted.
    ((8, 6, 1, 6), "24.05", "error", None),
    # A cell from memory is a warning, even for a whole-version mismatch.
    ((8, 6, 1, 2), "23.06", "warning", "expecting library version 8.6.1.6 got 8.6.1.2"),
])
def test_td501_mismatches(tmp_path: Path, plan: tuple[int, ...], release: str, severity: str,
                          triton: str | None) -> None:
    [finding] = _td501(tmp_path, plan, release)
    assert str(finding.severity) == severity
    if triton is None:
        assert finding.triton_message is None
    else:
        assert finding.triton_message is not None and triton in finding.triton_message


@pytest.mark.parametrize(("plan", "release"), [
    ((8, 6, 1, 2), "23.05"),
    # Before 8.6 the build is not compared: 8.2.4.x loads on 8.2.4.2.
    ((8, 2, 4, 5), "22.04"),
    # 23.02's cell is known to three components (8.5.3), which is all 8.5 compares.
    ((8, 5, 3, 1), "23.02"),
])
def test_td501_matches(tmp_path: Path, plan: tuple[int, ...], release: str) -> None:
    assert _td501(tmp_path, plan, release) == []


def test_the_oldest_gpu_a_release_uses_as_its_messages_print_it() -> None:
    minimum = {c: profiles.min_compute_capability(profiles.find_release(c))
               for c in ("22.12", "24.10", "24.12", "25.03", "26.09")}
    assert minimum == {"22.12": "6.000000", "24.10": "6.000000", "24.12": None,
                       "25.03": "7.500000", "26.09": "7.500000"}
