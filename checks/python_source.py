"""Read a Python backend model file with ``ast``: what it defines, never what it does."""

from __future__ import annotations

import ast
import os

from triton_doctor.checks.autocomplete_calls import follow
from triton_doctor.checks.formats import LISTED_BUT_MISSING
from triton_doctor.checks.unavailable import describe_os_error
from triton_doctor.evidence import PythonSource
from triton_doctor.safe_files import FileTooLarge, read_file

MAX_SOURCE_BYTES = 4 * 1024 * 1024
MODEL_CLASS = "TritonPythonModel"


def read_python_source(path: str) -> PythonSource:
    """What the file at ``path``, just listed in its version directory, defines."""
    source = PythonSource(name=os.path.basename(path))
    try:
        data = read_file(path, MAX_SOURCE_BYTES)
    except FileTooLarge:
        source.unreadable = f"larger than {MAX_SOURCE_BYTES // (1024 * 1024)} MiB"
        return source
    except OSError as error:
        source.unreadable = describe_os_error(error, missing=LISTED_BUT_MISSING)
        return source
    try:
        tree = ast.parse(data, filename=source.name)
    except (SyntaxError, ValueError) as error:
        # Python's own words: the backend's stub reports exactly this when the import fails.
        kind = "SyntaxError" if isinstance(error, ValueError) else type(error).__name__
        source.syntax_error = f"{kind}: {error}"
        return source
    except (RecursionError, MemoryError) as error:
        # The parser's stack limits: the same parser fails the same way when the stub imports it.
        words = f"{error} (nested too deeply for Python's parser)" if str(error) else (
            "nested too deeply for Python's parser")
        source.syntax_error = f"{type(error).__name__}: {words}"
        return source
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == MODEL_CLASS:
            source.has_model_class = True
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    source.methods.append(item.name)
                if isinstance(item, ast.FunctionDef) and item.name == "auto_complete_config":
                    source.auto_complete = follow(item)
    _tensor_names(tree, source)
    return source


def _tensor_names(tree: ast.Module, source: PythonSource) -> None:
    """Names passed as literals to ``get_input_tensor_by_name`` and ``Tensor(...)``.

    Tensors built for BLS requests to other models look the same as outputs, so output names
    are recorded only for modules that build no ``InferenceRequest``.
    """
    outputs: dict[str, int] = {}
    bls = False
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _called_name(node.func)
        if name == "InferenceRequest":
            bls = True
        elif name == "get_input_tensor_by_name" and len(node.args) >= 2:
            _record(source.input_names, node.args[1], node.lineno)
        elif name in ("Tensor", "from_dlpack") and node.args:
            _record(outputs, node.args[0], node.lineno)
    if not bls:
        source.output_names = outputs


def _called_name(function: ast.expr) -> str:
    if isinstance(function, ast.Attribute):
        return function.attr
    return function.id if isinstance(function, ast.Name) else ""


def _record(names: dict[str, int], argument: ast.expr, line: int) -> None:
    if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
        names.setdefault(argument.value, line)
