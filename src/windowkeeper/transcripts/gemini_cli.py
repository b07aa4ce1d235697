"""Gemini CLI saved chats, checkpoints and session recordings, read.

The formats (``google-gemini/gemini-cli``, ``packages/core``):

- **Saved chats** (``/chat save <tag>``: ``~/.gemini/tmp/<project>/checkpoint-<tag>.json``,
  ``core/logger.ts``): ``{"history": [Content, ...]}``, or in older versions the list of
  contents itself. A *Content* is the Gemini API's ``{"role": "user" | "model", "parts":
  [...]}``; parts are ``{"text"}`` (``"thought": true`` for thought summaries),
  ``{"functionCall": {"name", "args", "id"?}}``, ``{"functionResponse": {"name", "response",
  "id"?}}``, ``{"inlineData": {"mimeType", "data"}}``, ...
- **Restorable checkpoints** (``--checkpointing``: ``checkpoints/<time>-<file>-<tool>.json``):
  an object whose ``clientHistory`` is the list of contents (its ``history`` is the UI's).
- **Session recordings** (``chats/session-<time>-<id>.json``, ``services/chatRecordingService.ts``):
  ``{"sessionId", "projectHash", "messages": [...]}``, each message ``{"id", "type": "user" |
  "gemini" | "info" | "error" | "warning", "content", ...}``; a ``gemini`` message adds
  ``toolCalls`` (``id``, ``name``, ``args``, ``result``: the function-response parts),
  ``thoughts``, ``tokens`` and ``model``. Newer versions append the same records to a
  ``.jsonl`` file: a metadata line, one line per message (a message written again under the
  same ``id`` replaces the earlier one in place), ``{"$set": {...}}`` metadata updates (one
  whose ``messages`` is a list writes the whole history again, as after masking or
  ``/compress``: the messages start over from that list) and ``{"$rewindTo": id}`` lines that
  drop that message and everything after it.

Mapping rules:

- **Recordings to contents**, as Gemini CLI does when it resumes one
  (``convertSessionToClientHistory`` in ``utils/sessionUtils.ts``): ``info``, ``error`` and
  ``warning`` messages are skipped (never sent), and so are user messages that are empty,
  start with ``/`` or ``?`` (commands), or hold the ``<session_context>`` or ``<hook_context>``
  Gemini CLI builds again on resume; a ``gemini`` message is a model content (its
  ``content`` parts, and when those hold no function call, its ``toolCalls`` as function calls
  after them), followed by a user content of the tool calls' results (a string result as
  ``{"output": result}``). The user message recorded right after those results repeats what
  was sent with them (a steering hint, the responses): when it repeats a function response
  just read (by id), a part already read there (other parts by value) is not read twice; a Gemini CLI resume would send it
  twice, but the live request held it once.
- **Contents to messages.** ``user`` becomes user and ``model`` assistant. Text parts become text
  blocks; function calls tool_use blocks (``args`` as input); function responses tool_result
  blocks whose content is the ``output`` (or ``error``, flagged ``is_error``) string when the
  response holds only that, else the response as compact JSON text; ``inlineData`` images
  become image blocks. Consecutive user contents are merged (tool_results first, in call
  order); model contents stay one message each.
- **Ids.** A call or response without an ``id`` (older versions never wrote them) is paired by
  order: the k-th response named N in a user content answers the k-th call named N of the model
  content before it, and both take the call's id, else the response's, else
  ``gemini-<content>-<part>`` made from the call's position (an unpaired response gets one from
  its own position).
- **Dropped.** Thought parts (``"thought": true``; summaries, not signed Anthropic thinking) and
  the recordings' ``thoughts``; ``thoughtSignature`` keys. Other part types (``fileData``,
  ``executableCode``, non-image ``inlineData``, ...) and unknown message types are dropped and
  reported in ``Transcript.unknown``.
- **Not recorded**: the system prompt and tool definitions (``system`` and ``tools`` are None).

Usage: only recordings have it, per ``gemini`` message (``tokens``: ``input`` = prompt tokens,
cached included; ``output``; ``cached``; ``thoughts``; ``tool`` = tool-use prompt tokens):
``tokens_in`` = ``input - cached + tool``, ``cache_reads`` = ``cached``, ``tokens_out`` =
``output + thoughts``. ``model`` is the last one a message names.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from .._errors import MalformedMessageError, TaskFolderError
from ..core._messages import JSONValue, Message
from ..core._usage import TokenUsage
from ._common import (
    MessageBuilder,
    RecordedRequest,
    Transcript,
    Unknown,
    array,
    count,
    dumps,
    image_from_data,
    in_file_order,
    jsonl_records,
    kind,
    mapping,
    read_text,
    string,
    text_block,
    tool_result,
    tool_use,
)
from ._gemini_records import label as _label
from ._gemini_records import latest_messages
from ._gemini_turns import Turn, continues, place_turn

__all__ = ["FORMAT", "looks_like_gemini_cli", "parse_gemini_cli", "read_gemini_cli"]

FORMAT = "gemini-cli"

_SKIPPED_TYPES = frozenset({"info", "error", "warning"})
_ROLES = {"user": "user", "model": "assistant"}


def read_gemini_cli(path: str | os.PathLike[str]) -> Transcript:
    """Read a saved chat, checkpoint or session recording; errors name the file and JSON path."""
    return parse_gemini_cli(read_text(path), name=str(path))


def parse_gemini_cli(source: JSONValue, *, name: str = "<string>") -> Transcript:
    """The conversation of a file's text (JSON or JSON Lines), or of its value already loaded.

    Raises :class:`~windowkeeper.TaskFolderError` for a file of none of these shapes and
    :class:`~windowkeeper.MalformedMessageError` for a content or part of the wrong shape, both
    naming ``name`` and the JSON path.
    """
    return _parse_gemini_cli(source, name=name)


def _parse_gemini_cli(source: Any, *, name: str = "<string>") -> Transcript:
    reader = _Reader(name)
    if isinstance(source, str):
        try:
            value = json.loads(source)
        except (ValueError, RecursionError):  # JSON Lines, or not JSON at all
            warnings: list[str] = []
            records = jsonl_records(source, name, warnings)
            read = reader.recording([(f"{name}:{line}: ", record) for line, record in records])
            return replace(read, warnings=tuple(warnings))
        source = value
    return reader.value(source)


def looks_like_gemini_cli(value: JSONValue) -> bool:
    """Whether a JSON value (or the first records of a JSON Lines file) is Gemini CLI's."""
    return _looks_like_gemini_cli(value)


def _looks_like_gemini_cli(value: Any) -> bool:
    if isinstance(value, dict):
        if isinstance(value.get("clientHistory"), list):
            return True
        if isinstance(value.get("history"), list):
            return _contents(value["history"])
        listed = isinstance(value.get("messages"), list) or "sessionId" in value  # or unused
        return listed and "projectHash" in value
    if isinstance(value, list) and value:
        first = value[0]
        if isinstance(first, dict) and "sessionId" in first and "projectHash" in first:
            return True
        return _contents(value)
    return False


def _contents(value: list[Any]) -> bool:
    return bool(value) and all(
        isinstance(item, dict) and "role" in item and isinstance(item.get("parts"), list)
        for item in value
    )


class _Reader:
    def __init__(self, name: str) -> None:
        self.name = name
        self.unknown: list[Unknown] = []

    # -- shapes ------------------------------------------------------------------------------

    def value(self, value: Any) -> Transcript:
        name = self.name
        if isinstance(value, list):
            if value and isinstance(value[0], dict) and "role" not in value[0]:
                return self.recording(
                    [(f"{name}:{line}: ", item) for line, item in enumerate(value, 1)]
                )
            return self.history(value, "")
        if not isinstance(value, dict):
            raise TaskFolderError(f"{name}: expected a Gemini CLI chat, got {kind(value)}")
        for key in ("clientHistory", "history"):
            if key in value and (key == "clientHistory" or "messages" not in value):
                return self.history(array(value[key], f"{name}: {key}"), key)
        if "messages" in value:
            messages = array(value["messages"], f"{name}: messages")
            return self.messages(
                [
                    (f"{name}: messages[{i}].", mapping(m, f"{name}: messages[{i}]"))
                    for i, m in enumerate(messages)
                ]
            )
        if "sessionId" in value and "projectHash" in value:
            return self.messages([])
        raise TaskFolderError(
            f"{name}: expected a saved chat (a list of contents, or an object with 'history'),"
            " a checkpoint ('clientHistory') or a session recording ('messages')"
        )

    def recording(self, records: Sequence[tuple[str, Any]]) -> Transcript:
        """A JSON Lines recording: its messages after every rewrite and rewind."""
        return self.messages(latest_messages(records, self.unknown))

    def messages(self, messages: Sequence[tuple[str, dict[str, Any]]]) -> Transcript:
        """A recording's messages, turned into contents the way Gemini CLI resumes them."""
        contents: list[Turn] = []
        model: str | None = None
        answered: set[str] = set()  # the tool results just read, as JSON text
        left_out: Turn | None = None  # user text resuming leaves out, the model may answer
        for where, message in messages:
            message_type = message.get("type")
            if message_type in _SKIPPED_TYPES:
                continue
            if message_type == "user":
                left_out = None
                parts = self._part_list(message.get("content"), f"{where}content")
                if answered and any(
                    isinstance(part, dict) and "functionResponse" in part and _key(part) in answered
                    for _, part in parts
                ):
                    # the copy of what Gemini CLI sent with the results (it repeats a response
                    # just read): a steering hint and the responses, held once by the request
                    parts = [(at, part) for at, part in parts if _key(part) not in answered]
                answered = set()
                if not parts:
                    continue
                text = "".join(
                    part["text"]
                    for _, part in parts
                    if isinstance(part, dict) and isinstance(part.get("text"), str)
                )
                only_text = all(
                    isinstance(part, dict) and set(part) <= {"text"} for _, part in parts
                )
                if only_text and _ignored(text.strip()):
                    # a command, or context Gemini CLI writes again on resume; a "?" is kept
                    # when the model answered it where nothing else stands before the answer
                    asked = text.strip().startswith("?")
                    left_out = Turn("user", _label(where), parts) if asked else None
                    continue
                contents.append(Turn("user", _label(where), parts))
            elif message_type == "gemini":
                content = self._gemini(message, where)
                model = content.model or model
                if (
                    left_out is not None
                    and content.usage is not None
                    and not continues(contents, content)
                    and (not contents or contents[-1].role == "model")
                ):
                    contents.append(left_out)  # a "?" the model answered: it was sent
                left_out = None
                place_turn(contents, content)
                responses = self._responses(message, where)
                answered = {_key(part) for _, part in responses}
                if responses:
                    contents.append(Turn("user", _label(where), responses))
            else:
                self.unknown.append(Unknown(_label(where), str(message_type)))
        return self.transcript(contents, model)

    def history(self, history: list[Any], path: str) -> Transcript:
        """A list of Gemini API contents, at ``path`` in the file (``""`` for the whole file)."""
        contents: list[Turn] = []
        for index, item in enumerate(history):
            at = f"{self.name}: {path}[{index}]"
            content = mapping(item, at, MalformedMessageError)
            role = string(content.get("role"), f"{at}.role", MalformedMessageError)
            parts = array(content.get("parts"), f"{at}.parts", MalformedMessageError)
            contents.append(
                Turn(role, at, [(f"{at}.parts[{j}]", part) for j, part in enumerate(parts)])
            )
        return self.transcript(contents, None)

    # -- recordings --------------------------------------------------------------------------

    def _part_list(self, value: Any, where: str) -> list[tuple[str, Any]]:
        if value is None:
            return []
        if isinstance(value, str):
            return [(where, {"text": value})]
        if isinstance(value, dict):
            return [(where, value)]
        items = array(value, where, MalformedMessageError)
        return [
            (f"{where}[{j}]", {"text": item} if isinstance(item, str) else item)
            for j, item in enumerate(items)
        ]

    def _gemini(self, message: dict[str, Any], where: str) -> Turn:
        parts = self._part_list(message.get("content") or None, f"{where}content")
        has_calls = any(
            isinstance(part, dict) and ("functionCall" in part or part.get("thought"))
            for _, part in parts
        )
        if not has_calls:
            for position, call in enumerate(self._tool_calls(message, where)):
                at = f"{where}toolCalls[{position}]"
                parts.append(
                    (
                        at,
                        {
                            "functionCall": {
                                "id": call.get("id"),
                                "name": call.get("name"),
                                "args": call.get("args", {}),
                            }
                        },
                    )
                )
        model = message.get("model")
        if model is not None:
            model = string(model, f"{where}model")
        tokens = message.get("tokens")
        usage = (
            None if tokens is None else _usage(mapping(tokens, f"{where}tokens"), f"{where}tokens")
        )
        return Turn("model", _label(where), parts, usage, model)

    def _tool_calls(self, message: dict[str, Any], where: str) -> list[dict[str, Any]]:
        calls = message.get("toolCalls")
        if calls is None:
            return []
        return [
            mapping(call, f"{where}toolCalls[{i}]")
            for i, call in enumerate(array(calls, f"{where}toolCalls"))
        ]

    def _responses(self, message: dict[str, Any], where: str) -> list[tuple[str, Any]]:
        responses: list[tuple[str, Any]] = []
        for position, call in enumerate(self._tool_calls(message, where)):
            result = call.get("result")
            at = f"{where}toolCalls[{position}].result"
            if not result:
                continue
            if isinstance(result, str):
                response = {
                    "id": call.get("id"),
                    "name": call.get("name"),
                    "response": {"output": result},
                }
                responses.append((at, {"functionResponse": response}))
            else:
                responses.extend(self._part_list(result, at))
        return responses

    # -- contents to messages ----------------------------------------------------------------

    def transcript(self, contents: Sequence[Turn], model: str | None) -> Transcript:
        ids = self._ids(contents)
        builder = MessageBuilder()
        requests: list[RecordedRequest] = []
        for index, content in enumerate(contents):
            role = _ROLES.get(content.role)
            if role is None:
                raise MalformedMessageError(
                    f"{content.where}.role", f"expected 'user' or 'model', got {content.role!r}"
                )
            if role == "assistant":
                builder.end_response()
            message_index: int | None = None
            for position, (where, part) in enumerate(content.parts):
                block = self._block(part, where, role, ids.get((index, position)))
                if block is not None:
                    message_index = builder.add(role, block)
            if role == "assistant":
                builder.end_response()
                if content.usage is not None:
                    requests.append(
                        RecordedRequest(
                            message_index, content.usage, content.model, content.where.rstrip(". :")
                        )
                    )
        return Transcript(
            format=FORMAT,
            messages=tuple(builder.messages()),
            model=model,
            requests=tuple(requests),
            unknown=in_file_order(self.unknown, self.name),
        )

    def _ids(self, contents: Sequence[Turn]) -> dict[tuple[int, int], str]:
        """The id of every function call and response, by (content, part) position.

        Responses pair with the calls of the model content before them: by id when both have
        one, else by name, in order.
        """
        ids: dict[tuple[int, int], str] = {}
        waiting: list[tuple[tuple[int, int], str, str | None]] = []  # (position, name, given id)
        for index, content in enumerate(contents):
            if content.role == "model":
                waiting = []
            for position, (_, part) in enumerate(content.parts):
                if not isinstance(part, dict):
                    continue
                call, response = part.get("functionCall"), part.get("functionResponse")
                if content.role == "model" and isinstance(call, dict):
                    given = _given(call)
                    ids[(index, position)] = given or f"gemini-{index}-{position}"
                    waiting.append(((index, position), str(call.get("name")), given))
                elif content.role != "model" and isinstance(response, dict):
                    ids[(index, position)] = (
                        self._answer(waiting, str(response.get("name")), _given(response), ids)
                        or f"gemini-{index}-{position}"
                    )
        return ids

    @staticmethod
    def _answer(
        waiting: list[tuple[tuple[int, int], str, str | None]],
        name: str,
        given: str | None,
        ids: dict[tuple[int, int], str],
    ) -> str | None:
        """The id of the call a response answers (removed from ``waiting``), or its own id."""
        match = next((call for call in waiting if given is not None and call[2] == given), None)
        if match is None:
            match = next((call for call in waiting if call[1] == name and call[2] is None), None)
        if match is None:
            match = next((call for call in waiting if call[1] == name and given is None), None)
        if match is None:
            return given
        waiting.remove(match)
        if match[2] is None and given is not None:
            ids[match[0]] = given  # the call had no id: it takes its response's
        return ids[match[0]]

    def _block(self, part: Any, where: str, role: str, part_id: str | None) -> Message | None:
        if isinstance(part, str):
            return text_block(part) if part else None
        part = mapping(part, where, MalformedMessageError)
        if "text" in part:
            text = string(part["text"], f"{where}.text", MalformedMessageError)
            return None if part.get("thought") is True or not text else text_block(text)
        if "functionCall" in part and role == "assistant":
            call = mapping(part["functionCall"], f"{where}.functionCall", MalformedMessageError)
            name = string(call.get("name"), f"{where}.functionCall.name", MalformedMessageError)
            args = call.get("args")
            tool_input = (
                {}
                if args is None
                else mapping(args, f"{where}.functionCall.args", MalformedMessageError)
            )
            return tool_use(part_id or "", name, dict(tool_input))
        if "functionResponse" in part and role == "user":
            response = mapping(
                part["functionResponse"], f"{where}.functionResponse", MalformedMessageError
            )
            return _response(response, part_id or "", f"{where}.functionResponse")
        if "inlineData" in part:
            data = mapping(part["inlineData"], f"{where}.inlineData", MalformedMessageError)
            media_type = data.get("mimeType")
            if isinstance(media_type, str) and media_type.startswith("image/"):
                return image_from_data(
                    media_type,
                    string(data.get("data"), f"{where}.inlineData.data", MalformedMessageError),
                )
            self.unknown.append(Unknown(where, f"inlineData {media_type}"))
            return None
        keys = sorted(key for key in part if key != "thoughtSignature")
        if keys:
            self.unknown.append(Unknown(where, keys[0]))
        return None


_IGNORED_PREFIXES = ("/", "?", "<session_context>", "<hook_context>")


def _ignored(text: str) -> bool:
    """Whether user text is one Gemini CLI leaves out when it resumes: empty, a command, or
    the session or hook context it builds again."""
    return not text or text.startswith(_IGNORED_PREFIXES)


def _key(part: Any) -> str:
    """What tells a part recorded twice: a function response's id (its output may have been
    masked since in one copy), else the part as JSON text."""
    if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
        given = _given(part["functionResponse"])
        if given is not None:
            return f"response {given}"
    return json.dumps(part, sort_keys=True, default=str)


def _given(part: dict[str, Any]) -> str | None:
    value = part.get("id")
    return value if isinstance(value, str) and value else None


def _response(response: dict[str, Any], part_id: str, where: str) -> Message:
    body = response.get("response")
    if isinstance(body, dict) and len(body) == 1:
        ((key, value),) = body.items()
        if key in ("output", "error") and isinstance(value, str):
            return tool_result(part_id, value, is_error=key == "error")
    return tool_result(part_id, dumps(body))


def _usage(tokens: dict[str, Any], where: str) -> TokenUsage:
    prompt = count(tokens, "input", where)
    cached = min(count(tokens, "cached", where), prompt)
    return TokenUsage(
        tokens_in=prompt - cached + count(tokens, "tool", where),
        tokens_out=count(tokens, "output", where) + count(tokens, "thoughts", where),
        cache_reads=cached,
    )
