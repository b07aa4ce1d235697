"""Claude Code session transcripts (``~/.claude/projects/<project>/<session>.jsonl``), read.

The format. One JSON object (a *record*) per line, appended as the session runs. ``user`` and
``assistant`` records carry an Anthropic Messages API ``message`` (``role``, ``content``; on
assistant records also ``id``, ``model`` and ``usage``). Every record that has a ``uuid`` names
the record before it in ``parentUuid``, so the file holds a tree: "redo from here" forks it,
resumed sessions add branches, and the live conversation is the chain from the newest message
back to a root. Other records: ``summary`` (a title for a branch, with its ``leafUuid``),
``system`` (notices: ``compact_boundary``, ``api_error``, ``turn_duration``, ...),
``file-history-snapshot`` (and, 2.1.22x, ``file-history-delta``), ``bridge-session``,
``queue-operation``, ``custom-title``, ``progress`` and (2.1.x)
``attachment``: hook output, reminders and listings, and ``queued_command``, a prompt the user
typed while the agent worked or a background task's ``<task-notification>``, which is read as
a user record (the model answers it); other
attachments are reported in ``Transcript.unknown``. Records with
``isSidechain`` belong to a subagent (older versions wrote them into the session file; newer
ones into ``agent-<id>.jsonl`` files of their own). The format is not documented by Anthropic;
this reader follows what the public reverse-engineered descriptions and Claude Code's issue
tracker agree on (see ``tests/transcripts/fixtures/README.md``).

Mapping rules:

- **The main line.** The conversation is the chain from the last user or assistant record of
  the file (in file order, i.e. the newest) back through ``parentUuid``; records on other
  branches (abandoned redos, dead ends) are left out. Sidechain records are left out, unless
  the file holds nothing else: then it is a subagent's own transcript and is read as such. A
  ``parentUuid`` the file does not hold names a lost record when the records written before
  it lead back to the session's start (a real 2.1.167 session lost the one its task
  notifications were delivered in): the chain goes on at the record written last before it,
  with a warning, and the seam is mended (a notice between two responses, a "not in the
  transcript" result for a call left unanswered). Otherwise the chain stops there (a file cut
  out of a longer session; a summary whose compaction boundary is lost); tool_results in the
  first message, which answer calls made before the file begins, are kept as text naming each
  call. When the newest message sits on a
  branch that parted from the last response's at a ``progress`` record (a Claude Code bug: the
  chain forks at progress records), the branch reaching the last response recorded with usage
  is the live one (see :func:`_live_leaf`). ``Transcript.forks`` counts the branch points of
  messages left out (redos, dead ends).
- **Detection and metadata.** A file is a session when its first message record has ``uuid``,
  ``parentUuid`` and a ``message``; the records before it (``permission-mode``, ``ai-title``,
  ``last-prompt`` and whatever later releases add) are passed over. Record types not known here
  are skipped and reported, never fatal. ``Transcript.version`` is the last ``version`` written.
- **Split responses.** Claude Code writes one record per content block of a streamed response,
  all with the same ``requestId`` (and ``message.id``; ``requestId`` decides when both are
  there): the assistant records of one request become ONE assistant message, also when its
  parallel calls are written between their results (``tool_use 1 -> tool_result 1 -> tool_use
  2``): the results go to the user message after it, in call order, and records of that response found off the chain (a parallel tool call
  writes its ``tool_use`` records and their results as sibling branches) are joined to it, in
  file order; a block repeated by a later snapshot is kept once. Its usage is counted once,
  from the response's last record (earlier snapshots carry partial ``output_tokens``).
- **Tool results.** The user records after a response (one per tool result, plus any text the
  user sent) become one user message, its tool_results first in the order of the calls. A
  tool_result that answers a call of the chain but sits on a sibling branch is recovered into
  that user message. Consecutive user messages are merged; assistant messages of different
  responses stay separate.
- **Compaction.** A ``system`` record with subtype ``compact_boundary`` starts a new root (its
  ``parentUuid`` is null; ``logicalParentUuid`` names the last message before it), followed by
  a user message holding the summary (``isCompactSummary``). With ``compaction="last"`` (the
  default) the history starts at the last boundary: the summary and what followed, what Claude
  Code sent from then on. With ``compaction="keep"`` the chain continues through
  ``logicalParentUuid``: the whole session, with each summary as a user message where the
  compaction happened. ``Transcript.compactions`` counts the boundaries of the whole main line,
  in both modes.
- **Dropped.** ``summary`` records are branch titles, not conversation; ``system`` records,
  snapshots, queue operations and progress are bookkeeping; assistant records flagged
  ``isApiErrorMessage`` are error notices Claude Code showed, not model output. Empty and
  blank text blocks are dropped (the API refuses a text of only whitespace, so Claude Code never
  sends the ``"\n\n"`` text it records before a response's thinking), and a message left empty
  with them. A thinking block with an empty or absent signature (Claude Code on another
  model through a gateway, e.g. GLM) is that model's reasoning, which no Anthropic request can
  carry: it is dropped, and a message left empty with it. Block types other than ``text``,
  ``image``, ``document``, ``thinking``, ``redacted_thinking``, ``tool_use`` and ``tool_result``
  (e.g. ``server_tool_use``), and record types not listed above, are dropped and reported in
  ``Transcript.unknown``; ``tool_reference`` blocks of a tool result (the tools a ToolSearch
  loaded) are what the model saw and are kept as text, ``[tool_reference: <name>]``.
- **What the file does not hold.** The system prompt and tool definitions are not recorded
  (``system`` and ``tools`` are None). ``model`` is the model of the last response; synthetic
  responses (model ``<synthetic>``) count as neither model nor request.

Usage: one :class:`RecordedRequest` per assistant message whose response recorded ``usage``
(``input_tokens`` uncached, ``output_tokens``, ``cache_creation_input_tokens``,
``cache_read_input_tokens``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

from .._errors import InvalidUsageError, MalformedMessageError, TaskFolderError
from ..core._messages import JSONValue, Message
from ..session._sdk import usage_from_sdk
from ._claude_code_records import (
    _FORK_REF,
    _KNOWN_TYPES,
    _MESSAGE_TYPES,
    _SYNTHETIC_MODEL,
    _Draft,
    _forked_from,
    _forks,
    _Join,
    _live_leaf,
    _main_line,
    _Record,
    _record,
)
from ._common import (
    Compaction,
    RecordedRequest,
    Transcript,
    Unknown,
    check_compaction,
    in_file_order,
    jsonl_records,
    kind,
    ordered_results,
    read_text,
    signed_thinking,
    text_block,
)
from ._lost_records import across_lost_record, earlier_results_as_text

__all__ = ["FORMAT", "looks_like_claude_code", "parse_claude_code", "read_claude_code"]

FORMAT = "claude-code"

_RESULT_PARTS = frozenset({"text", "image", "document"})


def read_claude_code(
    path: str | os.PathLike[str], *, compaction: Compaction = "last"
) -> Transcript:
    """Read a Claude Code session file; errors name the file and the line."""
    return parse_claude_code(read_text(path), name=str(path), compaction=compaction)


def parse_claude_code(
    source: str | Iterable[JSONValue], *, name: str = "<string>", compaction: Compaction = "last"
) -> Transcript:
    """The conversation of a session: its JSON Lines text, or its records already loaded.

    Raises :class:`~windowkeeper.TaskFolderError` for a line that is not a JSON object or a
    record field of the wrong type, and :class:`~windowkeeper.MalformedMessageError` for a
    message outside the Anthropic shape, both naming ``name``, the line and the JSON path.
    """
    check_compaction(compaction)
    reader = _Reader(name)
    warnings: list[str] = []
    records = [_record(line, data, name) for line, data in jsonl_records(source, name, warnings)]
    reader.unknown.extend(
        Unknown(f"{name}:{record.line}", record.type)
        for record in records
        if record.type not in _KNOWN_TYPES
    )
    main = [record for record in records if not record.sidechain]
    if not any(record.is_message for record in main):
        main = [record for record in records if record.sidechain]  # a subagent's transcript
    by_uuid: dict[str, _Record] = {}
    for record in main:
        if record.uuid is not None:
            by_uuid.setdefault(record.uuid, record)  # a resumed session repeats records
    main = [record for record in main if record.uuid is None or by_uuid[record.uuid] is record]
    leaf = _live_leaf(main, by_uuid)
    joins: list[_Join] = []
    chain = _main_line(leaf, by_uuid, compaction, joins)
    warnings += (
        f"{name}:{join.record.line}: the record it follows ({join.missing!r}) is not in the"
        f" file: the conversation goes on at line {join.joined.line}, written before it"
        for join in joins
    )
    warnings += (_forked_from(record, name) for record in records if record.type == _FORK_REF)
    messages, kept = reader.conversation(chain, main, joins)
    requests, model = reader.requests(kept)
    whole = chain if compaction == "keep" else _main_line(leaf, by_uuid, "keep")
    if whole is not chain:
        _, kept_whole = reader.conversation(whole, main)
    else:
        kept_whole = kept
    return Transcript(
        format=FORMAT,
        messages=tuple(messages),
        model=model,
        requests=tuple(requests),
        unknown=in_file_order(reader.unknown, name),
        compactions=sum(1 for record in whole if record.boundary),
        version=next(
            (r.data["version"] for r in reversed(main) if isinstance(r.data.get("version"), str)),
            None,
        ),
        forks=_forks(main, whole, kept_whole, by_uuid),
        warnings=tuple(warnings),
    )


def looks_like_claude_code(records: Sequence[JSONValue]) -> bool:
    """Whether the first records of a JSON Lines file are a Claude Code session's.

    What identifies the format is its message records: ``type`` user or assistant, a ``uuid``
    and a ``parentUuid`` key, and a ``message`` object. Records of other types before the first
    message (session metadata; new types come with every release) are passed over, as long as
    they are objects with a string ``type`` and no Codex ``payload``.
    """
    for record in records:
        if (
            not isinstance(record, dict)
            or not isinstance(record.get("type"), str)
            or "payload" in record
        ):
            return False
        if record["type"] in _MESSAGE_TYPES:
            return (
                "uuid" in record
                and "parentUuid" in record
                and isinstance(record.get("message"), dict)
            )
    return False


# -- messages --------------------------------------------------------------------------------


class _Reader:
    def __init__(self, name: str) -> None:
        self.name = name
        self.unknown: list[Unknown] = []
        self._contents: dict[int, str | list[Message]] = {}

    def conversation(
        self, chain: Sequence[_Record], records: Sequence[_Record], joins: Sequence[_Join] = ()
    ) -> tuple[list[Message], list[_Draft]]:
        """The messages of a chain, and the draft each came from; the first message after each
        of ``joins`` (a lost record) is mended (see :func:`across_lost_record`)."""
        on_chain = {id(record) for record in chain}
        off_chain = [r for r in records if id(r) not in on_chain and r.is_message]
        lost = {id(join.record) for join in joins}
        seams: set[int] = set()
        after_lost = False
        for record in chain:
            after_lost = after_lost or id(record) in lost
            if after_lost and record.is_message:
                seams.add(id(record))
                after_lost = False
        drafts = self.drafts([r for r in chain if r.is_message], off_chain)
        return self.messages(drafts, seams)

    def drafts(self, chain: Sequence[_Record], off_chain: Sequence[_Record]) -> list[_Draft]:
        drafts: list[_Draft] = []
        responses: dict[str, _Draft] = {}
        gathering: _Draft | None = None  # the response whose tool results are being written
        for record in chain:
            response = record.response_id
            last: _Draft | None = drafts[-1] if drafts else None
            if record.type == "assistant":
                if (
                    gathering is not None
                    and response is not None
                    and (responses.get(response) is gathering)
                ):
                    # the same model call, its parallel calls written between their results
                    gathering.records.append(record)
                    continue
                if last is None or response is None or responses.get(response) is not last:
                    last = _Draft("assistant")
                    drafts.append(last)
                if response is not None:
                    responses.setdefault(response, last)
                gathering = last
            else:
                if last is None or last.role != "user":
                    last = _Draft("user")
                    drafts.append(last)
                if not self._only_results(record):
                    gathering = None
            last.records.append(record)
        for record in off_chain:  # the other blocks of a response, on sibling branches
            response = record.response_id
            if record.type == "assistant" and response is not None and response in responses:
                responses[response].records.append(record)
        for draft in drafts:
            draft.records.sort(key=lambda record: record.line)
        self._recover_results(drafts, off_chain)
        return drafts

    def _only_results(self, record: _Record) -> bool:
        blocks = self.blocks(record)
        return bool(blocks) and all(block["type"] == "tool_result" for block in blocks)

    def _recover_results(self, drafts: list[_Draft], off_chain: Sequence[_Record]) -> None:
        """Add tool results written on sibling branches to the user message after their call."""
        calls: dict[str, _Draft] = {}
        answered: set[str] = set()
        for draft in drafts:
            for record in draft.records:
                for block in self.blocks(record):
                    if block["type"] == "tool_use":
                        calls[block["id"]] = draft
                    elif block["type"] == "tool_result":
                        answered.add(block["tool_use_id"])
        for record in off_chain:
            if record.type != "user":
                continue
            blocks = self.blocks(record)
            ids: list[str] = [
                block["tool_use_id"] for block in blocks if block["type"] == "tool_result"
            ]
            if (
                not ids
                or len(ids) != len(blocks)
                or any(call_id not in calls or call_id in answered for call_id in ids)
                or len({id(calls[call_id]) for call_id in ids}) != 1
            ):
                continue
            position = drafts.index(calls[ids[0]]) + 1
            if position == len(drafts) or drafts[position].role != "user":
                drafts.insert(position, _Draft("user"))
            drafts[position].records.append(record)
            drafts[position].records.sort(key=lambda record: record.line)
            answered.update(ids)

    def messages(
        self, drafts: Sequence[_Draft], seams: set[int]
    ) -> tuple[list[Message], list[_Draft]]:
        """The messages of the drafts, and the draft each message came from."""
        messages: list[Message] = []
        kept: list[_Draft] = []
        for draft in drafts:
            content = self._joined(draft)
            if not content:
                continue
            if messages and any(id(record) in seams for record in draft.records):
                between, content = across_lost_record(messages[-1], draft.role, content)
                if between is not None:
                    messages.append(between)
                    kept.append(_Draft("user"))
            if messages and draft.role == "user" and messages[-1]["role"] == "user":
                previous = messages[-1]["content"]
                messages[-1] = {
                    "role": "user",
                    "content": _as_blocks(previous) + _as_blocks(content),
                }
                kept[-1] = _Draft("user", kept[-1].records + draft.records)
                continue
            messages.append({"role": draft.role, "content": content})
            kept.append(draft)
        if messages and messages[0]["role"] == "user":
            messages[0] = earlier_results_as_text(messages[0])
        return ordered_results(messages), kept

    def _joined(self, draft: _Draft) -> str | list[Message]:
        contents = [self.content(record) for record in draft.records]
        if len(contents) == 1 and isinstance(contents[0], str):
            return contents[0]
        blocks: list[Message] = []
        for content in contents:
            for block in _as_blocks(content):
                if draft.role == "assistant" and block in blocks:
                    continue  # a later snapshot of the same response repeats it
                blocks.append(block)
        return blocks

    def requests(self, drafts: Sequence[_Draft]) -> tuple[list[RecordedRequest], str | None]:
        requests: list[RecordedRequest] = []
        model: str | None = None
        for index, draft in enumerate(drafts):
            if draft.role != "assistant":
                continue
            with_usage = [r for r in draft.records if r.data["message"].get("usage") is not None]
            record = with_usage[-1] if with_usage else draft.records[-1]
            message = record.data["message"]
            where = f"{self.name}:{record.line}: message"
            response_model = message.get("model")
            if response_model is not None and not isinstance(response_model, str):
                raise TaskFolderError(
                    f"{where}.model: expected a string, got {kind(response_model)}"
                )
            if response_model == _SYNTHETIC_MODEL:
                continue
            model = response_model or model
            usage = message.get("usage")
            if usage is None:
                continue
            try:
                recorded = usage_from_sdk(usage, what="usage")
            except InvalidUsageError as error:
                raise TaskFolderError(f"{where}.{error}") from None
            requests.append(RecordedRequest(index, recorded, response_model, where))
        return requests, model

    # -- one record's content ----------------------------------------------------------------

    def content(self, record: _Record) -> str | list[Message]:
        """The record's message content in windowkeeper's shape (computed once)."""
        cached = self._contents.get(id(record))
        if cached is None:
            cached = self._convert(record)
            self._contents[id(record)] = cached
        return cached

    def blocks(self, record: _Record) -> list[Message]:
        content = self.content(record)
        return content if isinstance(content, list) else []

    def _convert(self, record: _Record) -> str | list[Message]:
        where = f"{self.name}:{record.line}: message"
        message = record.data.get("message")
        if not isinstance(message, dict):
            raise MalformedMessageError(where, f"expected an object, got {kind(message)}")
        role = message.get("role", record.type)
        if role != record.type:
            raise MalformedMessageError(
                f"{where}.role", f"a {record.type} record holds a {role!r} message"
            )
        content = message.get("content")
        if isinstance(content, str):
            return content
        if not isinstance(content, list):
            raise MalformedMessageError(
                f"{where}.content", f"expected a string or an array, got {kind(content)}"
            )
        blocks: list[Message] = []
        for position, block in enumerate(content):
            converted = self._block(block, f"{where}.content[{position}]", record.type)
            if converted is not None:
                blocks.append(converted)
        return blocks

    def _block(self, block: Any, where: str, role: str) -> Message | None:
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise MalformedMessageError(where, "block has no string 'type'")
        block_type = block["type"]
        if block_type == "text":
            text = _field(block, "text", str, where)
            return text_block(text) if text.strip() else None
        if block_type == "tool_use" and role == "assistant":
            call_id = _field(block, "id", str, where)
            if not call_id:
                raise MalformedMessageError(f"{where}.id", "a tool_use needs a non-empty id")
            return {
                "type": "tool_use",
                "id": call_id,
                "name": _field(block, "name", str, where),
                "input": _field(block, "input", dict, where),
            }
        if block_type == "tool_result" and role == "user":
            return self._tool_result(block, where)
        if block_type == "thinking" and role == "assistant":
            text = _field(block, "thinking", str, where)
            signed = block.get("signature") is not None
            signature = _field(block, "signature", str, where) if signed else None
            return signed_thinking(text, signature)
        if block_type == "redacted_thinking" and role == "assistant":
            return {"type": "redacted_thinking", "data": _field(block, "data", str, where)}
        if block_type in ("image", "document"):
            return dict(block)
        self.unknown.append(Unknown(where, block_type))
        return None

    def _tool_result(self, block: Message, where: str) -> Message:
        call_id = _field(block, "tool_use_id", str, where)
        result: Message = {"type": "tool_result", "tool_use_id": call_id}
        content = block.get("content")
        if isinstance(content, list):
            parts: list[Message] = []
            for position, part in enumerate(content):
                inner = f"{where}.content[{position}]"
                if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                    raise MalformedMessageError(inner, "block has no string 'type'")
                if part["type"] == "tool_reference":  # a tool ToolSearch loaded
                    reference = _field(part, "tool_name", str, inner)
                    parts.append(text_block(f"[tool_reference: {reference}]"))
                elif part["type"] not in _RESULT_PARTS:
                    self.unknown.append(Unknown(inner, part["type"]))
                elif part["type"] != "text" or _field(part, "text", str, inner):
                    parts.append(dict(part))
            result["content"] = parts
        elif content is not None:
            result["content"] = _field(block, "content", str, where)
        if "is_error" in block:
            result["is_error"] = _field(block, "is_error", bool, where)
        return result


def _field(block: Message, key: str, expected: type, where: str) -> Any:
    value = block.get(key)
    if not isinstance(value, expected) or (expected is not bool and isinstance(value, bool)):
        names = {str: "a string", dict: "an object", bool: "a boolean"}
        raise MalformedMessageError(
            f"{where}.{key}", f"expected {names[expected]}, got {kind(value)}"
        )
    return value


def _as_blocks(content: str | list[Message]) -> list[Message]:
    if isinstance(content, str):
        return [text_block(content)] if content else []
    return list(content)
