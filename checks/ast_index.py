"""Every node of a syntax tree by type, from one walk that several questions share.

``ast.walk`` steps two generators a node, and reading a model.py asked it a dozen questions
(which names it binds, which calls it makes...), each a walk of its own: most of the reading's
time. One walk indexed by type answers each question from the few nodes it concerns.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from typing import TypeVar, cast

_Node = TypeVar("_Node", bound=ast.AST)


#: ASDL types of fields that never hold a node, and ``expr_context``: Load, Store and Del are
#: one shared object each, which no question asks about (a third of all nodes).
_NOT_CHILDREN = frozenset({"identifier", "string", "constant", "int", "expr_context"})


class _ChildFields(dict[type[ast.AST], tuple[str, ...]]):
    """The fields of each node type that may hold nodes: those whose ASDL type, which the
    type's docstring spells (``Name(identifier id, expr_context ctx)``), is a node's."""

    def __missing__(self, kind: type[ast.AST]) -> tuple[str, ...]:
        types = _field_types(kind)
        fields = self[kind] = tuple(name for name in kind._fields
                                    if types.get(name) not in _NOT_CHILDREN and name != "ctx")
        return fields


def _field_types(kind: type[ast.AST]) -> dict[str, str]:
    """The ASDL type of each field of ``kind`` (``identifier`` for ``Name.id``), as its
    docstring spells it; none where it does not (then every field is looked in)."""
    signature = re.fullmatch(r"\w+\((.+)\)", (kind.__doc__ or "").partition("\n")[0])
    types: dict[str, str] = {}
    for part in signature[1].split(", ") if signature else []:
        type_name, _, name = part.partition(" ")
        types[name] = type_name.rstrip("?*")
    return types


_CHILD_FIELDS = _ChildFields()


class NodeIndex:
    """``tree`` and every node under it but the ``ctx`` markers, grouped by type; each group
    in ``ast.walk``'s order (breadth first), so that a question whose answer depends on order
    gets the same one."""

    def __init__(self, tree: ast.AST) -> None:
        self._groups = groups = defaultdict[type[ast.AST], list[ast.AST]](list)
        queue = [tree]
        enqueue, node_type = queue.append, ast.AST  # locals: the loop runs once a node
        for node in queue:  # the list grows as it is read: a queue, without a deque's cost
            kind = type(node)
            groups[kind].append(node)
            for name in _CHILD_FIELDS[kind]:  # children() inlined: a call would cost a third
                value = getattr(node, name, None)
                if isinstance(value, node_type):
                    enqueue(value)
                elif isinstance(value, list):  # also holds names (global x) or None (**d)
                    for item in value:
                        if isinstance(item, node_type):
                            enqueue(item)

    def of(self, kind: type[_Node]) -> list[_Node]:
        """The nodes of type ``kind`` (exactly: the parser makes no subclasses)."""
        return cast(list[_Node], self._groups.get(kind, []))

    def of_any(self, *kinds: type[ast.AST]) -> list[ast.AST]:
        """The nodes of any of ``kinds``, type after type (for questions order does not
        change)."""
        return [node for kind in kinds for node in self._groups.get(kind, [])]


def children(node: ast.AST) -> list[ast.AST]:
    """The nodes directly under ``node`` but its ``ctx``, in ``ast.iter_child_nodes``'s
    order, at a third of its cost (it steps two generators)."""
    found: list[ast.AST] = []
    for name in _CHILD_FIELDS[type(node)]:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            found.append(value)
        elif isinstance(value, list):
            found.extend([item for item in value if isinstance(item, ast.AST)])
    return found
