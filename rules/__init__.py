"""Rule families. Each module registers its rules with the registry when it is imported; a run
imports only the families whose scopes it can judge (``catalogue.rules_of``), so that a static
check never loads the live, log and fleet rules nor the models of a server they read."""

#: Each family module and the scopes of its rules (a test compares it with what they register).
FAMILIES: dict[str, frozenset[str]] = {
    "compatibility": frozenset({"model"}),
    "config_batching": frozenset({"model"}),
    "config_identity": frozenset({"model"}),
    "config_instances": frozenset({"model"}),
    "config_io": frozenset({"model"}),
    "config_misc": frozenset({"model"}),
    "config_syntax": frozenset({"model"}),
    "config_warmup": frozenset({"model"}),
    "ensemble_steps": frozenset({"repository"}),
    "ensemble_structure": frozenset({"model"}),
    "fleet": frozenset({"fleet"}),
    "layout": frozenset({"model"}),
    "lfs_pointers": frozenset({"model"}),
    "model_files": frozenset({"model"}),
    "model_io": frozenset({"model"}),
    "python_model": frozenset({"model"}),
    "reachability": frozenset({"live"}),
    "repository_shape": frozenset({"repository"}),
    "resources": frozenset({"live"}),
    "runtime": frozenset({"model"}),
    "server_log": frozenset({"log"}),
    "serving": frozenset({"live"}),
}
