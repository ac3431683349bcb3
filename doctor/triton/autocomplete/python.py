"""The Python backend's auto-complete: replay model.py's ``auto_complete_config`` calls.

The backend hands the configuration to ``auto_complete_config`` as a dict (every scalar
field present, unset sub-messages absent) and each call checks it against what the call
adds; the checks and their messages below follow ``triton_python_backend_utils.ModelConfig``.
Calls whose argument is computed, or that sit in a branch, are applied without the checks:
a conflict is reported only when the code certainly makes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from triton_doctor.evidence import AutoCompleteCall, PythonSource
from triton_doctor.triton import model_config

if TYPE_CHECKING:
    from triton_doctor.triton.autocomplete import Completion

INPUT_PROPERTIES = ("name", "data_type", "dims", "optional")
OUTPUT_PROPERTIES = ("name", "data_type", "dims")


class _Refused(Exception):
    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def complete(result: Completion, source: PythonSource) -> None:
    facts = source.auto_complete
    assert facts is not None
    config = result.config
    try:
        for call in facts.calls:
            _apply(config, call, result.filled)
    except _Refused as refusal:
        result.error, result.field = str(refusal), refusal.field
        return
    if not facts.returns_value:
        result.error = (
            f"auto_complete_config function in model '{config.name}' must return a valid "
            "pb.ModelConfig object."
        )
        result.field = "auto_complete_config"


def _apply(config: Any, call: AutoCompleteCall, filled: list[str]) -> None:
    certain = call.known and not call.conditional
    argument = call.argument
    if call.method == "set_max_batch_size":
        if not isinstance(argument, int) or isinstance(argument, bool):
            return
        if certain and config.max_batch_size > argument:
            raise _Refused(
                f"configuration specified max_batch_size {config.max_batch_size}, but in "
                f"auto-complete-config function for model '{config.name}' specified "
                f"max_batch_size {argument}",
                "max_batch_size",
            )
        if config.max_batch_size < argument or certain:
            if config.max_batch_size != argument:
                filled.append(f"max_batch_size: {argument}")
            config.max_batch_size = argument
    elif call.method == "set_dynamic_batching":
        _set_dynamic_batching(config, certain, filled)
    elif call.method in ("add_input", "add_output") and isinstance(argument, dict):
        _add_tensor(config, call.method[4:], argument, certain, filled)
    elif call.method == "set_model_transaction_policy" and isinstance(argument, dict):
        _set_transaction_policy(config, argument, certain)


def _set_dynamic_batching(config: Any, certain: bool, filled: list[str]) -> None:
    for scheduler in ("sequence_batching", "ensemble_scheduling"):
        if config.HasField(scheduler):
            if certain:
                raise _Refused(
                    f"Configuration specified scheduling_choice as '{scheduler}', but "
                    f"auto-complete-config function for model '{config.name}' tries to set "
                    "scheduling_choice as 'dynamic_batching'",
                    scheduler,
                )
            return
    if not config.HasField("dynamic_batching"):
        config.dynamic_batching.SetInParent()
        filled.append("dynamic_batching { }")


def _add_tensor(config: Any, kind: str, tensor: dict[str, Any], certain: bool,
                filled: list[str]) -> None:
    """add_input / add_output: a tensor the config lacks is added; one it declares must agree
    with the call (else the backend refuses), and is completed from it."""
    if certain:
        allowed = INPUT_PROPERTIES if kind == "input" else OUTPUT_PROPERTIES
        _check_properties(kind, tensor, allowed, config.name)
    elif any(key not in tensor for key in ("name", "data_type", "dims")):
        return
    data_type = _data_type(tensor["data_type"])
    if data_type is None or not _is_dims(tensor["dims"]):
        return
    declared = config.input if kind == "input" else config.output
    existing = next((entry for entry in declared if entry.name == tensor["name"]), None)
    if existing is None:
        existing = declared.add()
        existing.name = tensor["name"]
    else:
        conflict = _conflict(config.name, kind, existing, tensor, data_type)
        if conflict is not None:
            if certain:
                raise conflict
            return
    _fill(existing, kind, tensor, data_type, filled)


def _conflict(model: str, kind: str, existing: Any, tensor: dict[str, Any],
              data_type: int) -> _Refused | None:
    """The backend's refusal when the config declares the tensor otherwise, checked in its
    order: data type, dims, then (inputs) optional."""
    name, dims = tensor["name"], tensor["dims"]
    if existing.data_type and existing.data_type != data_type:
        declared_type = model_config.data_type_name(existing.data_type)
        return _Refused(
            f"unable to load model '{model}', configuration expects datatype "
            f"{declared_type} for {kind} '{name}', model provides {tensor['data_type']}",
            kind,
        )
    if existing.dims and list(existing.dims) != list(dims):
        return _Refused(
            f"model '{model}', tensor '{name}': the model expects dims {list(dims)} but "
            f"the model configuration specifies dims {list(existing.dims)}",
            kind,
        )
    if kind == "input" and "optional" in tensor and existing.optional != tensor["optional"]:
        return _Refused(
            f"model '{model}', tensor '{name}': the model expects optional "
            f"{tensor['optional']} but the model configuration specifies optional "
            f"{existing.optional}",
            "input",
        )
    return None


def _fill(entry: Any, kind: str, tensor: dict[str, Any], data_type: int,
          filled: list[str]) -> None:
    """Write the call's data type, dims and (inputs) optional flag into the config's entry,
    noting it as filled when the entry lacked a data type or dims."""
    dims = tensor["dims"]
    if not entry.data_type or not entry.dims:
        filled.append(f"{kind} {tensor['name']}: {tensor['data_type']} {list(dims)}")
    entry.data_type = data_type
    del entry.dims[:]
    entry.dims.extend(dims)
    if kind == "input" and isinstance(tensor.get("optional"), bool):
        entry.optional = tensor["optional"]


def _check_properties(kind: str, tensor: dict[str, Any], allowed: tuple[str, ...],
                      model: str) -> None:
    where = f"in auto-complete-config function for model '{model}'"
    extra = [key for key in tensor if key not in allowed]
    if extra and "name" not in tensor:
        # The backend names the tensor in its message before it checks for a name.
        raise _Refused("KeyError: 'name'", kind)
    if extra:
        listed = "'name', 'data_type', 'dims' and 'optional'" if kind == "input" else (
            "'name', 'data_type' and 'dims'"
        )
        raise _Refused(
            f"{kind} '{tensor['name']}' {where} contains property other than {listed}.", kind
        )
    if "name" not in tensor:
        raise _Refused(f"{kind} {where} is missing 'name' property.", kind)
    for required in ("data_type", "dims"):
        if required not in tensor:
            raise _Refused(
                f"{kind} '{tensor['name']}' {where} is missing '{required}' property.", kind
            )


def _set_transaction_policy(config: Any, policy: dict[str, Any], certain: bool) -> None:
    if any(key != "decoupled" for key in policy):
        if certain:
            raise _Refused(
                "model transaction property in auto-complete-config function for model "
                f"'{config.name}' contains property other than 'decoupled'.",
                "model_transaction_policy",
            )
        return
    if "decoupled" not in policy or not isinstance(policy["decoupled"], bool):
        return
    present = config.HasField("model_transaction_policy")
    current = config.model_transaction_policy.decoupled
    if present and current != policy["decoupled"]:
        if certain:
            raise _Refused(
                "trying to change decoupled property in auto-complete-config for model "
                f"'{config.name}', which is already set to '{current}'.",
                "model_transaction_policy",
            )
        return
    config.model_transaction_policy.decoupled = policy["decoupled"]


def _data_type(name: Any) -> int | None:
    if not isinstance(name, str):
        return None
    return model_config.data_type_value(name)


def _is_dims(dims: Any) -> bool:
    return isinstance(dims, list) and all(
        isinstance(dim, int) and not isinstance(dim, bool) for dim in dims
    )
