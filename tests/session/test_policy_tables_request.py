"""The request's edges pinned on small histories: when the session acts, and what it sends then.

The window is 10,000 tokens (limit 8,000) and the counter exact (four characters a token, five a
message), so each boundary is met to the token: a request of exactly the limit is sent as it
is, one token more is shrunk; a result of exactly its arrival budget is whole, one character
more is clipped to it; the truncation notice finds a place even in a first answer of thinking
only.
"""

from __future__ import annotations

import pytest

from windowkeeper import Clip, InvalidRangeError, Prepared

from .policy_tables import TASK, TRUNCATION_NOTICE, actions, session, tokens, turn


class TestPreFlight:
    @staticmethod
    def _prepare(size: int) -> Prepared:
        keeper = session(mask_keep_recent=None)
        keeper.extend([TASK, *turn(0, 100), *turn(1, size)])
        return keeper.prepare()

    def test_a_request_of_exactly_the_limit_is_sent_untouched(self) -> None:
        history = [TASK, *turn(0, 100), *turn(1, 31_720)]
        assert tokens(history) == 8_000
        prepared = self._prepare(31_720)
        assert not prepared.preflight_acted
        assert prepared.actions == ()
        assert prepared.estimated_tokens == 8_000
        assert prepared.messages == history

    def test_one_token_over_the_limit_is_clipped_to_it(self) -> None:
        """Two turns: nothing can be hidden (the newest turn stays), so clipping does it."""
        assert tokens([TASK, *turn(0, 100), *turn(1, 31_724)]) == 8_001
        prepared = self._prepare(31_724)
        assert prepared.preflight_acted
        assert actions(prepared) == [("clip-blocks", (4,), None), ("clip-blocks", (4,), None)]
        assert prepared.estimated_tokens == 8_000


class TestArrivalClips:
    """``max_result_share=0.25``: a new result gets 8,000 x 0.25 x 3 = 6,000 characters."""

    @staticmethod
    def _prepare(size: int) -> Prepared:
        keeper = session(max_result_share=0.25)
        keeper.extend([TASK, *turn(0, size)])
        return keeper.prepare()

    def test_a_result_of_exactly_the_budget_is_whole(self) -> None:
        prepared = self._prepare(6_000)
        assert prepared.actions == ()
        assert prepared.clipped == ()
        assert prepared.messages[2] == turn(0, 6_000)[1]

    def test_one_character_more_is_clipped_to_the_budget(self) -> None:
        prepared = self._prepare(6_001)
        clip = Clip(message_index=2, block_index=0, kept=6_000)
        assert [(a.step, a.messages, a.clips) for a in prepared.actions] == [
            ("clip-on-arrival", (2,), (clip,))
        ]
        assert prepared.clipped == (clip,)
        text = prepared.messages[2]["content"][0]["content"]
        assert text.startswith("y" * 1_000)
        assert "characters cut by windowkeeper" in text


class TestTruncationNotice:
    def test_a_first_answer_of_thinking_only_gets_the_notice_after_it(self) -> None:
        thinking = {"type": "thinking", "thinking": "plan the fix", "signature": "sig"}
        keeper = session(mask_keep_recent=None)
        keeper.extend([TASK, {"role": "assistant", "content": [thinking]}])
        keeper.append({"role": "user", "content": "go on"})
        for number in range(2, 8):
            keeper.extend(turn(number, 6_000))
        prepared = keeper.prepare()
        assert actions(prepared) == [("hide-turns", (), (2, 7))]
        assert prepared.messages[1] == {
            "role": "assistant",
            "content": [thinking, {"type": "text", "text": TRUNCATION_NOTICE}],
        }
        # message 8 answered a hidden call: its result goes, the turns after it are whole
        assert [block["type"] for block in prepared.messages[2]["content"]] == ["text"]
        assert prepared.messages[3:] == [*turn(5, 6_000), *turn(6, 6_000), *turn(7, 6_000)]


class TestRangeBounds:
    def test_a_range_may_start_and_end_at_zero(self) -> None:
        keeper = session()
        keeper.extend([TASK, *turn(0, 10), *turn(1, 10)])
        keeper.deleted_range = (0, 0)
        assert keeper.deleted_range == (0, 0)

    @pytest.mark.parametrize("bad", [(0, -1), (-1, 0), (-2, -1)])
    def test_a_negative_index_is_refused_by_name(self, bad: tuple[int, int]) -> None:
        keeper = session()
        keeper.extend([TASK, *turn(0, 10), *turn(1, 10)])
        with pytest.raises(InvalidRangeError, match=r"deleted_range \(.*\): indices must be >= 0"):
            keeper.deleted_range = bad
        assert keeper.deleted_range is None


class TestEstimate:
    """With an exact counter, ``estimated_tokens`` is the count of the messages sent."""

    EMPTIED = "[windowkeeper: this message had no content the provider accepts.]"

    def test_an_empty_answer_is_counted_with_its_notice_before_and_after_hiding(self) -> None:
        keeper = session(mask_keep_recent=None)
        keeper.extend([TASK, {"role": "assistant", "content": ""}])
        keeper.extend([{"role": "user", "content": "go on"}, *turn(1, 100)])
        whole = keeper.prepare()
        assert whole.messages[1]["content"] == [{"type": "text", "text": self.EMPTIED}]
        assert whole.estimated_tokens == tokens(whole.messages) == 83
        for number in range(2, 8):
            keeper.extend(turn(number, 6_000))
        hidden = keeper.prepare()  # message 1 now carries the truncation notice instead
        assert actions(hidden) == [("hide-turns", (), (2, 7)), ("hide-turns", (), (2, 11))]
        assert hidden.messages[1]["content"] == [{"type": "text", "text": TRUNCATION_NOTICE}]
        assert hidden.estimated_tokens == tokens(hidden.messages) == 3_161
        keeper.extend(turn(9, 10))
        later = keeper.prepare()
        assert later.actions == ()
        assert later.estimated_tokens == tokens(later.messages) == 3_181
