"""A session fed in OpenAI's shapes converts only what is new, and gets what a whole conversion gets.

``format="openai"`` (Chat Completions) and ``format="responses"`` keep the history as fed beside
its Anthropic form, converting again only the last Anthropic message's sources and what follows.
The law pinned here: however the history is fed (all at once, a message at a time with a request
after each, cut back by ``sync`` and grown again), the request sends the history as fed, and the
counter sees exactly :func:`windowkeeper.formats.to_anthropic` of it (messages and system prompt).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from windowkeeper import ContextSession, MalformedMessageError
from windowkeeper.formats import responses, to_anthropic

from ..counters import RuleCounter


def _call(number: int) -> dict[str, Any]:
    arguments = f'{{"p": {number}}}'
    return {
        "id": f"c{number}",
        "type": "function",
        "function": {"name": "read", "arguments": arguments},
    }


CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Fix the parser."},
    {"role": "assistant", "content": None, "tool_calls": [_call(1)]},
    {"role": "tool", "tool_call_id": "c1", "content": "one"},
    {"role": "developer", "content": "Mind the tests."},
    {"role": "user", "content": "and this"},
    {"role": "assistant", "content": "reading two", "tool_calls": [_call(2), _call(3)]},
    {"role": "tool", "tool_call_id": "c2", "content": "two"},
    {"role": "tool", "tool_call_id": "c3", "content": "three"},
    {"role": "assistant", "content": "Done."},
    {"role": "system", "content": "Later note."},
    {"role": "user", "content": "Thanks, go on."},
    {"role": "assistant", "content": None, "tool_calls": [_call(4)]},
    {"role": "tool", "tool_call_id": "c4", "content": "four"},
    {"role": "user", "content": [{"type": "text", "text": "one part"}]},
]

# what a request sends of CHAT: its last message in the canonical form (a user message after
# tool messages with one plain text part is that text)
CHAT_SENT = [*CHAT[:-1], {"role": "user", "content": "one part"}]

RESPONSES: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"type": "message", "role": "user", "content": "Fix the parser."},
    {"type": "function_call", "call_id": "c1", "name": "read", "arguments": '{"p": 1}'},
    {"type": "function_call_output", "call_id": "c1", "output": "one"},
    {"role": "developer", "content": "Mind the tests."},
    {"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch", "input": "*** Begin"},
    {"type": "custom_tool_call_output", "call_id": "c2", "output": "patched"},
    {"type": "message", "role": "assistant", "content": "Done."},
    {"type": "message", "role": "user", "content": "Go on."},
    {"type": "custom_tool_call", "call_id": "c3", "name": "apply_patch", "input": "*** More"},
    {"type": "custom_tool_call_output", "call_id": "c3", "output": "patched again"},
]


class _Seen:
    """A counter that remembers the Anthropic messages and system prompt of its last count."""

    def __init__(self) -> None:
        self.last: tuple[list[Any], Any] | None = None
        self.counter = RuleCounter(self._rule)

    def _rule(self, messages: Sequence[Any], system: Any, tools: Any) -> int:
        self.last = (list(messages), system)
        return 10


def _session(dialect: str) -> tuple[ContextSession, _Seen]:
    seen = _Seen()
    return ContextSession(100_000, format=dialect, counter=seen.counter), seen  # type: ignore[arg-type]


def _whole(dialect: str, history: Sequence[dict[str, Any]]) -> tuple[list[Any], Any]:
    convert = responses.to_anthropic if dialect == "responses" else to_anthropic
    conversation = convert(history)
    return conversation.messages, conversation.system


def _answers(message: dict[str, Any]) -> bool:
    return message.get("role") == "tool" or message.get("type") in _OUTPUTS


_OUTPUTS = ("function_call_output", "custom_tool_call_output")


def _requests(history: list[dict[str, Any]]) -> list[int]:
    """The lengths at which a request may be made: after a user message, or after the last
    answer to a turn's tool calls (none of them left without its result)."""
    return [
        length
        for length in range(2, len(history) + 1)
        if (history[length - 1].get("role") == "user" or _answers(history[length - 1]))
        and (length == len(history) or not _answers(history[length]))
    ]


CASES = [("openai", CHAT, CHAT_SENT), ("responses", RESPONSES, RESPONSES)]


@pytest.mark.parametrize(("dialect", "history", "sent"), CASES)
class TestFedInPieces:
    def test_a_message_at_a_time(
        self, dialect: str, history: list[dict[str, Any]], sent: list[dict[str, Any]]
    ) -> None:
        keeper, seen = _session(dialect)
        points = _requests(history)
        assert len(points) >= 4
        for length in range(1, len(history) + 1):
            keeper.append(history[length - 1])
            if length in points:
                assert keeper.prepare().messages == sent[:length]
                assert seen.last == _whole(dialect, history[:length])

    def test_in_two_pieces_at_every_place(
        self, dialect: str, history: list[dict[str, Any]], sent: list[dict[str, Any]]
    ) -> None:
        for split in range(1, len(history)):
            keeper, seen = _session(dialect)
            keeper.extend(history[:split])
            keeper.extend(history[split:])
            assert keeper.prepare().messages == sent
            assert seen.last == _whole(dialect, history)

    def test_cut_back_to_every_request_and_grown_again(
        self, dialect: str, history: list[dict[str, Any]], sent: list[dict[str, Any]]
    ) -> None:
        for length in _requests(history):
            keeper, seen = _session(dialect)
            keeper.extend(history)
            keeper.prepare()
            keeper.sync(history[:length])
            assert keeper.prepare().messages == sent[:length]
            assert seen.last == _whole(dialect, history[:length])
            keeper.sync(history)
            assert keeper.prepare().messages == sent
            assert seen.last == _whole(dialect, history)


def test_the_system_prompt_joins_every_system_and_developer_message() -> None:
    keeper, seen = _session("openai")
    keeper.extend(CHAT)
    keeper.prepare()
    assert seen.last is not None
    assert seen.last[1] == "Be brief.\n\nMind the tests.\n\nLater note."


def test_without_a_system_message_there_is_no_system_prompt() -> None:
    keeper, seen = _session("openai")
    keeper.extend(CHAT[1:4])
    keeper.prepare()
    assert seen.last is not None
    assert seen.last[1] is None


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        # an assistant's empty content is None; "" beside tool calls too
        ({"role": "assistant", "content": [], "tool_calls": [_call(9)]}, None),
        ({"role": "assistant", "content": "", "tool_calls": [_call(9)]}, None),
        # one plain text part beside tool calls is its string
        (
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "t"}],
                "tool_calls": [_call(9)],
            },
            "t",
        ),
    ],
)
def test_an_assistant_message_is_kept_in_its_canonical_form(given: Any, kept: Any) -> None:
    keeper = ContextSession(10_000, format="openai")
    keeper.extend([CHAT[1], given])
    assert keeper.history[1]["content"] == kept


@pytest.mark.parametrize(
    "content",
    [
        "",  # no tool calls: an empty string stays
        [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],  # two parts stay
        [{"type": "text", "text": "t", "cache_control": {"type": "ephemeral"}}],  # not plain
    ],
)
def test_other_assistant_contents_stay_as_given(content: Any) -> None:
    keeper = ContextSession(10_000, format="openai")
    message = {"role": "assistant", "content": content}
    keeper.extend([CHAT[1], message])
    assert keeper.history[1] == message


def test_a_user_text_part_is_its_string_only_after_tool_messages() -> None:
    part = [{"type": "text", "text": "one part"}]
    keeper = ContextSession(10_000, format="openai")
    keeper.extend([*CHAT[1:4], {"role": "user", "content": part}])
    assert keeper.history[3] == {"role": "user", "content": "one part"}
    alone = ContextSession(10_000, format="openai")
    alone.extend([{"role": "user", "content": part}])
    assert alone.history[0] == {"role": "user", "content": part}
    # a system message between the tool message and the user one changes nothing
    noted = ContextSession(10_000, format="openai")
    noted.extend(
        [*CHAT[1:4], {"role": "system", "content": "n"}, {"role": "user", "content": part}]
    )
    assert noted.history[4] == {"role": "user", "content": "one part"}


@pytest.mark.parametrize(
    "part",
    [
        {"type": "text", "text": "t", "cache_control": {"type": "ephemeral"}},  # not plain
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    ],
)
def test_a_single_part_that_is_not_plain_text_stays_a_list(part: dict[str, Any]) -> None:
    after_tools = ContextSession(10_000, format="openai")
    after_tools.extend([*CHAT[1:4], {"role": "user", "content": [part]}])
    assert after_tools.history[3] == {"role": "user", "content": [part]}
    if part["type"] == "text":  # an assistant message takes text parts only
        calling = {"role": "assistant", "content": [part], "tool_calls": [_call(9)]}
        beside_calls = ContextSession(10_000, format="openai")
        beside_calls.extend([CHAT[1], calling])
        assert beside_calls.history[1] == calling


def test_a_malformed_message_is_named_by_its_place_in_the_history() -> None:
    keeper = ContextSession(10_000, format="openai")
    keeper.extend(CHAT[:2])
    bad = {"role": "tool", "content": "no call id"}
    with pytest.raises(MalformedMessageError, match=r"^history\[4\]\.tool_call_id"):
        keeper.extend([CHAT[2], CHAT[3], bad])


@pytest.mark.parametrize(("dialect", "task"), [("openai", CHAT[1]), ("responses", RESPONSES[1])])
def test_a_history_of_one_message_is_sent_whole_even_after_a_cut(
    dialect: str, task: dict[str, Any]
) -> None:
    keeper, seen = _session(dialect)
    keeper.append(task)
    assert keeper.prepare().messages == [task]
    assert seen.last == _whole(dialect, [task])
    keeper.extend([{"role": "assistant", "content": "On it."}, {"role": "user", "content": "Go."}])
    keeper.prepare()
    keeper.sync([task])
    assert keeper.prepare().messages == [task]
    assert seen.last == _whole(dialect, [task])
