"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``), read.

The format (``codex-rs/protocol``: ``RolloutLine``, ``RolloutItem``, ``ResponseItem``). One JSON
object per line, ``{"timestamp", "type", "payload"}``, where ``type`` is

- ``session_meta``: the session (id, cwd, cli version; newer versions also the model's base
  instructions ``base_instructions.text`` and ``dynamic_tools``; older ones ``instructions``);
- ``response_item``: one item of the model's input or output, as the OpenAI Responses API has
  it: ``message`` (role user, assistant, developer or system; ``input_text``, ``output_text``
  and ``input_image`` content), ``reasoning``, ``function_call`` / ``function_call_output``,
  ``custom_tool_call`` / ``custom_tool_call_output``, ``tool_search_call`` /
  ``tool_search_output``, ``local_shell_call``, ``web_search_call``;
- ``turn_context``: the settings of a turn, among them its ``model``;
- ``event_msg``: UI events; ``token_count`` carries ``info.last_token_usage``, the usage of the
  request that just completed;
- ``compacted``: a compaction, with its summary ``message`` and, in newer versions, the
  ``replacement_history`` the conversation continued from;
- ``world_state`` (0.144): Codex's record of the context it gave the model (``full``: a whole
  snapshot of ``state``: ``agents_md``, ``skills``, ``environments``...; else the keys that
  changed), kept to tell what changed on resume. What the model was sent of it is in the
  ``response_item`` messages already (the AGENTS.md text, ``<environment_context>``), so the
  line is bookkeeping: skipped, as ``turn_context`` is;
- ``token_usage_record`` (0.153): the usage of one model call, by response id. Its counts are
  the ``token_count`` event's, which is what is read: skipped.

A thread forked from another one (0.15x) names it in ``session_meta.history_base`` and holds
only what came after the fork: the transcript then starts partway, and a warning says so.

Rollouts written before ``session_meta`` existed (mid 2025) start with a bare ``{"id",
"timestamp", "instructions"}`` line, hold bare response items on the other lines and
``{"record_type": "state"}`` lines; they are read too.

Mapping rules:

- **Messages.** Consecutive items of the same side make one message: assistant text and tool
  calls one assistant message, tool outputs and user text one user message (tool_results first,
  in the order of the calls). A ``token_count`` event ends a response: the next model item
  starts a new assistant message. Developer and system messages have no place in the Anthropic
  shape: their text is appended to ``system`` (after the base instructions, ``"\\n\\n"``
  between), wherever they stood in the history read.
- **Tool calls.** ``function_call`` becomes a tool_use with ``id`` = ``call_id`` and the parsed
  ``arguments`` as input (``{"arguments": <text>}`` when they are not a JSON object);
  ``custom_tool_call`` (free-form input such as ``apply_patch``) gets ``{"input": <text>}``;
  ``tool_search_call`` (0.14x: the model looks up tools to load) a ``tool_search`` tool_use of
  its ``arguments``, answered by ``tool_search_output``'s ``tools`` as JSON text (a search the
  server ran, ``execution: "server"``, has no answer to pair: dropped and reported);
  ``local_shell_call`` becomes a ``local_shell`` tool_use whose input is the ``exec`` action
  (``command`` as an argv list, ...). Outputs become tool_results with the same id: the output
  text as Codex sent it (for the older shell tool, the JSON text with ``output`` and
  ``metadata``), content items as text and image blocks, ``success: false`` as ``is_error``.
- **Compaction.** With ``compaction="last"`` (the default) the history restarts at the last
  ``compacted`` record: its ``replacement_history`` when recorded, else its summary as a user
  message (older rollouts do not record the user messages Codex re-sent with it). With
  ``compaction="keep"`` everything is kept and each summary is a user message where the
  compaction happened.
- **Dropped.** ``reasoning`` items (their content is encrypted, and the readable summary is not
  what was sent; an Anthropic thinking block would need a signature), ``ghost_snapshot`` and
  ``compaction`` items (encrypted), ``turn_context`` and every ``event_msg`` but
  ``token_count`` (they repeat the items or describe the UI). Items the Anthropic shape cannot
  pair (``web_search_call`` and other server-side tools, which have no output item) and unknown
  item, content or line types are dropped and reported in ``Transcript.unknown``.

Usage: one :class:`RecordedRequest` per ``token_count`` event with ``info``, attached to the
assistant message of that response (a repeated event, same totals, is counted once). OpenAI
counts cached input in ``input_tokens``: ``tokens_in`` is ``input_tokens - cached_input_tokens``,
``cache_reads`` is ``cached_input_tokens``, ``tokens_out`` is ``output_tokens`` (reasoning
included). ``model`` is that of the latest ``turn_context``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
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
    count,
    image_from_url,
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

__all__ = ["FORMAT", "looks_like_codex", "parse_codex", "read_codex"]

FORMAT = "codex"

_LINE_TYPES = frozenset(
    {
        "session_meta",
        "response_item",
        "event_msg",
        "turn_context",
        "compacted",
        "world_state",
        "token_usage_record",
    }
)
_DROPPED_ITEMS = frozenset({"reasoning", "ghost_snapshot", "compaction", "compaction_summary"})
_CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call", "tool_search_call"})
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output"})
_ITEM_TYPES = _DROPPED_ITEMS | _CALLS | _OUTPUTS | {"message", "web_search_call"}
_SYSTEM_ROLES = frozenset({"developer", "system"})


def read_codex(path: str | os.PathLike[str], *, compaction: Compaction = "last") -> Transcript:
    """Read a Codex rollout file; errors name the file and the line."""
    return parse_codex(read_text(path), name=str(path), compaction=compaction)


def parse_codex(
    source: str | Iterable[JSONValue], *, name: str = "<string>", compaction: Compaction = "last"
) -> Transcript:
    """The conversation of a rollout: its JSON Lines text, or its records already loaded.

    Raises :class:`~windowkeeper.TaskFolderError` for a line that is not a JSON object or a
    field of the wrong type, and :class:`~windowkeeper.MalformedMessageError` for an item that
    cannot be a message, both naming ``name``, the line and the JSON path.
    """
    check_compaction(compaction)
    reader = _Reader(name, compaction)
    for position, (line, record) in enumerate(jsonl_records(source, name, reader.warnings)):
        reader.line(line, record, first=position == 0)
    return reader.transcript()


def looks_like_codex(records: Sequence[JSONValue]) -> bool:
    """Whether the first records of a JSON Lines file are a Codex rollout's."""
    if not records or not isinstance(records[0], dict):
        return False
    first = records[0]
    if first.get("type") in _LINE_TYPES and isinstance(first.get("payload"), dict):
        return True
    legacy_meta = "id" in first and "timestamp" in first and "type" not in first
    return legacy_meta and all(
        isinstance(record, dict) and ("record_type" in record or record.get("type") in _ITEM_TYPES)
        for record in records[1:]
    )


@dataclass(slots=True)
class _Entry:
    """An item of the history as recorded: a response item, a usage, or user text (a compaction
    summary, a world state)."""

    line: int
    where: str
    item: dict[str, Any] = field(default_factory=dict)
    usage: TokenUsage | None = None
    model: str | None = None
    summary: str | None = None


class _Reader:
    def __init__(self, name: str, compaction: Compaction) -> None:
        self.name = name
        self.compaction = compaction
        self.entries: list[_Entry] = []
        self.unknown: list[Unknown] = []
        self.instructions: str | None = None
        self.tools: tuple[dict[str, Any], ...] | None = None
        self.model: str | None = None
        self.compactions = 0
        self.version: str | None = None
        self.warnings: list[str] = []
        self._meta_seen = False
        self._last_total: Any = None

    # -- lines -------------------------------------------------------------------------------

    def line(self, line: int, record: dict[str, Any], *, first: bool) -> None:
        where = f"{self.name}:{line}"
        if "payload" not in record:  # a rollout from before session_meta
            if "record_type" in record:
                return
            if first and "id" in record and "type" not in record:
                self._session_meta(record, where)
            elif isinstance(record.get("type"), str):
                self._item(line, record, f"{where}: ")
            else:
                self.unknown.append(Unknown(where, "line without a type"))
            return
        line_type = string(record.get("type"), f"{where}: type")
        payload = record["payload"]
        if line_type == "session_meta":
            self._session_meta(mapping(payload, f"{where}: payload"), f"{where}: payload")
        elif line_type == "response_item":
            self._item(line, mapping(payload, f"{where}: payload"), f"{where}: payload.")
        elif line_type == "turn_context":
            model = mapping(payload, f"{where}: payload").get("model")
            if model is not None:
                self.model = string(model, f"{where}: payload.model")
        elif line_type == "event_msg":
            event = mapping(payload, f"{where}: payload")
            if event.get("type") == "token_count":
                self._token_count(line, event, f"{where}: payload")
        elif line_type == "compacted":
            self._compacted(line, mapping(payload, f"{where}: payload"), f"{where}: payload")
        elif line_type in ("world_state", "token_usage_record"):
            pass  # bookkeeping, or counts read from token_count (module docstring)
        else:
            self.unknown.append(Unknown(where, line_type))

    def _session_meta(self, meta: dict[str, Any], where: str) -> None:
        if self._meta_seen:  # a forked or resumed rollout repeats its parent's
            return
        self._meta_seen = True
        base_thread = meta.get("history_base")
        if isinstance(base_thread, dict):
            items = base_thread.get("end_ordinal_exclusive")
            before = f"its first {items} items" if isinstance(items, int) else "its start"
            self.warnings.append(
                f"{where}: this thread was forked from thread"
                f" {base_thread.get('thread_id', '(unnamed)')}: {before} are in that thread's"
                " rollout, not in this file, so the transcript starts partway"
            )
        version = meta.get("cli_version")
        self.version = version if isinstance(version, str) else None
        base = meta.get("base_instructions")
        if isinstance(base, dict):
            base = base.get("text")
        instructions = base if base is not None else meta.get("instructions")
        if instructions is not None:
            self.instructions = string(instructions, f"{where}.base_instructions")
        model = meta.get("model")
        if model is not None:
            self.model = string(model, f"{where}.model")
        tools = meta.get("dynamic_tools")
        if tools is not None:
            self.tools = tuple(
                _tool(tool, f"{where}.dynamic_tools[{position}]")
                for position, tool in enumerate(array(tools, f"{where}.dynamic_tools"))
            )

    def _item(self, line: int, item: dict[str, Any], where: str) -> None:
        self.entries.append(_Entry(line, where, item=item))

    def _token_count(self, line: int, event: dict[str, Any], where: str) -> None:
        info = event.get("info")
        if info is None:
            return  # a rate-limit update only
        info = mapping(info, f"{where}.info")
        total = info.get("total_token_usage")
        if total is not None and total == self._last_total:
            return  # the same count, sent again
        self._last_total = total
        last = mapping(info.get("last_token_usage"), f"{where}.info.last_token_usage")
        at = f"{where}.info.last_token_usage"
        prompt = count(last, "input_tokens", at)
        cached = min(count(last, "cached_input_tokens", at), prompt)
        usage = TokenUsage(
            tokens_in=prompt - cached,
            tokens_out=count(last, "output_tokens", at),
            cache_reads=cached,
        )
        self.entries.append(_Entry(line, where, usage=usage, model=self.model))

    def _compacted(self, line: int, payload: dict[str, Any], where: str) -> None:
        self.compactions += 1
        summary = string(payload.get("message", ""), f"{where}.message")
        if self.compaction == "keep":
            self.entries.append(_Entry(line, where, summary=summary))
            return
        self.entries = []
        history = payload.get("replacement_history")
        if history is None:
            self.entries.append(_Entry(line, where, summary=summary))
            return
        for position, item in enumerate(array(history, f"{where}.replacement_history")):
            at = f"{where}.replacement_history[{position}]"
            self._item(line, mapping(item, at), f"{at}.")

    # -- the conversation --------------------------------------------------------------------

    def transcript(self) -> Transcript:
        builder = MessageBuilder()
        system = [self.instructions] if self.instructions else []
        requests: list[RecordedRequest] = []
        response: int | None = None  # the assistant message of the response under way
        for entry in self.entries:
            if entry.usage is not None:
                requests.append(RecordedRequest(response, entry.usage, entry.model, entry.where))
                response = None
                builder.end_response()
            elif entry.summary is not None:
                if entry.summary:
                    builder.add("user", text_block(entry.summary))
            else:
                for role, block in self._blocks(entry.item, entry.where, system):
                    index = builder.add(role, block)
                    if role == "assistant":
                        response = index
        return Transcript(
            format=FORMAT,
            messages=tuple(builder.messages()),
            system="\n\n".join(system) if system else None,
            tools=self.tools,
            model=self.model,
            requests=tuple(requests),
            unknown=in_file_order(self.unknown, self.name),
            compactions=self.compactions,
            version=self.version,
            warnings=tuple(self.warnings),
        )

    def _blocks(
        self, item: dict[str, Any], where: str, system: list[str]
    ) -> list[tuple[str, Message]]:
        """The (role, block) pairs of one response item; developer text goes to ``system``."""
        item_type = item.get("type")
        if not isinstance(item_type, str):
            raise MalformedMessageError(f"{where}type", f"expected a string, got {kind(item_type)}")
        if item_type == "message":
            return self._message(item, where, system)
        if item_type.startswith("tool_search_") and (
            item.get("execution") == "server" or item.get("call_id") is None
        ):
            # run by the server: nothing for the client to answer, like a web search
            self.unknown.append(Unknown(where.rstrip(". :"), item_type))
            return []
        if item_type in _CALLS:
            return [("assistant", _call(item, item_type, where))]
        if item_type in _OUTPUTS:
            return [("user", _output(item, where))]
        if item_type not in _DROPPED_ITEMS:
            self.unknown.append(Unknown(where.rstrip(". :"), item_type))
        return []

    def _message(
        self, item: dict[str, Any], where: str, system: list[str]
    ) -> list[tuple[str, Message]]:
        role = string(item.get("role"), f"{where}role", MalformedMessageError)
        content = item.get("content")
        if isinstance(content, str):
            content = [
                {"type": "output_text" if role == "assistant" else "input_text", "text": content}
            ]
        parts = array(content, f"{where}content", MalformedMessageError)
        blocks: list[Message] = []
        for position, value in enumerate(parts):
            at = f"{where}content[{position}]"
            part = mapping(value, at, MalformedMessageError)
            part_type = part.get("type")
            if part_type in ("input_text", "output_text", "text"):
                text = string(part.get("text"), f"{at}.text", MalformedMessageError)
                if text:
                    blocks.append(text_block(text))
            elif part_type == "input_image" and role not in _SYSTEM_ROLES:
                url = part.get("image_url")
                blocks.append(image_from_url(string(url, f"{at}.image_url", MalformedMessageError)))
            else:
                self.unknown.append(Unknown(at, str(part_type)))
        if role in _SYSTEM_ROLES:
            system.extend(block["text"] for block in blocks)
            return []
        if role not in ("user", "assistant"):
            raise MalformedMessageError(f"{where}role", f"unknown role {role!r}")
        return [(role, block) for block in blocks]


def _call(item: dict[str, Any], item_type: str, where: str) -> Message:
    raw_id = item.get("call_id") or item.get("id")
    call_id = string(raw_id, f"{where}call_id", MalformedMessageError)
    if not call_id:
        raise MalformedMessageError(f"{where}call_id", "a tool call needs a non-empty id")
    if item_type == "local_shell_call":
        action = mapping(item.get("action"), f"{where}action", MalformedMessageError)
        return tool_use(call_id, "local_shell", {k: v for k, v in action.items() if k != "type"})
    if item_type == "tool_search_call":  # its arguments are an object (or its JSON text)
        query = item.get("arguments", {})
        if isinstance(query, str):
            return tool_use(call_id, "tool_search", arguments(query))
        return tool_use(
            call_id, "tool_search", mapping(query, f"{where}arguments", MalformedMessageError)
        )
    name = string(item.get("name"), f"{where}name", MalformedMessageError)
    if item_type == "custom_tool_call":
        return tool_use(
            call_id,
            name,
            {"input": string(item.get("input"), f"{where}input", MalformedMessageError)},
        )
    raw = string(item.get("arguments"), f"{where}arguments", MalformedMessageError)
    return tool_use(call_id, name, arguments(raw))


def _output(item: dict[str, Any], where: str) -> Message:
    call_id = string(item.get("call_id"), f"{where}call_id", MalformedMessageError)
    if item.get("type") == "tool_search_output":  # the tools it loaded: what the model got
        tools = array(item.get("tools", []), f"{where}tools", MalformedMessageError)
        return tool_result(call_id, json.dumps(tools, ensure_ascii=False))
    output = item.get("output")
    at = f"{where}output"
    if isinstance(output, str):
        return tool_result(call_id, output)
    if isinstance(output, list):
        return tool_result(call_id, _output_items(output, at))
    if isinstance(output, dict):  # {content, success} or {content_items, ...}
        failed = output.get("success") is False
        items = output.get("content_items")
        if isinstance(items, list):
            return tool_result(
                call_id, _output_items(items, f"{at}.content_items"), is_error=failed
            )
        content = string(output.get("content"), f"{at}.content", MalformedMessageError)
        return tool_result(call_id, content, is_error=failed)
    raise MalformedMessageError(at, f"expected a string, an array or an object, got {kind(output)}")


def _output_items(items: list[Any], where: str) -> list[Message]:
    blocks: list[Message] = []
    for position, item in enumerate(items):
        at = f"{where}[{position}]"
        part = mapping(item, at, MalformedMessageError)
        if part.get("type") in ("input_text", "output_text", "text"):
            blocks.append(text_block(string(part.get("text"), f"{at}.text", MalformedMessageError)))
        elif part.get("type") == "input_image":
            url = string(part.get("image_url"), f"{at}.image_url", MalformedMessageError)
            blocks.append(image_from_url(url))
        else:
            raise MalformedMessageError(f"{at}.type", f"unknown output item {part.get('type')!r}")
    return blocks


def _tool(tool: Any, where: str) -> dict[str, Any]:
    spec = mapping(tool, where)
    name = string(spec.get("name"), f"{where}.name")
    schema = spec.get("input_schema", spec.get("inputSchema", spec.get("parameters")))
    return anthropic_tool(name, spec.get("description"), schema)
