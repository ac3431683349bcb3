"""A model's configuration as config.pbtxt text, for the model screen."""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format, text_format
from triton_doctor.evidence import Evidence
from triton_doctor.triton import model_config


def model_config_text(evidence: Evidence, model: str) -> str:
    """What the server runs (``GET /v2/models/<m>/config``) when it is serving the model;
    otherwise what it would run, worked out from the repository; otherwise why neither."""
    served = _served_config(evidence, model)
    if served is not None:
        return "# as the server runs it (GET /v2/models/<model>/config)\n" + served
    if evidence.repository is not None and any(
            m.name == model for m in evidence.repository.models):
        from triton_doctor.triton.effective_config import effective_config_text

        return ("# as the server would run it, worked out from the repository (1 GPU)\n"
                + effective_config_text(evidence, model, gpus=1))
    return ("# the server does not serve this model, so it shows no configuration; give the "
            "model repository too (watch --url URL REPO) to see the one it would run")


def _served_config(evidence: Evidence, model: str) -> str | None:
    server = evidence.server
    found = next((m.config for m in server.models if m.name == model and m.config), None) \
        if server else None
    if found is None:
        return None
    return _as_text(found)


def _as_text(config: dict[str, Any]) -> str:
    message = model_config.schema().ModelConfig()
    try:
        json_format.ParseDict(config, message, ignore_unknown_fields=True)
    except json_format.ParseError as error:
        return f"# not a ModelConfig the schema reads ({error}); as the server sent it:\n" \
            f"{config}"
    return text_format.MessageToString(message)
