"""What ``TritonPythonModel.initialize`` certainly reads from its model configuration by name.

The stub calls ``initialize(args)`` at load; ``args["model_config"]`` is the configuration as
JSON, usually ``json.loads``-ed into a dict. A lookup ``pb_utils.get_output_config_by_name(
model_config, "X")`` of a name the configuration lacks returns None, and subscripting that
None fails the load; so does ``model_config["parameters"]["K"]`` for a parameter it lacks, and
so does a guard that raises when it is missing (``if "K" not in params: raise ...``).

Only statements at the top level of ``initialize``, before anything that may return or
raise, are followed: they certainly run. A name that is guarded, rebound, mutated or passed
to unknown code stops being followed; anything that may change the configuration (a method
called on a part of it, a store through any name holding it, a method of ``self`` while
``self`` holds it) stops all following. So what is recorded certainly raises when the name is
missing from the configuration. The code is read, never run.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from triton_doctor.checks.ast_index import NodeIndex, children
from triton_doctor.evidence import ConfigRead

LOOKUPS = {"get_input_config_by_name": "input", "get_output_config_by_name": "output"}
#: pb_utils functions that only read the configuration dict they are given.
READERS = frozenset({*LOOKUPS, "using_decoupled_model_transaction_policy"})
#: Expressions whose parts may not run: only what certainly runs is followed.
LAZY = (ast.IfExp, ast.BoolOp, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
        ast.GeneratorExp, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def initialize_reads(function: ast.FunctionDef) -> list[ConfigRead]:
    """The reads ``function`` (``initialize(self, args)``) certainly makes, in order."""
    params = [*function.args.posonlyargs, *function.args.args]
    if len(params) != 2:
        return []
    return _Follower(params[0].arg, params[1].arg).run(function.body)


class _Follower:
    """Walks the top-level statements, tracking which names hold what."""

    def __init__(self, owner: str, args: str) -> None:
        self.owner = owner
        self.args = args
        self.configs: set[str] = set()
        self.parameter_maps: set[str] = set()
        #: Variables holding a lookup's result that nothing has checked yet.
        self.pending: dict[str, tuple[str, str]] = {}
        #: Variables holding another part of the configuration (``outs = config["output"]``):
        #: changing what they hold changes the configuration.
        self.aliases: set[str] = set()
        self.reads: list[ConfigRead] = []

    def run(self, body: list[ast.stmt]) -> list[ConfigRead]:
        for statement in body:
            if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr)):
                self._simple(statement)
            elif (required := self._required_parameter(statement)) is not None:
                self.reads.append(required)  # only raises: when it does not, nothing changed
            elif isinstance(statement, (ast.Pass, ast.Import, ast.ImportFrom, ast.Global,
                                        ast.Nonlocal)):
                continue
            else:  # may not run, may return or raise: what follows is no longer certain
                break
        return self.reads

    def _simple(self, statement: ast.stmt) -> None:
        found = NodeIndex(statement)
        if self.configs or self.parameter_maps or self.aliases or self.pending:
            # while nothing is followed, a statement has nothing to drop
            self._drop_escaped(statement, found)
        value = getattr(statement, "value", None)
        if value is not None and found.of(ast.Subscript):  # only a subscript reads
            self._record(value)
        targets: list[ast.expr] = []
        if isinstance(statement, ast.Assign):
            targets = statement.targets
        elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
            targets = [statement.target]
        for target in targets:
            self._bind(target, value if isinstance(statement, ast.Assign) else None)

    def _bind(self, target: ast.expr, value: ast.expr | None) -> None:
        key = self._key(target)
        if key is None:
            if value is not None and self._reaches_configuration(value):
                self._forget_all()  # stored where it is not followed: self.a.b = config
                return
            # unpacking, or a store into a subscript
            for node in NodeIndex(target).of_any(ast.Name, ast.Attribute):
                if (name := self._key(node)) is not None:
                    self._forget(name)
            return
        self._forget(key)
        if value is None:
            return
        if self._is_config(value):
            self.configs.add(key)
        elif self._is_parameters(value):
            self.parameter_maps.add(key)
        elif (lookup := self._lookup(value)) is not None:
            self.pending[key] = lookup
        elif self._reaches_configuration(value):
            self.aliases.add(key)

    def _forget(self, key: str) -> None:
        self.configs.discard(key)
        self.parameter_maps.discard(key)
        self.aliases.discard(key)
        self.pending.pop(key, None)

    def _forget_all(self) -> None:
        self.configs.clear()
        self.parameter_maps.clear()
        self.aliases.clear()
        self.pending.clear()

    def _record(self, expression: ast.expr) -> None:
        for node in _certain_nodes(expression):
            if not isinstance(node, ast.Subscript) or not isinstance(node.ctx, ast.Load):
                continue
            lookup = self._lookup(node.value)
            key = self._key(node.value)
            if lookup is None and key in self.pending:
                lookup = self.pending.pop(key or "")
            if lookup is not None:
                self.reads.append(ConfigRead(lookup[0], lookup[1], node.lineno))
            elif self._is_parameters(node.value) and (name := _literal(node.slice)) is not None:
                self.reads.append(ConfigRead("parameter", name, node.lineno))

    def _required_parameter(self, statement: ast.stmt) -> ConfigRead | None:
        """``if "K" not in params: raise E("...")`` (also ``not params.get("K")`` and
        ``params.get("K") is None``): a read that raises the model's own exception when the
        parameter is missing, and does nothing otherwise."""
        if (not isinstance(statement, ast.If) or statement.orelse
                or not isinstance(statement.body[-1], ast.Raise)
                or not all(isinstance(s, ast.Expr) for s in statement.body[:-1])):
            return None
        test, name = statement.test, None
        if (isinstance(test, ast.Compare) and len(test.ops) == 1
                and isinstance(test.ops[0], ast.NotIn)
                and self._is_parameters(test.comparators[0])):
            name = _literal(test.left)
        elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            name = self._parameter_get(test.operand)
        elif (isinstance(test, ast.Compare) and len(test.ops) == 1
              and isinstance(test.ops[0], ast.Is) and isinstance(test.comparators[0], ast.Constant)
              and test.comparators[0].value is None):
            name = self._parameter_get(test.left)
        if name is None:
            return None
        return ConfigRead("parameter", name, statement.lineno,
                          raises=_exception_words(statement.body[-1]))

    def _parameter_get(self, node: ast.expr) -> str | None:
        """K of ``params.get("K")`` on the parameters map."""
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get" and len(node.args) == 1 and not node.keywords
                and self._is_parameters(node.func.value)):
            return _literal(node.args[0])
        return None

    def _drop_escaped(self, statement: ast.stmt, found: NodeIndex) -> None:
        """Forget every tracked name the statement (whose nodes are ``found``) uses other than
        by reading it: a guard (``if x is None``), a mutation or a call may change what the
        later reads do."""
        if self._may_change_configuration(statement, found):
            self._forget_all()  # aliases share the dict: every name may see the change
            return
        allowed = {id(node.value) for node in found.of(ast.Subscript)
                   if isinstance(node.ctx, ast.Load)}
        for call in found.of(ast.Call):
            if _called(call.func) in READERS and call.args:
                allowed.add(id(call.args[0]))
            if isinstance(call.func, ast.Attribute) and call.func.attr == "get":
                allowed.add(id(call.func.value))
        if isinstance(statement, ast.Assign):
            allowed.add(id(statement.value))  # an alias
        for node in found.of_any(ast.Name, ast.Attribute):
            if (id(node) in allowed or not isinstance(getattr(node, "ctx", None), ast.Load)
                    or (key := self._key(node)) is None):
                continue
            if key in self.configs or key in self.parameter_maps or key in self.aliases:
                self._forget_all()  # aliases share the dict
            self.pending.pop(key, None)

    def _may_change_configuration(self, statement: ast.stmt, found: NodeIndex) -> bool:
        """Whether the statement may change the configuration the reads look in: a method
        other than ``get`` called on it or a part of it (``config["parameters"].update(d)``),
        a part of it passed to a function or put in a container, a store or ``del`` through
        it, an augmented assignment to it, or a method of ``self`` called while ``self``
        holds some of it (``self._fill_defaults()``)."""
        held = self._held()
        if isinstance(statement, ast.AugAssign) and self._key(statement.target) in held:
            return True
        owner_holds = any(key.startswith(f"{self.owner}.") for key in held)
        for call in found.of(ast.Call):
            reader = _called(call.func) in READERS  # its first argument is only read
            arguments = [*call.args[reader:], *(k.value for k in call.keywords)]
            if isinstance(call.func, ast.Attribute) and call.func.attr != "get":
                arguments.append(call.func.value)
            for argument in arguments:
                key, depth = self._root(argument)
                if self._holds_at(key, depth) or (owner_holds and self._is_owner(key)):
                    return True
        for node in found.of_any(ast.List, ast.Tuple, ast.Set, ast.Dict, ast.Starred):
            parts = [*node.keys, *node.values] if isinstance(node, ast.Dict) else (
                [node.value] if isinstance(node, ast.Starred) else node.elts)
            if any(p is not None and self._reaches_configuration(p) for p in parts):
                return True
        return any(not isinstance(node.ctx, ast.Load) and self._reaches_configuration(node.value)
                   for node in found.of_any(ast.Subscript, ast.Attribute))

    def _is_owner(self, key: str | None) -> bool:
        """Whether the name ``key`` is ``self`` or reached through it: a method it calls may
        change what ``self`` holds."""
        return key is not None and (key == self.owner or key.startswith(f"{self.owner}."))

    def _held(self) -> set[str]:
        """Every name holding the configuration or a part of it."""
        return self.configs | self.parameter_maps | self.aliases | set(self.pending)

    def _reaches_configuration(self, node: ast.expr) -> bool:
        """Whether ``node`` may be the configuration or a part whose change changes a read:
        the dict, its parameters map, input and output lists and their entries."""
        return self._holds_at(*self._root(node))

    def _holds_at(self, key: str | None, depth: int) -> bool:
        """Whether ``depth`` steps from the name ``key`` is the configuration or such a part."""
        if key in self.configs:
            return depth <= 2
        if key in self.aliases:
            return depth <= 1
        return depth == 0 and (key in self.parameter_maps or key in self.pending)

    def _root(self, node: ast.expr) -> tuple[str | None, int]:
        """The name a chain of subscripts and attributes starts at (``config["a"].get("b")``
        starts at ``config``), and how many steps it takes from there."""
        depth = 0
        while (key := self._key(node)) is None:
            if isinstance(node, ast.Call):
                node = node.func
            elif isinstance(node, (ast.Subscript, ast.Attribute)):
                node, depth = node.value, depth + 1
            else:
                return None, depth
        return key, depth

    def _key(self, node: ast.AST) -> str | None:
        """``name`` or ``self.name``: what an assignment can bind and a later line read."""
        if isinstance(node, ast.Name):
            return node.id
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == self.owner):
            return f"{self.owner}.{node.attr}"
        return None

    def _is_config(self, node: ast.expr) -> bool:
        """A name holding the configuration, or ``json.loads(args["model_config"])``."""
        if (key := self._key(node)) is not None:
            return key in self.configs
        return (isinstance(node, ast.Call) and _called(node.func) == "loads"
                and len(node.args) == 1 and not node.keywords
                and isinstance(node.args[0], ast.Subscript)
                and self._key(node.args[0].value) == self.args
                and _literal(node.args[0].slice) == "model_config")

    def _is_parameters(self, node: ast.expr) -> bool:
        """``config["parameters"]``, ``config.get("parameters", ...)`` or a name holding it
        (the backend always writes the map, empty when the configuration has none)."""
        if (key := self._key(node)) is not None:
            return key in self.parameter_maps
        if isinstance(node, ast.Subscript):
            return self._is_config(node.value) and _literal(node.slice) == "parameters"
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get" and bool(node.args)
                and self._is_config(node.func.value) and _literal(node.args[0]) == "parameters")

    def _lookup(self, node: ast.expr) -> tuple[str, str] | None:
        if not isinstance(node, ast.Call) or _called(node.func) not in LOOKUPS:
            return None
        if len(node.args) != 2 or node.keywords or not self._is_config(node.args[0]):
            return None
        name = _literal(node.args[1])
        return None if name is None else (LOOKUPS[_called(node.func)], name)


def _certain_nodes(expression: ast.expr) -> Iterator[ast.AST]:
    """The nodes of ``expression`` that run whenever it does (not inside a conditional
    expression, a boolean operator, a lambda or a comprehension)."""
    stack: list[ast.AST] = [expression]
    while stack:
        node = stack.pop()
        if isinstance(node, LAZY):
            continue
        yield node
        stack.extend(children(node))


def _called(function: ast.expr) -> str:
    if isinstance(function, ast.Attribute):
        return function.attr
    return function.id if isinstance(function, ast.Name) else ""


def _exception_words(statement: ast.Raise) -> str:
    """How the stub prints the exception ``statement`` raises ("ValueError: K is required"):
    its class name and literal message; "" when they are not written out."""
    raised = statement.exc
    if (isinstance(raised, ast.Call) and len(raised.args) == 1 and not raised.keywords
            and (message := _literal(raised.args[0])) is not None):
        name = _called(raised.func)
        if name == "KeyError":  # str() of a KeyError is the repr of its argument
            message = repr(message)
        return f"{name}: {message}" if name else ""
    return ""


def _literal(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None
