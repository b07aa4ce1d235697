"""OpenHands trajectories (the event stream of a conversation, saved as JSON), read.

Two generations: the V0 trajectory described here, and the V1 software-agent-sdk event stream
(events with a ``kind``, one JSON file per event in a conversation's ``events/`` folder), read
by :mod:`.openhands_v1`; :func:`parse_openhands` and :func:`read_openhands` tell them apart.

The format (``All-Hands-AI/OpenHands``: ``openhands/events/serialization/event.py``). A JSON list
of events, as the UI's "export trajectory", ``save_trajectory_path`` and the evaluation outputs'
``history`` write them (an object with a ``history`` or ``trajectory`` list, and JSON Lines with
one event a line, are read too). Each event has an ``id``, a ``source`` (``agent``, ``user``,
``environment``) and either an ``action`` (with ``args``) or an ``observation`` (with
``content`` and ``extras``). An action the model asked for carries ``tool_call_metadata``:
``function_name``, ``tool_call_id`` and the ``model_response`` it came from (LiteLLM's shape:
``id``, ``model``, ``choices[0].message`` with ``content`` and ``tool_calls``, ``usage``); its
observation carries the same ``tool_call_id``. Actions from a model call also carry
``llm_metrics``, whose ``token_usages`` list the usage of every call so far, by ``response_id``.

Mapping rules follow OpenHands' own ``ConversationMemory.process_events``, which turns the
events into the messages it sends:

- **System.** The ``system`` action's ``content`` is the system prompt; its ``tools`` (OpenAI
  function definitions) become Anthropic tool definitions.
- **Messages.** A ``message`` action is a user or assistant text message (by ``source``; a
  user's ``image_urls`` as image blocks). A ``finish`` action is an assistant text message (its
  ``thought``, else its ``final_thought``), not a tool call, as OpenHands sends it.
- **Tool calls.** The actions of one model response (same ``model_response.id``) make ONE
  assistant message: the response's text and a tool_use for each of its ``tool_calls``
  (``arguments`` parsed; ``{"arguments": <text>}`` when they are not a JSON object). As in
  OpenHands, the message enters the conversation when every call of the response has its
  observation, followed by one user message of their tool_results (in call order); a response
  with a call that never got an observation (e.g. ``finish``, or the run stopped) is left out,
  and so are results whose call is left out. Without ``model_response`` (or when its
  ``tool_calls`` miss the action's call), the action's ``function_name`` and ``args`` give the
  call (less the arguments OpenHands adds, such as ``thought`` or ``blocking``).
- **Observations** with a ``tool_call_id`` are tool_results; others (a command the user ran, a
  condensation summary, ...) user text messages. The text is the observation's ``content``
  with what OpenHands adds: a command's output gets its ``extras.metadata`` prefix and suffix
  and the working-directory, interpreter and exit-code lines; errors the note ``[Error occurred
  in processing last action]`` (and ``is_error``); rejections theirs. Observations are not
  truncated again (OpenHands may cut the middle of very long ones when it sends them).
  Consecutive user messages are merged.
- **Condensation.** With ``compaction="last"`` (the default) the events are first filtered the
  way OpenHands' ``View.from_events`` does: every event a ``condensation`` action forgot is
  dropped, and the latest summary is inserted at its ``summary_offset`` as a user message. With
  ``compaction="keep"`` every event is kept and each summary is a user message where the
  condensation happened.
- **Dropped.** ``recall`` observations (OpenHands renders the workspace context from prompt
  templates that are not in the trajectory), agent-state changes, ``null`` events and the
  other bookkeeping actions; an agent's tool action without ``tool_call_metadata`` (older,
  non-function-calling trajectories: the model's text is not recorded). Unknown action and
  observation types are dropped and reported in ``Transcript.unknown``.

Usage: one :class:`RecordedRequest` per assistant message whose response id has a token usage
(``llm_metrics.token_usages``, else ``model_response.usage``). LiteLLM counts cached input in
``prompt_tokens``: ``tokens_in`` is ``prompt_tokens`` less the cache reads and writes (never
below 0), ``cache_reads`` / ``cache_writes`` are ``cache_read_tokens`` / ``cache_write_tokens``
(``prompt_tokens_details.cached_tokens`` / ``cache_creation_input_tokens`` in a
``model_response``), ``tokens_out`` is ``completion_tokens``. ``model`` is the last model named.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .._errors import MalformedMessageError, TaskFolderError
from ..core._messages import JSONValue, Message
from ..core._usage import TokenUsage
from ._common import (
    Compaction,
    MessageBuilder,
    RecordedRequest,
    Transcript,
    Unknown,
    anthropic_tool,
    arguments,
    array,
    check_compaction,
    head_records,
    image_from_url,
    jsonl_records,
    kind,
    loads,
    mapping,
    read_text,
    string,
    text_block,
    tool_result,
    tool_use,
)
from ._openhands_events import (
    _BOOKKEEPING,
    _ERROR_NOTE,
    _REJECT_NOTE,
    _SILENT_ACTIONS,
    _SILENT_OBSERVATIONS,
    _TEXT_OBSERVATIONS,
    _TOOL_ACTIONS,
    _command_output,
    _latest_response,
    _response_usage,
    _session_model,
    _token_usage,
    _view,
)
from .openhands_v1 import (
    is_openhands_folder,
    looks_like_openhands_v1,
    parse_openhands_v1,
    read_openhands_folder,
)

__all__ = ["FORMAT", "looks_like_openhands", "parse_openhands", "read_openhands"]

FORMAT = "openhands"


def read_openhands(path: str | os.PathLike[str], *, compaction: Compaction = "last") -> Transcript:
    """Read an OpenHands trajectory file, or conversation folder (V1, or a V0 session's);
    errors name the file and path."""
    if is_openhands_folder(path):
        check_compaction(compaction)
        older = _session_events(Path(path))
        if older is not None:
            read = _Reader(str(path), compaction).read(older)
            return replace(read, model=read.model or _session_model(Path(path)))
        return read_openhands_folder(path, compaction=compaction)
    return parse_openhands(read_text(path), name=str(path), compaction=compaction)


def _session_events(folder: Path) -> list[tuple[str, Any]] | None:
    """The events of an OpenHands V0 session folder (``events/0.json``, ``1.json``, ... in
    number order, one event a file, each without ``kind``), or None for another folder."""
    events = folder / "events" if (folder / "events").is_dir() else folder
    numbered = [file for file in events.glob("*.json") if file.stem.isdecimal()]
    if not numbered or any(events.glob("event-*.json")):
        return None
    located = [
        (str(file), loads(read_text(file), str(file)))
        for file in sorted(numbered, key=lambda file: int(file.stem))
    ]
    first = located[0][1]
    if not isinstance(first, dict) or "kind" in first:
        return None
    return located


def parse_openhands(
    source: JSONValue, *, name: str = "<string>", compaction: Compaction = "last"
) -> Transcript:
    """The conversation of a trajectory: its text (JSON or JSON Lines) or its value already loaded.

    Raises :class:`~windowkeeper.TaskFolderError` for a value that is not a list of events or
    a field of the wrong type, and :class:`~windowkeeper.MalformedMessageError` for an event that
    cannot be a message, both naming ``name`` and the JSON path.
    """
    return _parse_openhands(source, name=name, compaction=compaction)


def _parse_openhands(
    source: Any, *, name: str = "<string>", compaction: Compaction = "last"
) -> Transcript:
    check_compaction(compaction)
    if isinstance(source, str):
        try:
            source = json.loads(source)
        except (ValueError, RecursionError):  # one event a line
            head = head_records(source)
            if head is not None and looks_like_openhands_v1(head):
                return parse_openhands_v1(source, name=name, compaction=compaction)
            warnings: list[str] = []
            records = jsonl_records(source, name, warnings)
            located = [(f"{name}:{line}", e) for line, e in records]
            return replace(_Reader(name, compaction).read(located), warnings=tuple(warnings))
    if looks_like_openhands_v1(source):
        return parse_openhands_v1(source, name=name, compaction=compaction)
    events, path = _events(source, name)
    located = [(f"{name}: {path}[{index}]", event) for index, event in enumerate(events)]
    return _Reader(name, compaction).read(located)


def looks_like_openhands(value: JSONValue) -> bool:
    """Whether a JSON value (or the first records of a JSON Lines file) is a trajectory (V0 or V1)."""
    return _looks_like_openhands(value)


def _looks_like_openhands(value: Any) -> bool:
    if looks_like_openhands_v1(value):
        return True
    if isinstance(value, dict):
        value = value.get("history", value.get("trajectory"))
    if not isinstance(value, list) or not value:
        return False
    return all(
        isinstance(event, dict)
        and "source" in event
        and (("action" in event) != ("observation" in event))
        for event in value[:20]
    )


def _events(value: Any, name: str) -> tuple[list[Any], str]:
    if isinstance(value, list):
        return value, ""
    if isinstance(value, dict):
        for key in ("history", "trajectory"):
            if key in value:
                return array(value[key], f"{name}: {key}"), key
    raise TaskFolderError(
        f"{name}: expected a list of OpenHands events (or an object with 'history'),"
        f" got {kind(value)}"
    )


@dataclass(slots=True)
class _Response:
    """An assistant message waiting for the observations of its tool calls."""

    response_id: str | None
    where: str
    blocks: list[Message] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)


class _Reader:
    def __init__(self, name: str, compaction: Compaction) -> None:
        self.name = name
        self.compaction = compaction
        self.unknown: list[Unknown] = []
        self.builder = MessageBuilder()
        self.requests: list[RecordedRequest] = []
        self.system: str | None = None
        self.tools: tuple[dict[str, Any], ...] | None = None
        self.model: str | None = None
        self.usages: dict[str, tuple[TokenUsage, str | None, str]] = {}
        self.pending: dict[str, _Response] = {}
        self.results: dict[str, Message] = {}
        self.used: set[str] = set()
        self.requested: set[str] = set()

    def read(self, events: Sequence[tuple[str, Any]]) -> Transcript:
        checked = [(where, mapping(event, where)) for where, event in events]
        for where, event in checked:
            self._collect_usages(event, where)
        condensations = sum(1 for _, event in checked if event.get("action") == "condensation")
        if self.compaction == "last":
            checked = _view(checked)
        for where, event in checked:
            if "action" in event:
                self._action(event, where)
            elif "observation" in event:
                self._observation(event, where)
            else:
                self.unknown.append(Unknown(where, "event with neither action nor observation"))
            self._complete()
        return Transcript(
            format=FORMAT,
            messages=tuple(self.builder.messages()),
            system=self.system,
            tools=self.tools,
            model=self.model,
            requests=tuple(self.requests),
            unknown=tuple(self.unknown),
            compactions=condensations,
        )

    # -- actions -----------------------------------------------------------------------------

    def _action(self, event: dict[str, Any], where: str) -> None:
        action = string(event.get("action"), f"{where}.action")
        args = mapping(event.get("args", {}), f"{where}.args")
        source = event.get("source")
        if action == "system":
            self._system(args, f"{where}.args")
        elif action == "message":
            role = "user" if source == "user" else "assistant"
            blocks = self._text(args.get("content"), f"{where}.args.content")
            if role == "user":
                urls = args.get("image_urls") or []
                for position, url in enumerate(array(urls, f"{where}.args.image_urls")):
                    at = f"{where}.args.image_urls[{position}]"
                    blocks.append(image_from_url(string(url, at, MalformedMessageError)))
            self._say(role, blocks, event)
        elif action == "finish":
            thought = args.get("thought") or args.get("final_thought")
            role = "user" if source == "user" else "assistant"
            self._say(role, self._text(thought, f"{where}.args.thought"), event)
        elif action == "condensation":
            summary = args.get("summary")
            if self.compaction == "keep" and summary:
                self.builder.add("user", text_block(string(summary, f"{where}.args.summary")))
        elif event.get("tool_call_metadata") is not None:
            self._tool_action(event, args, where)
        elif action == "run" and source == "user":
            command = string(args.get("command", ""), f"{where}.args.command")
            self.builder.add("user", text_block(f"User executed the command:\n{command}"))
        elif action in _TOOL_ACTIONS:
            self.unknown.append(Unknown(where, f"{action} without tool_call_metadata"))
        elif action not in _SILENT_ACTIONS:
            self.unknown.append(Unknown(where, action))

    def _system(self, args: dict[str, Any], where: str) -> None:
        self.system = string(args.get("content", ""), f"{where}.content") or None
        tools = args.get("tools")
        if tools is None:
            return
        converted: list[dict[str, Any]] = []
        for position, tool in enumerate(array(tools, f"{where}.tools")):
            at = f"{where}.tools[{position}]"
            spec = mapping(tool, at)
            function = mapping(spec.get("function", spec), f"{at}.function")
            converted.append(
                anthropic_tool(
                    string(function.get("name"), f"{at}.function.name"),
                    function.get("description"),
                    function.get("parameters"),
                )
            )
        self.tools = tuple(converted)

    def _say(self, role: str, blocks: list[Message], event: dict[str, Any]) -> None:
        if not blocks:
            return
        if role == "user":
            for block in blocks:
                self.builder.add("user", block)
            return
        self.builder.end_response()
        index = -1
        for block in blocks:
            index = self.builder.add("assistant", block)
        self.builder.end_response()
        self._request(_latest_response(event), index)

    def _tool_action(self, event: dict[str, Any], args: dict[str, Any], where: str) -> None:
        at = f"{where}.tool_call_metadata"
        metadata = mapping(event["tool_call_metadata"], at)
        call_id = string(metadata.get("tool_call_id"), f"{at}.tool_call_id")
        response = metadata.get("model_response")
        if response is None:
            response_id = f"call:{call_id}"
        else:
            response = mapping(response, f"{at}.model_response")
            response_id = string(response.get("id"), f"{at}.model_response.id")
        if response_id in self.used:
            return
        pending = self.pending.get(response_id)
        if pending is None:
            if response is None:
                pending = _Response(_latest_response(event), where)
            else:
                pending = self._response(response, response_id, f"{at}.model_response")
            self.pending[response_id] = pending
        if call_id not in pending.calls:  # the call as OpenHands executed it
            name = string(metadata.get("function_name"), f"{at}.function_name")
            tool_input = {key: value for key, value in args.items() if key not in _BOOKKEEPING}
            pending.blocks.append(tool_use(call_id, name, tool_input))
            pending.calls.append(call_id)

    def _response(self, response: dict[str, Any], response_id: str, where: str) -> _Response:
        choices = array(response.get("choices"), f"{where}.choices")
        if not choices:
            raise TaskFolderError(f"{where}.choices: the response has no choice")
        message = mapping(
            mapping(choices[0], f"{where}.choices[0]").get("message"), f"{where}.choices[0].message"
        )
        at = f"{where}.choices[0].message"
        pending = _Response(response_id, at, self._text(message.get("content"), f"{at}.content"))
        calls = array(message.get("tool_calls") or [], f"{at}.tool_calls")
        for position, value in enumerate(calls):
            call_at = f"{at}.tool_calls[{position}]"
            call = mapping(value, call_at, MalformedMessageError)
            call_id = string(call.get("id"), f"{call_at}.id", MalformedMessageError)
            function = mapping(call.get("function"), f"{call_at}.function", MalformedMessageError)
            name = string(function.get("name"), f"{call_at}.function.name", MalformedMessageError)
            raw = function.get("arguments", "{}")
            tool_input = (
                arguments(raw)
                if isinstance(raw, str)
                else mapping(raw, f"{call_at}.function.arguments", MalformedMessageError)
            )
            pending.blocks.append(tool_use(call_id, name, tool_input))
            pending.calls.append(call_id)
        return pending

    def _complete(self) -> None:
        """Add every response whose calls all have their results, then the results."""
        for response_id, pending in list(self.pending.items()):
            if not all(call_id in self.results for call_id in pending.calls):
                continue
            del self.pending[response_id]
            self.used.add(response_id)
            self.builder.end_response()
            index = -1
            for block in pending.blocks:
                index = self.builder.add("assistant", block)
            self.builder.end_response()
            for call_id in pending.calls:
                self.builder.add("user", self.results.pop(call_id))
            self._request(pending.response_id, index)

    # -- observations ------------------------------------------------------------------------

    def _observation(self, event: dict[str, Any], where: str) -> None:
        observation = string(event.get("observation"), f"{where}.observation")
        if observation in _SILENT_OBSERVATIONS:
            return
        if observation not in _TEXT_OBSERVATIONS:
            self.unknown.append(Unknown(where, observation))
            return
        content = event.get("content", "")
        text = string("" if content is None else content, f"{where}.content")
        metadata = event.get("tool_call_metadata")
        if observation == "run":
            text = _command_output(text, event.get("extras"), f"{where}.extras")
        if observation == "error":
            text += _ERROR_NOTE
        elif observation == "user_rejected":
            text = f"OBSERVATION:\n{text}{_REJECT_NOTE}"
        elif observation == "run" and metadata is None:
            text = f"\nObserved result of command executed by user:\n{text}"
        if metadata is None:
            if text:
                self.builder.add("user", text_block(text))
            return
        at = f"{where}.tool_call_metadata"
        call_id = string(mapping(metadata, at).get("tool_call_id"), f"{at}.tool_call_id")
        self.results[call_id] = tool_result(call_id, text, is_error=observation == "error")

    # -- usage -------------------------------------------------------------------------------

    def _collect_usages(self, event: dict[str, Any], where: str) -> None:
        metrics = event.get("llm_metrics")
        if isinstance(metrics, dict):
            usages = metrics.get("token_usages") or []
            for position, value in enumerate(array(usages, f"{where}.llm_metrics.token_usages")):
                at = f"{where}.llm_metrics.token_usages[{position}]"
                usage = mapping(value, at)
                response_id = usage.get("response_id")
                if isinstance(response_id, str) and response_id not in self.usages:
                    model = usage.get("model")
                    self.usages[response_id] = (
                        _token_usage(usage, at, "cache_read_tokens", "cache_write_tokens"),
                        model if isinstance(model, str) else None,
                        at,
                    )
        metadata = event.get("tool_call_metadata")
        response = metadata.get("model_response") if isinstance(metadata, dict) else None
        if isinstance(response, dict) and isinstance(response.get("id"), str):
            reported = response.get("usage")
            if isinstance(reported, dict) and response["id"] not in self.usages:
                at = f"{where}.tool_call_metadata.model_response.usage"
                model = response.get("model")
                self.usages[response["id"]] = (
                    _response_usage(reported, at),
                    model if isinstance(model, str) else None,
                    at,
                )

    def _request(self, response_id: str | None, index: int) -> None:
        """Record the usage of the response that made message ``index``, once per response."""
        if response_id is None or index < 0 or response_id in self.requested:
            return
        found = self.usages.get(response_id)
        if found is None:
            return
        self.requested.add(response_id)
        usage, model, where = found
        self.model = model or self.model
        self.requests.append(RecordedRequest(index, usage, model, where))

    # -- text --------------------------------------------------------------------------------

    def _text(self, value: Any, where: str) -> list[Message]:
        """Text content (a string, or a list of text parts) as text blocks; empty text dropped."""
        if value is None:
            return []
        if isinstance(value, str):
            return [text_block(value)] if value.strip() else []
        blocks: list[Message] = []
        for position, item in enumerate(array(value, where, MalformedMessageError)):
            at = f"{where}[{position}]"
            part = mapping(item, at, MalformedMessageError)
            if part.get("type") == "text":
                text = string(part.get("text"), f"{at}.text", MalformedMessageError)
                if text.strip():
                    blocks.append(text_block(text))
            else:
                self.unknown.append(Unknown(at, str(part.get("type"))))
        return blocks
