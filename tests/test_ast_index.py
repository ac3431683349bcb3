"""The one-walk index that model.py reading shares answers as ``ast.walk`` would: the same
nodes of each type in the same order (the order gives a tensor name's first line)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from triton_doctor.checks.ast_index import NodeIndex, children

ROOT = Path(__file__).resolve().parents[1]
#: Syntax the project's own files may lack: ** in a dict (a None key), names of global, match
#: patterns, f-string parts, decorators, star-args, walrus, async, try/except*.
SNIPPETS = '''
d = {**a, "k": 1, **b}
def f(x, /, *a, k=1, **kw):
    global g, h
    nonlocal_ = [y async for y in z] if (n := 2) else {*s}
    return f"{x!r:>{k}} {kw}"
match point:
    case {"x": 0, **rest} | Point(x=0, y=_) as p if p:
        pass
    case [1, *others]:
        pass
@dec(1)
class C(B, metaclass=M):
    async def m(self):
        async with a as b, c:
            await b
try:
    pass
except* ValueError as e:
    del e
'''
CONTEXTS = (ast.Load, ast.Store, ast.Del)


def _sources() -> list[object]:
    files = sorted([*ROOT.glob("checks/**/*.py"), *ROOT.glob("fixtures/**/model.py")])
    return [pytest.param(SNIPPETS, id="snippets"), *(
        pytest.param(path.read_text(encoding="utf-8"), id=str(path.relative_to(ROOT)))
        for path in files)]


@pytest.mark.parametrize("text", _sources())
def test_index_holds_what_ast_walk_yields(text: str) -> None:
    tree = ast.parse(text)
    walked = [node for node in ast.walk(tree) if not isinstance(node, CONTEXTS)]
    index = NodeIndex(tree)
    for kind in {type(node) for node in walked}:
        assert index.of(kind) == [node for node in walked if type(node) is kind]
    assert index.of(ast.Load) == []  # the markers are left out, not indexed
    assert index.of_any(ast.Name, ast.Call) == [*index.of(ast.Name), *index.of(ast.Call)]
    for node in walked:
        assert children(node) == [child for child in ast.iter_child_nodes(node)
                                  if not isinstance(child, CONTEXTS)]
