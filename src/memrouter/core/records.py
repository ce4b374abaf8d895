"""Typed, frozen records that cost little to define: the records of the search path.

``@record`` turns an annotated class into a record as
``@dataclass(frozen=True, slots=True)`` would: an ``__init__`` over the
fields in order (defaults and ``field(default_factory=...)`` allowed),
``__slots__``, equality and a hash over the compared fields, a ``repr``,
and no assignment after ``__init__`` (``record(frozen=False)`` allows it and
makes the record unhashable, as a plain dataclass). ``replace`` copies one
with some fields changed. Type checkers read it as a dataclass
(``typing.dataclass_transform``).

Why not ``dataclasses``: importing it loads ``inspect`` and defining one
frozen, slotted dataclass compiles seven functions; a cold ``memrouter
search`` defines about thirty records, and that cost was more than half of
its start-up. A record compiles one small piece of source per class.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar, dataclass_transform, overload

    T = TypeVar("T")

__all__ = ["FrozenRecordError", "field", "field_names", "record", "replace"]


class FrozenRecordError(AttributeError):
    """Assigning to a field of a frozen record."""


class _Field:
    """What ``field`` gives: a default, or a factory of defaults, and whether the field counts in ``==``."""

    __slots__ = ("default", "factory", "compare")

    def __init__(self, default: object, factory: Callable[[], object] | None, compare: bool) -> None:
        self.default = default
        self.factory = factory
        self.compare = compare


_MISSING = object()


def field(*, default: Any = _MISSING, default_factory: Callable[[], Any] | None = None, compare: bool = True) -> Any:
    """A field's default (``default``, or a fresh ``default_factory()`` for each record) and whether it counts in
    equality and the hash (``compare``)."""
    return _Field(default, default_factory, compare)


def _frozen_setattr(self: object, name: str, value: object) -> None:
    raise FrozenRecordError(f"cannot assign to field {name!r}: {type(self).__name__} is frozen")


def _frozen_delattr(self: object, name: str) -> None:
    raise FrozenRecordError(f"cannot delete field {name!r}: {type(self).__name__} is frozen")


def _repr(self: Any) -> str:
    return f"{type(self).__qualname__}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__) + ")"


def _getstate(self: Any) -> tuple[object, ...]:
    return tuple(getattr(self, name) for name in self.__slots__)


def _setstate(self: Any, state: tuple[object, ...]) -> None:
    for name, value in zip(self.__slots__, state, strict=True):
        object.__setattr__(self, name, value)


def _make(cls: type, frozen: bool) -> type:
    names: list[str] = []
    defaults: dict[str, object] = {}
    for base in reversed(cls.__mro__[1:]):  # fields of a record it extends come first
        for name in getattr(base, "__record_fields__", ()):
            if name not in names:
                names.append(name)
    namespace = dict(cls.__dict__)
    for name, annotation in namespace.get("__annotations__", {}).items():
        if isinstance(annotation, str) and annotation.startswith(("ClassVar", "typing.ClassVar")):
            continue
        if name not in names:
            names.append(name)
        if name in namespace:
            defaults[name] = namespace.pop(name)
    inherited = {
        name: value for base in cls.__mro__[1:] for name, value in getattr(base, "__record_defaults__", {}).items()
    }
    defaults = {**{n: v for n, v in inherited.items() if n not in defaults}, **defaults}
    for name in list(namespace):
        if name in ("__dict__", "__weakref__") or name in names:
            namespace.pop(name, None)
    namespace.update(
        __slots__=tuple(name for name in names if name not in _slots_of_bases(cls)),
        __init__=_first_init, __eq__=_first_eq, __repr__=_repr, __match_args__=tuple(names),
        __getstate__=_getstate, __setstate__=_setstate, __record_fields__=tuple(names),
        __record_defaults__=defaults, __record_frozen__=frozen,
    )  # fmt: skip
    if frozen:
        namespace.update(__setattr__=_frozen_setattr, __delattr__=_frozen_delattr, __hash__=_first_hash)
    else:
        namespace["__hash__"] = None  # mutable and compared by value: unhashable, as a dataclass
    made = type(cls)(cls.__name__, cls.__bases__, namespace)
    made.__qualname__ = cls.__qualname__
    return made


# A record class is made with a generic ``__init__``; after this many records it compiles its own, as fast as
# a dataclass's. A cold search makes a few records of each class it uses: compiling would cost it more
# (about 0.13 ms a class) than the generic ``__init__`` does; a long-running server compiles what it uses a lot.
COMPILE_AFTER = 64


def _compile(cls: Any) -> None:
    """Write ``cls``'s ``__init__``, ``__eq__`` and ``__hash__`` as source and compile them, once."""
    names, frozen = cls.__record_fields__, cls.__record_frozen__
    parameters, body = [], []
    globals_: dict[str, Any] = {"__set": object.__setattr__, "__MISSING": _MISSING}
    for name in names:
        spec = _spec(cls, name)
        value = name
        if spec.factory is not None:
            globals_[f"__factory_{name}"] = spec.factory
            parameters.append(f"{name}=__MISSING")
            value = f"__factory_{name}() if {name} is __MISSING else {name}"
        elif spec.default is not _MISSING:
            globals_[f"__default_{name}"] = spec.default
            parameters.append(f"{name}=__default_{name}")
        else:
            parameters.append(name)
        body.append(f"    __set(self, {name!r}, {value})" if frozen else f"    self.{name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    compared = [name for name in names if _spec(cls, name).compare]
    own = "".join(f"self.{name}, " for name in compared)
    other = "".join(f"other.{name}, " for name in compared)
    source = (
        f"def __init__(self, {', '.join(parameters)}):\n" + ("\n".join(body) or "    pass") + "\n"
        "def __eq__(self, other):\n"
        "    if other.__class__ is not self.__class__:\n        return NotImplemented\n"
        f"    return ({own}) == ({other})\n"
        f"def __hash__(self):\n    return hash(({own}))\n"
    )
    made: dict[str, Any] = {}
    exec(source, globals_, made)  # one compile per record class, once it is used often
    type.__setattr__(cls, "__init__", made["__init__"])
    type.__setattr__(cls, "__eq__", made["__eq__"])
    if frozen:
        type.__setattr__(cls, "__hash__", made["__hash__"])


def _spec(cls: Any, name: str) -> _Field:
    given = cls.__record_defaults__.get(name, _MISSING)
    return given if isinstance(given, _Field) else _Field(given, None, True)


_uses: dict[type, int] = {}


def _first_init(self: Any, *args: Any, **kwargs: Any) -> None:
    """The generic ``__init__`` a record class starts with (see ``COMPILE_AFTER``)."""
    cls = type(self)
    uses = _uses[cls] = _uses.get(cls, 0) + 1
    if uses >= COMPILE_AFTER:
        _compile(cls)
        cls.__init__(self, *args, **kwargs)
        return
    names = cls.__record_fields__
    if len(args) > len(names):
        raise TypeError(f"{cls.__name__}() takes {len(names) + 1} positional arguments but {len(args) + 1} were given")
    values = dict(zip(names, args, strict=False))
    for name, value in kwargs.items():
        if name not in names:
            raise TypeError(f"{cls.__name__}() got an unexpected keyword argument {name!r}")
        if name in values:
            raise TypeError(f"{cls.__name__}() got multiple values for argument {name!r}")
        values[name] = value
    put = object.__setattr__ if cls.__record_frozen__ else setattr
    for name in names:
        if name in values:
            put(self, name, values[name])
            continue
        spec = _spec(cls, name)
        if spec.factory is not None:
            put(self, name, spec.factory())
        elif spec.default is not _MISSING:
            put(self, name, spec.default)
        else:
            raise TypeError(f"{cls.__name__}() missing 1 required positional argument: {name!r}")
    if hasattr(cls, "__post_init__"):
        self.__post_init__()


def _compared(self: Any) -> tuple[object, ...]:
    cls = type(self)
    return tuple(getattr(self, name) for name in cls.__record_fields__ if _spec(cls, name).compare)


def _first_eq(self: Any, other: object) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _compared(self) == _compared(other)


def _first_hash(self: Any) -> int:
    return hash(_compared(self))


def _slots_of_bases(cls: type) -> set[str]:
    return {slot for base in cls.__mro__[1:] for slot in getattr(base, "__slots__", ())}


if TYPE_CHECKING:

    @overload
    def record(cls: type[T], /) -> type[T]: ...

    @overload
    def record(*, frozen: bool = True) -> Callable[[type[T]], type[T]]: ...

    @dataclass_transform(frozen_default=True, field_specifiers=(field,))
    def record(cls: Any = None, /, *, frozen: bool = True) -> Any:
        """Make ``cls`` a record (see the module docstring)."""

else:

    def record(cls=None, /, *, frozen=True):
        """Make ``cls`` a record (see the module docstring)."""
        if cls is None:
            return lambda cls: _make(cls, frozen)
        return _make(cls, frozen)


def replace(value: T, /, **changes: Any) -> T:
    """A copy of the record (or dataclass) ``value`` with ``changes`` to its fields."""
    names = getattr(type(value), "__record_fields__", None)
    if names is None:
        import dataclasses  # a dataclass: the standard library's own replace

        return dataclasses.replace(value, **changes)  # type: ignore[type-var]
    unknown = set(changes) - set(names)
    if unknown:
        raise TypeError(f"{type(value).__name__} has no field {sorted(unknown)[0]!r}")
    return type(value)(**{name: changes[name] if name in changes else getattr(value, name) for name in names})


def field_names(value: object) -> tuple[str, ...]:
    """The fields of a record (or record class), in order."""
    names: tuple[str, ...] = type(value).__record_fields__ if not isinstance(value, type) else value.__record_fields__  # type: ignore[attr-defined]
    return names
