"""Read a Python backend model file with ``ast``: what it defines, never what it does."""

from __future__ import annotations

import ast
import os

from triton_doctor.evidence import PythonSource

MAX_SOURCE_BYTES = 4 * 1024 * 1024
MODEL_CLASS = "TritonPythonModel"


def read_python_source(path: str) -> PythonSource:
    source = PythonSource(name=os.path.basename(path))
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_SOURCE_BYTES + 1)
    except OSError as error:
        source.syntax_error = f"unreadable: {error.strerror or error}"
        return source
    if len(data) > MAX_SOURCE_BYTES:
        source.syntax_error = "too large to read"
        return source
    try:
        tree = ast.parse(data, filename=source.name)
    except (SyntaxError, ValueError) as error:
        line = getattr(error, "lineno", None)
        source.syntax_error = f"{getattr(error, 'msg', error)}" + (
            f" (line {line})" if line else ""
        )
        return source
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == MODEL_CLASS:
            source.has_model_class = True
            source.methods = [
                item.name
                for item in node.body
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
    return source
