"""Shared test data: hypothesis strategies for conversations, ranges and keeps.

The message builders (``U``, ``A``, ``T``, ``TU``, ``TR``) live in :mod:`tests.builders`; they
are re-exported here for the modules that import them with the strategies.

:func:`conversations` draws well-formed Anthropic-shaped histories: message 0 is a user message,
roles alternate, every assistant ``tool_use`` (unique id) is answered in the next user message by
``tool_result`` blocks in the same order, followed by text (and sometimes image) blocks. Texts mix
ASCII, non-ASCII and astral characters (emoji count two UTF-16 units), and some tool results are
Cline-style file reads of a few shared paths, so duplicate-read replacement has work to do.
"""

from __future__ import annotations

import base64
from typing import Any

from hypothesis import strategies as st

from windowkeeper import Keep

from .builders import TR, TU, A, T, U  # re-exported: the builders many modules import from here

__all__ = [
    "KEEP_VALUES",
    "TR",
    "TU",
    "A",
    "T",
    "U",
    "conversations",
    "conversations_with_ranges",
    "create_messages",
    "deleted_ranges",
    "keeps",
]

Message = dict[str, Any]

KEEP_VALUES = ("none", "lastTwo", "half", "quarter")


def create_messages(count: int) -> list[Message]:
    """The original tests' ``createMessages(n)``: a user task, then alternating string messages."""
    messages = [U("Initial task message")] if count > 0 else []
    for index in range(1, count):
        messages.append(
            {"role": "assistant" if index % 2 else "user", "content": f"Message {index}"}
        )
    return messages


# -- leaves --------------------------------------------------------------------------------

_ALPHABET = [
    *"abcxyz XYZ019.,;:'\"<>/\\\n\t",
    "é",
    "ß",
    "ñ",
    "日",
    "本",
    "語",
    "🙂",
    "🚀",
    "👩",
    "\u200d",
    "💻",
]
_PATHS = ("src/a.py", "docs/ü.md")

plain_texts = st.text(alphabet=st.sampled_from(_ALPHABET), min_size=1, max_size=24)
"""Non-empty text with non-ASCII and emoji."""


@st.composite
def _file_read_text(draw: st.DrawFn) -> str:
    path = draw(st.sampled_from(_PATHS))
    body = draw(plain_texts)
    kind = draw(st.sampled_from(("read", "write", "mention")))
    if kind == "read":
        return f"[read_file for '{path}'] Result:\n{body}"
    if kind == "write":
        return (
            f"[write_to_file for '{path}'] Result:\nThe content was saved.\n\n"
            f'<final_file_content path="{path}">\n{body}\n</final_file_content>'
        )
    return f'see <file_content path="{path}">\n{body}\n</file_content>'


# Hypothesis draws many late choices as their simplest value (the first branch, the lowest
# integer), so the interesting case comes first wherever it should be frequent.
texts = st.one_of(_file_read_text(), plain_texts)
"""A Cline-style file read, write or mention, or plain text."""

text_blocks = texts.map(lambda text: {"type": "text", "text": text})

image_blocks = st.binary(min_size=1, max_size=12).map(
    lambda data: {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": "image/png",
            "data": base64.b64encode(data).decode("ascii"),
        },
    }
)

thinking_blocks = st.tuples(plain_texts, st.binary(min_size=4, max_size=8)).map(
    lambda pair: {
        "type": "thinking",
        "thinking": pair[0],
        "signature": base64.b64encode(pair[1]).decode("ascii"),
    }
)

tool_result_contents = st.one_of(
    st.lists(st.one_of(text_blocks, image_blocks), min_size=1, max_size=3), texts
)
"""A tool_result's content: a string, or a list of text and image blocks."""


# -- conversations ---------------------------------------------------------------------------


@st.composite
def _user_message(draw: st.DrawFn, answering: list[str]) -> Message:
    if not answering and draw(st.integers(0, 3)) == 3:
        return U(draw(texts))
    results = [TR(tool_use_id, draw(tool_result_contents)) for tool_use_id in answering]
    extra = draw(
        st.lists(
            st.one_of(text_blocks, image_blocks),
            min_size=0 if results else 1,
            max_size=2,
        )
    )
    return U(results + extra)


@st.composite
def _assistant_message(draw: st.DrawFn, next_id: int) -> tuple[Message, list[str]]:
    if draw(st.integers(0, 4)) == 4:
        return A(draw(plain_texts)), []
    blocks: list[dict[str, Any]] = []
    if draw(st.booleans()):
        blocks.append(draw(thinking_blocks))
    blocks.extend(draw(st.lists(plain_texts.map(T), max_size=2)))
    calls = max(draw(st.sampled_from((1, 2, 0, 3))), 0 if blocks else 1)
    ids = [f"toolu_{next_id + number:04d}" for number in range(calls)]
    for tool_use_id in ids:
        name = draw(st.sampled_from(("read_file", "write_to_file", "list_files")))
        path = draw(st.sampled_from(_PATHS))
        blocks.append(
            {"type": "tool_use", "id": tool_use_id, "name": name, "input": {"path": path}}
        )
    return A(blocks), ids


@st.composite
def conversations(
    draw: st.DrawFn, min_size: int = 1, max_size: int = 14, ends_with: str | None = None
) -> list[Message]:
    """A well-formed conversation of ``min_size``-``max_size`` messages.

    ``ends_with="user"`` or ``"assistant"`` fixes the role of the last message (the size may then
    exceed ``max_size`` by one).
    """
    size = draw(st.integers(min_size, max_size))
    # A history of odd length ends with a user message, of even length with an assistant one.
    if ends_with is not None and size % 2 != (ends_with == "user"):
        size += 1
    messages: list[Message] = [_task_message(draw)] if size else []
    pending: list[str] = []
    next_id = 0
    for index in range(1, size):
        if index % 2:
            message, pending = draw(_assistant_message(next_id))
            next_id += len(pending)
        else:
            message = draw(_user_message(pending))
            pending = []
        messages.append(message)
    return messages


def _task_message(draw: st.DrawFn) -> Message:
    if draw(st.booleans()):
        return U(draw(texts))
    return U(draw(st.lists(st.one_of(text_blocks, image_blocks), min_size=1, max_size=3)))


# -- ranges and keeps ------------------------------------------------------------------------


def deleted_ranges(length: int) -> st.SearchStrategy[tuple[int, int] | None]:
    """None, or ``(2, end)`` with ``end`` from -1 to the last index of ``length`` messages."""
    return st.tuples(st.just(2), st.integers(-1, max(length - 1, -1))) | st.none()


def _range_ends(length: int, aligned: bool) -> list[int]:
    # Ends that hide something come first (see the note on ``texts``); -1 to 1 hide nothing.
    if aligned:
        # After an odd end (an assistant message when roles alternate) the rest starts with a
        # user message.
        return [*range(3, length, 2), 1, -1]
    return [*range(2, length), 1, 0, -1]


@st.composite
def conversations_with_ranges(
    draw: st.DrawFn,
    *,
    aligned: bool = False,
    min_size: int = 1,
    max_size: int = 14,
    ends_with: str | None = None,
) -> tuple[list[Message], tuple[int, int] | None]:
    """A conversation and a deleted range for it: None, or ``(2, end)``, ``end`` from -1 to the
    last index, odd and even.

    With ``aligned=True`` the end is -1 or odd, so the visible rest starts with a user
    message. The range is chosen before the conversation is drawn: hypothesis draws late small
    choices mostly as their simplest value, which would make nearly every range None or (2, -1).
    """
    hidden = draw(st.integers(0, 3)) > 0
    position = draw(st.integers(0, 999))
    history = draw(conversations(min_size=min_size, max_size=max_size, ends_with=ends_with))
    if not hidden:
        return history, None
    ends = _range_ends(len(history), aligned)
    return history, (2, ends[position * len(ends) // 1000])


keeps: st.SearchStrategy[Keep | str] = st.sampled_from([*Keep, *KEEP_VALUES])
"""A keep strategy, as a :class:`Keep` member or its plain string."""
