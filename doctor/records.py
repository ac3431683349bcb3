"""Records: the dataclass shapes this project declares, at a command line's start-up cost.

Python 3.11's ``dataclasses`` compiles five to eight methods per class with ``exec`` when the
class is defined, and imports ``inspect``: about 1 ms a class, 50 ms of a one-model ``check``
before any work. A record compiles only its ``__init__``, and only when the first instance is
made (most of a run's classes never are); equality, hashing and ``repr`` read the fields
through one ``attrgetter``. The semantics are dataclasses' for what is used here: defaults,
``field(default_factory=..., init=..., repr=..., compare=..., metadata=...)``, ``frozen``,
``eq``, inheritance, ``__post_init__``. To mypy they are dataclasses
(stubs/triton_doctor/records.pyi).
"""

from __future__ import annotations

import operator
from _thread import get_ident
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar

T = TypeVar("T")


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


#: No default given.
MISSING: Any = _Missing()
#: The ``__init__`` parameter's default of a field built by its factory.
_FROM_FACTORY: Any = _Missing()


class FrozenRecordError(AttributeError):
    """An attempt to set or delete a field of a frozen record."""


class Field:
    """One field of a record, as ``fields()`` lists it."""

    __slots__ = ("compare", "default", "default_factory", "init", "metadata", "name", "repr")

    def __init__(self, default: Any, default_factory: Any, init: bool, repr: bool,
                 compare: bool, metadata: Mapping[str, Any] | None) -> None:
        self.name = ""
        self.default = default
        self.default_factory = default_factory
        self.init = init
        self.repr = repr
        self.compare = compare
        self.metadata: Mapping[str, Any] = MappingProxyType(dict(metadata or {}))

    def __repr__(self) -> str:
        return f"Field({self.name!r})"


def field(*, default: Any = MISSING, default_factory: Callable[[], Any] | Any = MISSING,
          init: bool = True, repr: bool = True, compare: bool = True,
          metadata: Mapping[str, Any] | None = None) -> Any:
    """A field's options, written as its default (as ``dataclasses.field``)."""
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError("a field cannot have both a default and a default_factory")
    return Field(default, default_factory, init, repr, compare, metadata)


def record(cls: type[T] | None = None, /, *, frozen: bool = False,
           eq: bool = True) -> type[T] | Callable[[type[T]], type[T]]:
    """Make ``cls`` a record: ``@record`` or ``@record(frozen=True)``."""

    def build(target: type[T]) -> type[T]:
        _build(target, frozen, eq)
        return target

    return build if cls is None else build(cls)


def fields(record_or_class: Any) -> tuple[Field, ...]:
    """The record's fields in declaration order (inherited ones first)."""
    try:
        return record_or_class.__record_fields__  # type: ignore[no-any-return]
    except AttributeError:
        raise TypeError(f"{record_or_class!r} is not a record") from None


def is_record(value: Any) -> bool:
    """Whether ``value`` is a record class or instance."""
    return hasattr(value if isinstance(value, type) else type(value), "__record_fields__")


def replace(instance: T, /, **changes: Any) -> T:
    """A copy of ``instance`` with ``changes`` (fields that ``__init__`` takes)."""
    for one in fields(instance):
        if not one.init:
            if one.name in changes:
                raise ValueError(f"field {one.name} is not set by __init__; it cannot be replaced")
            continue
        if one.name not in changes:
            changes[one.name] = getattr(instance, one.name)
    return type(instance)(**changes)


def _build(cls: type, frozen: bool, eq: bool) -> None:
    every = _fields_of(cls)
    for base in cls.__mro__[1:]:
        if getattr(base, "__record_frozen__", frozen) != frozen:
            raise TypeError(f"{cls.__qualname__}: a frozen record and a mutable one cannot "
                            "inherit from each other")
    _check_order(cls, every)
    cls.__record_fields__ = every  # type: ignore[attr-defined]
    cls.__record_frozen__ = frozen  # type: ignore[attr-defined]
    cls.__match_args__ = tuple(one.name for one in every if one.init)  # type: ignore[attr-defined,misc]
    if "__init__" not in cls.__dict__:
        cls.__init__ = _deferred_init(cls, every, frozen)  # type: ignore[misc]
    if "__repr__" not in cls.__dict__:
        cls.__repr__ = _repr_of(tuple(one.name for one in every if one.repr))  # type: ignore[assignment]
    if eq:
        values = _values_of([one.name for one in every if one.compare])
        if "__eq__" not in cls.__dict__:
            cls.__eq__ = _eq_of(values)  # type: ignore[assignment]
        if "__hash__" not in cls.__dict__ or cls.__dict__["__hash__"] is None:
            cls.__hash__ = _hash_of(values) if frozen else None  # type: ignore[method-assign,assignment]
    if frozen:
        names = frozenset(one.name for one in every)
        cls.__setattr__ = _frozen_setattr(cls, names)  # type: ignore[assignment]
        cls.__delattr__ = _frozen_delattr(cls, names)  # type: ignore[assignment]


def _values_of(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of a record's ``names`` fields, whatever their count: compared and hashed as
    dataclasses compare theirs (a tuple of one keeps a NaN equal to itself)."""
    if not names:
        return lambda _: ()
    getter = operator.attrgetter(*names)
    return getter if len(names) > 1 else lambda record: (getter(record),)


def _fields_of(cls: type) -> tuple[Field, ...]:
    """The bases' fields, then the class's own annotations, as dataclasses order them: a field
    declared again keeps its place, and without a value of its own takes the inherited one."""
    every: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        for one in getattr(base, "__record_fields__", ()):
            every[one.name] = one
    own = cls.__annotations__  # the class's own on Python 3.10+ (inspect's import is spared)
    for name, annotation in own.items():
        if _is_class_var(annotation):
            continue
        declared = getattr(cls, name, MISSING)
        one = declared if isinstance(declared, Field) else Field(
            declared, MISSING, True, True, True, None)
        one.name = name
        if one.default is not MISSING and type(one.default).__hash__ is None:
            raise ValueError(f"mutable default {type(one.default).__name__} for field {name}: "
                             "use default_factory")
        if isinstance(declared, Field):
            if one.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, one.default)
        every[name] = one
    stray = [name for name, value in cls.__dict__.items()
             if isinstance(value, Field) and name not in own]
    if stray:
        raise TypeError(f"{cls.__qualname__}: {', '.join(stray)} is a field without a type "
                        "annotation")
    return tuple(every.values())


def _is_class_var(annotation: Any) -> bool:
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar"))


def _check_order(cls: type, every: tuple[Field, ...]) -> None:
    """Python's own rule for ``__init__``, said when the class is defined (the method itself
    is compiled later)."""
    defaulted = False
    for one in every:
        if not one.init:
            continue
        if one.default is not MISSING or one.default_factory is not MISSING:
            defaulted = True
        elif defaulted:
            raise TypeError(f"{cls.__qualname__}: non-default field {one.name!r} follows a "
                            "default one")


def _deferred_init(cls: type, every: tuple[Field, ...], frozen: bool) -> Callable[..., None]:
    """An ``__init__`` that compiles the real one for ``cls`` on first use and installs it."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        real = _compile_init(cls, every, frozen)
        if cls.__dict__.get("__init__") is __init__:
            cls.__init__ = real  # type: ignore[misc]
        real(self, *args, **kwargs)

    return __init__


def _compile_init(cls: type, every: tuple[Field, ...], frozen: bool) -> Callable[..., None]:
    """The ``__init__`` dataclasses would write: one assignment per field, factories called
    when their argument was not given."""
    namespace: dict[str, Any] = {"_FROM_FACTORY": _FROM_FACTORY, "_set": object.__setattr__}
    parameters, body = ["self"], []
    for one in every:
        value = one.name
        if one.default_factory is not MISSING:
            namespace[f"_factory_{one.name}"] = one.default_factory
            if one.init:
                parameters.append(f"{one.name}=_FROM_FACTORY")
                value = f"_factory_{one.name}() if {one.name} is _FROM_FACTORY else {one.name}"
            else:
                value = f"_factory_{one.name}()"
        elif one.init:
            if one.default is MISSING:
                parameters.append(one.name)
            else:
                namespace[f"_default_{one.name}"] = one.default
                parameters.append(f"{one.name}=_default_{one.name}")
        else:  # not in __init__: its default, if any, is the class attribute
            continue
        body.append(f"_set(self, {one.name!r}, {value})" if frozen
                    else f"self.{one.name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    source = (f"def __init__({', '.join(parameters)}):\n    "
              + "\n    ".join(body or ["pass"]) + "\n")
    exec(compile(source, f"<record {cls.__module__}.{cls.__qualname__}>", "exec"), namespace)
    init: Callable[..., None] = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _repr_of(names: tuple[str, ...]) -> Callable[[Any], str]:
    def __repr__(self: Any) -> str:
        key = (id(self), get_ident())
        if key in _SHOWING:  # a record that holds itself, somewhere below
            return "..."
        _SHOWING.add(key)
        try:
            shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        finally:
            _SHOWING.discard(key)
        return f"{type(self).__qualname__}({shown})"

    return __repr__


#: The records being shown, with the thread showing each: repr stops where one recurs.
_SHOWING: set[tuple[int, int]] = set()


def _eq_of(values: Callable[[Any], Any]) -> Callable[[Any, Any], Any]:
    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return values(self) == values(other)

    return __eq__


def _hash_of(values: Callable[[Any], Any]) -> Callable[[Any], int]:
    def __hash__(self: Any) -> int:
        return hash(values(self))

    return __hash__


def _frozen_setattr(cls: type, names: frozenset[str]) -> Callable[[Any, str, Any], None]:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise FrozenRecordError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    return __setattr__


def _frozen_delattr(cls: type, names: frozenset[str]) -> Callable[[Any, str], None]:
    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise FrozenRecordError(f"cannot delete field {name!r}")
        object.__delattr__(self, name)

    return __delattr__
