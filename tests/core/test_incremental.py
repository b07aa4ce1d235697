"""Growing lists and Seen: the unchanged prefix they report is never longer than the real one."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.core._incremental import Growing, Seen, replaced_spans, shared_prefix

from ..conftest import examples

OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(0, 3)),
        st.tuples(st.just("extend"), st.integers(0, 3)),
        st.tuples(st.just("set"), st.integers(-8, 8)),
        st.tuples(st.just("del"), st.integers(-8, 8)),
        st.tuples(st.just("slice"), st.integers(0, 8)),
        st.tuples(st.just("insert"), st.integers(-8, 8)),
        st.tuples(st.just("pop"), st.integers(-8, 8)),
        st.tuples(st.just("reverse"), st.just(0)),
        st.tuples(st.just("remember"), st.just(0)),
    ),
    max_size=40,
)


def _apply(items: Growing, operation: tuple[str, int]) -> None:
    kind, value = operation
    size = len(items)
    if kind == "append":
        items.append(object())
    elif kind == "extend":
        items.extend(object() for _ in range(value))
    elif kind == "set" and -size <= value < size:
        items[value] = object()
    elif kind == "del" and -size <= value < size:
        del items[value]
    elif kind == "slice":
        del items[value:]
    elif kind == "insert":
        items.insert(value, object())
    elif kind == "pop" and -size <= value < size:
        items.pop(value)
    elif kind == "reverse":
        items.reverse()


@settings(max_examples=examples(100, deep=3_000))
@given(st.integers(0, 10), OPERATIONS)
def test_the_reported_prefix_is_never_too_long(start: int, operations: list[Any]) -> None:
    items = Growing(object() for _ in range(start))
    seen = Seen()
    seen.remember(items)
    snapshot = list(items)
    for operation in operations:
        if operation[0] == "remember":
            seen.remember(items)
            snapshot = list(items)
            continue
        _apply(items, operation)
        assert seen.prefix(items) <= shared_prefix(snapshot, items)


@given(st.integers(0, 10), st.lists(st.integers(0, 4), max_size=20))
def test_appends_keep_the_whole_prefix(start: int, batches: list[int]) -> None:
    items = Growing(object() for _ in range(start))
    seen = Seen()
    for batch in batches:
        seen.remember(items)
        before = len(items)
        items.extend(object() for _ in range(batch))
        assert seen.prefix(items) == before


def test_a_cut_reports_the_cut() -> None:
    items = Growing(range(10))
    seen = Seen()
    seen.remember(items)
    del items[6:]
    items.extend([object(), object()])
    assert seen.prefix(items) == 6


def test_an_old_reader_knows_nothing() -> None:
    """Past the log of changes, a reader is told nothing is known rather than a wrong length."""
    items = Growing(range(100))
    seen = Seen()
    seen.remember(items)
    for index in range(99, 20, -1):
        items[index] = -index
    assert seen.prefix(items) == 0


def test_a_plain_list_is_compared_by_identity() -> None:
    first = [object() for _ in range(5)]
    seen = Seen()
    seen.remember(first)
    assert seen.prefix([*first[:3], object()]) == 3
    assert seen.prefix([*first, object()]) == 5


def test_another_growing_list_is_compared_with_what_is_still_known() -> None:
    items = Growing(object() for _ in range(5))
    seen = Seen()
    seen.remember(items)
    other = Growing(items[:4])
    assert seen.prefix(other) == 4
    items[1] = object()
    assert seen.prefix(other) == 1


_POOL = [{"n": 1}, {"n": 1}, {"n": 2}, {"n": 3}]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=6), st.lists(st.integers(0, 3), max_size=6))
def test_shared_prefix_counts_identical_elements_only(old: list[int], new: list[int]) -> None:
    """Equal but distinct elements end the shared prefix; lists of any two lengths compare."""
    before = [_POOL[i] for i in old]
    after = [_POOL[i] for i in new]
    same = next(
        (i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a is not b),
        min(len(old), len(new)),
    )
    assert shared_prefix(before, after) == same
    assert shared_prefix(tuple(before), after) == same


@settings(max_examples=examples(300, 2_000), deadline=None)
@given(
    st.lists(st.integers(0, 5), max_size=12),
    st.lists(st.integers(0, 5), max_size=12),
    st.integers(0, 12),
)
def test_replaced_spans_rebuild_the_new_list(
    old_keys: list[int], new_keys: list[int], head: int
) -> None:
    """``new`` is ``old`` with each reported span replaced, the spans ascending and apart;
    None exactly when the lists share no first element."""
    pool = [object() for _ in range(6)]
    old = [pool[key] for key in old_keys]
    new = [*old[:head], *(pool[key] for key in new_keys)]  # shares up to ``head`` first elements
    spans = replaced_spans(old, new)
    if spans is None:
        assert shared_prefix(old, new) == 0
        return
    rebuilt: list[Any] = []
    done = 0
    for a, b, c, d in spans:
        assert done <= a <= b <= len(old)
        assert 0 < c <= d <= len(new)
        rebuilt += [*old[done:a], *new[c:d]]
        done = b
    rebuilt += old[done:]
    assert len(rebuilt) == len(new)
    assert all(x is y for x, y in zip(rebuilt, new, strict=True))
