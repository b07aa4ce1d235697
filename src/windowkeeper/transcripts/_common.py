"""What the transcript readers share: the :class:`Transcript` they return, and small helpers.

Each reader (:mod:`.claude_code`, :mod:`.codex`, :mod:`.gemini_cli`, :mod:`.openhands`,
:mod:`.roo`) turns another agent's record of a conversation into windowkeeper's shape and returns
a :class:`Transcript`; :mod:`.transcripts` tells the formats apart and re-exports these names.

Locations in errors and in :attr:`Transcript.unknown` read ``<file>:<line>: <JSON path>`` for
JSON Lines files and ``<file>: <JSON path>`` for JSON files, e.g.
``session.jsonl:12: message.content[3]``. When a reader is given already loaded records instead
of a file, record ``i`` of the list is reported as line ``i + 1``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .._errors import ConfigurationError, MalformedMessageError, TaskFolderError
from ..cline._task import ApiRequest
from ..core._messages import REFUSED_ID_CHARACTERS, Message
from ..core._usage import TokenUsage

__all__ = [
    "COMPACTION_MODES",
    "Compaction",
    "RecordedRequest",
    "Transcript",
    "Unknown",
]

Compaction = Literal["last", "keep"]
"""What a reader does at a compaction the agent recorded: ``"last"`` starts the history at the
last one (what the agent sent afterwards), ``"keep"`` keeps everything, with the summary as a user
message where the compaction happened."""

COMPACTION_MODES: tuple[Compaction, ...] = ("last", "keep")


@dataclass(frozen=True, slots=True)
class Unknown:
    """A record, block or part a reader does not know and left out: where it was, and its type."""

    where: str
    type: str

    def __str__(self) -> str:
        return f"{self.where}: {self.type}"


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One model request the transcript recorded usage for.

    ``message_index`` is the assistant message of :attr:`Transcript.messages` the request answered
    with (None when its answer left no message, e.g. reasoning only); ``usage`` is what the
    provider reported; ``where`` names the record it was read from.
    """

    message_index: int | None
    usage: TokenUsage
    model: str | None = None
    where: str = ""


@dataclass(frozen=True, slots=True)
class Transcript:
    """A conversation another agent recorded, in the Anthropic shape windowkeeper works on.

    ``messages`` keep tool pairing as the agent sent it (each tool_use answered by a tool_result
    in the next user message); ``system``, ``tools`` (Anthropic tool definitions) and ``model``
    are None when the transcript does not record them; ``requests`` are the per-request usages it
    recorded, in order; ``unknown`` lists what was left out because the reader does not know it;
    ``compactions`` counts the compactions (summaries replacing history) the agent recorded.
    ``version`` is the agent's version when the transcript records it; ``forks`` counts the
    branches the reader left out (points where the file continues on more than one branch);
    ``warnings`` say what the reader repaired or dropped (e.g. a partial last line, NUL
    characters: see :func:`without_nul`).
    """

    format: str
    messages: tuple[Message, ...]
    system: str | None = None
    tools: tuple[dict[str, Any], ...] | None = None
    model: str | None = None
    requests: tuple[RecordedRequest, ...] = ()
    unknown: tuple[Unknown, ...] = ()
    compactions: int = 0
    version: str | None = None
    forks: int = 0
    warnings: tuple[str, ...] = ()

    @property
    def model_calls(self) -> int:
        """The model responses the conversation holds: one assistant message each."""
        return sum(1 for message in self.messages if message["role"] == "assistant")

    def api_requests(self) -> tuple[ApiRequest, ...]:
        """The requests as the :class:`~windowkeeper.cline._task.ApiRequest` values of a Cline task.

        Each request sent the messages before its assistant message; requests whose answer left
        no message are left out.
        """
        return tuple(
            ApiRequest(
                request.usage, None, request.message_index - 2, history_index=request.message_index
            )
            for request in self.requests
            if request.message_index is not None
        )


# -- reading ---------------------------------------------------------------------------------


def kind(value: Any) -> str:
    """The JSON name of a value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def read_text(path: str | os.PathLike[str]) -> str:
    """The text of a file, or a :class:`TaskFolderError` naming it."""
    file = Path(path)
    try:
        return file.read_bytes().decode("utf-8")
    except OSError as error:
        raise TaskFolderError(f"{file}: cannot be read: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise TaskFolderError(f"{file}: not UTF-8 text: {error}") from None


def loads(text: str, where: str) -> Any:
    """``json.loads``; a :class:`TaskFolderError` naming ``where`` for text that is not JSON."""
    try:
        return json.loads(text)
    except RecursionError:
        raise TaskFolderError(f"{where}: not JSON: nested too deeply") from None
    except ValueError as error:
        raise TaskFolderError(f"{where}: not JSON: {error}") from None


def json_value(source: Any, name: str) -> Any:
    """A JSON file's value: ``source`` parsed when it is text, else ``source`` itself."""
    return loads(source, name) if isinstance(source, str) else source


def jsonl_records(
    source: str | Iterable[Any], name: str, warnings: list[str] | None = None
) -> list[tuple[int, dict[str, Any]]]:
    """The records of a JSON Lines file (text, or records already loaded), with their line numbers.

    Lines are split at ``\n`` only (a JSON string may hold U+2028 and other characters
    ``str.splitlines`` would split at), so line numbers are the ones an editor shows. Blank lines
    are skipped. A last line that is not JSON and has no newline after it is a record the agent
    was still writing (or was killed writing): it is dropped, with a warning appended to
    ``warnings``. A line holding several whole JSON objects one after the other (a record
    appended after one that lost its newline, as Claude Code does) gives each as a record of
    that line, with a warning. Any other line that is not JSON, or not a JSON object, raises
    :class:`TaskFolderError` naming ``name`` and the line.
    """
    records: list[tuple[int, dict[str, Any]]] = []
    if isinstance(source, str):
        lines: Iterable[tuple[int, Any]] = _parsed_lines(source, name, warnings)
    else:
        lines = enumerate(source, start=1)
    for number, record in lines:
        if not isinstance(record, dict):
            raise TaskFolderError(f"{name}:{number}: expected a JSON object, got {kind(record)}")
        records.append((number, record))
    return records


def _parsed_lines(text: str, name: str, warnings: list[str] | None) -> Iterable[tuple[int, Any]]:
    numbered = [(n, line) for n, line in enumerate(text.split("\n"), start=1) if line.strip()]
    unfinished = not text.endswith("\n") and len(numbered) > 1
    for position, (number, line) in enumerate(numbered):
        values = _line_values(line)
        if values is None:
            if unfinished and position == len(numbered) - 1:
                if warnings is not None:
                    warnings.append(f"{name}:{number}: partial last line dropped")
                return
            values = [loads(line, f"{name}:{number}")]  # raises, saying why it is not JSON
        if len(values) > 1 and warnings is not None:
            warnings.append(
                f"{name}:{number}: {len(values)} records on one line (a newline was lost),"
                " read apart"
            )
        for value in values:
            yield number, value


_DECODER = json.JSONDecoder()


def _line_values(line: str) -> list[Any] | None:
    """The JSON value of ``line``, or the objects it holds one after the other; None when it is
    neither (a line whose first value is not an object, or with anything else after it, is not
    read apart, so its error stays the one ``json.loads`` gives)."""
    try:
        return [json.loads(line)]
    except RecursionError:
        return None
    except ValueError:
        pass
    values: list[Any] = []
    at = _skip_gap(line, 0)
    while at < len(line):
        if line[at] != "{":
            return None
        try:
            value, at = _DECODER.raw_decode(line, at)
        except (ValueError, RecursionError):
            return None
        values.append(value)
        at = _skip_gap(line, at)
    return values if len(values) > 1 else None


def _skip_gap(line: str, at: int) -> int:
    while at < len(line) and line[at] in " \t\r":
        at += 1
    return at


def head_records(text: str, limit: int = 200) -> list[Any] | None:
    """The first records of ``text`` read as JSON Lines, or None when a line is not JSON.

    A last line that is not JSON (a record still being written) is left out.
    """
    records: list[Any] = []
    parts = text.split("\n", limit * 2)
    whole = len(parts) <= limit * 2  # else the last part is the rest of the file
    lines = [line for line in (parts if whole else parts[:-1]) if line.strip()]
    for position, line in enumerate(lines):
        values = _line_values(line)
        if values is None:
            if whole and position == len(lines) - 1 and records and not text.endswith("\n"):
                break
            return None
        records.extend(values)
        if len(records) >= limit:
            break
    return records


def in_file_order(unknown: Iterable[Unknown], name: str) -> tuple[Unknown, ...]:
    """The reported items sorted by the line they are on (``<name>:<line>...``), stably."""

    def line(item: Unknown) -> int:
        rest = item.where[len(name) + 1 :] if item.where.startswith(f"{name}:") else ""
        digits = rest.split(":", 1)[0]
        return int(digits) if digits.isdigit() else 0

    return tuple(sorted(unknown, key=line))


def check_compaction(compaction: str) -> None:
    """Refuse a compaction mode other than ``"last"`` and ``"keep"``."""
    if compaction not in COMPACTION_MODES:
        raise ConfigurationError(f"compaction must be 'last' or 'keep', got {compaction!r}")


# -- values ----------------------------------------------------------------------------------


def string(value: Any, where: str, error: type[Exception] = TaskFolderError) -> str:
    """``value`` when it is a string; else an error naming ``where``."""
    if not isinstance(value, str):
        raise _error(error, where, f"expected a string, got {kind(value)}")
    return value


def optional_string(value: Any, where: str) -> str | None:
    """``value`` when it is a string or None; else a :class:`TaskFolderError` naming ``where``."""
    if value is not None and not isinstance(value, str):
        raise TaskFolderError(f"{where}: expected a string, got {kind(value)}")
    return value


def mapping(value: Any, where: str, error: type[Exception] = TaskFolderError) -> dict[str, Any]:
    """``value`` when it is a JSON object; else an error naming ``where``."""
    if not isinstance(value, dict):
        raise _error(error, where, f"expected an object, got {kind(value)}")
    return value


def array(value: Any, where: str, error: type[Exception] = TaskFolderError) -> list[Any]:
    """``value`` when it is a JSON array; else an error naming ``where``."""
    if not isinstance(value, list):
        raise _error(error, where, f"expected an array, got {kind(value)}")
    return value


def _error(error: type[Exception], where: str, problem: str) -> Exception:
    if error is MalformedMessageError:
        return MalformedMessageError(where, problem)
    return error(f"{where}: {problem}")


def count(source: Mapping[str, Any], key: str, where: str) -> int:
    """A token count: a non-negative integer, 0 when missing or null."""
    value = source.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TaskFolderError(f"{where}.{key}: expected a non-negative integer, got {value!r}")
    return value


def arguments(raw: str) -> dict[str, Any]:
    """Tool-call arguments written as JSON text: the object, or ``{"arguments": raw}`` otherwise."""
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):
        return {"arguments": raw}
    return parsed if isinstance(parsed, dict) else {"arguments": raw}


def dumps(value: Any) -> str:
    """Compact JSON text of a value (non-ASCII kept), as a tool result's content."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# -- blocks ----------------------------------------------------------------------------------

_DATA_URL = re.compile(r"data:([^;,]+);base64,(.*)", re.DOTALL)


def text_block(text: str) -> Message:
    return {"type": "text", "text": text}


def signed_thinking(thinking: str, signature: str | None) -> Message | None:
    """A thinking block as the agent sent it back, or None when it has no signature.

    Only Anthropic signs its thinking, and it refuses every request that carries a thinking
    block without a valid signature. An agent behind a gateway to another model (Claude Code on
    GLM or DeepSeek, LiteLLM in OpenHands) records that model's reasoning as thinking with an
    empty or absent signature: reasoning, not conversation, so it is left out, as Gemini CLI's
    thought parts are.
    """
    if not signature:
        return None
    return {"type": "thinking", "thinking": thinking, "signature": signature}


def image_from_url(url: str) -> Message:
    """An Anthropic image block for an image URL: a base64 source for a data URL, else a url one."""
    match = _DATA_URL.fullmatch(url)
    if match:
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": match[1], "data": match[2]},
        }
    return {"type": "image", "source": {"type": "url", "url": url}}


def image_from_data(media_type: str, data: str) -> Message:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def anthropic_id(call_id: str) -> str:
    """``call_id`` as a tool_use id the Anthropic API accepts (letters, digits, ``_`` and ``-``).

    Other agents' providers take other ids (``functions.terminal:0`` from OpenAI-compatible
    servers): such an id has each other character replaced by ``_`` and the first 8 hex digits
    of its SHA-256 appended, so distinct ids stay distinct; the same id always maps alike, so a
    call and its result still pair. A valid id, or an empty one, is kept as it is.
    """
    if not call_id or not REFUSED_ID_CHARACTERS.search(call_id):
        return call_id
    kept = REFUSED_ID_CHARACTERS.sub("_", call_id)
    digest = hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{kept}_{digest}"


def tool_use(call_id: str, name: str, tool_input: dict[str, Any]) -> Message:
    return {"type": "tool_use", "id": anthropic_id(call_id), "name": name, "input": tool_input}


def tool_result(call_id: str, content: str | list[Message], *, is_error: bool = False) -> Message:
    block: Message = {
        "type": "tool_result",
        "tool_use_id": anthropic_id(call_id),
        "content": content,
    }
    if is_error:
        block["is_error"] = True
    return block


def anthropic_tool(name: str, description: Any, schema: Any) -> dict[str, Any]:
    """An Anthropic tool definition; the schema defaults to an empty object schema."""
    tool: dict[str, Any] = {"name": name}
    if isinstance(description, str):
        tool["description"] = description
    tool["input_schema"] = schema if isinstance(schema, dict) else {"type": "object"}
    return tool


# -- messages --------------------------------------------------------------------------------


class MessageBuilder:
    """Collects blocks into alternating messages, the way the agents' histories pair them.

    A user block joins the message before it when that is a user message; an assistant block
    joins the assistant message before it unless :meth:`end_response` was called since (so each
    model response stays one message). :meth:`messages` puts each user message's tool_results
    first, in the order of the tool_use blocks of the assistant message before it.
    """

    def __init__(self) -> None:
        self._messages: list[Message] = []
        self._open = False

    def add(self, role: str, block: Message) -> int:
        """Add ``block`` to the conversation; the index of the message it went into."""
        last = self._messages[-1] if self._messages else None
        if last is not None and last["role"] == role and (role == "user" or self._open):
            last["content"].append(block)
        else:
            self._messages.append({"role": role, "content": [block]})
        self._open = True
        return len(self._messages) - 1

    def end_response(self) -> None:
        """The next assistant block starts a new assistant message."""
        self._open = False

    @property
    def last_index(self) -> int | None:
        return len(self._messages) - 1 if self._messages else None

    def last_role(self) -> str | None:
        return self._messages[-1]["role"] if self._messages else None

    def messages(self) -> list[Message]:
        return ordered_results(self._messages)


def ordered_results(messages: Sequence[Message]) -> list[Message]:
    """The messages with each user message's tool_results first, in tool_use order.

    Results answering a tool_use of the assistant message before come first, in the order of the
    calls; other tool_results next, then the other blocks, each group in its order. Messages that
    need no change are the same objects.
    """
    output: list[Message] = []
    calls: list[Any] = []
    for message in messages:
        content = message["content"]
        placed = message
        if message["role"] == "user" and isinstance(content, list):
            results = [block for block in content if block.get("type") == "tool_result"]
            rank = {call_id: position for position, call_id in enumerate(calls)}
            results.sort(key=lambda block: rank.get(block.get("tool_use_id"), len(rank)))
            others = [block for block in content if block.get("type") != "tool_result"]
            reordered = results + others
            if any(a is not b for a, b in zip(reordered, content, strict=True)):
                placed = {**message, "content": reordered}
        output.append(placed)
        calls = (
            [block.get("id") for block in content if block.get("type") == "tool_use"]
            if message["role"] == "assistant" and isinstance(content, list)
            else []
        )
    return output
