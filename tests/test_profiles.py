"""The release profile: finding a release and a GPU's compute capability from what users type."""

from __future__ import annotations

import pytest
from triton_doctor.triton import profiles

from tests.helpers import DEMO, run_cli


@pytest.mark.parametrize(
    ("given", "container"),
    [("24.08", "24.08"), ("2.49.0", "24.08"), ("2.49", "24.08"), ("r24.08", "24.08"),
     ("v2.49.0", "24.08"), ("nvcr.io/nvidia/tritonserver:24.08-py3", "24.08"),
     ("25.07", "25.07"), ("2.59.1", "25.07"), (None, profiles.NEWEST.container)],
)
def test_find_release(given: str | None, container: str) -> None:
    assert profiles.find_release(given).container == container


@pytest.mark.parametrize("given", ["19.01", "2.99.0", "latest", "24.13"])
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
