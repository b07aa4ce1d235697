"""OpenHands V1 conversations (the software-agent-sdk event stream), read.

The format (``OpenHands/software-agent-sdk``: ``openhands/sdk/event/``). A conversation folder
holds ``base_state.json`` (the agent, with its ``llm.model``) and an ``events/`` folder of one
JSON file per event, ``event-00000-<id>.json``, ``event-00001-<id>.json``, ... in order; the
events are also found as one JSON list, an object with an ``events`` list, or JSON Lines with
one event a line. Each event has an ``id``, a ``timestamp``, a ``source`` (``user``, ``agent``,
``environment``) and a ``kind``, the name of its class:

- ``SystemPromptEvent``: ``system_prompt`` (a text content) and ``tools`` (OpenAI function
  definitions, or the SDK's own ``name``/``description``/``parameters``; newer SDKs write
  ``title``, ``description``, ``kind``, ``action_type`` and no ``name`` nor ``parameters``:
  the name is the ``title``, the schema an empty object's); a later
  ``SystemPromptUpdateEvent`` (same fields, and a ``reason``: the conversation was restored
  with other tools or another prompt) replaces both, as the SDK sends only the latest;
- ``MessageEvent``: ``llm_message`` (``role``, ``content`` of ``text`` and ``image`` parts with
  ``image_urls``), plus ``extended_content`` the agent added (skills, context) after it;
- ``ActionEvent``: one tool call of a model response: ``thought`` (text parts; the response's
  text, on its first call), ``thinking_blocks``, ``tool_call`` (``id``, ``name``, ``arguments``
  as JSON text), the parsed ``action`` and the ``llm_response_id`` naming the response;
- ``ObservationEvent`` (``observation.content``, ``observation.is_error``; before SDK 1.0 no
  ``content`` but an ``output``, ``error`` or ``message``, see :func:`_older_observation`),
  ``UserRejectObservation`` (``rejection_reason``) and ``AgentErrorEvent`` (``error``): what
  answered a call, by ``tool_call_id``;
- ``Condensation`` (``forgotten_event_ids``, ``summary``, ``summary_offset``) and
  ``CondensationSummaryEvent``: the condenser's work; ``CondensationRequest``,
  ``ConversationStateUpdateEvent``, ``PauseEvent`` and the like are bookkeeping.

Mapping rules follow the SDK's ``View`` and ``LLMConvertibleEvent.events_to_messages``:

- **One response, one message.** The actions sharing an ``llm_response_id`` make ONE assistant
  message (the thought text and thinking of the first, a tool_use per call, in order); an agent
  ``MessageEvent`` is an assistant message of its own. Observations become tool_results of the
  user message after it (in call order); user messages and condensation summaries user text.
- **Tool pairing.** As the View does, a call without an observation (the run stopped) and an
  observation of no call are left out.
- **Condensation.** With ``compaction="last"`` (the default) the events each ``Condensation``
  forgot are dropped and the latest summary is a user message at its ``summary_offset`` among
  the events kept, what the agent sent afterwards. With ``compaction="keep"`` every event is kept
  and each summary is a user message where the condensation happened.
- **Dropped.** Bookkeeping events, event kinds not known here (reported in
  ``Transcript.unknown``), and thinking blocks without a signature (another model's reasoning
  through LiteLLM: no Anthropic request can carry them).

Usage: the events record none. A folder's ``base_state.json`` records the usage of each
response by its id (``stats``, see :func:`~windowkeeper.transcripts._openhands_events.response_usages`):
each response the events name that way is a request; ``model`` is that file's too. Read
from a file of events alone, ``requests`` is empty.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._errors import MalformedMessageError
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
    image_from_url,
    jsonl_records,
    loads,
    mapping,
    read_text,
    signed_thinking,
    string,
    text_block,
    tool_result,
    tool_use,
)
from ._openhands_events import response_usages

__all__ = [
    "is_openhands_folder",
    "looks_like_openhands_v1",
    "parse_openhands_v1",
    "read_openhands_folder",
]

FORMAT = "openhands"

_RESULTS = frozenset({"ObservationEvent", "UserRejectObservation", "AgentErrorEvent"})
_CONVERSATION = _RESULTS | {
    "SystemPromptEvent",
    "SystemPromptUpdateEvent",
    "MessageEvent",
    "ActionEvent",
    "Condensation",
    "CondensationSummaryEvent",
}
_BOOKKEEPING = frozenset(
    {
        "CondensationRequest",
        "ConversationStateUpdateEvent",
        "PauseEvent",
        "TokenEvent",
        "ConversationErrorEvent",
        "StreamingDeltaEvent",
        "HookExecutionEvent",
        "SecurityAnalyzerEvent",
    }
)
_KINDS = _CONVERSATION | _BOOKKEEPING


def is_openhands_folder(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a conversation folder (or its ``events/`` folder): V1's
    ``event-*.json`` files, or a V0 session's numbered ones."""
    folder = Path(path)
    if not folder.is_dir():
        return False
    events = folder / "events"
    if events.is_dir():
        return True
    return folder.name == "events" and (
        any(folder.glob("event-*.json")) or any(f.stem.isdecimal() for f in folder.glob("*.json"))
    )


def read_openhands_folder(
    path: str | os.PathLike[str], *, compaction: Compaction = "last"
) -> Transcript:
    """Read a V1 conversation folder: its ``events/`` files in name order, its model."""
    folder = Path(path)
    events_dir = folder / "events" if (folder / "events").is_dir() else folder
    located: list[tuple[str, Any]] = []
    for file in sorted(events_dir.glob("*.json")):
        located.append((str(file), loads(read_text(file), str(file))))
    model = None
    usages: dict[str, TokenUsage] = {}
    state = events_dir.parent / "base_state.json"
    if state.is_file():
        value = loads(read_text(state), str(state))
        agent = value.get("agent") if isinstance(value, dict) else None
        llm = agent.get("llm") if isinstance(agent, dict) else None
        found = llm.get("model") if isinstance(llm, dict) else None
        model = found if isinstance(found, str) else None
        usages = response_usages(value, str(state))
    return _Reader(compaction).read(located, model, usages=usages)


def looks_like_openhands_v1(value: JSONValue) -> bool:
    """Whether a JSON value (or the first records of a JSON Lines file) is a V1 event stream."""
    return _looks_like_openhands_v1(value)


def _looks_like_openhands_v1(value: Any) -> bool:
    if isinstance(value, dict) and "kind" not in value:
        value = value.get("events")
    elif isinstance(value, dict):
        value = [value]
    if not isinstance(value, list) or not value:
        return False
    return all(
        isinstance(event, dict) and isinstance(event.get("kind"), str) and "source" in event
        for event in value[:20]
    ) and any(event["kind"] in _KINDS for event in value[:20])


def parse_openhands_v1(
    source: JSONValue, *, name: str = "<string>", compaction: Compaction = "last"
) -> Transcript:
    """The conversation of an event stream: its text (JSON or JSON Lines) or its value loaded."""
    return _parse_openhands_v1(source, name=name, compaction=compaction)


def _parse_openhands_v1(
    source: Any, *, name: str = "<string>", compaction: Compaction = "last"
) -> Transcript:
    check_compaction(compaction)
    warnings: list[str] = []
    if isinstance(source, str):
        try:
            source = json.loads(source)
        except (ValueError, RecursionError):
            records = jsonl_records(source, name, warnings)
            located = [(f"{name}:{line}", event) for line, event in records]
            return _Reader(compaction).read(located, None, warnings)
    if isinstance(source, dict) and "kind" not in source:
        source, path = array(source.get("events"), f"{name}: events"), "events"
    elif isinstance(source, dict):
        source, path = [source], ""
    else:
        path = ""
    events = array(source, name)
    located = [(f"{name}: {path}[{index}]", event) for index, event in enumerate(events)]
    return _Reader(compaction).read(located, None, warnings)


class _Reader:
    def __init__(self, compaction: Compaction) -> None:
        self.compaction = compaction
        self.unknown: list[Unknown] = []
        self.builder = MessageBuilder()
        self.system: str | None = None
        self.tools: tuple[dict[str, Any], ...] | None = None
        self.response: str | None = None  # the llm_response_id of the open assistant message
        self.answers: dict[str, tuple[int, str]] = {}  # response id -> (its message, where)

    def read(
        self,
        located: Sequence[tuple[str, Any]],
        model: str | None,
        warnings: Sequence[str] = (),
        usages: Mapping[str, TokenUsage] | None = None,
    ) -> Transcript:
        """The transcript of ``located`` events; ``usages`` (by ``llm_response_id``, from
        ``base_state.json``) give the requests of the responses they name."""
        events = [(where, mapping(event, where)) for where, event in located]
        for where, event in events:
            event_kind = string(event.get("kind"), f"{where}.kind")
            if event_kind not in _KINDS:
                self.unknown.append(Unknown(where, event_kind))
        condensations = sum(1 for _, event in events if event.get("kind") == "Condensation")
        if self.compaction == "last":
            events = _view(events)
        for where, event in _grouped(_paired(events)):
            self._event(event, where)
        requests = tuple(
            RecordedRequest(index, usages[response], model, where)
            for response, (index, where) in self.answers.items()
            if usages is not None and response in usages
        )
        return Transcript(
            format=FORMAT,
            messages=tuple(self.builder.messages()),
            system=self.system,
            tools=self.tools,
            model=model,
            requests=requests,
            unknown=tuple(self.unknown),
            compactions=condensations,
            warnings=tuple(warnings),
        )

    def _event(self, event: dict[str, Any], where: str) -> None:
        event_kind = event["kind"]
        if event_kind == "ActionEvent":
            self._action(event, where)
            return
        self.response = None
        self.builder.end_response()
        if event_kind in ("SystemPromptEvent", "SystemPromptUpdateEvent"):
            self._system(event, where)
        elif event_kind == "MessageEvent":
            self._message(event, where)
        elif event_kind in _RESULTS:
            self.builder.add("user", _result(event, where))
        elif event_kind in ("CondensationSummaryEvent", "Condensation"):
            summary = event.get("summary")
            if summary:
                self.builder.add("user", text_block(string(summary, f"{where}.summary")))

    def _system(self, event: dict[str, Any], where: str) -> None:
        prompt = event.get("system_prompt")
        text = prompt.get("text") if isinstance(prompt, dict) else prompt
        self.system = string(text, f"{where}.system_prompt.text")
        tools = event.get("tools")
        if tools is not None:
            self.tools = tuple(
                _tool(tool, f"{where}.tools[{position}]")
                for position, tool in enumerate(array(tools, f"{where}.tools"))
            )

    def _message(self, event: dict[str, Any], where: str) -> None:
        message = mapping(event.get("llm_message"), f"{where}.llm_message", MalformedMessageError)
        role = message.get("role", "assistant" if event.get("source") == "agent" else "user")
        if role not in ("user", "assistant"):
            if role == "system":
                return
            raise MalformedMessageError(f"{where}.llm_message.role", f"unknown role {role!r}")
        blocks = _contents(message.get("content", []), f"{where}.llm_message.content")
        extended = event.get("extended_content") or []
        blocks += _contents(extended, f"{where}.extended_content")
        for block in blocks:
            self.builder.add(role, block)
        self.builder.end_response()

    def _action(self, event: dict[str, Any], where: str) -> None:
        response = event.get("llm_response_id")
        first = response is None or response != self.response
        if first:
            self.builder.end_response()
            self.response = response if isinstance(response, str) else None
            for position, block in enumerate(event.get("thinking_blocks") or []):
                thinking = _thinking(block, f"{where}.thinking_blocks[{position}]")
                if thinking is not None:
                    self.builder.add("assistant", thinking)
            for block in _contents(event.get("thought") or [], f"{where}.thought"):
                self.builder.add("assistant", block)
        call = mapping(event.get("tool_call"), f"{where}.tool_call", MalformedMessageError)
        at = f"{where}.tool_call"
        if call.get("name") is None and isinstance(call.get("function"), dict):
            # the SDK before 1.0 kept the call as the OpenAI SDK gives it:
            # {"id", "type": "function", "function": {"name", "arguments"}}
            at = f"{where}.tool_call.function"
            call = {"id": call.get("id"), **call["function"]}
        call_id = string(call.get("id"), f"{where}.tool_call.id", MalformedMessageError)
        name = string(call.get("name"), f"{at}.name", MalformedMessageError)
        raw = call.get("arguments", "{}")
        tool_input = arguments(raw) if isinstance(raw, str) else mapping(raw, at)
        index = self.builder.add("assistant", tool_use(call_id, name, tool_input))
        if isinstance(response, str):
            self.answers.setdefault(response, (index, where))
        if response is None:
            self.builder.end_response()


def _view(events: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """The events the agent sent after its last condensation, as the SDK's View makes them.

    The view holds the conversation events not forgotten; the summary's offset counts in it.
    """
    forgotten: set[Any] = set()
    summary: tuple[str, dict[str, Any], Any] | None = None
    for where, event in events:
        if event.get("kind") == "Condensation":
            forgotten.update(event.get("forgotten_event_ids") or [])
            if event.get("summary") is not None:
                summary = (where, event, event.get("summary_offset"))
    kept = [
        (where, event)
        for where, event in events
        if event.get("id") not in forgotten
        and event.get("kind") in _CONVERSATION
        and event.get("kind") not in ("Condensation", "CondensationSummaryEvent")
    ]
    if summary is not None:
        where, event, offset = summary
        at = offset if isinstance(offset, int) and 0 <= offset <= len(kept) else 0
        kept.insert(at, (where, {"kind": "CondensationSummaryEvent", "summary": event["summary"]}))
    return kept


def _paired(events: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """The events less calls no observation answers and observations of no call."""
    calls = {e.get("tool_call_id") for _, e in events if e.get("kind") == "ActionEvent"}
    answered = {e.get("tool_call_id") for _, e in events if e.get("kind") in _RESULTS}
    return [
        (where, event)
        for where, event in events
        if event.get("kind") in _CONVERSATION
        and (event.get("kind") != "ActionEvent" or event.get("tool_call_id") in answered)
        and (event.get("kind") not in _RESULTS or event.get("tool_call_id") in calls)
    ]


def _grouped(events: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """The events with each response's actions together, before the observations of any.

    The SDK writes the calls of one response before running them, but a call written after an
    earlier call's observation still belongs to the same response (one model call, one message).
    """
    output: list[tuple[str, dict[str, Any]]] = []
    open_response: Any = None
    last_call = -1
    for where, event in events:
        event_kind = event.get("kind")
        response = event.get("llm_response_id")
        if event_kind == "ActionEvent" and response is not None and response == open_response:
            last_call += 1
            output.insert(last_call, (where, event))
            continue
        output.append((where, event))
        if event_kind == "ActionEvent":
            open_response, last_call = response, len(output) - 1
        elif event_kind not in _RESULTS:
            open_response = None
    return output


def _result(event: dict[str, Any], where: str) -> Message:
    call_id = string(event.get("tool_call_id"), f"{where}.tool_call_id", MalformedMessageError)
    event_kind = event["kind"]
    if event_kind == "UserRejectObservation":
        reason = event.get("rejection_reason", "User rejected the action")
        return tool_result(call_id, f"Action rejected: {string(reason, f'{where}.reason')}")
    if event_kind == "AgentErrorEvent":
        return tool_result(call_id, string(event.get("error"), f"{where}.error"), is_error=True)
    observation = mapping(event.get("observation"), f"{where}.observation", MalformedMessageError)
    failed = observation.get("is_error") is True
    if "content" not in observation and any(key in observation for key in _OLDER_KEYS):
        text, failed = _older_observation(observation, f"{where}.observation")
        blocks = [text_block(text)] if text else []
    else:
        content = observation.get("content", [])
        if isinstance(content, str):
            blocks = [text_block(content)] if content else []
        else:
            blocks = _contents(content, f"{where}.observation.content")
    blocks += _contents(event.get("extended_content") or [], f"{where}.extended_content")
    return tool_result(call_id, blocks, is_error=failed)


_OLDER_KEYS = ("output", "message", "error")
"""What an observation of the SDK before 1.0 holds in place of ``content``."""


def _older_observation(observation: dict[str, Any], where: str) -> tuple[str, bool]:
    """The text an observation of the SDK before 1.0 showed the model, and whether it failed.

    Those observations hold no ``content``: a command's ``output`` (the shell's ``prefix`` and
    ``suffix`` around it, then its working directory, interpreter and exit code, from
    ``metadata``), an editor's ``output`` or ``error`` (a string), a finish's ``message``.
    """
    error = observation.get("error")
    if isinstance(error, str) and error:
        return error, True
    if "output" not in observation and "message" not in observation:
        return "", error is True
    if "output" not in observation:
        return string(observation.get("message"), f"{where}.message", MalformedMessageError), False
    text = string(observation["output"], f"{where}.output", MalformedMessageError)
    metadata = observation.get("metadata")
    if metadata is None:
        return text, error is True
    metadata = mapping(metadata, f"{where}.metadata", MalformedMessageError)
    text = f"{_text(metadata, 'prefix')}{text}{_text(metadata, 'suffix')}"
    if _text(metadata, "working_dir"):
        text += f"\n[Current working directory: {metadata['working_dir']}]"
    if _text(metadata, "py_interpreter_path"):
        text += f"\n[Python interpreter: {metadata['py_interpreter_path']}]"
    code = metadata.get("exit_code")
    if isinstance(code, int) and code != -1:
        text += f"\n[Command finished with exit code {code}]"
    return text, error is True


def _text(values: dict[str, Any], key: str) -> str:
    value = values.get(key)
    return value if isinstance(value, str) else ""


def _contents(parts: Any, where: str) -> list[Message]:
    """Text and image parts (the SDK's TextContent and ImageContent) as Anthropic blocks."""
    blocks: list[Message] = []
    for position, value in enumerate(array(parts, where, MalformedMessageError)):
        at = f"{where}[{position}]"
        part = mapping(value, at, MalformedMessageError)
        part_type = part.get("type")
        if part_type == "text":
            text = string(part.get("text"), f"{at}.text", MalformedMessageError)
            if text:
                blocks.append(text_block(text))
        elif part_type == "image":
            urls = array(part.get("image_urls", []), f"{at}.image_urls", MalformedMessageError)
            for index, url in enumerate(urls):
                blocks.append(image_from_url(string(url, f"{at}.image_urls[{index}]")))
        else:
            raise MalformedMessageError(f"{at}.type", f"unknown content part {part_type!r}")
    return blocks


def _thinking(block: Any, where: str) -> Message | None:
    part = mapping(block, where, MalformedMessageError)
    if part.get("type") == "redacted_thinking":
        return {"type": "redacted_thinking", "data": string(part.get("data"), f"{where}.data")}
    text = string(part.get("thinking"), f"{where}.thinking", MalformedMessageError)
    signature = part.get("signature")
    return signed_thinking(
        text, None if signature is None else string(signature, f"{where}.signature")
    )


def _tool(tool: Any, where: str) -> dict[str, Any]:
    spec = mapping(tool, where)
    function = spec.get("function") if spec.get("type") == "function" else spec
    function = mapping(function, f"{where}.function")
    # The SDK's own tool definitions carry the tool's name as ``title`` (``name`` is a class
    # attribute, not serialized) and no parameters.
    named = function.get("name") if "name" in function else function.get("title")
    name = string(named, f"{where}.name")
    schema = function.get("parameters", function.get("input_schema"))
    return anthropic_tool(name, function.get("description"), schema)
