"""TD309-TD316: model.py and TorchScript code against the configuration."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from triton_doctor.evidence import ConfigRead, PythonSource
from triton_doctor.findings import Hit
from triton_doctor.registry import rule
from triton_doctor.rules._common import names_text
from triton_doctor.rules._model_io import (
    follows_named_index,
    sequence_inputs,
    takes_dict_input,
    torch_input_binding,
)
from triton_doctor.rules.model_files import model_files
from triton_doctor.triton.repository_model import ModelView, RepositoryView, version_dir_name

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
    when=("auto_complete_refused",),
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


@rule("TD310", "python-tensor-name-unknown", "warning", "model.py uses a tensor the config lacks",
      when=("python_source",))
def python_tensor_name_unknown(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: the names model.py passes as string literals to
    `pb_utils.get_input_tensor_by_name(request, "...")` are tensors a request carries to the
    model: the configuration's inputs, sequence_batching's control inputs (START, READY,
    END, CORRID, ...) and implicit state inputs, batch_input targets; and (in models that
    make no BLS requests) the names it gives `pb_utils.Tensor("...", ...)` are outputs or
    implicit state outputs.

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
    inputs, outputs = _readable_tensors(config)
    path = _source_path(model, source)
    for kind, used, declared in (("input", source.input_names, inputs),
                                 ("output", source.output_names, outputs)):
        if not declared:
            continue
        for name, line in used.items():
            if name in declared:
                continue
            yield Hit(
                message=f"{source.name} line {line} uses {kind} '{name}', which the "
                f"configuration does not declare ({names_text(sorted(declared))})",
                fix=f"Rename it to one of the configuration's {kind}s, or declare '{name}'.",
                path=path,
                line=line,
                version=str(model.loaded_versions[0]),
            )


@rule("TD313", "python-model-class-missing", "error", "model.py defines no TritonPythonModel",
      server_says=("has no attribute 'TritonPythonModel'",), when=("python_source",))
def python_model_class_missing(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: the Python model file defines a class `TritonPythonModel` at module
    level. A file that may bind the name another way (an import, an assignment, a class
    statement inside `if`/`try`, a star import, dynamic code) is given the benefit of the
    doubt. A package `model/` or a compiled `model*.so` beside model.py is what Python
    imports instead; model.py is then not judged.

    Why it matters: the stub imports the file as module `<version>.<file name>` and asks it
    for `TritonPythonModel`; an empty file, a typo or a class of another name fails the load
    ("AttributeError: module '1.model' has no attribute 'TritonPythonModel'").

    Example: `class TritonPythonModel_:` or `class Model:` → `class TritonPythonModel:`.

    Fix: name the model's class `TritonPythonModel`, at the top level of the file.
    """
    source = model.python_source()
    if (source is None or source.syntax_error or source.unreadable or source.has_model_class
            or source.may_define_model_class or not source.name.endswith(".py")):
        return
    number = version_dir_name(model.loaded_versions[0])
    module = f"{number}.{source.name[:-len('.py')]}"
    yield Hit(
        message=f"{number}/{source.name} defines no class TritonPythonModel at module level",
        triton_message=f"AttributeError: module '{module}' has no attribute "
        "'TritonPythonModel'",
        fix="Name the model's class TritonPythonModel, at the top level of the file.",
        path=_source_path(model, source),
        version=str(model.loaded_versions[0]),
    )


@rule("TD314", "python-config-lookup-none", "error",
      "initialize subscripts the lookup of a tensor the config lacks",
      server_says=("TypeError: 'NoneType' object is not subscriptable",), when=("python_source",))
def python_config_lookup_none(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: the names `initialize` looks up with
    `pb_utils.get_input_config_by_name(model_config, "X")` or
    `get_output_config_by_name(...)` and then subscripts (`cfg["data_type"]`) are inputs and
    outputs of the configuration. Only statements that certainly run are judged: the top
    level of `initialize`, before any branch, loop or `try`, with the result unchecked.

    Why it matters: a lookup of a name the configuration lacks returns None, and
    subscripting it fails the load ("TypeError: 'NoneType' object is not subscriptable").

    Example: config output `OUTPUT0`, initialize reads
    `get_output_config_by_name(model_config, "OUTPUT")["data_type"]` → look up "OUTPUT0".

    Fix: use the configuration's names (they are case-sensitive), or declare the tensor.
    """
    source, read = _first_failing_read(model)
    if source is None or read is None or read.kind == "parameter":
        return
    names = _configured(model)[read.kind]
    yield Hit(
        message=f"{source.name} line {read.line}: initialize subscripts the {read.kind} "
        f"config of '{read.name}', which the configuration does not declare "
        f"({names_text(sorted(names))}), so the lookup returns None",
        triton_message="TypeError: 'NoneType' object is not subscriptable",
        fix=f"Look up one of the configuration's {read.kind}s, or declare '{read.name}'.",
        path=_source_path(model, source),
        line=read.line,
        version=str(model.loaded_versions[0]),
    )


@rule("TD315", "python-parameter-missing", "error",
      "initialize reads a parameter the config lacks", server_says=("KeyError: '",),
      when=("python_source",))
def python_parameter_missing(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: the keys `initialize` reads from the configuration's parameters by
    literal name (`model_config["parameters"]["KEY"]`, with `model_config` from
    `json.loads(args["model_config"])`) are parameters of the configuration. Only reads that
    certainly run are judged (the top level of `initialize`, before any branch, loop or
    `try`); `.get("KEY")` and guarded reads are left alone.

    Why it matters: the configuration reaches `initialize` as JSON whose `parameters` map
    holds only the configured keys; a missing one raises and the load fails
    ("KeyError: 'KEY'").

    Example: `model_config["parameters"]["tokenizer_dir"]["string_value"]` with no such
    parameter → add `parameters { key: "tokenizer_dir" value { string_value: "..." } }`.

    Fix: add the parameter to config.pbtxt, or read it with `.get()` and a default.
    """
    source, read = _first_failing_read(model)
    if source is None or read is None or read.kind != "parameter" or read.raises is not None:
        return
    yield Hit(
        message=f"{source.name} line {read.line}: initialize reads parameter "
        f"'{read.name}', which the configuration does not set",
        triton_message=f"KeyError: {read.name!r}",
        fix=f"Add parameters {{ key: \"{read.name}\" value {{ string_value: \"...\" }} }} "
        "to config.pbtxt, or read it with .get() and a default.",
        path=_source_path(model, source),
        line=read.line,
        version=str(model.loaded_versions[0]),
    )


@rule("TD316", "python-parameter-required", "error",
      "initialize refuses to load without a parameter the config lacks", relays_server=True,
      when=("python_source",))
def python_parameter_required(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: the parameters `initialize` requires by raising when they are missing
    (`if "KEY" not in model_config["parameters"]: raise ...`, or `not params.get("KEY")`,
    `params.get("KEY") is None`) are parameters of the configuration. Only guards that
    certainly run are judged (the top level of `initialize`, before any other branch, loop or
    `try`).

    Why it matters: the model raises its own exception at load and does not load; the server
    passes its words on ("TritonModelException: the parameter MODE is required").

    Example: `if "MODE" not in params: raise pb_utils.TritonModelException("the parameter MODE
    is required")` with no such parameter → add `parameters { key: "MODE" value {
    string_value: "..." } }`.

    Fix: add the parameter to config.pbtxt.
    """
    source, read = _first_failing_read(model)
    if source is None or read is None or read.kind != "parameter" or read.raises is None:
        return
    yield Hit(
        message=f"{source.name} line {read.line}: initialize raises when parameter "
        f"'{read.name}' is missing, and the configuration does not set it",
        triton_message=read.raises or None,
        fix=f"Add parameters {{ key: \"{read.name}\" value {{ string_value: \"...\" }} }} "
        "to config.pbtxt.",
        path=_source_path(model, source),
        line=read.line,
        version=str(model.loaded_versions[0]),
    )


def _source_path(model: ModelView, source: PythonSource) -> str:
    """Where the stub finds ``source``: in the directory of the first loaded version."""
    return f"{model.dir.path}/{version_dir_name(model.loaded_versions[0])}/{source.name}"


def _configured(model: ModelView) -> dict[str, set[str]]:
    """The names ``initialize`` finds in the configuration it is given, by kind of read."""
    config = model.effective
    return {"input": {t.name for t in config.input}, "output": {t.name for t in config.output},
            "parameter": set(config.parameters)}


def _first_failing_read(model: ModelView) -> tuple[PythonSource | None, ConfigRead | None]:
    """model.py and the first of initialize's certain reads that the configuration fails:
    the load stops there, so later reads never run. None when the configuration the stub
    passes is not known exactly (model.py's auto_complete_config not followed)."""
    source = model.python_source()
    if source is None or model.auto_complete_exact is False:
        return None, None
    configured = _configured(model)
    failing = (r for r in source.initialize_reads
               if r.kind in configured and r.name not in configured[r.kind])
    return source, next(failing, None)


def _readable_tensors(config: Any) -> tuple[set[str], set[str]]:
    """The names model.py may read from a request, and return in a response: the declared
    inputs and outputs plus what the server adds (sequence control inputs, implicit state,
    batch inputs)."""
    inputs = {t.name for t in config.input} | sequence_inputs(config)
    outputs = {t.name for t in config.output}
    outputs |= {state.output_name for state in config.sequence_batching.state}
    for batch_input in config.batch_input:
        inputs |= set(batch_input.target_name)
    return inputs, outputs


@rule("TD311", "torch-input-binding", "warning", "PyTorch inputs bound by config order",
      server_says=("nor do they follow the <name>__<index> naming convention",),
      when=("backend:pytorch",))
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
