"""Hypothesis strategies for OpenAI Chat Completions conversations and their Anthropic form.

:func:`openai_conversations` draws canonical conversations (see
:mod:`windowkeeper.formats.openai`) that the OpenAI API accepts: optional system and developer
messages first and between turns, a user task, then turns of an assistant message with 0-3
parallel tool calls (unique ids, JSON arguments written compactly, with spaces, or not as a JSON
object at all), their tool messages in any order, sometimes a user message with text and images
right after them. They convert to alternating Anthropic conversations.
:func:`broken_openai_conversations` deletes, repeats and swaps messages of those, so pairing
rules break sometimes. :func:`anthropic_conversations` draws Anthropic conversations for which
the reverse law holds.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from hypothesis import strategies as st

__all__ = [
    "anthropic_conversations",
    "broken_openai_conversations",
    "openai_conversations",
]

Message = dict[str, Any]

texts = st.text(
    alphabet=st.sampled_from([*"abcxyz XYZ019.,;:'\"{}[]\n\t", "é", "ß", "日", "🙂", "💻"]),
    min_size=1,
    max_size=16,
)
"""Non-empty text with non-ASCII and astral characters."""

_MEDIA_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
_URLS = ("https://example.com/a.png", "http://example.org/ü.jpg?size=2&x=1")
_TOOLS = ("bash", "read_file", "edit")


def _text_part(text: str) -> Message:
    return {"type": "text", "text": text}


text_parts = texts.map(_text_part)


@st.composite
def image_parts(draw: st.DrawFn) -> Message:
    """An ``image_url`` part: a base64 data URL or an http(s) URL, sometimes with ``detail``."""
    if draw(st.booleans()):
        media_type = draw(st.sampled_from(_MEDIA_TYPES))
        data = base64.b64encode(draw(st.binary(min_size=1, max_size=9))).decode("ascii")
        url = f"data:{media_type};base64,{data}"
    else:
        url = draw(st.sampled_from(_URLS))
    image: Message = {"url": url}
    if draw(st.booleans()):
        image["detail"] = draw(st.sampled_from(("low", "high", "auto")))
    return {"type": "image_url", "image_url": image}


part_lists = st.lists(st.one_of(text_parts, image_parts()), min_size=1, max_size=3)
user_contents = st.one_of(texts, part_lists)
"""Any non-empty user content: a string or text and image parts."""
not_one_text = st.one_of(
    st.lists(st.one_of(text_parts, image_parts()), min_size=2, max_size=3),
    image_parts().map(lambda part: [part]),
)
"""Parts that are not a single plain text part."""
merged_user_contents = st.one_of(texts, not_one_text)
"""The content of a user message right after tool messages: never one plain text part."""


@st.composite
def _named(draw: st.DrawFn, message: Message) -> Message:
    if draw(st.integers(0, 3)) == 0:
        return {**message, "name": draw(st.sampled_from(("alice", "helper")))}
    return message


@st.composite
def system_messages(draw: st.DrawFn) -> Message:
    """A system or developer message with string or text-part content."""
    role = draw(st.sampled_from(("system", "developer")))
    content = draw(st.one_of(texts, st.lists(text_parts, min_size=1, max_size=2)))
    return draw(_named({"role": role, "content": content}))


@st.composite
def arguments(draw: st.DrawFn) -> str:
    """Tool call arguments: a JSON object written compactly or with spaces, or not an object."""
    value = draw(
        st.dictionaries(
            st.sampled_from(("path", "command", "line", "ü")),
            st.one_of(texts, st.integers(-5, 10**12), st.booleans(), st.none()),
            max_size=3,
        )
    )
    style = draw(st.integers(0, 4))
    if style == 0:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if style == 1:
        return json.dumps(value)
    if style == 2:
        return json.dumps(value, indent=1)
    return draw(st.sampled_from(('{"path": "a.py"', "", "[1, 2]", "null", "not json")))


@st.composite
def _assistant(draw: st.DrawFn, ids: list[str]) -> Message:
    message: Message = {"role": "assistant"}
    if ids:
        message["content"] = draw(
            st.one_of(st.none(), texts, st.lists(text_parts, min_size=2, max_size=3))
        )
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": draw(st.sampled_from(_TOOLS)), "arguments": draw(arguments())},
            }
            for call_id in ids
        ]
    else:
        message["content"] = draw(st.one_of(texts, st.lists(text_parts, min_size=1, max_size=3)))
    if draw(st.integers(0, 4)) == 0:
        message["refusal"] = None
    return draw(_named(message))


@st.composite
def _tool(draw: st.DrawFn, call_id: str) -> Message:
    content = draw(st.one_of(texts, st.lists(text_parts, min_size=1, max_size=2)))
    return draw(_named({"role": "tool", "tool_call_id": call_id, "content": content}))


def _maybe_systems(draw: st.DrawFn) -> list[Message]:
    return draw(st.lists(system_messages(), max_size=2)) if draw(st.integers(0, 3)) == 0 else []


@st.composite
def openai_conversations(draw: st.DrawFn, max_turns: int = 6) -> list[Message]:
    """A canonical OpenAI conversation that passes ``validate_openai``."""
    messages: list[Message] = draw(st.lists(system_messages(), max_size=2))
    messages.append(draw(_named({"role": "user", "content": draw(user_contents)})))
    next_id = 0
    for _ in range(draw(st.integers(0, max_turns))):
        messages.extend(_maybe_systems(draw))
        ids = [f"call_{next_id + number}" for number in range(draw(st.integers(0, 3)))]
        next_id += len(ids)
        messages.append(draw(_assistant(ids)))
        if ids:
            order = draw(st.permutations(ids))
            messages.extend(draw(_tool(call_id)) for call_id in order)
            if draw(st.booleans()):
                messages.extend(_maybe_systems(draw))
                content = draw(merged_user_contents)
                messages.append(draw(_named({"role": "user", "content": content})))
        else:
            messages.extend(_maybe_systems(draw))
            messages.append(draw(_named({"role": "user", "content": draw(user_contents)})))
    if draw(st.booleans()):
        messages.append(draw(_assistant([])))
    messages.extend(_maybe_systems(draw))
    return messages


@st.composite
def broken_openai_conversations(draw: st.DrawFn) -> list[Message]:
    """A canonical conversation with a few messages deleted, repeated or swapped."""
    messages = draw(openai_conversations())
    for _ in range(draw(st.integers(0, 3))):
        if len(messages) < 2:
            break
        index = draw(st.integers(0, len(messages) - 2))
        operation = draw(st.sampled_from(("delete", "repeat", "swap")))
        if operation == "delete":
            del messages[index]
        elif operation == "repeat":
            messages.insert(index, messages[index])
        else:
            messages[index], messages[index + 1] = messages[index + 1], messages[index]
    return messages


# -- Anthropic side ---------------------------------------------------------------------------


@st.composite
def _image_blocks(draw: st.DrawFn) -> Message:
    if draw(st.booleans()):
        data = base64.b64encode(draw(st.binary(min_size=1, max_size=9))).decode("ascii")
        source = {"type": "base64", "media_type": draw(st.sampled_from(_MEDIA_TYPES)), "data": data}
    else:
        source = {"type": "url", "url": draw(st.sampled_from(_URLS))}
    return {"type": "image", "source": source}


_blocks = st.lists(st.one_of(text_parts, _image_blocks()), min_size=1, max_size=3)
_not_one_text_block = st.one_of(
    st.lists(st.one_of(text_parts, _image_blocks()), min_size=2, max_size=3),
    _image_blocks().map(lambda block: [block]),
)
_inputs = st.dictionaries(
    st.sampled_from(("path", "command", "ü")),
    st.one_of(texts, st.integers(-5, 99), st.lists(st.integers(0, 3), max_size=2)),
    max_size=3,
)


@st.composite
def anthropic_conversations(draw: st.DrawFn) -> list[Message]:
    """An alternating Anthropic conversation for which the reverse law holds."""
    messages: list[Message] = [{"role": "user", "content": draw(st.one_of(texts, _blocks))}]
    pending: list[str] = []
    for turn in range(draw(st.integers(0, 8))):
        if turn % 2 == 0:
            pending = [f"toolu_{turn}_{number}" for number in range(draw(st.integers(0, 3)))]
            calls = [
                {"type": "tool_use", "id": call_id, "name": "bash", "input": draw(_inputs)}
                for call_id in pending
            ]
            if not calls:
                messages.append({"role": "assistant", "content": draw(st.one_of(texts, _blocks))})
                continue
            text = draw(st.one_of(st.just([]), st.lists(text_parts, min_size=2, max_size=3)))
            messages.append({"role": "assistant", "content": text + calls})
        else:
            results = [
                {
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "content": draw(st.one_of(texts, _blocks)),
                    **({"is_error": True} if draw(st.booleans()) else {}),
                }
                for call_id in pending
            ]
            only_results = bool(results) and draw(st.booleans())
            rest: list[Message] = [] if only_results else draw(_not_one_text_block)
            messages.append({"role": "user", "content": results + rest})
    return messages
