"""TD309-TD311: model.py and TorchScript code against the configuration."""

from __future__ import annotations

from collections.abc import Iterator

from triton_doctor.findings import Hit
from triton_doctor.registry import rule
from triton_doctor.rules._model_io import (
    follows_named_index,
    takes_dict_input,
    torch_input_binding,
)
from triton_doctor.rules.model_files import model_files
from triton_doctor.triton.repository_model import ModelView, RepositoryView

#: What a refusal of the Python backend is about, by the config field it concerns.
_WHAT = {
    "max_batch_size": "sets a max_batch_size below config.pbtxt's",
    "input": "declares an input differently from config.pbtxt, or incompletely",
    "output": "declares an output differently from config.pbtxt, or incompletely",
    "sequence_batching": "asks for dynamic batching while config.pbtxt has sequence batching",
    "ensemble_scheduling": "asks for dynamic batching on an ensemble",
    "model_transaction_policy": "sets a transaction policy config.pbtxt contradicts",
    "auto_complete_config": "returns nothing: the backend needs the config object back",
}


@rule(
    "TD309", "python-auto-complete-refused", "error",
    "model.py's auto_complete_config contradicts config.pbtxt",
    server_says=("the model expects dims [", "auto-complete-config", "auto_complete_config"),
)
def python_auto_complete_refused(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: replays the calls model.py's `auto_complete_config` makes
    (`set_max_batch_size`, `add_input`, `add_output`, `set_dynamic_batching`,
    `set_model_transaction_policy`) against config.pbtxt, as the Python backend's
    `pb_utils.ModelConfig` checks them, and that the function returns the config. The code is
    read with `ast`, never run; calls inside branches or with computed arguments are applied
    without judging them.

    Why it matters: the Python backend raises at load and the model does not load
    ("configuration specified max_batch_size 6, but in auto-complete-config function for
    model 'm' specified max_batch_size 4").

    Example: config.pbtxt `dims: [ 16 ]` while model.py adds `"dims": [4]` → make them agree,
    or drop the tensor from config.pbtxt and let model.py declare it.

    Fix: declare each property in one place, or make config.pbtxt and model.py agree; end
    `auto_complete_config` with `return auto_complete_model_config`.
    """
    completion = model.backend_completion
    if completion is None or completion.error is None or model.effective.backend != "python":
        return
    source = model.python_source()
    line = source.auto_complete.line if source and source.auto_complete else None
    version = str(model.loaded_versions[0]) if model.loaded_versions else None
    yield Hit(
        message=f"{source.name if source else 'model.py'}: auto_complete_config (line {line}) "
        + _WHAT.get(completion.field or "", "is refused by the Python backend"),
        triton_message=completion.error,
        fix="Make config.pbtxt and auto_complete_config agree, or declare the property only in "
        "one of them.",
        field=completion.field if completion.field in ("max_batch_size", "input", "output",
                                                       "sequence_batching",
                                                       "model_transaction_policy") else None,
        version=version,
    )


@rule("TD310", "python-tensor-name-unknown", "warning", "model.py uses a tensor the config lacks")
def python_tensor_name_unknown(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: the names model.py passes as string literals to
    `pb_utils.get_input_tensor_by_name(request, "...")` are inputs of the configuration, and
    (in models that make no BLS requests) the names it gives `pb_utils.Tensor("...", ...)`
    are outputs.

    Why it matters: the model loads, then requests go wrong: an unknown input comes back as
    None, so every request fails (`'NoneType' object has no attribute 'as_numpy'`); a tensor
    returned under an unknown output name is dropped, so the answer succeeds without the
    output the client asked for (Triton 2.51 says nothing).

    Example: config input `INPUT0`, model.py reads `"input0"` → use `"INPUT0"`.

    Fix: use exactly the configuration's names (they are case-sensitive).
    """
    source = model.python_source()
    config = model.effective
    if source is None or model.effective.backend != "python":
        return
    inputs = {t.name for t in config.input}
    outputs = {t.name for t in config.output}
    path = f"{model.dir.path}/{model.loaded_versions[0]}/{source.name}"
    for kind, used, declared in (("input", source.input_names, inputs),
                                 ("output", source.output_names, outputs)):
        if not declared:
            continue
        for name, line in used.items():
            if name in declared:
                continue
            yield Hit(
                message=f"{source.name} line {line} uses {kind} '{name}', which the "
                f"configuration does not declare ({', '.join(sorted(declared))})",
                fix=f"Rename it to one of the configuration's {kind}s, or declare '{name}'.",
                path=path,
                line=line,
                version=str(model.loaded_versions[0]),
            )


@rule("TD311", "torch-input-binding", "warning", "PyTorch inputs bound by config order",
      server_says=("nor do they follow the <name>__<index> naming convention",))
def torch_input_binding_order(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: how the PyTorch backend binds config inputs to TorchScript forward()
    arguments: by argument name when every input name is one, else by `<name>__<index>`,
    else silently by the order of the config.

    Why it matters: bound by order, a config that lists inputs in another order than
    forward() feeds each tensor to the wrong argument; nothing fails, the answers are wrong.

    Example: forward(self, input_ids, attention_mask) with inputs `mask`, `ids` → name them
    `input_ids` and `attention_mask` (or `INPUT__0`, `INPUT__1`).

    Fix: name the config inputs after forward()'s arguments.
    """
    if model.effective.backend != "pytorch" or not model.effective.input:
        return
    for number, found in model_files(model):
        facts = found.torchscript
        if facts is None or not facts.forward_args:
            continue
        if takes_dict_input(facts.forward_args):
            continue
        names = [arg.name for arg in facts.forward_args]
        if torch_input_binding(model.effective, names) != "order":
            continue
        declared = [t.name for t in model.effective.input]
        yield Hit(
            message=f"inputs {', '.join(declared)} are neither forward() arguments "
            f"({', '.join(names)}) nor <name>__<index>: they are bound by config order",
            triton_message=_fallback_warning(declared, model.name),
            fix=f"Name the inputs {', '.join(names)} (forward()'s arguments).",
            field="input",
            version=str(number),
        )
        return


def _fallback_warning(declared: list[str], model: str) -> str | None:
    """The backend warns only when a name has ``__`` with a non-numeric suffix; a name
    without ``__`` falls back to config order silently."""
    for name in declared:
        if "__" not in name:
            return None
        if not follows_named_index(name):
            return (
                f"input '{name}' or previous input(s) are neither an input argument to the "
                f"model '{model}' nor do they follow the <name>__<index> naming convention. "
                "Falling back to enforcing strict ordering from model configuration."
            )
    return None
