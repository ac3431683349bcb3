"""Follow a Python model's ``auto_complete_config`` with ``ast``, without running it.

The Python backend calls this static method at load, with the model's configuration, and the
calls it makes (``add_input``, ``set_max_batch_size`` ...) fill in or contradict config.pbtxt.
Most implementations are straight-line code over literal dicts and lists, sometimes looped
over; those are followed exactly. Anything else (branches, computed arguments) is recorded as
conditional or unknown so the rules never claim an error the code might not make.
"""

from __future__ import annotations

import ast
import math
from typing import Any

from triton_doctor.evidence import (
    INT64_MAX,
    INT64_MIN,
    MAX_JSON_DEPTH,
    AutoCompleteCall,
    AutoCompleteFacts,
)

METHODS = frozenset({
    "set_max_batch_size", "add_input", "add_output", "set_dynamic_batching",
    "set_model_transaction_policy",
})
MAX_UNROLL = 256
#: Syntax nodes followed in one auto_complete_config, all unrolled loops together: nested loops
#: multiply (three of 256 items are 16.7 M passes), so a limit per loop bounds nothing.
MAX_NODES = 100_000
#: Statements and expressions followed inside one another; deeper ones are unknown (an elif
#: chain or a subscript chain thousands deep would otherwise exhaust the stack). Within the
#: depth a snapshot keeps, so that every argument read can be saved and replayed.
MAX_DEPTH = MAX_JSON_DEPTH
_UNKNOWN = object()


class _Exhausted(Exception):
    """MAX_NODES were followed; what follows is not."""


def follow(function: ast.FunctionDef) -> AutoCompleteFacts:
    """The calls ``function`` (the auto_complete_config definition) makes on its argument."""
    facts = AutoCompleteFacts(line=function.lineno)
    arguments = function.args.posonlyargs + function.args.args
    if not arguments:
        facts.exact = False
        return facts
    try:
        _Follower(arguments[0].arg, facts).block(function.body, {}, conditional=False)
    except _Exhausted:
        facts.exact = False
        facts.not_followed = (
            f"stopped after {MAX_NODES:,} syntax nodes (loops unrolled): the calls made after "
            "that point are not known"
        )
    facts.returns_value = any(
        isinstance(node, ast.Return) and node.value is not None
        and not (isinstance(node.value, ast.Constant) and node.value.value is None)
        for node in _own_nodes(function)
    )
    return facts


def _own_nodes(function: ast.FunctionDef) -> list[ast.AST]:
    """Nodes of ``function`` outside any nested function or class."""
    found: list[ast.AST] = []
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        found.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))
    return found


class _Follower:
    def __init__(self, config_name: str, facts: AutoCompleteFacts) -> None:
        self.config_name = config_name
        self.facts = facts
        self.nodes_left = MAX_NODES
        self.depth = 0

    def spend(self) -> None:
        """Count one syntax node followed; past MAX_NODES, stop following."""
        self.nodes_left -= 1
        if self.nodes_left < 0:
            raise _Exhausted

    def too_deep(self, node: ast.AST) -> bool:
        """Whether ``node`` sits MAX_DEPTH levels down; it is then not followed, and said so."""
        if self.depth < MAX_DEPTH:
            return False
        self.facts.exact = False
        self.facts.not_followed = self.facts.not_followed or (
            f"line {getattr(node, 'lineno', '?')}: nested deeper than {MAX_DEPTH} levels"
        )
        return True

    def block(self, body: list[ast.stmt], env: dict[str, Any], conditional: bool) -> None:
        for statement in body:
            self.statement(statement, env, conditional)

    def statement(self, node: ast.stmt, env: dict[str, Any], conditional: bool) -> None:
        if self.too_deep(node):
            return
        self.spend()
        self.depth += 1
        try:
            self._statement(node, env, conditional)
        finally:
            self.depth -= 1

    def _statement(self, node: ast.stmt, env: dict[str, Any], conditional: bool) -> None:
        if isinstance(node, ast.Assign):
            value = self.value(node.value, env)
            for target in node.targets:
                self.assign(target, value, env)
            self.scan_calls(node.value, env, conditional)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self.assign(node.target, self.value(node.value, env), env)
        elif isinstance(node, ast.Expr):
            self.scan_calls(node.value, env, conditional)
        elif isinstance(node, ast.For) and not node.orelse:
            self.loop(node, env, conditional)
        elif isinstance(node, (ast.Return, ast.Pass, ast.Import, ast.ImportFrom)):
            self.scan_calls(node, env, conditional)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            env[node.name] = _UNKNOWN
        else:
            # Branches, while loops, try, with: follow both ways, but nothing in them is certain.
            self.facts.exact = False
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    self.statement(child, env, conditional=True)
                elif isinstance(child, ast.expr):
                    self.scan_calls(child, env, conditional=True)

    def loop(self, node: ast.For, env: dict[str, Any], conditional: bool) -> None:
        items = self.value(node.iter, env)
        if isinstance(items, (list, tuple)) and len(items) <= MAX_UNROLL:
            for item in items:
                self.assign(node.target, item, env)
                self.block(node.body, env, conditional)
            return
        self.facts.exact = False
        self.assign(node.target, _UNKNOWN, env)
        self.block(node.body, env, conditional=True)

    def assign(self, target: ast.expr, value: Any, env: dict[str, Any]) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            parts = value if isinstance(value, (list, tuple)) else None
            for index, element in enumerate(target.elts):
                known = parts is not None and len(parts) == len(target.elts)
                self.assign(element, parts[index] if known and parts else _UNKNOWN, env)
        else:
            # Writes into containers (config["x"] = ...) change what we track: give up on it.
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                env[target.value.id] = _UNKNOWN

    def scan_calls(self, node: ast.AST, env: dict[str, Any], conditional: bool) -> None:
        for child in ast.walk(node):
            self.spend()
            if isinstance(child, ast.Call):
                self.call(child, env, conditional)
                self.forget_mutated(child, env)

    def forget_mutated(self, node: ast.Call, env: dict[str, Any]) -> None:
        """A method called on a tracked value (``specs.append(...)``) may change it."""
        if not isinstance(node.func, ast.Attribute):
            return
        root = node.func.value
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            root = root.value
        if isinstance(root, ast.Name) and root.id != self.config_name and root.id in env:
            env[root.id] = _UNKNOWN

    def call(self, node: ast.Call, env: dict[str, Any], conditional: bool) -> None:
        function = node.func
        if not (
            isinstance(function, ast.Attribute)
            and isinstance(function.value, ast.Name)
            and function.value.id == self.config_name
            and function.attr in METHODS
        ):
            return
        argument: Any = None
        known = True
        if node.args:
            argument = self.value(node.args[0], env)
            known = argument is not _UNKNOWN
            if not known:
                argument = None
        self.facts.calls.append(AutoCompleteCall(
            method=function.attr, argument=argument, known=known,
            conditional=conditional, line=node.lineno,
        ))

    def value(self, node: ast.expr, env: dict[str, Any]) -> Any:
        """A literal value built from constants, dicts, lists and names bound to them."""
        if self.too_deep(node):
            return _UNKNOWN
        self.spend()
        self.depth += 1
        try:
            return self._value(node, env)
        finally:
            self.depth -= 1

    def _value(self, node: ast.expr, env: dict[str, Any]) -> Any:
        if isinstance(node, ast.Constant):
            return node.value if _json_scalar(node.value) else _UNKNOWN
        if isinstance(node, ast.Name):
            return env.get(node.id, _UNKNOWN)
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [self.value(element, env) for element in node.elts]
            return _UNKNOWN if any(item is _UNKNOWN for item in items) else items
        if isinstance(node, ast.Dict):
            return self.mapping(node, env)
        if (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "dict" and not node.args
        ):
            built = {keyword.arg: self.value(keyword.value, env) for keyword in node.keywords}
            if None in built or any(item is _UNKNOWN for item in built.values()):
                return _UNKNOWN
            return built
        if isinstance(node, ast.Subscript):
            return _item(self.value(node.value, env), self.value(node.slice, env))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            operand = self.value(node.operand, env)
            return -operand if isinstance(operand, int) else _UNKNOWN
        return _UNKNOWN

    def mapping(self, node: ast.Dict, env: dict[str, Any]) -> Any:
        built: dict[Any, Any] = {}
        for key_node, value_node in zip(node.keys, node.values, strict=True):
            if key_node is None:
                return _UNKNOWN  # ``**other``
            key = self.value(key_node, env)
            item = self.value(value_node, env)
            if key is _UNKNOWN or item is _UNKNOWN or not isinstance(key, str):
                return _UNKNOWN
            built[key] = item
        return built


def _json_scalar(value: Any) -> bool:
    """Whether a constant survives a snapshot as itself: bytes, complex numbers, ``...``, NaN
    and integers past int64 do not, and no config field takes them, so they count as unknown."""
    if value is None or isinstance(value, (str, bool)):
        return True
    if isinstance(value, int):
        return INT64_MIN <= value <= INT64_MAX
    return isinstance(value, float) and math.isfinite(value)


def _item(container: Any, key: Any) -> Any:
    """``container[key]`` for a literal list or dict and a constant key, else unknown."""
    if isinstance(key, bool):
        return _UNKNOWN
    if isinstance(container, list) and isinstance(key, int):
        return container[key] if -len(container) <= key < len(container) else _UNKNOWN
    if isinstance(container, dict) and isinstance(key, (str, int)):
        return container.get(key, _UNKNOWN)
    return _UNKNOWN
