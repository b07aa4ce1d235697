"""``@record`` makes what ``@dataclass`` makes: each law below is checked on twins, one class body
given to each decorator, so that a record behaves as the dataclass it replaced."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from collections.abc import Callable
from typing import Any, ClassVar

import pytest

from windowkeeper._record import field, record, replace


def _frozen(decorate: Callable[..., Any], make_field: Callable[..., Any]) -> Any:
    @decorate(frozen=True, slots=True)
    class Usage:
        """Three counts and a label."""

        tokens_in: int
        tokens_out: int = 0
        label: str = "usage"
        parts: tuple[int, ...] = make_field(default_factory=tuple)
        LIMIT: ClassVar[int] = 10  # not a field

        def total(self) -> int:
            return self.tokens_in + self.tokens_out

    return Usage


def _mutable(decorate: Callable[..., Any], make_field: Callable[..., Any]) -> Any:
    @decorate(slots=True)
    class Scan:
        """A mutable record with a post-init check."""

        count: int
        reads: dict[str, int] = make_field(default_factory=dict)

        def __post_init__(self) -> None:
            if self.count < 0:
                raise ValueError("count must be >= 0")

    return Scan


def _plain(decorate: Callable[..., Any], make_field: Callable[..., Any]) -> Any:
    @decorate
    class Detector:
        """Neither frozen nor slotted: defaults are class attributes."""

        tools: list[str] = make_field(default_factory=list)
        limit: int = 3

    return Detector


SHAPES = [_frozen, _mutable, _plain]
ARGS: dict[Any, tuple[Any, ...]] = {_frozen: (3, 4, "u", (1,)), _mutable: (2,), _plain: ()}


def twins(shape: Callable[..., Any]) -> tuple[Any, Any]:
    """The class body ``shape`` as a record and as a dataclass."""
    return shape(record, field), shape(dataclasses.dataclass, dataclasses.field)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda shape: shape.__name__)
class TestLikeADataclass:
    """A record and its dataclass twin agree on every method a dataclass writes."""

    def test_init_repr_and_signature(self, shape: Callable[..., Any]) -> None:
        """Same parameters (defaults, ``<factory>``), same repr, same match args."""
        made, twin = twins(shape)
        assert str(inspect.signature(made)) == str(inspect.signature(twin))
        assert repr(made(*ARGS[shape])) == repr(twin(*ARGS[shape]))
        assert made.__match_args__ == twin.__match_args__
        assert made.__init__.__annotations__ == twin.__init__.__annotations__
        assert made.__init__.__qualname__ == f"{made.__qualname__}.__init__"

    def test_equality_and_hash(self, shape: Callable[..., Any]) -> None:
        """Equal by value, only to the same class; hashable exactly when the twin is."""
        made, twin = twins(shape)
        one, two = made(*ARGS[shape]), made(*ARGS[shape])
        assert one == two
        assert one != twin(*ARGS[shape])
        assert (made.__hash__ is None) == (twin.__hash__ is None)
        if made.__hash__ is not None:
            assert hash(one) == hash(two) == hash(twin(*ARGS[shape]))

    def test_a_factory_makes_a_value_per_record(self, shape: Callable[..., Any]) -> None:
        """Two records made without the argument get equal defaults, and a mutable one each its own."""
        made, twin = twins(shape)
        first, second = made(*ARGS[shape][:1]), made(*ARGS[shape][:1])
        assert repr(first) == repr(twin(*ARGS[shape][:1]))
        for name in ("reads", "tools"):
            if hasattr(first, name):
                assert getattr(first, name) == getattr(second, name)
                assert getattr(first, name) is not getattr(second, name)

    def test_dataclasses_reads_it(self, shape: Callable[..., Any]) -> None:
        """``is_dataclass``, ``fields``, ``asdict`` and ``replace`` work as on the twin."""
        made, twin = twins(shape)
        one = made(*ARGS[shape])
        assert dataclasses.is_dataclass(one)
        fields = [(f.name, f.type) for f in dataclasses.fields(made)]
        assert fields == [(f.name, f.type) for f in dataclasses.fields(twin)]
        assert dataclasses.asdict(one) == dataclasses.asdict(twin(*ARGS[shape]))
        first = made.__match_args__[0] if made.__match_args__ else None
        if first is not None:
            value = getattr(one, first)
            assert dataclasses.replace(one, **{first: value}) == one
            assert replace(one, **{first: value}) == one

    def test_copies(self, shape: Callable[..., Any]) -> None:
        """copy and deepcopy give equal records."""
        made, _ = twins(shape)
        one = made(*ARGS[shape])
        assert copy.copy(one) == one
        assert copy.deepcopy(one) == one


# Pickle finds a class by its module and name: these are the shapes above at module level.
Usage = _frozen(record, field)
Usage.__qualname__ = "Usage"
Scan = _mutable(record, field)
Scan.__qualname__ = "Scan"
Detector = _plain(record, field)
Detector.__qualname__ = "Detector"


@pytest.mark.parametrize(
    "value", [Usage(3, 4, "u", (1,)), Scan(2, {"a": 1}), Detector(["read"], 4)], ids=repr
)
def test_a_record_pickles(value: Any) -> None:
    """A pickled record (frozen ones too) loads equal."""
    assert pickle.loads(pickle.dumps(value)) == value


class TestFrozen:
    """A frozen record refuses changes as a frozen dataclass does."""

    def test_assignment_raises_frozen_instance_error(self) -> None:
        """Setting or deleting a field, or adding an attribute, raises FrozenInstanceError."""
        made, _ = twins(_frozen)
        one = made(1)
        with pytest.raises(
            dataclasses.FrozenInstanceError, match="cannot assign to field 'tokens_in'"
        ):
            one.tokens_in = 2
        with pytest.raises(dataclasses.FrozenInstanceError):
            del one.tokens_in
        with pytest.raises(dataclasses.FrozenInstanceError):
            one.other = 1

    def test_replace_makes_a_new_record(self) -> None:
        """replace() copies the other fields and leaves the original alone."""
        made, _ = twins(_frozen)
        one = made(1, 2)
        two = replace(one, tokens_out=5)
        assert (one.tokens_out, two.tokens_out, two.tokens_in, two.total()) == (2, 5, 1, 6)

    def test_a_class_variable_is_not_a_field(self) -> None:
        """A ``ClassVar`` stays on the class and out of the fields."""
        made, _ = twins(_frozen)
        assert made.LIMIT == 10
        assert "LIMIT" not in made.__match_args__


class TestSlots:
    """Slotted records take no other attribute; post-init runs after the fields are set."""

    def test_no_other_attribute(self) -> None:
        made, _ = twins(_mutable)
        one = made(1)
        with pytest.raises(AttributeError):
            one.other = 1
        one.count = 4
        assert one == made(4)

    def test_post_init_runs(self) -> None:
        made, _ = twins(_mutable)
        with pytest.raises(ValueError, match="count must be >= 0"):
            made(-1)

    def test_unslotted_defaults_are_class_attributes(self) -> None:
        """As on a dataclass without slots, a plain default is readable on the class."""
        made, twin = twins(_plain)
        assert made.limit == twin.limit == 3


class TestRefusals:
    """Mistakes a dataclass refuses are refused."""

    def test_a_field_without_default_after_one_with(self) -> None:
        with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):

            @record
            class Wrong:
                a: int = 0
                b: int

    def test_default_and_factory_together(self) -> None:
        with pytest.raises(ValueError, match="cannot specify both default and default_factory"):
            field(default=1, default_factory=int)

    def test_replace_of_something_else(self) -> None:
        with pytest.raises(TypeError, match="record instances"):
            replace(object())


def test_a_method_the_class_writes_is_kept() -> None:
    """A ``__repr__`` written in the class body wins over the generated one, as for a dataclass."""

    @record(frozen=True, slots=True)
    class Named:
        name: str

        def __repr__(self) -> str:
            return f"<{self.name}>"

    assert repr(Named("a")) == "<a>"
    assert Named("a") == Named("a")


@pytest.mark.parametrize("make", [_frozen, _mutable, _plain])
def test_the_dataclass_params_are_the_twins(make: Callable[..., Any]) -> None:
    """``__dataclass_params__`` (what tells a frozen dataclass apart) reads as the twin's."""
    ours = make(record, field).__dataclass_params__
    theirs = make(dataclasses.dataclass, dataclasses.field).__dataclass_params__
    assert repr(ours) == repr(theirs)
    assert ours.frozen == theirs.frozen
