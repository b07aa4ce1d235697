"""Record classes (``@record``), as ``@dataclass`` makes them, without its start-up cost.

``dataclasses`` imports ``inspect`` (with ``ast``, ``dis`` and ``tokenize``) and compiles each
generated method from source: for the records ``from windowkeeper import ContextSession``
defines that was more than a third of the import. :func:`record` compiles only ``__init__`` (so
that its parameters are the fields); ``__repr__``, ``__eq__``, ``__hash__`` and, when frozen,
``__setattr__``/``__delattr__`` are closures over the field names. It imports nothing.

A record is still a dataclass to its callers: ``dataclasses.fields``, ``replace``, ``asdict`` and
``is_dataclass`` work on it (``__dataclass_fields__`` is built by ``dataclasses`` the first time
it is read), and assigning to a frozen record raises ``dataclasses.FrozenInstanceError``.
Supported: fields with a default or a ``field(default_factory=...)``, ``__post_init__``,
``ClassVar`` annotations (not fields), ``frozen`` and ``slots``; not inheritance of fields.
"""

from __future__ import annotations

from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar, dataclass_transform, overload

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["field", "record", "replace"]

_T = TypeVar("_T")
_MISSING: Any = type("_Missing", (), {"__repr__": lambda self: "MISSING"})()
_FACTORY: Any = type("_Factory", (), {"__repr__": lambda self: "<factory>"})()
_FIELDS = "__record_fields__"


class _Field:
    """A field's default or default factory, as written in the class body with :func:`field`."""

    __slots__ = ("default", "default_factory")

    def __init__(self, default: Any, default_factory: Any) -> None:
        self.default = default
        self.default_factory = default_factory


def field(*, default: Any = _MISSING, default_factory: Callable[[], Any] = _MISSING) -> Any:
    """A field's default (``default``) or the callable that makes one for each record."""
    if default is not _MISSING and default_factory is not _MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return _Field(default, default_factory)


class _DataclassFields:
    """``__dataclass_fields__`` and ``__dataclass_params__`` on first read: built by
    ``dataclasses`` itself (for a twin with the same fields and frozenness), then kept."""

    def __init__(self, attribute: str) -> None:
        self.attribute = attribute

    def __get__(self, instance: object, owner: type) -> Any:
        import dataclasses  # noqa: PLC0415 - only for a caller that asks dataclasses

        own = getattr(owner, _FIELDS)
        specs = [(name, kind, dataclasses.field(**spec)) for name, kind, spec in own]
        frozen = getattr(owner, "__record_frozen__")  # noqa: B009 - set by _build, unknown to mypy
        twin = dataclasses.make_dataclass(owner.__name__, specs, frozen=frozen)
        for attribute in ("__dataclass_fields__", "__dataclass_params__"):
            setattr(owner, attribute, getattr(twin, attribute))  # read once, then plain values
        return getattr(owner, self.attribute)


def _frozen_error(name: str) -> Exception:
    from dataclasses import FrozenInstanceError  # noqa: PLC0415 - only when refusing

    return FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_setstate(self: Any, state: tuple[Any, ...]) -> None:
    for name, value in zip(type(self).__match_args__, state, strict=True):
        object.__setattr__(self, name, value)


def _getstate(self: Any) -> tuple[Any, ...]:
    return tuple(getattr(self, name) for name in type(self).__match_args__)


def _is_classvar(annotation: object) -> bool:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return text.startswith(("ClassVar", "typing.ClassVar"))


def _init(cls: type, names: list[str], frozen: bool, defaults: dict[str, _Field]) -> Any:
    """``cls.__init__``, compiled from source so that it has the fields as its parameters."""
    params, body = ["self"], []
    for name in names:
        spec = defaults.get(name)
        if spec is None:
            params.append(name)
        elif spec.default_factory is not _MISSING:
            params.append(f"{name}=__factory")
            body.append(f"  if {name} is __factory: {name} = __factory_{name}()")
        else:
            params.append(f"{name}=__default_{name}")
    if frozen:
        body += [f"  __object_setattr(self, {name!r}, {name})" for name in names]
    else:
        body += [f"  self.{name} = {name}" for name in names]
    if hasattr(cls, "__post_init__"):
        body.append("  self.__post_init__()")
    scope: dict[str, Any] = {"__factory": _FACTORY, "__object_setattr": object.__setattr__}
    for name, spec in defaults.items():
        scope[f"__default_{name}"] = spec.default
        scope[f"__factory_{name}"] = spec.default_factory
    # The generated names are private to this namespace: ``__x`` is not mangled at module level.
    source = "\n".join([f"def __init__({', '.join(params)}):", *(body or ["  pass"])])
    exec(source, scope)
    init = scope["__init__"]
    annotations = _own_annotations(cls)
    init.__annotations__ = {name: annotations[name] for name in names} | {"return": None}
    return init


def _values(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """The field values of a record as a tuple, read in C, as a dataclass's methods compare them."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])  # of one name, attrgetter returns the bare value
        return lambda record: (one(record),)
    return lambda _: ()


def _methods(built: type, names: list[str], frozen: bool) -> dict[str, Any]:
    """``__repr__``, ``__eq__`` and, as a dataclass has them, ``__hash__``, ``__setattr__`` and
    ``__delattr__`` of the class ``built``: closures over its field names."""
    fields = frozenset(names)
    values = _values(names)

    def __repr__(self: Any) -> str:  # noqa: N807 - the method's own name
        shown = ", ".join([f"{name}={getattr(self, name)!r}" for name in names])
        return f"{self.__class__.__qualname__}({shown})"

    def __eq__(self: Any, other: object) -> bool:  # noqa: N807
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    def __hash__(self: Any) -> int:  # noqa: N807
        return hash(values(self))

    def __setattr__(self: Any, name: str, value: object) -> None:  # noqa: N807
        if type(self) is built or name in fields:
            raise _frozen_error(name)
        object.__setattr__(self, name, value)

    def __delattr__(self: Any, name: str) -> None:  # noqa: N807
        if type(self) is built or name in fields:
            raise _frozen_error(name)
        object.__delattr__(self, name)

    methods: dict[str, Any] = {"__repr__": __repr__, "__eq__": __eq__}
    if frozen:
        methods.update(__hash__=__hash__, __setattr__=__setattr__, __delattr__=__delattr__)
    return methods


def _own_annotations(cls: type) -> dict[str, Any]:
    """The annotations written in ``cls``'s own body (``inspect.get_annotations`` would import
    inspect; under ``from __future__ import annotations`` they are strings)."""
    annotations: dict[str, Any] = cls.__dict__.get("__annotations__", {})  # noqa: RUF063
    return annotations


def _build(cls: type[_T], frozen: bool, slots: bool) -> type[_T]:
    annotations = _own_annotations(cls)
    names = [name for name, kind in annotations.items() if not _is_classvar(kind)]
    defaults: dict[str, _Field] = {}
    for name in names:
        value = cls.__dict__.get(name, _MISSING)
        if value is not _MISSING:
            defaults[name] = value if isinstance(value, _Field) else _Field(value, _MISSING)
        elif defaults:
            raise TypeError(f"non-default argument {name!r} follows default argument")
    own = cls.__dict__
    namespace = {key: value for key, value in own.items() if key not in defaults}
    namespace.pop("__dict__", None)
    namespace.pop("__weakref__", None)
    namespace["__qualname__"] = cls.__qualname__  # kept by type, not in its __dict__
    namespace["__match_args__"] = tuple(names)
    namespace[_FIELDS] = tuple(
        (name, annotations[name], _spec(defaults.get(name))) for name in names
    )
    namespace["__record_frozen__"] = frozen
    namespace["__dataclass_fields__"] = _DataclassFields("__dataclass_fields__")
    namespace["__dataclass_params__"] = _DataclassFields("__dataclass_params__")
    if slots:
        namespace["__slots__"] = tuple(names)
        if frozen:  # the default pickle state is restored with setattr, which a frozen one refuses
            namespace["__getstate__"] = _getstate
            namespace["__setstate__"] = _frozen_setstate
    else:
        for name, spec in defaults.items():
            if spec.default_factory is _MISSING:
                namespace[name] = spec.default  # a class attribute, as a dataclass has
    metaclass: Any = type(cls)  # type, or Generic's
    built: type[_T] = metaclass(cls.__name__, cls.__bases__, namespace)
    methods = _methods(built, names, frozen)
    methods["__init__"] = _init(cls, names, frozen, defaults)
    if not frozen and "__hash__" not in own:
        methods["__hash__"] = None  # equal by value and mutable: unhashable, as a dataclass
    for name, method in methods.items():
        if name in own:  # a method the class writes itself is kept, as by a dataclass
            continue
        if method is not None:
            method.__qualname__ = f"{cls.__qualname__}.{name}"
        setattr(built, name, method)
    return built


def _spec(spec: _Field | None) -> dict[str, Any]:
    if spec is None:
        return {}
    if spec.default_factory is not _MISSING:
        return {"default_factory": spec.default_factory}
    return {"default": spec.default}


@overload
def record(cls: type[_T], /) -> type[_T]: ...


@overload
def record(*, frozen: bool = False, slots: bool = False) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(field_specifiers=(field,))
def record(
    cls: type[_T] | None = None, /, *, frozen: bool = False, slots: bool = False
) -> type[_T] | Callable[[type[_T]], type[_T]]:
    """The class ``cls`` as a record: what ``@dataclass(frozen=..., slots=...)`` makes of it."""

    def wrap(cls: type[_T]) -> type[_T]:
        return _build(cls, frozen, slots)

    return wrap if cls is None else wrap(cls)


def replace(obj: _T, /, **changes: Any) -> _T:
    """A copy of the record ``obj`` with ``changes`` (``dataclasses.replace``'s rule)."""
    fields = getattr(type(obj), _FIELDS, None)
    if fields is None:
        raise TypeError("replace() should be called on record instances")
    for name, _, _ in fields:
        if name not in changes:
            changes[name] = getattr(obj, name)
    return type(obj)(**changes)
