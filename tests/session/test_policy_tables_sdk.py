"""SDK shapes read exactly: usage counts at their bounds, and reply objects turned into the
message dicts a session keeps.

The SDK objects are small stand-ins with a pydantic-style ``model_dump`` (``exclude_none``
honoured, as pydantic does), so that what is read is what the SDKs' own dumps hold.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from windowkeeper import (
    ContextSession,
    InvalidUsageError,
    MalformedMessageError,
    TokenUsage,
    usage_from_sdk,
)

LARGEST = 10**15 - 1


class Model:
    """An SDK object: ``model_dump`` returns its fields, without the unset (None) ones when asked."""

    def __init__(self, **fields: Any) -> None:
        self._fields = fields

    def model_dump(self, *, exclude_none: bool = False) -> dict[str, Any]:
        return {
            key: _dump(value, exclude_none)
            for key, value in self._fields.items()
            if not (exclude_none and value is None)
        }


def _dump(value: Any, exclude_none: bool) -> Any:
    """What pydantic's model_dump makes of a field: nested models and lists dumped too."""
    if isinstance(value, Model):
        return value.model_dump(exclude_none=exclude_none)
    if isinstance(value, list):
        return [_dump(item, exclude_none) for item in value]
    return value


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({"input_tokens": 0, "output_tokens": 0}, TokenUsage()),
        (
            {"input_tokens": LARGEST, "output_tokens": LARGEST},
            TokenUsage(tokens_in=LARGEST, tokens_out=LARGEST),
        ),
        ({"input_tokens": 5}, TokenUsage(tokens_in=5)),  # either Anthropic field is enough
        ({"output_tokens": 5}, TokenUsage(tokens_out=5)),
        (
            {"input_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": None},
            TokenUsage(tokens_in=5),
        ),
        ({"prompt_tokens": 5}, TokenUsage(tokens_in=5)),  # either Chat Completions field
        ({"completion_tokens": 5}, TokenUsage(tokens_out=5)),
        (
            {"prompt_tokens": 10, "completion_tokens": 1, "prompt_tokens_details": None},
            TokenUsage(tokens_in=10, tokens_out=1),
        ),
        (
            {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": None}},
            TokenUsage(tokens_in=10),
        ),
        (
            {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 0}},
            TokenUsage(tokens_in=10),
        ),
        (
            {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 10}},
            TokenUsage(cache_reads=10),
        ),
        # more cached than prompted (a proxy's rounding): the cache is at most the prompt
        (
            {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 12}},
            TokenUsage(cache_reads=10),
        ),
        ({"input_tokens": 10, "input_tokens_details": None}, TokenUsage(tokens_in=10)),
        (
            {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 4}},
            TokenUsage(tokens_in=6, cache_reads=4),
        ),
        (
            {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 11}},
            TokenUsage(cache_reads=10),
        ),
        (
            Model(prompt_tokens=9, prompt_tokens_details=Model(cached_tokens=3)),
            TokenUsage(tokens_in=6, cache_reads=3),
        ),
        (TokenUsage(), TokenUsage()),
        (
            TokenUsage(tokens_in=LARGEST, cache_reads=LARGEST),
            TokenUsage(tokens_in=LARGEST, cache_reads=LARGEST),
        ),
    ],
)
def test_a_usage_is_read_field_by_field(usage: Any, expected: TokenUsage) -> None:
    assert usage_from_sdk(usage) == expected


@pytest.mark.parametrize(
    ("usage", "message"),
    [
        (
            {"input_tokens": 10**15},
            "usage.input_tokens must be a non-negative integer, got 1000000000000000",
        ),
        ({"output_tokens": -1}, "usage.output_tokens must be a non-negative integer, got -1"),
        ({"prompt_tokens": True}, "usage.prompt_tokens must be a non-negative integer, got True"),
        (
            {"prompt_tokens": 1, "prompt_tokens_details": 5},
            "usage.prompt_tokens_details must be an object, got int",
        ),
        (
            {"prompt_tokens": 1, "prompt_tokens_details": {"cached_tokens": -1}},
            "usage.prompt_tokens_details.cached_tokens must be a non-negative integer, got -1",
        ),
        (
            TokenUsage(tokens_in=10**15),
            "usage.tokens_in must be a non-negative integer, got 1000000000000000",
        ),
        (TokenUsage(cache_writes=-1), "usage.cache_writes must be a non-negative integer, got -1"),
        (TokenUsage(tokens_out=True), "usage.tokens_out must be a non-negative integer, got True"),
        (TokenUsage(cache_reads=2.0), "usage.cache_reads must be a non-negative integer, got 2.0"),  # type: ignore[arg-type]
    ],
)
def test_a_count_out_of_range_is_refused_by_name(usage: Any, message: str) -> None:
    with pytest.raises(InvalidUsageError, match=f"^{re.escape(message)}$"):
        usage_from_sdk(usage)


def test_an_unknown_usage_names_its_first_eight_fields() -> None:
    usage = {f"field_{letter}": 1 for letter in "ihgfedcba"}
    with pytest.raises(InvalidUsageError) as caught:
        usage_from_sdk(usage)
    assert str(caught.value).endswith(
        "fields: ['field_a', 'field_b', 'field_c', 'field_d', 'field_e', 'field_f', 'field_g', 'field_h']"
    )


class Attributes:
    """A usage object without model_dump: read through its public attributes."""

    def __init__(self) -> None:
        self.input_tokens = 3
        self.output_tokens = 4
        self._cache = {"input_tokens": 99}


def test_an_object_without_model_dump_is_read_through_its_public_attributes() -> None:
    assert usage_from_sdk(Attributes()) == TokenUsage(tokens_in=3, tokens_out=4)


@pytest.mark.parametrize("usage", [None, 3, "x", int])
def test_what_is_no_usage_object_at_all_is_refused(usage: Any) -> None:
    with pytest.raises(InvalidUsageError, match=r"^usage must be a TokenUsage"):
        usage_from_sdk(usage)


# ------------------------------------------------------------------------------- messages


def _appended(message: Any, *, format: str = "anthropic") -> Any:
    session = ContextSession(16_000, format=format)  # type: ignore[arg-type]
    session.append({"role": "user", "content": "Fix the parser."})
    session.append(message)
    return session.history[-1]


TEXT = Model(type="text", text="On it.", citations=None)
CALL = Model(id="call_1", type="function", function=Model(name="read", arguments="{}"))
CALLED = {  # what an assistant message calling CALL is as a plain dict
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    ],
}


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (  # an Anthropic Message: its role and content, nothing else
            Model(
                id="msg_1",
                type="message",
                role="assistant",
                content=[{"type": "text", "text": "On it."}],
                model="m",
                stop_reason="end_turn",
                usage=Model(input_tokens=1),
            ),
            {"role": "assistant", "content": [{"type": "text", "text": "On it."}]},
        ),
        (  # its content blocks as SDK objects, their unset fields left out
            {"role": "assistant", "content": [TEXT]},
            {"role": "assistant", "content": [{"type": "text", "text": "On it."}]},
        ),
    ],
)
def test_an_anthropic_reply_becomes_a_message(reply: Any, expected: dict[str, Any]) -> None:
    assert _appended(reply) == expected


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (  # a ChatCompletion: its first choice's message, the request-side fields only
            Model(
                id="c1",
                object="chat.completion",
                choices=[
                    Model(
                        index=0,
                        message=Model(
                            role="assistant",
                            content="Done.",
                            refusal=None,
                            annotations=[],
                            audio=None,
                        ),
                    )
                ],
            ),
            {"role": "assistant", "content": "Done."},
        ),
        (  # a ChatCompletionMessage with tool calls
            Model(role="assistant", content=None, tool_calls=[CALL]),
            CALLED,
        ),
        (  # a dict whose tool calls are SDK objects
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
            CALLED,
        ),
        (
            Model(role="assistant", content="Hi", name="helper"),
            {"role": "assistant", "content": "Hi", "name": "helper"},
        ),
    ],
)
def test_an_openai_reply_becomes_a_message(reply: Any, expected: dict[str, Any]) -> None:
    assert _appended(reply, format="openai") == expected


@pytest.mark.parametrize(
    "message",
    [
        {"role": "assistant", "content": "On it."},
        {"role": "assistant", "content": [{"type": "text", "text": "On it."}]},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        },
    ],
)
def test_a_plain_dict_is_kept_as_it_is(message: dict[str, Any]) -> None:
    assert _appended(message) is message


def test_a_dict_with_plain_tool_calls_is_kept_as_it_is() -> None:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }
    assert _appended(message, format="openai") is message


@pytest.mark.parametrize(
    "reply",
    [
        object(),  # no model_dump, nothing to read
        Model(choices=[]),  # a ChatCompletion without a choice
        Model(choices="x"),
        Model(choices=[5]),
        Model(choices=[Model(index=0)]),  # a choice without a message
        Model(text="no role"),
        Model,  # the SDK class itself, not a reply
    ],
)
def test_what_is_no_reply_is_refused_by_the_message_checks(reply: Any) -> None:
    with pytest.raises(MalformedMessageError, match=r"^history\[1\]"):
        _appended(reply, format="openai")
