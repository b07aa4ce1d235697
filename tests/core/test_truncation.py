"""Deleted ranges: keep strategies, the next range, range checks (cases 1-7 and Appendix B1)."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest

from windowkeeper import ContextManager, InvalidRangeError, Keep, WindowkeeperError
from windowkeeper.core._truncation import check_range, next_range, visible_start

from ..strategies import A, U, create_messages


def _next(history: list[dict[str, Any]], deleted_range: Any, keep: Keep | str) -> tuple[int, int]:
    return ContextManager().get_next_truncation_range(history, deleted_range, keep)


class TestNextTruncationRange:
    """Cases 1-7 of Cline's getNextTruncationRange tests."""

    def test_first_truncation_half(self) -> None:
        """Case 1: half of 11 messages hides messages 2-5."""
        assert _next(create_messages(11), None, "half") == (2, 5)

    def test_first_truncation_quarter(self) -> None:
        """Case 2: quarter of 11 messages hides messages 2-7."""
        assert _next(create_messages(11), None, "quarter") == (2, 7)

    def test_sequential_half(self) -> None:
        """Case 3: a second half truncation extends the first one from its end."""
        history = create_messages(21)
        first = _next(history, None, "half")
        assert first == (2, 9)
        assert _next(history, first, "half") == (2, 13)

    def test_sequential_quarter(self) -> None:
        """Case 4: a second quarter truncation keeps start 2 and hides more."""
        history = create_messages(41)
        first = _next(history, None, "quarter")
        second = _next(history, first, "quarter")
        assert second[0] == 2
        assert second[1] > first[1]
        assert (first, second) == ((2, 29), (2, 37))

    def test_range_ends_on_an_assistant_message(self) -> None:
        """Case 5: the hidden range ends on an assistant message, the rest starts with a user one."""
        history = create_messages(14)
        start, end = _next(history, None, "half")
        assert (start, end) == (2, 7)
        assert history[end]["role"] == "assistant"
        assert history[end + 1]["role"] == "user"

    def test_small_history_gives_an_empty_range(self) -> None:
        """Case 6: three messages leave nothing to hide: the range is (2, 1)."""
        assert _next(create_messages(3), None, "half") == (2, 1)

    def test_alternation_is_preserved(self) -> None:
        """Case 7: the kept first pair plus the visible rest alternate user/assistant."""
        history = create_messages(20)
        start, end = _next(history, None, "half")
        assert (start, end) == (2, 9)
        roles = [message["role"] for message in history[:start] + history[end + 1 :]]
        assert roles[0] == "user"
        assert all(a != b for a, b in pairwise(roles))

    def test_end_is_not_wrapped_when_negative(self) -> None:
        """A negative end is not an index (JavaScript does not wrap it), so it is not adjusted."""
        history = [U("task")]
        # history[-1] is a user message; wrapping would step the end back to -2.
        assert next_range(history, None, "half") == (2, -1)

    def test_end_steps_back_from_a_non_assistant_message(self) -> None:
        """An end on a user message steps back by exactly one, whatever that message is."""
        history = [U("t"), A("a"), U("u"), U("u2"), U("u3")]
        assert next_range(history, None, "none") == (2, 3)

    def test_previous_range_start_is_ignored(self) -> None:
        """Only the previous end matters: the new range always starts at 2."""
        history = create_messages(21)
        assert next_range(history, (7, 9), "half") == next_range(history, (2, 9), "half")


# Appendix B1: createMessages(n), no prior range -> (none, lastTwo, half, quarter).
B1_TABLE = {
    0: ((2, 1), (2, 1), (2, -1), (2, -1)),
    1: ((2, 1), (2, 1), (2, -1), (2, -1)),
    2: ((2, 1), (2, 1), (2, 1), (2, 1)),
    3: ((2, 1), (2, 1), (2, 1), (2, 1)),
    4: ((2, 3), (2, 1), (2, 1), (2, 1)),
    5: ((2, 3), (2, 1), (2, 1), (2, 3)),
    6: ((2, 5), (2, 3), (2, 3), (2, 3)),
    7: ((2, 5), (2, 3), (2, 3), (2, 3)),
    8: ((2, 7), (2, 5), (2, 3), (2, 5)),
    9: ((2, 7), (2, 5), (2, 3), (2, 5)),
    10: ((2, 9), (2, 7), (2, 5), (2, 7)),
    11: ((2, 9), (2, 7), (2, 5), (2, 7)),
    12: ((2, 11), (2, 9), (2, 5), (2, 7)),
    14: ((2, 13), (2, 11), (2, 7), (2, 9)),
    20: ((2, 19), (2, 17), (2, 9), (2, 13)),
    21: ((2, 19), (2, 17), (2, 9), (2, 15)),
    41: ((2, 39), (2, 37), (2, 19), (2, 29)),
}
B1_CASES = [
    pytest.param(count, keep, expected[column], id=f"n{count}-{keep}")
    for count, expected in B1_TABLE.items()
    for column, keep in enumerate(("none", "lastTwo", "half", "quarter"))
]


class TestAppendixB1:
    """The ranges the original computed for createMessages(n)."""

    @pytest.mark.parametrize(("count", "keep", "expected"), B1_CASES)
    def test_first_range_matches_the_original(
        self, count: int, keep: str, expected: tuple[int, int]
    ) -> None:
        """The first range for n messages and this keep is the original's."""
        assert next_range(create_messages(count), None, keep) == expected

    def test_second_half_from_an_existing_range(self) -> None:
        """Half again from (2, 5) on ten messages gives (2, 7)."""
        assert next_range(create_messages(10), (2, 5), "half") == (2, 7)


class TestKeep:
    """The keep strategies."""

    @pytest.mark.parametrize("value", ["none", "lastTwo", "half", "quarter"])
    def test_plain_strings_work_like_members(self, value: str) -> None:
        """A plain string gives the same range as the enum member with that value."""
        history = create_messages(21)
        assert Keep(value) == value
        assert next_range(history, (2, 3), value) == next_range(history, (2, 3), Keep(value))

    def test_members_have_the_original_values(self) -> None:
        """The four members carry the original's strings, in this order."""
        assert [member.value for member in Keep] == ["none", "lastTwo", "half", "quarter"]

    @pytest.mark.parametrize("value", ["third", "Half", "last_two", ""])
    def test_unknown_keep_raises_value_error(self, value: str) -> None:
        """An unknown keep is rejected with ValueError rather than treated as some default."""
        with pytest.raises(ValueError, match="is not a valid Keep"):
            ContextManager().get_next_truncation_range(create_messages(10), None, value)


class TestCheckRange:
    """Deleted ranges given by callers."""

    @pytest.mark.parametrize(
        "value", [(2,), (2, 3, 4), "23", b"23", (2, 3.0), (True, 3), [2, None], 5, {2: 3}]
    )
    def test_malformed_range_names_the_value(self, value: Any) -> None:
        """Anything but None or two integers raises InvalidRangeError quoting the value."""
        with pytest.raises(InvalidRangeError) as raised:
            check_range(value)
        assert repr(value) in str(raised.value)
        assert "deleted_range" in str(raised.value)

    def test_error_names_the_argument(self) -> None:
        """The argument name given to the check appears in the message."""
        with pytest.raises(InvalidRangeError, match="previous_range"):
            check_range((1,), "previous_range")

    def test_range_error_is_a_value_error_and_ours(self) -> None:
        """InvalidRangeError can be caught as ValueError or as WindowkeeperError."""
        assert issubclass(InvalidRangeError, ValueError)
        assert issubclass(InvalidRangeError, WindowkeeperError)

    def test_get_truncated_messages_checks_the_range(self) -> None:
        """The manager rejects a malformed range before building anything."""
        bad: Any = (2, "5")
        with pytest.raises(InvalidRangeError, match=r"\(2, '5'\)"):
            ContextManager().get_truncated_messages(create_messages(6), bad)

    def test_get_next_truncation_range_checks_the_range(self) -> None:
        """The manager rejects a malformed previous range before computing the next one."""
        bad: Any = (2, "5")
        with pytest.raises(InvalidRangeError, match=r"\(2, '5'\)"):
            ContextManager().get_next_truncation_range(create_messages(6), bad, "half")

    @pytest.mark.parametrize("value", [None, (2, 5), [2, 5], (5, 2), (0, 100), (2, -1)])
    def test_well_typed_ranges_are_accepted_as_tuples(self, value: Any) -> None:
        """None stays None; any pair of integers, odd or not, comes back as a tuple."""
        expected = None if value is None else (value[0], value[1])
        result = check_range(value)
        assert result == expected
        assert result is None or type(result) is tuple


class TestVisibleStart:
    """Where the visible rest begins, as the original computes it."""

    @pytest.mark.parametrize(
        ("deleted_range", "expected"), [(None, 2), ((2, 5), 6), ((1, 3), 4), ((2, -1), 0)]
    )
    def test_visible_start_is_end_plus_one(
        self, deleted_range: tuple[int, int] | None, expected: int
    ) -> None:
        """The rest starts after the range's end (at 2 without a range); its start is ignored."""
        assert visible_start(deleted_range) == expected
