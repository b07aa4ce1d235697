"""Hypothesis strategies for the session state machine: messages of real agent loops, both formats.

Each strategy draws one step of a conversation, in the Anthropic shape or in OpenAI's Chat
Completions shape, given what the machine knows (the ids used so far): a user text, the results
of the last assistant message's tool calls, a text-only answer, or an answer with parallel tool
calls. Histories built from them are as messy as real ones: any role may follow any role (two
user messages in a row, two assistant ones), contents may be ``""`` or ``[]``, text blocks may
be empty or whitespace, tool ids are reused across and within turns (``call_0`` every turn),
results may be tens of kilobytes, and Anthropic answers start with thinking blocks.

A thinking block is drawn as ``{"type": "thinking", "thinking": text, "signature": UNSIGNED}``:
the machine swaps in a signature issued by its API double (:func:`signed`), which the double
then accepts back.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Literal

from hypothesis import strategies as st

__all__ = [
    "ANTHROPIC_TOOLS",
    "OPENAI_TOOLS",
    "SYSTEMS",
    "UNSIGNED",
    "Format",
    "assistant_text",
    "assistant_tools",
    "big_text",
    "malformed",
    "signed",
    "tool_ids_of",
    "tool_results",
    "user_text",
]

Format = Literal["anthropic", "openai"]
Message = dict[str, Any]

UNSIGNED = "<to be signed by the double>"
"""The signature of a drawn thinking block, until :func:`signed` replaces it."""

# -- leaves ------------------------------------------------------------------------------------

_ALPHABET = [*"abcxyz XYZ019.,;:'\"<>/\\\n\t{}", "é", "ß", "日", "本", "🙂", "🚀", "\u200d"]
_PATHS = ("src/app.py", "src/models.py", "tests/test_app.py", "docs/ü.md")

_LINE = "def handler(session, item_id: int):\n    return jsonify(session.query(Item).all())\n"


def big_text(kb: int, seed: int) -> str:
    """About ``kb`` kilobytes of code-like text, distinct per ``seed`` (a file read, a test log)."""
    head = f"# file {seed}: {kb} KB\n"
    body = "".join(f"{n:05d} {_LINE}" for n in range(kb * 1024 // (len(_LINE) + 6) + 1))
    return (head + body)[: kb * 1024]


small_texts = st.text(alphabet=st.sampled_from(_ALPHABET), min_size=1, max_size=40).filter(
    str.strip
)
"""Short text with non-ASCII and emoji, never blank."""

odd_texts = st.sampled_from(["", " ", "\n\n"])
"""Texts a provider refuses as they are: empty or whitespace only."""

big_texts = st.builds(big_text, st.sampled_from([12, 24, 48]), st.integers(0, 99))
"""Tens of kilobytes."""

texts = st.one_of(small_texts, small_texts, small_texts, odd_texts, big_texts)


def _text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


@st.composite
def _content(draw: st.DrawFn, text: st.SearchStrategy[str] = texts) -> str | list[Any]:
    """A message content: a string, or a list of 0-3 text blocks (``[]`` included)."""
    if draw(st.booleans()):
        return draw(text)
    return [_text_block(t) for t in draw(st.lists(text, max_size=3))]


# -- tools -----------------------------------------------------------------------------------

ANTHROPIC_TOOLS: list[dict[str, Any]] = [
    {
        "name": "read_file",
        "description": "Read a file of the repository.",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
    {
        "name": "run_tests",
        "description": "Run the test suite and return its log.",
        "input_schema": {"type": "object", "properties": {}},
    },
]

OPENAI_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": tool["name"],
            "description": tool["description"],
            "parameters": tool["input_schema"],
        },
    }
    for tool in ANTHROPIC_TOOLS
]

SYSTEMS: dict[str, str | None] = {
    "short": "You are a careful coding agent.",
    "none": None,
    "7 KB": "You are a careful coding agent working in a Flask repository. Follow the style guide. "
    * 80,
    "15 KB": "Rules:\n" + "- Keep every answer short and cite the file you read.\n" * 300,
}
"""System prompts by name (names keep hypothesis' reports short)."""


@st.composite
def _calls(
    draw: st.DrawFn, used: Sequence[str], prefix: str
) -> list[tuple[str, str, dict[str, Any]]]:
    """1-4 parallel calls ``(id, name, input)``; ids fresh, reused from ``used``, or repeated."""
    count = draw(st.sampled_from([1, 1, 2, 3, 4]))
    ids: list[str] = []
    for position in range(count):
        how = draw(st.sampled_from(["fresh", "fresh", "fresh", "per-turn", "reused", "repeated"]))
        if how == "reused" and used:
            ids.append(draw(st.sampled_from(list(used))))
        elif how == "repeated" and ids:
            ids.append(ids[-1])
        elif how == "per-turn":
            ids.append(f"{prefix}{position}")  # numbered per turn, as some proxies do
        else:
            ids.append(f"{prefix}{len(used) + position:03d}x{draw(st.integers(0, 999))}")
    calls = []
    for call_id in ids:
        if draw(st.integers(0, 3)) == 0:
            calls.append((call_id, "run_tests", {}))
        else:
            calls.append((call_id, "read_file", {"path": draw(st.sampled_from(_PATHS))}))
    return calls


@st.composite
def _thinking(draw: st.DrawFn) -> list[dict[str, Any]]:
    kind = draw(st.sampled_from(["none", "none", "thinking", "thinking", "redacted"]))
    if kind == "none":
        return []
    if kind == "redacted":
        return [{"type": "redacted_thinking", "data": UNSIGNED}]
    thought = draw(st.one_of(small_texts, st.just("Let me think this through. " * 60)))
    return [{"type": "thinking", "thinking": thought, "signature": UNSIGNED}]


def signed(
    message: Message, issue: Callable[[str], dict[str, str]], redact: Callable[[], Any]
) -> Message:
    """``message`` with each drawn thinking block replaced by one the double issued."""
    content = message.get("content")
    if not isinstance(content, list) or not any(
        isinstance(block, dict) and UNSIGNED in block.values() for block in content
    ):
        return message
    blocks = []
    for block in content:
        if block.get("type") == "thinking" and block.get("signature") == UNSIGNED:
            blocks.append(issue(block["thinking"]))
        elif block.get("type") == "redacted_thinking" and block.get("data") == UNSIGNED:
            blocks.append(redact())
        else:
            blocks.append(block)
    return {**message, "content": blocks}


# -- messages ---------------------------------------------------------------------------------


@st.composite
def user_text(draw: st.DrawFn, fmt: Format) -> list[Message]:
    """One user message: a task, a follow-up, or an interruption (a big paste sometimes)."""
    return [{"role": "user", "content": draw(_content())}]


@st.composite
def assistant_text(draw: st.DrawFn, fmt: Format) -> list[Message]:
    """A text-only answer (possibly ``""``, ``[]`` or blank blocks), after thinking for Anthropic."""
    content = draw(_content(st.one_of(small_texts, small_texts, odd_texts)))
    if fmt == "openai":
        return [{"role": "assistant", "content": content}]
    thinking = draw(_thinking())
    if thinking:
        blocks = [_text_block(content)] if isinstance(content, str) else content
        return [{"role": "assistant", "content": [*thinking, *blocks]}]
    return [{"role": "assistant", "content": content}]


@st.composite
def assistant_tools(draw: st.DrawFn, fmt: Format, used: Sequence[str]) -> list[Message]:
    """An answer with 1-4 parallel tool calls, a text before them sometimes."""
    prefix = "call_" if fmt == "openai" else "toolu_"
    calls = draw(_calls(used, prefix))
    text = draw(st.one_of(st.none(), small_texts, odd_texts))
    if fmt == "openai":
        message: Message = {
            "role": "assistant",
            "content": text if text is not None else draw(st.sampled_from([None, None, ""])),
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
                for call_id, name, arguments in calls
            ],
        }
        return [message]
    blocks = [*draw(_thinking())]
    if text is not None:
        blocks.append(_text_block(text))
    blocks.extend(
        {"type": "tool_use", "id": call_id, "name": name, "input": arguments}
        for call_id, name, arguments in calls
    )
    return [{"role": "assistant", "content": blocks}]


def tool_ids_of(message: Message) -> list[str]:
    """The tool call ids of an assistant message, in either format (repeats kept)."""
    if message.get("role") != "assistant":
        return []
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        return [call["id"] for call in calls]
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [block["id"] for block in content if block.get("type") == "tool_use"]


_result_texts = st.one_of(small_texts, small_texts, big_texts, odd_texts)


@st.composite
def _result_content(draw: st.DrawFn) -> str | list[Any]:
    if draw(st.integers(0, 3)) == 0:
        return [_text_block(t) for t in draw(st.lists(_result_texts, min_size=1, max_size=2))]
    return draw(_result_texts)


@st.composite
def tool_results(draw: st.DrawFn, fmt: Format, pending: Sequence[str]) -> list[Message]:
    """Results of the ``pending`` calls: all of them (sometimes one missing, or one unknown id),
    each small or tens of kilobytes, then sometimes the user's own text; in one user message or
    split over two (Anthropic), as tool messages (OpenAI)."""
    ids = list(pending)
    if len(ids) > 1 and draw(st.integers(0, 5)) == 0:
        del ids[draw(st.integers(0, len(ids) - 1))]  # an interrupted call
    if draw(st.integers(0, 7)) == 0:
        ids.append("orphan_result")
    results = [(call_id, draw(_result_content())) for call_id in ids]
    extra = draw(st.one_of(st.none(), st.none(), small_texts, big_texts))
    # sometimes the user speaks before the results arrive (an interruption, a queued message)
    first = [{"role": "user", "content": draw(small_texts)}] if draw(st.integers(0, 5)) == 0 else []
    if fmt == "openai":
        messages: list[Message] = first + [
            {"role": "tool", "tool_call_id": call_id, "content": content}
            for call_id, content in results
        ]
        if extra is not None:
            messages.append({"role": "user", "content": extra})
        return messages
    blocks: list[Any] = [
        {"type": "tool_result", "tool_use_id": call_id, "content": content}
        | ({"is_error": True} if call_id == "orphan_result" else {})
        for call_id, content in results
    ]
    if extra is not None:
        blocks.append(_text_block(extra))
    if len(blocks) > 1 and draw(st.integers(0, 4)) == 0:
        cut = draw(st.integers(1, len(blocks) - 1))
        return [
            *first,
            {"role": "user", "content": blocks[:cut]},
            {"role": "user", "content": blocks[cut:]},
        ]
    return [*first, {"role": "user", "content": blocks}]


def malformed(fmt: Format) -> st.SearchStrategy[Message]:
    """A message the session must refuse at append."""
    common = [
        {"role": "user", "content": 5},
        {"role": "robot", "content": "hi"},
        {"role": "user", "content": [{"type": "text", "text": 12345}]},
        {"role": "user", "content": [{"type": "text", "text": "x", "n": float("nan")}]},
        {"content": "no role"},
    ]
    if fmt == "openai":
        specific = [
            {"role": "tool", "content": "no id"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "", "type": "function", "function": {"name": "x"}}],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]},
        ]
    else:
        specific = [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "", "name": "x", "input": {}}],
            },
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "x", "input": []}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t", "content": 7}],
            },
            {"role": "assistant", "content": [{"type": "thinking", "signature": "s"}]},
        ]
    return st.sampled_from(common + specific)
