"""Records behave as the dataclasses they replace, for every feature the project declares."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import pytest
from triton_doctor import records


def _pair(frozen: bool = False, eq: bool = True) -> tuple[type, type]:
    """The same class declared as a dataclass and as a record."""
    made = []
    for decorate, field in ((dataclasses.dataclass(frozen=frozen, eq=eq), dataclasses.field),
                            (records.record(frozen=frozen, eq=eq), records.field)):

        class Shape:
            name: str
            size: int = 3
            tags: list[str] = field(default_factory=list)
            note: str | None = field(default=None, compare=False, repr=False)
            cached: dict[str, Any] = field(default_factory=dict, init=False,
                                           metadata={"transient": True})
            counter: int = field(init=False, default=7)

            def double(self) -> int:
                return self.size * 2

        made.append(decorate(Shape))
    return made[0], made[1]


CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    (("a",), {}),
    (("a", 5), {}),
    (("a",), {"tags": ["x"], "note": "n"}),
    ((), {"name": "b", "size": 0, "tags": []}),
]


@pytest.mark.parametrize("frozen", [False, True])
@pytest.mark.parametrize(("args", "kwargs"), CALLS)
def test_a_record_is_made_read_compared_and_shown_as_its_dataclass(
        frozen: bool, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    plain, record = _pair(frozen)
    expected, got = plain(*args, **kwargs), record(*args, **kwargs)
    assert vars(got) == vars(expected)
    assert repr(got) == repr(expected)
    assert got == record(*args, **kwargs)
    assert (got == record(*args, **{**kwargs, "note": "other"})) is True  # compare=False
    assert got != record("zz")
    assert got.__eq__(expected) is NotImplemented  # another class, even with equal fields
    assert got.double() == expected.double()
    assert record.__match_args__ == plain.__match_args__
    assert [(f.name, f.init, f.repr, f.compare, dict(f.metadata)) for f in records.fields(got)] \
        == [(f.name, f.init, f.repr, f.compare, dict(f.metadata))
            for f in dataclasses.fields(expected)]
    with pytest.raises(TypeError):  # frozen or not: a list among the compared fields
        hash(got)


def test_a_frozen_record_hashes_its_compared_fields() -> None:
    frozen = records.record(frozen=True)(_Point)
    assert hash(frozen(1, 2, "x")) == hash(frozen(1, 2, "y")) == hash((1, 2))
    assert len({frozen(1, 2, "x"), frozen(1, 2, "y"), frozen(2, 1)}) == 2


class _Point:
    x: int
    y: int
    label: str = records.field(default="", compare=False)


def test_factories_give_each_record_its_own_value() -> None:
    _, record = _pair()
    first, second = record("a"), record("b")
    first.tags.append("x")
    assert second.tags == [] and first.cached is not second.cached


def test_a_frozen_record_refuses_changes_like_a_frozen_dataclass() -> None:
    plain, record = _pair(frozen=True)
    for made, error in ((plain("a"), dataclasses.FrozenInstanceError),
                        (record("a"), records.FrozenRecordError)):
        with pytest.raises(error):
            made.size = 4
        with pytest.raises(error):
            del made.name
        assert isinstance(error("x"), AttributeError)


def test_eq_false_keeps_identity() -> None:
    _, record = _pair(eq=False)
    one = record("a")
    assert one != record("a") and one == one and hash(one) == object.__hash__(one)


def test_replace_and_pickle_keep_every_field() -> None:
    copied = records.replace(_Pickled("a", tags=["t"]), size=9)
    assert (copied.name, copied.size, copied.tags, copied.counter) == ("a", 9, ["t"], 7)
    assert pickle.loads(pickle.dumps(copied)) == copied
    with pytest.raises(ValueError, match="counter"):
        records.replace(copied, counter=1)


@records.record(frozen=True)
class _Pickled:
    name: str
    size: int = 3
    tags: list[str] = records.field(default_factory=list)
    counter: int = records.field(init=False, default=7)


def test_inherited_fields_come_first_and_post_init_runs() -> None:
    @records.record
    class Base:
        a: int
        b: int = 2

    @records.record
    class Child(Base):
        c: int = 3
        total: int = records.field(init=False, default=0)

        def __post_init__(self) -> None:
            self.total = self.a + self.b + self.c

    child = Child(1, c=10)
    assert [f.name for f in records.fields(child)] == ["a", "b", "c", "total"]
    assert child.total == 13 and repr(child).endswith(".Child(a=1, b=2, c=10, total=13)")
    assert Base(1) == Base(1, 2) and Base(1) != child
    assert records.is_record(child) and records.is_record(Child) and not records.is_record(1)


def test_declarations_python_would_refuse_are_refused_when_the_class_is_made() -> None:
    with pytest.raises(TypeError, match="follows a default"):

        @records.record
        class Late:
            a: int = 1
            b: int

    with pytest.raises(ValueError, match="default_factory"):

        @records.record
        class Shared:
            a: list[int] = []  # noqa: RUF012

    with pytest.raises(ValueError, match="both"):
        records.field(default=1, default_factory=list)


def test_arguments_are_checked_as_a_function_checks_them() -> None:
    _, record = _pair()
    with pytest.raises(TypeError):
        record()
    with pytest.raises(TypeError):
        record("a", unknown=1)
    with pytest.raises(TypeError):
        record("a", counter=1)  # init=False


def test_a_field_declared_again_keeps_its_place_and_its_inherited_default() -> None:
    made = []
    for decorate in (dataclasses.dataclass, records.record):

        @decorate
        class Base:
            x: int
            y: int = 1

        @decorate
        class Again(Base):
            x: int = 5
            z: int = 2

        @decorate
        class Bare(Base):
            y: int
            w: int = 0

        made.append((repr(Again()), Again.__match_args__, repr(Bare(1))))
    assert [text.split(".")[-1] if isinstance(text, str) else text for text in made[0]] \
        == [text.split(".")[-1] if isinstance(text, str) else text for text in made[1]]


def test_one_compared_field_is_compared_as_a_tuple_of_one() -> None:
    @records.record(frozen=True)
    class Weight:
        value: float

    nan = Weight(float("nan"))
    assert nan == nan and hash(nan) == hash(Weight(nan.value))


def test_what_dataclasses_refuse_records_refuse() -> None:
    _, mutable = _pair()
    with pytest.raises(ValueError, match="default_factory"):

        @records.record
        class Shared:
            a: Any = mutable("one instance every Shared would share")

    @records.record(frozen=True)
    class Frozen:
        a: int

    with pytest.raises(TypeError, match="inherit"):

        @records.record
        class Mutable(Frozen):
            b: int = 0

    with pytest.raises(TypeError, match="annotation"):

        @records.record
        class Stray:
            a = records.field(default=1)


def test_a_record_that_holds_itself_is_shown_without_recursing() -> None:
    @records.record
    class Node:
        name: str
        children: list[Any] = records.field(default_factory=list)

    node = Node("a")
    node.children.append(node)
    assert repr(node).endswith("Node(name='a', children=[...])")
