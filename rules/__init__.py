"""Rule families; importing this package registers every rule with the registry."""

from triton_doctor.rules import (  # noqa: F401
    compatibility,
    config_batching,
    config_identity,
    config_instances,
    config_io,
    config_misc,
    config_syntax,
    config_warmup,
    ensemble_steps,
    ensemble_structure,
    layout,
    lfs_pointers,
    model_files,
    model_io,
    python_model,
    repository_shape,
    resources,
    runtime,
    serving,
)
