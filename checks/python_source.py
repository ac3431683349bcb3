"""Read a Python backend model file with ``ast``: what it defines, never what it does."""

from __future__ import annotations

import ast
import itertools
import os

from triton_doctor.checks.ast_index import NodeIndex
from triton_doctor.checks.autocomplete_calls import follow
from triton_doctor.checks.formats import LISTED_BUT_MISSING
from triton_doctor.checks.formats.sniff import HEAD_BYTES, Heads
from triton_doctor.checks.python_initialize import initialize_reads
from triton_doctor.checks.unavailable import describe_os_error
from triton_doctor.evidence import AutoCompleteFacts, PythonSource
from triton_doctor.safe_files import FileTooLarge, read_file

MAX_SOURCE_BYTES = 4 * 1024 * 1024
MODEL_CLASS = "TritonPythonModel"
#: Builtins through which a module can bind names without naming them in its code.
DYNAMIC_NAMES = frozenset({"exec", "eval", "globals", "locals", "vars", "setattr",
                           "__import__"})
#: How many entries of a directory beside model.py are looked through for an ``__init__``.
MAX_PACKAGE_ENTRIES = 10_000


def read_python_source(path: str, entries: list[str] | None = None,
                       heads: Heads | None = None) -> PythonSource:
    """What the file at ``path``, just listed in its version directory (whose ``entries``
    are given), defines: nothing is read when Python imports something else in its place.
    ``heads`` gets the file's first bytes and size."""
    source = PythonSource(name=os.path.basename(path))
    source.imported_instead = imported_instead(os.path.dirname(path), entries or [],
                                               source.name)
    if source.imported_instead is not None:
        source.may_define_model_class = True
        return source
    try:
        data = read_file(path, MAX_SOURCE_BYTES)
    except FileTooLarge:
        source.unreadable = f"larger than {MAX_SOURCE_BYTES // (1024 * 1024)} MiB"
        return source
    except OSError as error:
        source.unreadable = describe_os_error(error, missing=LISTED_BUT_MISSING)
        return source
    if heads is not None:
        heads[path] = data[:HEAD_BYTES], len(data)
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
    classes = [node for node in tree.body
               if isinstance(node, ast.ClassDef) and node.name == MODEL_CLASS]
    if classes:  # the last class statement binds the name the stub reads
        source.has_model_class = True
        _read_model_class(classes[-1], source)
    found = NodeIndex(tree)  # one walk, which the questions below share
    source.may_define_model_class = _may_define_model_class(tree, len(classes), found)
    if source.may_define_model_class:
        source.initialize_reads = []  # the class the stub gets may be another one
    _tensor_names(found.of(ast.Call), source)
    return source


def imported_instead(directory: str, entries: list[str], filename: str) -> str | None:
    """The entry of ``directory`` that Python's import takes for the stub's module instead of
    ``filename``: in a directory it looks first for a package (``<stem>/`` with an
    ``__init__``), then for an extension module (``<stem>.so``, ``<stem>.<tag>.so``), and
    only then for ``<stem>.py``, whose presence alone the stub checks."""
    if not filename.endswith(".py"):
        return None
    stem = filename[:-len(".py")]
    if f"{stem}/" in entries and (init := _package_init(os.path.join(directory, stem))):
        return f"{stem}/{init}"
    return next((name for name in entries
                 if name.startswith(f"{stem}.") and name.endswith(".so")), None)


def _package_init(path: str) -> str | None:
    """The ``__init__`` module that makes the directory ``path`` a package, if any."""
    try:
        with os.scandir(path) as listing:
            return next((entry.name for entry in itertools.islice(listing, MAX_PACKAGE_ENTRIES)
                         if entry.name.startswith("__init__.")
                         and entry.name.endswith((".py", ".pyc", ".so"))), None)
    except OSError:
        return None


def _may_inherit(node: ast.ClassDef) -> bool:
    """Whether the class may get methods it does not define: a base other than ``object``, a
    metaclass or a decorator."""
    bases = [base for base in node.bases if not (isinstance(base, ast.Name)
                                                 and base.id == "object")]
    return bool(bases or node.keywords or node.decorator_list)


def _read_model_class(node: ast.ClassDef, source: PythonSource) -> None:
    """Its methods, auto_complete_config and what initialize certainly reads. A decorated
    class or initialize, or an initialize bound another way, may run other code: its reads
    are not recorded."""
    initialize: ast.FunctionDef | None = None
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            source.methods.append(item.name)
            if item.name == "initialize":
                initialize = (item if isinstance(item, ast.FunctionDef)
                              and not item.decorator_list else None)
        elif any(name.id == "initialize" and not isinstance(name.ctx, ast.Load)
                 for name in NodeIndex(item).of(ast.Name)):
            initialize = None  # initialize = wrap(initialize)
        if isinstance(item, ast.FunctionDef) and item.name == "auto_complete_config":
            source.auto_complete = follow(item)
    if source.auto_complete is None and _may_inherit(node):
        # The stub asks the class, so an auto_complete_config of a base class runs too: what it
        # sets is unknown, as for one whose calls are computed (and it is not claimed to
        # return nothing).
        source.auto_complete = AutoCompleteFacts(exact=False, returns_value=True,
                                                 line=node.lineno)
    if initialize is not None and not node.decorator_list and not node.keywords:
        source.initialize_reads = initialize_reads(initialize)


def _may_define_model_class(tree: ast.Module, top_level_classes: int, found: NodeIndex) -> bool:
    """Whether anything but a plain module-level class statement (of which the module has
    ``top_level_classes``) may bind TritonPythonModel in the module, whose nodes are
    ``found``: the stub only asks the imported module for the attribute."""
    return (
        any(alias.name == "*" or (alias.asname or alias.name.split(".")[0]) == MODEL_CLASS
            for alias in found.of(ast.alias))
        or any((name.id == MODEL_CLASS and not isinstance(name.ctx, ast.Load))
               or name.id in DYNAMIC_NAMES for name in found.of(ast.Name))
        # a class statement inside if/try/with, or a function with `global`
        or sum(node.name == MODEL_CLASS for node in found.of(ast.ClassDef)) > top_level_classes
        or any(isinstance(node, ast.FunctionDef) and node.name == "__getattr__"
               for node in tree.body)
        # setattr(module, "TritonPythonModel", ...)
        or any(isinstance(constant.value, str) and constant.value == MODEL_CLASS
               for constant in found.of(ast.Constant))
        # sys.modules[__name__] = ..., a module's __dict__ written
        or any(node.attr in ("modules", "__dict__") for node in found.of(ast.Attribute)))


def _tensor_names(calls: list[ast.Call], source: PythonSource) -> None:
    """Names passed as literals to ``get_input_tensor_by_name`` and ``Tensor(...)`` in
    ``calls``, which are in ``ast.walk``'s order: the first use found gives the line.

    Tensors built for BLS requests to other models look the same as outputs, so output names
    are recorded only for modules that build no ``InferenceRequest``.
    """
    outputs: dict[str, int] = {}
    bls = False
    for node in calls:
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
