"""What a session refuses or accepts at its edges, pinned row by row through the public API.

A system prompt given to ``prepare``, a checkpoint of an empty session, a state a store of
windowkeeper 0.1 left behind, and the default counter's saved calibration: each row is one
input and the exact answer (the value kept, or the error and its wording).
"""

from __future__ import annotations

import base64
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import (
    CalibratedEstimator,
    Clip,
    ConfigurationError,
    ContextSession,
    DistrustedUsageWarning,
    InvalidUsageError,
    MalformedMessageError,
    SQLiteStore,
    TokenUsage,
    UnreadableFileError,
    usage_from_sdk,
)
from windowkeeper.storage import Snapshot

from .policy_tables import TASK, Held, session, state_v1


class TestSystemPrompt:
    @pytest.mark.parametrize(
        ("system", "where", "message"),
        [
            (b"", "system", "expected a string or a list of text blocks, got bytes"),
            (b"be brief", "system", "expected a string or a list of text blocks, got bytes"),
            (("be brief",), "system[0]", "expected a text block"),
            ([{"type": "text", "text": 3}], "system[0].text", "expected a string"),
        ],
    )
    def test_a_system_prompt_that_is_not_text_blocks_is_refused(
        self, system: Any, where: str, message: str
    ) -> None:
        keeper = session()
        keeper.append(TASK)
        with pytest.raises(MalformedMessageError) as raised:
            keeper.prepare(system=system)
        assert str(raised.value) == f"{where}: {message}"

    def test_a_tuple_of_text_blocks_is_counted_like_the_list(self) -> None:
        keeper = session()
        keeper.append(TASK)
        blocks = [{"type": "text", "text": "Be brief." * 40}]
        listed = keeper.prepare(system=blocks).estimated_tokens
        assert keeper.prepare(system=tuple(blocks)).estimated_tokens == listed == 5 + 94


class TestCheckpointOfAnEmptySession:
    def test_rolling_back_to_before_the_task_empties_the_history(self) -> None:
        keeper = session()
        empty = keeper.checkpoint()
        assert empty.history_length == 0
        keeper.append(TASK)
        keeper.append({"role": "assistant", "content": "On it."})
        keeper.rollback(empty)
        assert keeper.history == []
        assert keeper.state.requests == 0
        keeper.append(TASK)  # the session goes on from nothing
        assert keeper.prepare().messages == [TASK]

    @pytest.mark.parametrize("length", [-1, True, "0", 1.0])
    def test_a_checkpoint_whose_length_is_not_a_count_is_refused(self, length: Any) -> None:
        keeper = session()
        keeper.append(TASK)
        forged = replace(keeper.checkpoint(), history_length=length)
        with pytest.raises(ConfigurationError) as raised:
            keeper.rollback(forged)
        assert str(raised.value) == (
            f"checkpoint.history_length must be an integer >= 0, got {length!r}"
        )
        assert keeper.history == [TASK]

    @pytest.mark.parametrize(
        ("tokens_out", "error"),
        [
            (10**15 - 1, None),  # the largest count a task folder holds
            (
                10**15,
                "checkpoint.state.usage.tokens_out is 1,000,000,000,000,000 tokens, more than"
                " can be stored (at most 999,999,999,999,999)",
            ),
        ],
    )
    def test_a_checkpoint_usage_is_held_to_what_can_be_stored(
        self, tokens_out: int, error: str | None
    ) -> None:
        keeper = session()
        keeper.append(TASK)
        keeper.prepare()
        checkpoint = keeper.checkpoint()
        usage = TokenUsage(tokens_in=5, tokens_out=tokens_out)
        forged = replace(checkpoint, state=replace(checkpoint.state, usage=usage))
        if error is None:
            keeper.rollback(forged)
            assert keeper.state.usage == usage
            return
        with pytest.raises(InvalidUsageError) as raised:
            keeper.rollback(forged)
        assert str(raised.value) == error


_HISTORY = [
    {"role": "user", "content": f"m{i}"}
    if i % 2 == 0
    else {"role": "assistant", "content": f"a{i}"}
    for i in range(13)
]


def _reopened(**compaction: Any) -> ContextSession:
    """A session reopened on the 13 messages above and a state of windowkeeper 0.1."""
    snapshot = Snapshot(version=4, history=_HISTORY, store_json="[]", state=state_v1(**compaction))
    return ContextSession(10_000, store=Held(snapshot))


_FOLDED = "folded must be null or a range end inside deleted_range and a text"
_PENDING = "pending must be null or two integers"


class TestStateOfWindowkeeper01:
    @pytest.mark.parametrize(
        ("compaction", "reason"),
        [
            ({"folded": [7, 5]}, _FOLDED),  # the text is a number
            ({"folded": [7]}, _FOLDED),
            ({"folded": "x"}, _FOLDED),
            ({"folded": [7, "text", "more"]}, _FOLDED),
            ({"folded": [8, "text"]}, _FOLDED),  # past the hidden range's end
            ({"pending": [1]}, _PENDING),
            ({"pending": "ab"}, _PENDING),
            ({"pending": [1, 2, 3]}, _PENDING),
            ({"deleted_range": [2, -2]}, "deleted_range[1] must be an integer >= -1, got -2"),
        ],
    )
    def test_a_malformed_fold_or_ask_is_refused_naming_it(
        self, compaction: dict[str, Any], reason: str
    ) -> None:
        with pytest.raises(UnreadableFileError) as raised:
            _reopened(**compaction)
        assert str(raised.value) == f"held (session state): unreadable session state: {reason}"

    def test_a_pending_ask_and_a_fold_are_read(self) -> None:
        keeper = _reopened(folded=[7, "the continuation"], pending=[3, 4], folds=2)
        compaction = keeper.state.compaction
        assert compaction.pending == (3, 4)
        assert compaction.folds == 2
        assert compaction.fold is not None
        assert (compaction.fold.end, compaction.fold.text) == (7, "the continuation")


A = {"role": "user", "content": "a" * 4_000}
B = {"role": "assistant", "content": "b" * 40}
C = {"role": "user", "content": "c" * 2_000}
C2 = {"role": "user", "content": "c" * 2_016}


class TestCalibration:
    """What one observation that extends the last teaches the default counter's ratio.

    B and C2 add 2,080 bytes of text (their characters and the JSON of two messages): the
    counter learns only from 0.5 to 20 bytes a token, both ends included.
    """

    @pytest.mark.parametrize(
        ("added_tokens", "chars_per_token"),
        [
            (600, 3.2333333333333334),
            (104, 3.360277136258661),  # exactly 20 bytes a token: still learnt
            (103, 3.0),  # sparser than any text: the report is ignored
            (4_160, 0.8151260504201681),  # exactly 0.5 bytes a token: still learnt
            (4_161, 3.0),  # denser than any text
        ],
    )
    def test_only_a_plausible_ratio_is_learnt(
        self, added_tokens: int, chars_per_token: float
    ) -> None:
        counter = CalibratedEstimator()
        counter.observe([A], reported_input_tokens=1_000)
        counter.observe([A, B, C2], reported_input_tokens=1_000 + added_tokens)
        assert counter.chars_per_token == chars_per_token

    def _saved(self) -> dict[str, Any]:
        counter = CalibratedEstimator()
        counter.observe([A], reported_input_tokens=1_000)
        counter.observe([A, B, C], reported_input_tokens=1_600)
        return counter.state_value()

    def test_a_saved_calibration_loads_with_its_errors(self) -> None:
        saved = self._saved()
        assert len(saved["errors"]) == 1
        assert len(saved["errors"][0]) == 2
        restored = CalibratedEstimator()
        restored.load_state(saved)
        assert (restored.chars_per_token, restored.margin) == (3.22, 0.1)
        assert restored.state_value() == saved

    @pytest.mark.parametrize("length", [-1, True, "3", 2.0])
    def test_an_anchor_whose_message_count_is_not_a_count_is_refused(self, length: Any) -> None:
        saved = self._saved()
        saved["anchor"] = [*saved["anchor"][:7], length, saved["anchor"][8]]
        with pytest.raises(ValueError, match=r"^calibration\.anchor: expected a message count$"):
            CalibratedEstimator().load_state(saved)

    @pytest.mark.parametrize(
        ("part", "value"),
        [
            ("ratio", math.nan),
            ("ratio", math.inf),
            ("ratio", True),
            ("ratio", "1.5"),
            ("margin", math.nan),
            ("margin", False),
            ("margin", "0.1"),
            ("errors", [math.nan, 1.0]),
            ("errors", ["0.1", 1.0]),
        ],
    )
    def test_a_number_that_is_not_a_finite_number_is_refused(self, part: str, value: Any) -> None:
        saved = self._saved()
        if part == "ratio":
            saved["ratio"] = [value, *saved["ratio"][1:]]
        elif part == "margin":
            saved["margin"] = value
        else:
            saved["errors"] = [value]
        with pytest.raises(ValueError, match=f"^calibration.{part}"):
            CalibratedEstimator().load_state(saved)


class TestUsageOfNoKnownShape:
    @pytest.mark.parametrize(
        ("usage", "fields"),
        [
            ({"tokens": 5}, "['tokens']"),
            # ten fields: the first eight, sorted, are named
            (dict.fromkeys("jihgfedcba", 1), "['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']"),
            (dict.fromkeys("hgfedcba", 1), "['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']"),
        ],
    )
    def test_the_error_names_its_first_eight_fields(self, usage: Any, fields: str) -> None:
        with pytest.raises(InvalidUsageError) as raised:
            usage_from_sdk(usage)
        assert str(raised.value) == (
            "usage has neither Anthropic (input_tokens, output_tokens) nor OpenAI"
            f" (prompt_tokens, completion_tokens) fields: {fields}"
        )


def test_the_distrusted_usage_warning_points_at_the_callers_line() -> None:
    """The warning is the caller's to act on: it names the line that called record_usage."""
    keeper = ContextSession(16_000)
    keeper.append({"role": "user", "content": "x" * 20_000})
    keeper.prepare()

    def report() -> None:
        keeper.record_usage(TokenUsage(tokens_in=40, tokens_out=5))

    with pytest.warns(DistrustedUsageWarning) as caught:
        report()
    assert (caught[0].filename, caught[0].lineno) == (__file__, report.__code__.co_firstlineno + 1)


def test_a_reopened_session_estimates_with_what_its_counter_learnt(tmp_path: Path) -> None:
    """The default counter's calibration is stored with the state: the same request estimates
    alike in the session that learnt it and in one reopened on its store."""
    path = tmp_path / "sessions.db"
    first = ContextSession(10_000, store=SQLiteStore(path, "t1"))
    first.append(A)
    first.prepare()
    first.record_usage(TokenUsage(tokens_in=1_000))
    first.extend([B, C2])
    first.prepare()
    first.record_usage(TokenUsage(tokens_in=1_600))
    first.append(B)
    assert first.prepare().estimated_tokens == 1_618
    first.close()
    reopened = ContextSession(10_000, store=SQLiteStore(path, "t1"))
    assert reopened.prepare().estimated_tokens == 1_618
    unlearnt = ContextSession(10_000)
    unlearnt.extend(reopened.history)
    assert unlearnt.prepare().estimated_tokens == 2_253  # from characters alone


def test_sdk_blocks_in_a_message_dict_are_kept_as_their_dumps() -> None:
    from anthropic.types import TextBlock

    keeper = ContextSession(10_000)
    keeper.append(TASK)
    keeper.append({"role": "assistant", "content": [TextBlock(type="text", text="On it.")]})
    assert keeper.history[-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "On it."}],
    }
    assert keeper.prepare().messages[-1] == keeper.history[-1]


def test_a_reopened_state_keeps_only_the_clips_of_messages_it_still_has() -> None:
    """Thirteen messages: a clip of message 12 applies, one of message 13 or later is dropped."""
    keeper = _reopened(clips=[[12, 0, 500], [13, 0, 400], [20, 1, 300]])
    assert keeper.state.clips == (Clip(12, 0, 500),)


def test_an_empty_hidden_range_as_the_core_writes_it_loads() -> None:
    assert _reopened(deleted_range=[2, -1]).deleted_range == (2, -1)


def test_what_a_system_prompt_image_costs_is_explained_by_the_report() -> None:
    """One observation with an image in the system prompt: another request with that system
    prompt is estimated with the image's tokens counted once, in what the report explains."""
    size = (300).to_bytes(2, "little") + (150).to_bytes(2, "little")
    data = base64.b64encode(b"GIF89a" + size).decode()
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": data}}
    system = [{"type": "text", "text": "Be brief."}, image]
    counter = CalibratedEstimator()
    counter.observe([A], system=system, reported_input_tokens=2_000)
    assert counter.count([A], system=system) == 2_000
    assert (counter.count([C], system=system), counter.count([C])) == (1_401, 1_329)


@pytest.mark.parametrize("digest", ["abc", "f" * 63, 5, None])
def test_an_anchor_whose_digest_is_not_a_sha256_is_refused(digest: Any) -> None:
    counter = CalibratedEstimator()
    counter.observe([A], reported_input_tokens=1_000)
    saved = counter.state_value()
    saved["anchor"] = [*saved["anchor"][:8], digest]
    with pytest.raises(ValueError, match=r"^calibration\.anchor: expected a sha256 digest$"):
        CalibratedEstimator().load_state(saved)


@pytest.mark.parametrize(
    ("stored", "limit"),
    [
        ([50_000, 30_000], 30_000.0),  # the stored limit
        ([50_000, 0], 40_000.0),  # no limit at all: the window's own
        ([50_000, 60_000], 40_000.0),  # past the window: the window's own
    ],
)
def test_a_session_reopened_without_a_window_takes_the_stored_one(
    stored: list[int], limit: float
) -> None:
    snapshot = Snapshot(version=4, history=_HISTORY, store_json="[]", state=state_v1(window=stored))
    keeper = ContextSession(store=Held(snapshot))
    assert (keeper.window.context_window, keeper.window.max_allowed_size) == (50_000, limit)
