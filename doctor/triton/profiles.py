"""Facts per Triton release: what a container of that release ships and accepts.

A model repository is judged against a target: the TensorRT a plan must match, the ONNX
Runtime an ONNX model's IR version and opsets must fit, the backends the image carries. The
table comes from NVIDIA's release notes and Triton's build.py (sources in docs/profiles-sources.md);
a cell nobody could verify is left empty and the rules that need it say so instead of guessing.
"""

from __future__ import annotations

import re

from triton_doctor.records import record

#: Backends in /opt/tritonserver/backends of the full ``YY.MM-py3`` image.
_BACKENDS_FULL = frozenset({
    "dali", "fil", "identity", "onnxruntime", "openvino", "python", "pytorch", "repeat",
    "square", "tensorflow", "tensorrt",
})
_BACKENDS_NO_TF = _BACKENDS_FULL - {"tensorflow"}
#: Before 21.06 the image had no FIL backend, before 21.03 no OpenVINO backend either.
_BACKENDS_NO_FIL = _BACKENDS_FULL - {"fil"}
_BACKENDS_NO_FIL_OPENVINO = _BACKENDS_NO_FIL - {"openvino"}


@record(frozen=True)
class Release:
    container: str
    triton: str
    onnxruntime: str
    #: "" when not verified.
    tensorrt: str = ""
    backends: frozenset[str] = _BACKENDS_FULL

    @property
    def label(self) -> str:
        return f"Triton {self.triton} (container {self.container})"


RELEASES: tuple[Release, ...] = (
    Release("21.02", "2.7.0", "1.6.0", "7.2.2.3", backends=_BACKENDS_NO_FIL_OPENVINO),
    Release("21.03", "2.8.0", "1.6.0", "7.2.2.3", backends=_BACKENDS_NO_FIL),
    Release("21.04", "2.9.0", "1.7.1", "7.2.3.4", backends=_BACKENDS_NO_FIL),
    Release("21.05", "2.10.0", "1.7.1", "7.2.3.4", backends=_BACKENDS_NO_FIL),
    Release("21.06", "2.11.0", "1.8.0", "7.2.3.4"),
    Release("21.07", "2.12.0", "1.8.0", "8.0.1.6"),
    Release("21.08", "2.13.0", "1.8.1", "8.0.1.6"),
    Release("21.09", "2.14.0", "1.8.1", "8.0.3.4"),
    Release("21.10", "2.15.0", "1.9.0", "8.0.3.4"),
    Release("21.11", "2.16.0", "1.9.0", "8.0.3.4"),
    Release("21.12", "2.17.0", "1.10.0", "8.2.1.8"),
    Release("22.01", "2.18.0", "1.10.0", "8.2.2.1"),
    Release("22.02", "2.19.0", "1.10.0", "8.2.3.0"),
    Release("22.03", "2.20.0", "1.10.0", "8.2.3.0"),
    Release("22.04", "2.21.0", "1.10.0", "8.2.4.2"),
    Release("22.05", "2.22.0", "1.11.1", "8.2.5.1"),
    Release("22.06", "2.23.0", "1.11.1", "8.2.5.1"),
    Release("22.07", "2.24.0", "1.12.0", "8.4.1.5"),
    Release("22.08", "2.25.0", "1.12.0", "8.4.2.4"),
    Release("22.09", "2.26.0", "1.12.1", "8.5.0.12"),
    Release("22.10", "2.27.0", "1.13.1", "8.5.0.12"),
    Release("22.11", "2.28.0", "1.13.1", "8.5.1.7"),
    Release("22.12", "2.29.0", "1.13.1", "8.5.1.7"),
    Release("23.01", "2.30.0", "1.13.1", "8.5.2.2"),
    Release("23.02", "2.31.0", "1.13.1", "8.5.3"),
    Release("23.03", "2.32.0", "1.14.1", "8.5.3"),
    Release("23.04", "2.33.0", "1.14.1", "8.6.1.2"),
    Release("23.05", "2.34.0", "1.15.0", "8.6.1.2"),
    Release("23.06", "2.35.0", "1.15.0", "8.6.1.6"),
    Release("23.07", "2.36.0", "1.15.1", "8.6.1.6"),
    Release("23.08", "2.37.0", "1.15.1", "8.6.1.6"),
    Release("23.09", "2.38.0", "1.16.0", "8.6.1.6"),
    Release("23.10", "2.39.0", "1.16.0", "8.6.1.6"),
    Release("23.11", "2.40.0", "1.16.3", "8.6.1.6"),
    Release("23.12", "2.41.0", "1.16.3", "8.6.1.6"),
    Release("24.01", "2.42.0", "1.16.3", "8.6.1.6"),
    Release("24.02", "2.43.0", "1.16.3", "8.6.3.1"),
    Release("24.03", "2.44.0", "1.17.2", "8.6.3.1"),
    Release("24.04", "2.45.0", "1.17.3", "8.6.3.1"),
    Release("24.05", "2.46.0", "1.18.0", "10.0.1.6"),
    Release("24.06", "2.47.0", "1.18.0", "10.1.0.27"),
    Release("24.07", "2.48.0", "1.18.1", "10.2.0.19"),
    Release("24.08", "2.49.0", "1.18.1", "10.3.0.26"),
    Release("24.09", "2.50.0", "1.19.2", "10.4.0.26"),
    Release("24.10", "2.51.0", "1.19.2", "10.5.0.18"),
    Release("24.11", "2.52.0", "1.19.2", "10.6.0.26"),
    Release("24.12", "2.53.0", "1.20.1", "10.7.0.23"),
    Release("25.01", "2.54.0", "1.20.1", "10.8.0.43"),
    Release("25.02", "2.55.0", "1.20.1", "10.8.0.43"),
    Release("25.03", "2.56.0", "1.21.0", "10.9.0.34", backends=_BACKENDS_NO_TF),
    Release("25.04", "2.57.0", "1.21.0", "10.9.0.34", backends=_BACKENDS_NO_TF),
    Release("25.05", "2.58.0", "1.22.0", backends=_BACKENDS_NO_TF),
    Release("25.06", "2.59.0", "1.22.0", backends=_BACKENDS_NO_TF),
    Release("25.07", "2.59.1", "1.22.0", backends=_BACKENDS_NO_TF),
    Release("25.08", "2.60.0", "1.23.0", backends=_BACKENDS_NO_TF),
    Release("25.09", "2.61.0", "1.23.0", backends=_BACKENDS_NO_TF),
    Release("25.10", "2.62.0", "1.23.1", backends=_BACKENDS_NO_TF),
    Release("25.11", "2.63.0", "1.23.2", backends=_BACKENDS_NO_TF),
    Release("25.12", "2.64.0", "1.23.2", backends=_BACKENDS_NO_TF),
    Release("26.01", "2.65.0", "1.23.2", backends=_BACKENDS_NO_TF),
    Release("26.02", "2.66.0", "1.24.1", backends=_BACKENDS_NO_TF),
    Release("26.03", "2.67.0", "1.24.2", backends=_BACKENDS_NO_TF),
    Release("26.04", "2.68.0", "1.24.4", backends=_BACKENDS_NO_TF),
    Release("26.05", "2.69.0", "1.24.4", backends=_BACKENDS_NO_TF),
    Release("26.06", "2.70.0", "1.24.4", backends=_BACKENDS_NO_TF),
    Release("26.07", "2.71.0", "1.27.0", backends=_BACKENDS_NO_TF),
    Release("26.08", "2.72.0", "1.28.0", backends=_BACKENDS_NO_TF),
    Release("26.09", "2.73.0", "", backends=_BACKENDS_NO_TF),
)
#: Releases whose TensorRT version a public source confirms, to the components TensorRT compares
#: (the others come from memory of the support matrix, so a mismatch against them is reported as
#: a warning, not an error). Sources in docs/profiles-sources.md.
TENSORRT_CONFIRMED = frozenset({
    "22.03", "22.04", "23.04", "23.05", "24.02", "24.03", "24.04", "24.05",
})
NEWEST = RELEASES[-1]

#: ONNX Runtime minor -> (newest ONNX IR version, newest default-domain opset) it loads, from
#: ONNX Runtime's compatibility table (it stops at 1.20; later releases are left out).
ONNXRUNTIME_LIMITS: dict[str, tuple[int, int]] = {
    "1.6": (7, 13), "1.7": (7, 13), "1.8": (7, 14), "1.9": (8, 15), "1.10": (8, 15),
    "1.11": (8, 16), "1.12": (8, 17), "1.13": (8, 17), "1.14": (8, 18), "1.15": (8, 19),
    "1.16": (9, 19), "1.17": (9, 20),
    "1.18": (10, 21), "1.19": (10, 21), "1.20": (10, 21),
}

#: Compute capability of common data-centre and desktop GPUs, for ``--gpu A100``.
GPU_COMPUTE_CAPABILITY = {
    "P4": "6.1", "P40": "6.1", "P100": "6.0", "V100": "7.0", "T4": "7.5", "A100": "8.0",
    "A30": "8.0", "A10": "8.6", "A10G": "8.6", "A40": "8.6", "A16": "8.6", "A2": "8.6",
    "RTX3090": "8.6", "RTXA6000": "8.6", "L4": "8.9", "L40": "8.9", "L40S": "8.9",
    "RTX4090": "8.9", "RTX6000ADA": "8.9", "H100": "9.0", "H200": "9.0", "GH200": "9.0",
    "H20": "9.0", "B200": "10.0", "GB200": "10.0", "B300": "10.3", "RTX5090": "12.0",
    "JETSONXAVIER": "7.2", "JETSONORIN": "8.7",
}

#: Repository agents in /opt/tritonserver/repoagents of the full image: build.py builds only
#: "checksum", from 21.03 on (sources in docs/profiles-sources.md).
REPO_AGENTS = frozenset({"checksum"})
REPO_AGENTS_FROM = "21.03"
#: Where the server looks for an agent, ``<dir>/<name>/libtritonrepoagent_<name>.so``.
REPO_AGENT_DIR = "/opt/tritonserver/repoagents"
#: The image's backend directory (the default --backend-directory): a backend's libraries in
#: ``<dir>/<backend>/``, searched last for a model's ``runtime``.
BACKENDS_DIR = "/opt/tritonserver/backends"
#: From this container on (tensorrtllm_backend v0.11.0), the TensorRT-LLM backend checks
#: gpt_model_path and encoder_model_path and refuses a model with neither ("Both encoder and
#: decoder model paths are empty"); before it, its executor fails on the path in other words.
#: Sources in docs/profiles-sources.md.
TRTLLM_BOTH_PATHS_CHECKED_FROM = "24.07"


#: From this TensorRT on, the library compares a plan's whole version, build included, with its
#: own and prints four components ("expecting library version 8.6.1.2 got 8.6.1.6"); before it,
#: three ("expecting library version 8.2.4 got 8.2.3"). Sources in docs/profiles-sources.md.
TENSORRT_BUILD_COMPARED_FROM = (8, 6)


class ProfileError(ValueError):
    """A --triton-version or --gpu that names nothing known."""


def find_release(version: str | None) -> Release:
    """The release for "24.06", "2.47.0", "2.47", "r24.06" or an image tag; newest if None."""
    if not version:
        return NEWEST
    text = version.strip().lower()
    tag = re.search(r"(\d{2}\.\d{2})(?:-py3\S*)?$", text)
    for release in RELEASES:
        if text.lstrip("rv") in (release.container, release.triton) or (
            tag and tag.group(1) == release.container
        ):
            return release
        if re.fullmatch(r"v?\d+\.\d+", text) and release.triton.startswith(text.lstrip("v") + "."):
            return release
    known = f"{RELEASES[0].container} to {NEWEST.container}"
    raise ProfileError(
        f"unknown Triton release {version!r}: give a container release (24.06) or a server "
        f"version (2.47.0) between {known}"
    )


def compute_capability(gpu: str) -> str:
    """"8.0" for "sm_80", "80", "8.0", "A100" or "NVIDIA A100-SXM4-80GB"."""
    text = gpu.strip()
    match = re.fullmatch(r"(?:sm_?|compute_)?(\d{1,2})(\d)", text, re.IGNORECASE)
    if match:
        return f"{int(match.group(1))}.{match.group(2)}"
    if re.fullmatch(r"\d{1,2}\.\d", text):
        return text
    squashed = re.sub(r"[\s_-]", "", text.upper()).removeprefix("NVIDIA").removeprefix("TESLA")
    squashed = squashed.removeprefix("GEFORCE")
    for name in sorted(GPU_COMPUTE_CAPABILITY, key=len, reverse=True):
        if squashed.startswith(name):
            return GPU_COMPUTE_CAPABILITY[name]
    raise ProfileError(
        f"unknown GPU {gpu!r}: give a compute capability (sm_80 or 8.0) or a GPU name such "
        f"as {', '.join(list(GPU_COMPUTE_CAPABILITY)[:6])}"
    )


def repo_agents(release: Release) -> frozenset[str]:
    """The repository agents the release's full image ships."""
    return REPO_AGENTS if release.container >= REPO_AGENTS_FROM else frozenset()


def min_compute_capability(release: Release) -> str | None:
    """The oldest GPU the release's server uses, as its messages print it ("6.000000"): 6.0
    through 24.10, 7.5 from 25.03; None between, where no release note says (sources in
    docs/profiles-sources.md)."""
    if release.container <= "24.10":
        return "6.000000"
    if release.container >= "25.03":
        return "7.500000"
    return None


def onnxruntime_limits(release: Release) -> tuple[int, int] | None:
    """(newest IR version, newest opset) the release's ONNX Runtime loads, when known."""
    minor = ".".join(release.onnxruntime.split(".")[:2])
    return ONNXRUNTIME_LIMITS.get(minor)


def tensorrt_compared(version: str, server_tensorrt: str) -> str:
    """``version`` cut to the components TensorRT ``server_tensorrt`` compares and prints."""
    parts = version.split(".")
    server = tuple(int(part) for part in server_tensorrt.split(".")[:2] if part.isdigit())
    return ".".join(parts[: 4 if server >= TENSORRT_BUILD_COMPARED_FROM else 3])
