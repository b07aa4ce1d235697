"""What a clip sends, character for character, on a session reopened with clips in its state.

A clip (message, block, characters kept) keeps the head (60 %) and the tail of every text of that
block around a notice saying how many characters were cut; a text no longer than what is kept is
sent whole. Clips are values in the persisted state, so these rows write them there by hand.
"""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper import ContextSession
from windowkeeper.storage import Snapshot

from .policy_tables import Held
from .test_state_codec import stored


def _notice(cut: int) -> str:
    return f"\n[... {cut:,} characters cut by windowkeeper to fit the context window ...]\n"


def _sent(content: Any, clips: list[list[int]]) -> Any:
    """The third message as sent, a user message of ``content`` after a call, with ``clips``."""
    history = [
        {"role": "user", "content": "task"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}],
        },
        {"role": "user", "content": content},
    ]
    state = {**stored(clips=clips), "history_length": 3}
    backend = Held(Snapshot(version=1, history=history, state=state))
    keeper = ContextSession(100_000, store=backend, max_result_share=None)
    return keeper.prepare().messages[2]["content"]


def _result(content: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": "t1", "content": content}


TEXT = "H" * 600 + "M" * 1_234 + "T" * 400  # 2,234 characters


@pytest.mark.parametrize(
    ("text", "kept", "sent"),
    [
        (TEXT, 1_000, "H" * 600 + _notice(1_234) + "T" * 400),
        (TEXT, 2_234, TEXT),  # exactly as long as kept: whole
        (TEXT, 2_233, TEXT[:1_339] + _notice(1) + TEXT[-894:]),  # int(2,233 * 0.6) = 1,339
        ("abcdefghij", 5, "abc" + _notice(5) + "ij"),
        ("abcdefghij", 1, _notice(9) + "j"),  # no head: int(0.6) = 0
        ("abcdefghij", 0, _notice(10)),
    ],
)
def test_a_result_keeps_its_head_and_tail(text: str, kept: int, sent: str) -> None:
    [block] = _sent([_result(text)], [[2, 0, kept]])
    assert block == _result(sent)


def test_every_text_of_a_result_list_is_clipped_and_the_rest_kept() -> None:
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"},
    }
    content = [
        _result([{"type": "text", "text": "abcdefghij"}, image, {"type": "text", "text": "xyz"}])
    ]
    [block] = _sent(content, [[2, 0, 5]])
    assert block == _result(
        [
            {"type": "text", "text": "abc" + _notice(5) + "ij"},
            image,
            {"type": "text", "text": "xyz"},
        ]
    )


def test_a_text_block_is_clipped() -> None:
    content = [_result("ok"), {"type": "text", "text": "abcdefghij"}]
    assert _sent(content, [[2, 1, 5]]) == [
        _result("ok"),
        {"type": "text", "text": "abc" + _notice(5) + "ij"},
    ]


@pytest.mark.parametrize(
    "clips",
    [
        [[2, 1, 5]],  # no such block: nothing clipped
        [[1, 0, 5]],  # a tool_use block has no text to cut
    ],
)
def test_a_clip_of_nothing_it_can_cut_changes_nothing(clips: list[list[int]]) -> None:
    assert _sent([_result("abcdefghij")], clips) == [_result("abcdefghij")]


def test_two_clips_of_one_message_both_apply() -> None:
    content = [_result("abcdefghij"), {"type": "text", "text": "0123456789"}]
    assert _sent(content, [[2, 0, 5], [2, 1, 4]]) == [
        _result("abc" + _notice(5) + "ij"),
        {"type": "text", "text": "01" + _notice(6) + "89"},
    ]


def test_clips_stay_as_the_history_grows() -> None:
    """The clipped copy is kept while the history grows; a new clip applies at once."""
    history = [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "abcdefghij"},
    ]
    state = {**stored(clips=[[2, 0, 5]]), "history_length": 3}
    keeper = ContextSession(
        100_000,
        store=Held(Snapshot(version=1, history=history, state=state)),
        max_result_share=None,
    )
    first = keeper.prepare().messages
    keeper.extend(
        [{"role": "assistant", "content": "b"}, {"role": "user", "content": "0123456789"}]
    )
    grown = keeper.prepare().messages
    assert grown[:3] == first
    assert grown[2]["content"] == "abc" + _notice(5) + "ij"  # a string message: its text
    assert grown[4]["content"] == "0123456789"
