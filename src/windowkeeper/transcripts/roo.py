"""Roo Code's "export task" Markdown, read back into Anthropic-shaped messages.

The format. Roo Code (a Cline fork) exports a task as Markdown: turns headed ``**User:**`` or
``**Assistant:**``, separated by a ``---`` line between blank lines, with the text of each turn
verbatim. Tools are called in XML inside the assistant's text (``<read_file>...</read_file>``),
and each result comes back in the next user turn as ``[tool for 'target'] Result:`` followed by
the output and Roo's ``<environment_details>``.

Mapping rules. Each assistant turn is one model response: one assistant message. With
``tool_calls="native"`` (the default) an XML call becomes what it was for the model, a tool
call and its result: the assistant turn's last XML element whose tag names the tool of the
next user turn's result header becomes a ``tool_use`` (id ``roo-<n>``, input its child
elements as strings; ``read_file``'s ``<args><file><path>`` as ``path`` and ``line_range``, or
``paths`` for several files), the text before it a text block; the result header and output
become its ``tool_result`` (the text as the model saw it), and the environment details a text
block after it. A call whose turn is not followed by its result (the task ended, the user
answered instead) stays text. With ``tool_calls="text"`` the messages are rebuilt in the shape
Cline stores XML tool calls, as ``bench/_roo.py`` does: an assistant message is one text block,
a user message the result header alone, the result, and the environment details. What the
export does not hold (images, exact block boundaries, timestamps, usage, the system prompt,
tool definitions) is not invented; ``model`` is the last ``<model>`` the environment details
name, when they name one.
"""

from __future__ import annotations

import os
import re
from typing import Any, Literal

from .._errors import TaskFolderError
from ..core._messages import Message
from ._common import Transcript, read_text, text_block, tool_result, tool_use

__all__ = ["FORMAT", "looks_like_roo", "parse_roo", "read_roo"]

FORMAT = "roo"

_HEADER = re.compile(r"\*\*(User|Assistant):\*\*\n\n?")
_SEPARATOR = re.compile(r"\n\n---\n\n(?=\*\*(?:User|Assistant):\*\*\n)")
_RESULT = re.compile(r"\[[^\s\]]+(?: for '(?s:.*?)')?\] Result:")
_MODEL = re.compile(r"<model>([^<\n]+)</model>")
_ENVIRONMENT = "<environment_details>"
_RESULT_TOOL = re.compile(r"\[([a-z][a-z0-9_]*)(?:[ .,][^\n]*?)?\] Result:")
_ELEMENT = re.compile(r"<([a-z][a-z0-9_]*)>\n?(.*?)\n?</\1>", re.DOTALL)

ToolCalls = Literal["native", "text"]


def read_roo(path: str | os.PathLike[str], *, tool_calls: ToolCalls = "native") -> Transcript:
    """Read a Roo Code task export; errors name the file and the line."""
    return parse_roo(read_text(path), name=str(path), tool_calls=tool_calls)


def parse_roo(text: str, *, name: str = "<string>", tool_calls: ToolCalls = "native") -> Transcript:
    """The conversation of an export's Markdown text.

    Raises :class:`~windowkeeper.TaskFolderError` naming ``name`` and the line when the text
    does not start with a ``**User:**`` or ``**Assistant:**`` turn (every later turn starts at a
    separator followed by such a header, so only the first can lack one).
    """
    text = text.replace("\r\n", "\n")
    body = text.strip("\n")
    if _HEADER.match(body) is None:
        line = text[: len(text) - len(text.lstrip("\n"))].count("\n") + 1
        raise TaskFolderError(
            f"{name}:{line}: a turn does not start with **User:** or **Assistant:**"
        )
    messages: list[Message] = []
    model: str | None = None
    for turn in _SEPARATOR.split(body):
        head = _HEADER.match(turn)
        assert head is not None  # the separator is followed by a header
        content = turn[head.end() :].strip("\n")
        if head.group(1) == "Assistant":
            messages.append({"role": "assistant", "content": [text_block(content)]})
            continue
        messages.append({"role": "user", "content": _user_blocks(content)})
        at = content.find(_ENVIRONMENT)
        named = _MODEL.findall(content[at:]) if at >= 0 else []
        model = named[-1].strip() if named else model
    if tool_calls == "native":
        messages = _native(messages)
    return Transcript(format=FORMAT, messages=tuple(messages), model=model)


def looks_like_roo(text: str) -> bool:
    """Whether a text file is a Roo Code task export: it opens with a ``**User:**`` turn."""
    return text.lstrip("\ufeff\r\n").startswith("**User:**")


def _user_blocks(body: str) -> list[dict[str, Any]]:
    at = body.find(_ENVIRONMENT)
    main, environment = (body, "") if at < 0 else (body[:at].rstrip("\n"), body[at:])
    blocks: list[dict[str, Any]] = []
    header = _RESULT.match(main)
    if header is not None:
        blocks.append(text_block(header.group(0)))
        main = main[header.end() :].lstrip("\n")
    if main:
        blocks.append(text_block(main))
    if environment:
        blocks.append(text_block(environment))
    return blocks or [text_block(body)]


def _native(messages: list[Message]) -> list[Message]:
    """The messages with each XML call answered in the next turn as a tool_use and its result."""
    output: list[Message] = []
    calls = 0
    for index, message in enumerate(messages):
        following = messages[index + 1] if index + 1 < len(messages) else None
        pending = output[-1].pop("_call", None) if output else None
        if message["role"] == "user" and pending is not None:
            output.append({"role": "user", "content": _answered(message["content"], pending)})
            continue
        if message["role"] != "assistant" or following is None:
            output.append(message)
            continue
        header = _RESULT_TOOL.match(following["content"][0]["text"])
        text = message["content"][0]["text"]
        found = _last_call(text, header.group(1)) if header is not None else None
        if found is None:
            output.append(message)
            continue
        calls += 1
        call_id = f"roo-{calls}"
        before = text[: found.start()].rstrip()
        content = [text_block(before)] if before else []
        content.append(tool_use(call_id, found.group(1), _input(found.group(1), found.group(2))))
        output.append({"role": "assistant", "content": content, "_call": call_id})
    return output


def _answered(blocks: list[Message], call_id: str) -> list[Message]:
    """A result turn's blocks: the result (header and output) as the call's tool_result."""
    texts = [block["text"] for block in blocks]
    if texts and texts[-1].startswith(_ENVIRONMENT):
        result, rest = texts[:-1], [blocks[-1]]
    else:
        result, rest = texts, []
    return [tool_result(call_id, "\n".join(result)), *rest]


def _last_call(text: str, tool: str) -> re.Match[str] | None:
    """The last top-level ``<tool>...</tool>`` element of an assistant turn."""
    found = None
    for match in _ELEMENT.finditer(text):
        if match.group(1) == tool:
            found = match
    return found


def _input(tool: str, body: str) -> dict[str, Any]:
    """A call's input: its child elements as strings (``read_file``'s files as paths)."""
    fields = {match.group(1): match.group(2) for match in _ELEMENT.finditer(body)}
    if not fields:
        return {"input": body}
    args = fields.get("args")
    if tool == "read_file" and args is not None:
        files = [
            dict(_ELEMENT.findall(file))
            for file in re.findall(r"<file>(.*?)</file>", args, re.DOTALL)
        ]
        paths = [file["path"].strip() for file in files if "path" in file]
        if len(paths) == 1:
            single = {"path": paths[0]}
            if "line_range" in files[0]:
                single["line_range"] = files[0]["line_range"].strip()
            return single
        return {"paths": paths, "args": args}
    return fields
