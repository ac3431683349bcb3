"""The configuration a server would run for one model directory (``triton-doctor config``)."""

from __future__ import annotations

from google.protobuf import text_format
from triton_doctor.evidence import Evidence
from triton_doctor.printable import printable
from triton_doctor.triton import normalize
from triton_doctor.triton.repository_model import RepositoryView


def effective_config_text(evidence: Evidence, model_name: str, gpus: int | None = None) -> str:
    """The effective config in text format, without judging it (the watch's model screen
    shows it on every poll).

    The config is the one the rules judge (core completion, then the backend's auto-complete)
    with instance groups resolved as on a machine with ``gpus`` GPUs (default: the machine
    the Evidence is judged for, else one GPU), as ``GET /v2/models/<model>/config`` would
    show it; comments on top say what the backend's auto-complete added, so a user copying
    it knows which lines came from the model.
    """
    assert evidence.repository is not None
    repository = RepositoryView(evidence.repository, evidence.options)
    view = repository.by_name[model_name]
    config = type(view.effective)()
    config.CopyFrom(view.effective)
    if gpus is None:
        gpus = 1 if evidence.options.gpus is None else evidence.options.gpus
    normalize.instance_groups(config, gpus)
    if config.HasField("ensemble_scheduling"):
        # The server records whether an ensemble streams: it does when any step does.
        steps = [repository.by_name.get(step.model_name)
                 for step in config.ensemble_scheduling.step]
        config.model_transaction_policy.decoupled = any(
            step is not None and step.effective.model_transaction_policy.decoupled
            for step in steps
        )
    completion = view.backend_completion
    filled = completion.filled if completion is not None and completion.error is None else []
    header = "".join(
        f"# filled in by the {config.backend} backend's auto-complete: {printable(line)}\n"
        for line in filled
    )
    return header + text_format.MessageToString(config)
