"""Claude Code's records and the main line through them: which entries of a session file are
the conversation (see transcripts.claude_code)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .._errors import TaskFolderError
from ._common import Compaction, kind

__all__: list[str] = []  # its names are transcripts.claude_code's own

_MESSAGE_TYPES = frozenset({"user", "assistant"})
_SYNTHETIC_MODEL = "<synthetic>"

_KNOWN_TYPES = _MESSAGE_TYPES | {
    "summary",
    "system",
    "file-history-snapshot",
    "queue-operation",
    "custom-title",
    "progress",
    # session metadata of Claude Code 2.1.x, none of it sent to the model
    "permission-mode",
    "mode",
    "last-prompt",
    "agent-name",
    "ai-title",
    "pr-link",
    "tag",
    "worktree-state",
    "cost-state",
    # bookkeeping of 2.1.22x: file backups taken after a snapshot, a remote-control bridge
    "file-history-delta",
    "bridge-session",
    # a forked worker's first line: where its context comes from (read for a warning)
    "fork-context-ref",
}


@dataclass(slots=True, eq=False)
class _Record:
    line: int
    data: dict[str, Any]
    type: str
    uuid: str | None
    parent: str | None
    sidechain: bool

    @property
    def is_message(self) -> bool:
        return self.type in _MESSAGE_TYPES and not (
            self.type == "assistant" and self.data.get("isApiErrorMessage") is True
        )

    @property
    def boundary(self) -> bool:
        return self.type == "system" and self.data.get("subtype") == "compact_boundary"

    @property
    def response_id(self) -> str | None:
        """What names the model call the record is part of: ``requestId``, else ``message.id``."""
        request = self.data.get("requestId")
        if isinstance(request, str) and request:
            return request
        message = self.data.get("message")
        response = message.get("id") if isinstance(message, dict) else None
        return response if isinstance(response, str) and response else None

    @property
    def is_response(self) -> bool:
        """An assistant record of a real model response that recorded its usage."""
        if self.type != "assistant" or not self.is_message:
            return False
        message = self.data.get("message")
        return (
            isinstance(message, dict)
            and message.get("usage") is not None
            and message.get("model") != _SYNTHETIC_MODEL
        )


@dataclass(slots=True, eq=False)
class _Draft:
    """The records that make one message: one response, or a run of user records."""

    role: str
    records: list[_Record] = field(default_factory=list)


def _record(line: int, data: dict[str, Any], name: str) -> _Record:
    where = f"{name}:{line}"
    record_type = data.get("type")
    if not isinstance(record_type, str):
        raise TaskFolderError(f"{where}: type: expected a string, got {kind(record_type)}")
    uuid, parent = data.get("uuid"), data.get("parentUuid")
    for key, value in (("uuid", uuid), ("parentUuid", parent)):
        if value is not None and not isinstance(value, str):
            raise TaskFolderError(f"{where}: {key}: expected a string, got {kind(value)}")
    if record_type in _MESSAGE_TYPES and uuid is None:
        raise TaskFolderError(f"{where}: uuid: a {record_type} record needs one")
    prompt = _queued_prompt(data)
    if prompt is not None and uuid is not None:
        data = {**data, "type": "user", "message": {"role": "user", "content": prompt}}
        record_type = "user"
    return _Record(line, data, record_type, uuid, parent, data.get("isSidechain") is True)


_HANDED_ON = ("prompt", "task-notification")
"""The ``commandMode`` of queued commands Claude Code hands to the model as the user's turn: a
prompt typed while it worked, and a background task's notice that it ended (the
``<task-notification>`` the model then reads the output file of)."""


def _queued_prompt(data: dict[str, Any]) -> Any:
    """What the user typed while the agent worked, or a background task's notice, from a
    ``queued_command`` attachment (None for any other record): Claude Code hands it to the
    model with the next request, and the model answers it, so it is read as user text where
    it was written."""
    attachment = data.get("attachment")
    if data.get("type") != "attachment" or not isinstance(attachment, dict):
        return None
    if attachment.get("type") != "queued_command":
        return None
    if attachment.get("commandMode", "prompt") not in _HANDED_ON:
        return None
    prompt = attachment.get("prompt")
    if isinstance(prompt, str):
        return prompt
    # only the shapes seen: text and image blocks (any other stays an unknown attachment)
    if isinstance(prompt, list) and all(_prompt_block(block) for block in prompt):
        return prompt
    return None


def _prompt_block(block: Any) -> bool:
    if not isinstance(block, dict):
        return False
    if block.get("type") == "text":
        return isinstance(block.get("text"), str)
    return block.get("type") == "image" and isinstance(block.get("source"), dict)


@dataclass(frozen=True, slots=True, eq=False)
class _Join:
    """Where the chain went past a record the file does not hold: ``record`` names ``missing``,
    and the chain goes on at ``joined``."""

    record: _Record
    missing: str
    joined: _Record


def _main_line(
    leaf: _Record | None,
    by_uuid: dict[str, _Record],
    compaction: Compaction,
    joins: list[_Join] | None = None,
) -> list[_Record]:
    """The chain from ``leaf`` back to its root, in conversation order.

    A parent the file does not hold is where a file cut out of a longer session starts, unless
    the records written before it lead back to the session's own start (a record with no
    parent): then it is a record Claude Code (or a copy of the file) lost, and the live request
    held what came before (its recorded usage says so). The chain goes on at the record written
    last before it (``by_uuid`` is in file order), added to ``joins``. A compaction summary
    whose boundary is lost starts the chain, as its boundary would.
    """
    chain: list[_Record] = []
    seen: set[int] = set()
    written: list[_Record] | None = None  # file order, made at the first lost parent only
    node = leaf
    while node is not None and id(node) not in seen:  # each record is visited once
        seen.add(id(node))
        chain.append(node)
        parent = node.parent
        if parent is None and node.boundary and compaction == "keep":
            logical = node.data.get("logicalParentUuid")
            parent = logical if isinstance(logical, str) else None
        if parent is None:
            break
        child, node = node, by_uuid.get(parent)
        if node is None and child.data.get("isCompactSummary") is not True:
            written = list(by_uuid.values()) if written is None else written
            before = next((i for i, record in enumerate(written) if record is child), 0)
            earlier = written[before - 1] if before else None
            if earlier is not None and _reaches_start(earlier, by_uuid):
                node = earlier
                if joins is not None:
                    joins.append(_Join(child, parent, earlier))
    chain.reverse()
    return chain


def _reaches_start(record: _Record, by_uuid: dict[str, _Record]) -> bool:
    """Whether the parents of ``record`` lead to a record without a parent (held in the file)."""
    seen: set[int] = set()
    node: _Record | None = record
    while node is not None and id(node) not in seen:  # each record is visited once
        seen.add(id(node))
        if node.parent is None:
            return True
        node = by_uuid.get(node.parent)
    return False


def _live_leaf(records: Sequence[_Record], by_uuid: dict[str, _Record]) -> _Record | None:
    """The message the live conversation ends at.

    The newest message of the file, as a rule: a redo forks the chain and the newest branch is
    the one the user continued. But Claude Code also forks its chain at ``progress`` records
    (hook and subagent progress written beside the tool results; a later message may name one
    as its parent), and then the newest message can sit on a branch that never reaches the last
    model response. When the branches of the newest message and of the last response recorded
    with usage part at such a record, the live one is the branch of the last response (the
    request its usage measured was built from it): its newest descendant is the leaf.
    """
    newest = next((record for record in reversed(records) if record.is_message), None)
    last = next((record for record in reversed(records) if record.is_response), None)
    if newest is None or last is None or newest is last:
        return newest
    ancestors = {id(record) for record in _main_line(newest, by_uuid, "keep")}
    if id(last) in ancestors:
        return newest
    if not _parts_at_bookkeeping(newest, last, by_uuid):
        return newest
    children: dict[str, list[_Record]] = {}
    for record in records:
        if record.parent is not None:
            children.setdefault(record.parent, []).append(record)
    leaf, stack, seen = last, [last], {id(last)}
    while stack:
        node = stack.pop()
        for child in children.get(node.uuid or "", ()):
            if id(child) in seen:
                continue
            seen.add(id(child))
            stack.append(child)
            if child.is_message and child.line > leaf.line:
                leaf = child
    return leaf


def _parts_at_bookkeeping(a: _Record, b: _Record, by_uuid: dict[str, _Record]) -> bool:
    """Whether the chains of ``a`` and ``b`` part where one goes on through a non-message record."""
    chain_a = _main_line(a, by_uuid, "keep")
    chain_b = _main_line(b, by_uuid, "keep")
    common = 0
    for x, y in zip(chain_a, chain_b, strict=False):
        if x is not y:
            break
        common += 1
    if common == 0:
        return True  # no common root: a chain broken by a record the file does not hold
    return any(
        common < len(chain) and chain[common].type not in _MESSAGE_TYPES
        for chain in (chain_a, chain_b)
    )


def _forks(
    records: Sequence[_Record],
    line: Sequence[_Record],
    drafts: Sequence[_Draft],
    by_uuid: dict[str, _Record],
) -> int:
    """The branch points of messages the conversation read leaves out (redos, dead ends)."""
    used = {id(record) for record in line}
    used.update(id(record) for draft in drafts for record in draft.records)
    points: set[int] = set()
    for record in records:
        if not record.is_message or id(record) in used:
            continue
        node, seen = record, set()
        while id(node) not in seen:
            seen.add(id(node))
            parent = by_uuid.get(node.parent) if node.parent is not None else None
            if parent is None or id(parent) in used:
                break
            node = parent
        points.add(id(node))
    return len(points)


_FORK_REF = "fork-context-ref"
"""The first line of a forked worker's file (2.1.22x): where its context comes from."""


def _forked_from(record: _Record, name: str) -> str:
    """The warning for a forked worker's transcript (2.1.22x): the context it started with is
    the parent session's history up to a record, which this file does not hold."""
    parent = record.data.get("parentSessionId")
    last = record.data.get("parentLastUuid")
    return (
        f"{name}:{record.line}: this worker was forked from session {parent!r}: the context it"
        f" started with is that session's history up to record {last!r}, which is in that"
        " session's file, not here: the usage recorded counts it, the messages read here do not"
    )
