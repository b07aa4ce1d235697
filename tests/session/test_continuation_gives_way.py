"""A fold whose shortest continuation cannot fit gives way: the request goes as without it.

The history follows the structure of a real Kilo Code task replayed at an 8k window (block
kinds and sizes; the words are made up): a long task, a tool call per turn, and a newest turn
holding a screenshot. Plain truncation sent its last request; with compaction on, even the
shortest summary and ledger left it over the limit, and ``prepare()`` refused it.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from typing import Any

from windowkeeper import ContextOverflowError, ContextSession, validate_messages

# (role, blocks): ("text", characters), ("tool_use", name, characters of input),
# ("result", [characters of each text part]), ("image", characters of data)
_SHAPE: list[tuple[str, list[tuple[Any, ...]]]] = [
    ("user", [("text", 139), ("text", 9721)]),
    ("assistant", [("text", 356), ("tool_use", "read_file", 162)]),
    ("user", [("result", [10503, 2957])]),
    ("assistant", [("text", 22), ("tool_use", "codebase_search", 81)]),
    ("user", [("result", [96, 2957])]),
    ("assistant", [("tool_use", "list_files", 42)]),
    ("user", [("result", [613, 3171])]),
    ("assistant", [("tool_use", "read_file", 158)]),
    ("user", [("result", [48315, 2957])]),
    ("assistant", [("text", 1380)]),
    ("user", [("text", 858), ("text", 2957)]),
    ("assistant", [("tool_use", "edit_file", 2955)]),
    ("user", [("result", [206, 2961])]),
    ("assistant", [("tool_use", "execute_command", 56)]),
    ("user", [("result", [140, 3603])]),
    ("assistant", [("tool_use", "browser_action", 181)]),
    ("user", [("result", [1238]), ("image", 18876), ("text", 4115)]),
]
_WORDS = "the file function return value import class self error test path config data list"


def _text(size: int, words: itertools.cycle[str]) -> str:
    out: list[str] = []
    length = 0
    while length < size:
        word = next(words)
        out.append(word)
        length += len(word) + 1
    return " ".join(out)[:size]


def _history() -> list[dict[str, Any]]:
    # a fixed, uneven walk through the words, so no two blocks are alike
    words = itertools.cycle(
        [w for i, w in enumerate(_WORDS.split() * 7) if i % 3 != 1 or i % 5 == 0]
    )
    history: list[dict[str, Any]] = []
    calls = 0
    for role, blocks in _SHAPE:
        content: list[dict[str, Any]] = []
        for block in blocks:
            if block[0] == "text":
                content.append({"type": "text", "text": _text(block[1], words)})
            elif block[0] == "tool_use":
                calls += 1
                arguments = {"arg": _text(block[2] - 12, words)}
                content.append(
                    {
                        "type": "tool_use",
                        "id": f"call_{calls}",
                        "name": block[1],
                        "input": arguments,
                    }
                )
            elif block[0] == "result":
                parts = [{"type": "text", "text": _text(size, words)} for size in block[1]]
                content.append(
                    {"type": "tool_result", "tool_use_id": f"call_{calls}", "content": parts}
                )
            else:
                source = {"type": "base64", "media_type": "image/webp", "data": "A" * block[1]}
                content.append({"type": "image", "source": source})
        history.append({"role": role, "content": content})
    return history


def _last_request(history: list[dict[str, Any]], **options: Any) -> Any:
    """The session fed turn by turn (a request before each answer), then its next request."""
    session = ContextSession(8000, **options)
    for index, message in enumerate(history):
        if index and message["role"] == "assistant":
            with contextlib.suppress(ContextOverflowError):
                session.prepare()
        session.append(message)
    return session.prepare()


_TOOLS = [
    {"name": name, "description": "A tool.", "input_schema": {"type": "object"}}
    for name in sorted(
        {block[1] for _, blocks in _SHAPE for block in blocks if block[0] == "tool_use"}
    )
]


def test_the_request_plain_truncation_sends_is_sent(anthropic_double: Any) -> None:
    history = _history()
    plain = _last_request(history)
    folded = _last_request(history, summarize=True)
    steps = [action.step for action in folded.actions]
    assert "continuation-dropped" in steps, steps  # the case this test is about
    assert folded.estimated_tokens <= 6400
    assert validate_messages(folded.messages) == []
    with anthropic_double.client() as client:
        client.messages.create(
            model="claude-sonnet-4-5", max_tokens=100, messages=folded.messages, tools=_TOOLS
        )
    anthropic_double.assert_no_rejections()
    # message 1 carries the original's truncation notice, as plain truncation's does
    assert plain.messages[1]["content"][0] == folded.messages[1]["content"][0]
    assert folded.messages[1]["content"][0]["text"].startswith("[NOTE] Some previous")


def test_the_newest_results_still_go_as_text() -> None:
    """The fold took the call the newest turn answers: its result goes as text, whole or
    clipped, and nothing of the summary or ledger is sent."""
    history = _history()
    request = _last_request(history, summarize=True)
    sent = json.dumps(request.messages)
    newest_result = history[16]["content"][0]["content"][0]["text"]
    assert newest_result[:60] in sent
    assert "windowkeeper: this result was folded" not in sent
    assert [message["role"] for message in request.messages] == ["user", "assistant", "user"]
