"""Triton's own ``inference.ModelConfig`` schema, and parsing config.pbtxt with it.

tritonclient ships the generated module as ``tritonclient.grpc.model_config_pb2``, but importing
it through that package runs ``tritonclient/grpc/__init__.py``, which imports grpc (hundreds of
milliseconds, and grpc is not even installed with ``tritonclient[http]``). The generated module
itself only needs protobuf: its serialized descriptor is read from the file (see ``schema``).
"""

from __future__ import annotations

import _thread
import importlib.util
import os
import re
from functools import cache
from types import ModuleType, SimpleNamespace
from typing import Any

from triton_doctor.evidence import ConfigFile, SyntaxProblem
from triton_doctor.triton import SchemaUnavailable, config_reader


def schema() -> Any:
    """The schema's ``ModelConfig`` message class and ``DataType`` enum, from tritonclient's
    generated ``model_config_pb2``, built once: the exporter's and the TUI's threads must share
    one class (messages of two builds cannot be copied into each other).

    With protobuf's upb implementation (every wheel since protobuf 4.21) only the serialized
    descriptor is taken from the file and the class is built by upb itself: importing the
    module would also import protobuf's pure-Python machinery (``descriptor_pool`` pulls in
    ``python_message`` and ``text_format``), about 40 ms of a one-model check."""
    with _BUILDING:
        return _schema()


_BUILDING = _thread.allocate_lock()  # threading's Lock, without importing threading


@cache
def _schema() -> Any:
    path = _generated_module()
    from google.protobuf.internal import api_implementation

    if api_implementation.Type() == "upb":
        try:
            return _built_by_upb(path)
        except (ImportError, AttributeError, LookupError, TypeError, ValueError):
            pass  # upb's private API changed, or the schema came to need another file
    return _imported(path)


def _generated_module() -> str:
    spec = importlib.util.find_spec("tritonclient")
    if spec is None or not spec.submodule_search_locations:
        raise SchemaUnavailable(
            "tritonclient is not installed; it provides Triton's ModelConfig schema "
            "(pip install 'tritonclient[http]')"
        )
    for location in spec.submodule_search_locations:
        path = os.path.join(location, "grpc", "model_config_pb2.py")
        if os.path.isfile(path):
            return path
    raise SchemaUnavailable("tritonclient is installed but has no grpc/model_config_pb2.py")


#: The generated module's one call that carries the schema: a bytes literal, escapes and all
#: (a run of plain bytes at a time, each escape between: a byte at a time took 2 ms).
_SERIALIZED_FILE = re.compile(rb"AddSerializedFile\((b'[^'\\\n]*(?:\\.[^'\\\n]*)*')\)")


def _built_by_upb(path: str) -> Any:
    """The message class made by upb from the file's serialized descriptor, in a pool of its
    own; the module imported as a whole when the file does not hold the call as expected."""
    from google._upb import _message as upb
    from google.protobuf import message
    from google.protobuf.internal import enum_type_wrapper

    with open(path, "rb") as source:
        found = _SERIALIZED_FILE.search(source.read())
    if found is None:
        return _imported(path)
    # The match is one bytes literal, nothing else: evaluating it runs no code.
    serialized = eval(compile(found.group(1), path, "eval"), {"__builtins__": {}})
    described = upb.DescriptorPool().AddSerializedFile(serialized)
    config = upb.MessageMeta("ModelConfig", (message.Message,), {
        "DESCRIPTOR": described.message_types_by_name["ModelConfig"], "__module__": __name__})
    data_type = enum_type_wrapper.EnumTypeWrapper(described.enum_types_by_name["DataType"])
    return SimpleNamespace(ModelConfig=config, DataType=data_type)


def _imported(path: str) -> ModuleType:
    """The generated module, imported from its file (its package would import grpc)."""
    module_spec = importlib.util.spec_from_file_location("_triton_model_config_pb2", path)
    if module_spec is None or module_spec.loader is None:
        raise SchemaUnavailable(f"cannot import {path}")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def new_config() -> Any:
    """An empty ``inference.ModelConfig``."""
    return schema().ModelConfig()


_ECHOED_LINE = re.compile(r"^'.*?': ", re.DOTALL)
_PY_ENUM = re.compile(r'^Enum type "[\w.]+" has no value named (\S+?)\.$')
_PY_INTEGER = re.compile(r"^Couldn't parse integer: (.*)$")


def _cpp_wording(detail: str, text: str, line: int | None, column: int | None) -> str:
    """Rephrase Python protobuf's parse errors as libprotobuf (what tritonserver logs) says them."""
    detail = _ECHOED_LINE.sub("", detail)
    enum = _PY_ENUM.match(detail)
    if enum:
        field = _field_before(text, line, column)
        if field:
            return f'Unknown enumeration value of "{enum.group(1)}" for field "{field}".'
    integer = _PY_INTEGER.match(detail)
    if integer:
        return f"Expected integer, got: {integer.group(1)[:1]}"
    return detail


def _field_before(text: str, line: int | None, column: int | None) -> str | None:
    """The field name written just before a value at (line, column), e.g. ``data_type``."""
    if not line or not column:
        return None
    lines = text.splitlines()
    if line > len(lines):
        return None
    match = re.search(r"(\w+)\s*:?\s*$", lines[line - 1][: column - 1])
    return match.group(1) if match else None


def parse(text: str) -> Any:
    """Parse config.pbtxt text into a ModelConfig; raise ``ConfigSyntaxError`` if it cannot.

    The fast reader answers for the configs it is certain about; the rest, every malformed one
    included, go through protobuf's ``text_format``, whose errors are the ones reported.
    """
    message = config_reader.read(text, schema().ModelConfig)
    if message is not None:
        return message
    from google.protobuf import text_format  # only when needed: its import costs start-up time

    message = new_config()
    try:
        text_format.Parse(text, message)
    except text_format.ParseError as error:
        line, column = error.GetLine(), error.GetColumn()
        raise ConfigSyntaxError(
            SyntaxProblem(
                line, column, _cpp_wording(str(error).split(" : ", 1)[-1], text, line, column)
            )
        ) from None
    return message


class ConfigSyntaxError(ValueError):
    def __init__(self, problem: SyntaxProblem) -> None:
        super().__init__(problem.describe())
        self.problem = problem


def parsed(config: ConfigFile) -> Any | None:
    """The file's ModelConfig, parsed once and kept on it; None when the file is absent,
    unreadable or malformed (the syntax error is then recorded on the file)."""
    if config._parsed is None and config.text is not None and config.syntax_error is None:
        try:
            config._parsed = parse(config.text)
        except ConfigSyntaxError as error:
            config.syntax_error = error.problem
    return config._parsed


def data_type_name(value: int) -> str:
    """``TYPE_FP32`` for the enum value, as Triton spells it in messages."""
    return str(schema().DataType.Name(value))


def data_type_value(name: str) -> int | None:
    """The enum value of ``TYPE_FP32`` and the like; None for a name Triton does not have."""
    values = schema().DataType.DESCRIPTOR.values_by_name
    return values[name].number if name in values else None
