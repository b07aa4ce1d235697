"""Hypothesis strategies for OpenAI Responses input items and their Anthropic form.

:func:`responses_inputs` draws input lists the Responses API accepts (``validate_responses``
passes) and that convert to valid Anthropic conversations: optional system, developer and
compaction items first, a user task, then turns of a run of model items (assistant messages
in all their forms, ``function_call`` and ``custom_tool_call`` items with unique call ids, in
any order, reasoning items before some of them, now and then a developer message between),
their outputs in any order, sometimes a user message right after them, and carried items
(system, developer, compaction, reasoning) between turns and at the end.
:func:`broken_responses_inputs` deletes, repeats and swaps items of those, so pairing and
alternation break sometimes (the round-trip law still holds for them).
:func:`anthropic_conversations` draws note-free Anthropic conversations for which the reverse
law holds.
"""

from __future__ import annotations

import base64
from itertools import count
from typing import Any

from hypothesis import strategies as st

from .strategies import arguments, texts

__all__ = [
    "anthropic_conversations",
    "broken_responses_inputs",
    "responses_inputs",
]

Item = dict[str, Any]

_MEDIA_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
_URLS = ("https://example.com/a.png", "http://example.org/ü.jpg?size=2&x=1")
_TOOLS = ("bash", "read_file", "edit")


def _data_url(draw: st.DrawFn) -> str:
    data = base64.b64encode(draw(st.binary(min_size=1, max_size=9))).decode("ascii")
    return f"data:{draw(st.sampled_from(_MEDIA_TYPES))};base64,{data}"


@st.composite
def input_images(draw: st.DrawFn) -> Item:
    """An ``input_image``: a data URL, an http(s) URL or a file id, with or without ``detail``."""
    form = draw(st.integers(0, 2))
    if form == 0:
        part: Item = {"type": "input_image", "image_url": _data_url(draw)}
    elif form == 1:
        part = {"type": "input_image", "image_url": draw(st.sampled_from(_URLS))}
    else:
        part = {"type": "input_image", "file_id": "file-img1"}
    if draw(st.booleans()):
        part["detail"] = draw(st.sampled_from(("low", "high", "auto")))
    return part


input_texts = texts.map(lambda text: {"type": "input_text", "text": text})
input_files = st.sampled_from(
    (
        {"type": "input_file", "file_id": "file-abc"},
        {
            "type": "input_file",
            "filename": "a.pdf",
            "file_data": "data:application/pdf;base64,QUJD",
        },
    )
)
user_parts = st.one_of(input_texts, input_images(), input_files)
user_contents = st.one_of(texts, st.lists(user_parts, min_size=1, max_size=3))
"""Non-empty user content: a string or input parts."""
output_contents = st.one_of(
    texts, st.lists(st.one_of(input_texts, input_images()), min_size=1, max_size=2)
)


@st.composite
def _message(draw: st.DrawFn, role: str, content: Any) -> Item:
    """An easy input message, or one with ``"type": "message"``."""
    if draw(st.booleans()):
        return {"type": "message", "role": role, "content": content}
    return {"role": role, "content": content}


@st.composite
def user_messages(draw: st.DrawFn) -> Item:
    return draw(_message("user", draw(user_contents)))


@st.composite
def system_messages(draw: st.DrawFn) -> Item:
    """A system or developer message with string or input_text content."""
    role = draw(st.sampled_from(("system", "developer")))
    content = draw(st.one_of(texts, st.lists(input_texts, min_size=1, max_size=2)))
    return draw(_message(role, content))


@st.composite
def output_texts(draw: st.DrawFn) -> Item:
    part: Item = {"type": "output_text", "text": draw(texts)}
    if draw(st.booleans()):
        part["annotations"] = []
    if draw(st.integers(0, 3)) == 0:
        part["logprobs"] = []
    return part


assistant_parts = st.one_of(
    output_texts(), output_texts(), texts.map(lambda text: {"type": "refusal", "refusal": text})
)


@st.composite
def assistant_messages(draw: st.DrawFn, number: int) -> Item:
    """An assistant message in one of the forms agents send back."""
    parts = st.lists(assistant_parts, min_size=1, max_size=3)
    form = draw(st.integers(0, 4))
    if form == 0:
        return {"role": "assistant", "content": draw(texts)}
    if form == 1:
        return {"type": "message", "role": "assistant", "content": draw(texts)}
    if form == 2:
        return {"type": "message", "role": "assistant", "content": draw(parts)}
    if form == 3:
        return {"role": "assistant", "content": draw(parts)}
    message: Item = {
        "id": f"msg_{number}",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": draw(parts),
    }
    if draw(st.booleans()):
        message["phase"] = draw(st.sampled_from(("commentary", "final_answer")))
    return message


@st.composite
def reasoning_items(draw: st.DrawFn, number: int) -> Item:
    summary = draw(st.lists(texts, max_size=2))
    item: Item = {
        "type": "reasoning",
        "id": f"rs_{number}",
        "summary": [{"type": "summary_text", "text": text} for text in summary],
    }
    if draw(st.booleans()):
        item["encrypted_content"] = "gAAAAB" + draw(st.text("abcXYZ019", min_size=1, max_size=8))
    if draw(st.integers(0, 3)) == 0:
        item["content"] = [{"type": "reasoning_text", "text": draw(texts)}]
    return item


@st.composite
def compaction_items(draw: st.DrawFn, number: int) -> Item:
    item: Item = {"type": "compaction", "encrypted_content": f"enc{number}"}
    if draw(st.booleans()):
        item["id"] = f"cmp_{number}"
    return item


@st.composite
def _call(draw: st.DrawFn, call_id: str, number: int) -> Item:
    if draw(st.integers(0, 3)) == 0:
        item: Item = {
            "type": "custom_tool_call",
            "call_id": call_id,
            "name": "apply_patch",
            "input": draw(texts),
        }
    else:
        item = {
            "type": "function_call",
            "call_id": call_id,
            "name": draw(st.sampled_from(_TOOLS)),
            "arguments": draw(arguments()),
        }
        if draw(st.booleans()):
            item["status"] = "completed"
    if draw(st.booleans()):
        item["id"] = f"fc_{number}"
    return item


@st.composite
def _output(draw: st.DrawFn, call: Item, number: int) -> Item:
    kind = f"{call['type']}_output"
    item: Item = {"type": kind, "call_id": call["call_id"], "output": draw(output_contents)}
    if kind == "function_call_output" and draw(st.integers(0, 3)) == 0:
        item["id"] = f"fco_{number}"
        item["status"] = "completed"
    return item


def _carried(draw: st.DrawFn, numbers: count[int], reasoning: bool = True) -> list[Item]:
    """Zero to two carried items, now and then."""
    if draw(st.integers(0, 3)) != 0:
        return []
    kinds = ("system", "compaction", "reasoning") if reasoning else ("system", "compaction")
    items = []
    for kind in draw(st.lists(st.sampled_from(kinds), min_size=1, max_size=2)):
        if kind == "system":
            items.append(draw(system_messages()))
        elif kind == "compaction":
            items.append(draw(compaction_items(next(numbers))))
        else:
            items.append(draw(reasoning_items(next(numbers))))
    return items


@st.composite
def _run(draw: st.DrawFn, numbers: count[int], with_calls: bool) -> tuple[list[Item], list[Item]]:
    """A run of model items (and reasoning and developer items between), and its calls."""
    calls = [
        draw(_call(f"call_{next(numbers)}", next(numbers)))
        for _ in range(draw(st.integers(1, 3)) if with_calls else 0)
    ]
    messages = [
        draw(assistant_messages(next(numbers)))
        for _ in range(draw(st.integers(0 if calls else 1, 2)))
    ]
    run: list[Item] = []
    for item in draw(st.permutations(messages + calls)):
        choice = draw(st.integers(0, 5))
        if choice <= 1:
            run.append(draw(reasoning_items(next(numbers))))
        elif choice == 2 and run:
            run.append(draw(system_messages()))
        run.append(item)
    return run, calls


@st.composite
def responses_inputs(draw: st.DrawFn, max_turns: int = 6) -> list[Item]:
    """An input list the Responses API accepts, which converts to a valid Anthropic request."""
    numbers = count()
    items: list[Item] = _carried(draw, numbers, reasoning=False)
    items.append(draw(user_messages()))
    for _ in range(draw(st.integers(0, max_turns))):
        items.extend(_carried(draw, numbers))
        run, calls = draw(_run(numbers, with_calls=draw(st.booleans())))
        items.extend(run)
        if calls:
            for position, call in enumerate(draw(st.permutations(calls))):
                if position:
                    items.extend(_carried(draw, numbers))
                items.append(draw(_output(call, next(numbers))))
            if draw(st.booleans()):
                items.extend(_carried(draw, numbers))
                items.append(draw(user_messages()))
        else:
            items.extend(_carried(draw, numbers))
            items.append(draw(user_messages()))
    if draw(st.booleans()):
        items.extend(_carried(draw, numbers))
        items.extend(draw(_run(numbers, with_calls=False))[0])
    items.extend(_carried(draw, numbers, reasoning=False))  # the API refuses reasoning last
    return items


@st.composite
def broken_responses_inputs(draw: st.DrawFn) -> list[Item]:
    """An input list with a few items deleted, repeated or swapped."""
    items = draw(responses_inputs())
    for _ in range(draw(st.integers(1, 3))):
        if len(items) < 2:
            break
        index = draw(st.integers(0, len(items) - 2))
        operation = draw(st.sampled_from(("delete", "repeat", "swap")))
        if operation == "delete":
            del items[index]
        elif operation == "repeat":
            items.insert(index, items[index])
        else:
            items[index], items[index + 1] = items[index + 1], items[index]
    return items


# -- Anthropic side ---------------------------------------------------------------------------


@st.composite
def _image_blocks(draw: st.DrawFn) -> Item:
    if draw(st.booleans()):
        data = base64.b64encode(draw(st.binary(min_size=1, max_size=9))).decode("ascii")
        source = {"type": "base64", "media_type": draw(st.sampled_from(_MEDIA_TYPES)), "data": data}
    else:
        source = {"type": "url", "url": draw(st.sampled_from(_URLS))}
    return {"type": "image", "source": source}


_text_blocks = texts.map(lambda text: {"type": "text", "text": text})
_blocks = st.lists(st.one_of(_text_blocks, _image_blocks()), min_size=1, max_size=3)
_inputs = st.dictionaries(
    st.sampled_from(("path", "command", "ü")),
    st.one_of(texts, st.integers(-5, 99), st.booleans(), st.lists(st.integers(0, 3), max_size=2)),
    max_size=3,
)


@st.composite
def anthropic_conversations(draw: st.DrawFn) -> list[Item]:
    """An alternating, note-free Anthropic conversation for which the reverse law holds."""
    messages: list[Item] = [{"role": "user", "content": draw(st.one_of(texts, _blocks))}]
    pending: list[str] = []
    for turn in range(draw(st.integers(0, 8))):
        if turn % 2 == 0:
            pending = [f"toolu_{turn}_{number}" for number in range(draw(st.integers(0, 3)))]
            if not pending and draw(st.booleans()):
                messages.append({"role": "assistant", "content": draw(texts)})
                continue
            blocks: list[Item] = [
                {"type": "tool_use", "id": call_id, "name": "bash", "input": draw(_inputs)}
                for call_id in pending
            ]
            blocks += draw(st.lists(_text_blocks, min_size=0 if blocks else 1, max_size=3))
            messages.append({"role": "assistant", "content": draw(st.permutations(blocks))})
        else:
            results = [
                {
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "content": draw(st.one_of(texts, _blocks)),
                    **({"is_error": True} if draw(st.booleans()) else {}),
                }
                for call_id in draw(st.permutations(pending))
            ]
            if results and draw(st.booleans()):
                messages.append({"role": "user", "content": results})
            elif results:
                messages.append({"role": "user", "content": results + draw(_blocks)})
            else:
                messages.append({"role": "user", "content": draw(st.one_of(texts, _blocks))})
    return messages
