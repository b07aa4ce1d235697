"""What leaves the library: requests in exactly the provider's wire shape, nothing else.

Histories carry fields that only storage knows: Cline writes ``ts``, ``metrics`` and ``modelInfo``
on messages and ``call_id``, ``reasoning_details`` or ``summary`` on blocks; SDK objects dumped to
dicts add ``None`` for every unset field (``citations``, ``annotations``). The providers refuse
them ("Extra inputs are not permitted"). The session keeps them in its history, so that a task
folder round-trips, and sends only what the provider's request parameters define.

The rule, for each shape:

- **Anthropic Messages.** A message keeps ``role`` and ``content``. A block keeps the keys that
  its type defines in the Messages API (:data:`ANTHROPIC_BLOCK_KEYS`; a ``tool_result``'s inner
  blocks likewise); keys whose value is ``None`` are left out (``None`` means "not set").
- **OpenAI Chat Completions.** A message keeps the keys its role defines
  (:data:`OPENAI_MESSAGE_KEYS`), a content part those of its type, a tool call ``id``, ``type``
  and ``function`` (``name``, ``arguments``).
- A block or part of a type the provider does not take (an unknown type, ``thinking`` for Chat
  Completions, a thinking block in a user message, an empty text) is **dropped, and reported**:
  each drop is one :class:`Repair` naming the place in the history. A message left with nothing
  gets one text block saying so (:data:`EMPTY_MESSAGE_NOTICE`), so the request stays valid.

Shaping copies what it sends: messages, content lists, blocks and a tool_result's inner blocks are
new objects, so a caller may set ``cache_control`` on what it got without touching the history.
Deeper values (a tool's ``input``, an image ``source``) are shared and must be treated as read-only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import chain
from typing import Any, cast

from .._record import record
from ..core._messages import Message, shared_prefix

__all__ = [
    "ANTHROPIC_BLOCK_KEYS",
    "EMPTIED",
    "EMPTY_MESSAGE_NOTICE",
    "OPENAI_MESSAGE_KEYS",
    "OPENAI_PART_KEYS",
    "Repair",
    "SentDict",
    "SentList",
    "WireShaper",
    "anthropic_emptied",
    "anthropic_wire",
    "openai_wire",
]

EMPTY_MESSAGE_NOTICE = "[windowkeeper: this message had no content the provider accepts.]"
"""The text block of a message whose every block was dropped, or that was empty."""
EMPTIED = "empty: replaced by a notice"
"""The detail of the repair that gives a message that notice."""

_TOOL_RESULT_KEYS = frozenset({"type", "tool_use_id", "content", "is_error", "cache_control"})
_SERVER_RESULT_KEYS = frozenset({"type", "tool_use_id", "content", "cache_control"})

ANTHROPIC_BLOCK_KEYS: dict[str, frozenset[str]] = {
    "text": frozenset({"type", "text", "cache_control", "citations"}),
    "image": frozenset({"type", "source", "cache_control"}),
    "document": frozenset({"type", "source", "cache_control", "citations", "context", "title"}),
    "search_result": frozenset(
        {"type", "source", "title", "content", "cache_control", "citations"}
    ),
    "thinking": frozenset({"type", "thinking", "signature"}),
    "redacted_thinking": frozenset({"type", "data"}),
    "tool_use": frozenset({"type", "id", "name", "input", "cache_control"}),
    "tool_result": _TOOL_RESULT_KEYS,
    "server_tool_use": frozenset({"type", "id", "name", "input", "cache_control"}),
    "web_search_tool_result": _SERVER_RESULT_KEYS,
    "web_fetch_tool_result": _SERVER_RESULT_KEYS,
    "code_execution_tool_result": _SERVER_RESULT_KEYS,
    "bash_code_execution_tool_result": _SERVER_RESULT_KEYS,
    "text_editor_code_execution_tool_result": _SERVER_RESULT_KEYS,
    "tool_search_tool_result": _SERVER_RESULT_KEYS,
    "container_upload": frozenset({"type", "file_id", "cache_control"}),
}
"""Block type -> the keys the Messages API defines for it (checked against the SDK in the tests)."""

_TOOL_RESULT_INNER = frozenset({"text", "image", "document", "search_result"})
_THINKING = frozenset({"thinking", "redacted_thinking"})

OPENAI_MESSAGE_KEYS: dict[str, frozenset[str]] = {
    "system": frozenset({"role", "content", "name"}),
    "developer": frozenset({"role", "content", "name"}),
    "user": frozenset({"role", "content", "name"}),
    "assistant": frozenset(
        {"role", "content", "name", "tool_calls", "refusal", "audio", "function_call"}
    ),
    "tool": frozenset({"role", "content", "tool_call_id"}),
}
"""Role -> the keys a Chat Completions request message of that role may have."""

OPENAI_PART_KEYS: dict[str, frozenset[str]] = {
    "text": frozenset({"type", "text"}),
    "image_url": frozenset({"type", "image_url"}),
    "input_audio": frozenset({"type", "input_audio"}),
    "file": frozenset({"type", "file"}),
    "refusal": frozenset({"type", "refusal"}),
}
"""Content part type -> its keys."""

_OPENAI_ROLE_PARTS: dict[str, frozenset[str]] = {
    "system": frozenset({"text"}),
    "developer": frozenset({"text"}),
    "user": frozenset({"text", "image_url", "input_audio", "file"}),
    "assistant": frozenset({"text", "refusal"}),
    "tool": frozenset({"text"}),
}
_TOOL_CALL_KEYS = frozenset({"id", "type", "function"})
_FUNCTION_KEYS = frozenset({"name", "arguments"})


@record(frozen=True, slots=True)
class Repair:
    """One change made so that a request is valid: where (``messages[3].content[1]``) and what."""

    path: str
    detail: str

    def __str__(self) -> str:
        return f"{self.path}: {self.detail}"


def _has_text(text: Any) -> bool:
    """Text a provider accepts: a string with something besides whitespace."""
    return isinstance(text, str) and not text.isspace() and bool(text)


def _only(value: dict[str, Any], keys: frozenset[str]) -> dict[str, Any]:
    return {key: item for key, item in value.items() if key in keys and item is not None}


# -- Anthropic -------------------------------------------------------------------------------


def _refusal(block: Any, role: str) -> str | None:
    """Why the Messages API takes no ``block`` in a ``role`` message; None when it takes it."""
    if not isinstance(block, dict):
        return "dropped: not a block"
    kind = block.get("type")
    if not isinstance(kind, str) or kind not in ANTHROPIC_BLOCK_KEYS:
        return f"dropped: block type {kind!r} is not part of the Messages API"
    if kind in _THINKING and role != "assistant":
        return f"dropped: a {kind} block in a {role} message"
    if kind == "text" and not _has_text(block.get("text")):
        return "dropped: an empty text block"
    return None


def _anthropic_block(
    block: Any, role: str, path: str, repairs: list[Repair]
) -> dict[str, Any] | None:
    refused = _refusal(block, role)
    if refused is not None:
        repairs.append(Repair(path, refused))
        return None
    kind = block["type"]
    shaped = _only(block, ANTHROPIC_BLOCK_KEYS[kind])
    if kind == "tool_result" and isinstance(shaped.get("content"), list):
        inner = []
        for position, item in enumerate(shaped["content"]):
            where = f"{path}.content[{position}]"
            item_kind = item.get("type") if isinstance(item, dict) else None
            if item_kind not in _TOOL_RESULT_INNER:
                repairs.append(Repair(where, f"dropped: {item_kind!r} cannot be in a tool_result"))
            elif item_kind == "text" and not _has_text(item.get("text")):
                repairs.append(Repair(where, "dropped: an empty text block"))
            else:
                inner.append(_only(item, ANTHROPIC_BLOCK_KEYS[item_kind]))
        shaped["content"] = inner
    return shaped


def anthropic_message(message: Message, path: str, repairs: list[Repair]) -> Message:
    """``message`` as the Messages API takes it (a new dict); changes are added to ``repairs``."""
    role = message.get("role")
    content = message.get("content")
    if isinstance(content, str):
        if _has_text(content):
            return {"role": role, "content": content}
        repairs.append(Repair(f"{path}.content", EMPTIED))
        return {"role": role, "content": [{"type": "text", "text": EMPTY_MESSAGE_NOTICE}]}
    blocks = []
    for position, block in enumerate(content if isinstance(content, list) else []):
        shaped = _anthropic_block(block, str(role), f"{path}.content[{position}]", repairs)
        if shaped is not None:
            blocks.append(shaped)
    if not blocks:
        repairs.append(Repair(f"{path}.content", EMPTIED))
        blocks.append({"type": "text", "text": EMPTY_MESSAGE_NOTICE})
    return {"role": role, "content": blocks}


def anthropic_emptied(message: Message) -> bool:
    """Whether :func:`anthropic_message` gives ``message`` the empty-message notice: nothing in
    it is text or a block the Messages API takes (found without shaping a copy)."""
    content = message.get("content")
    if isinstance(content, str):
        return not _has_text(content)
    role = str(message.get("role"))
    return not isinstance(content, list) or all(_refusal(block, role) for block in content)


def anthropic_wire(messages: Sequence[Message], name: str = "messages") -> list[Message]:
    """``messages`` in the Messages API's shape (see the module docstring); the repairs are lost."""
    return [anthropic_message(m, f"{name}[{i}]", []) for i, m in enumerate(messages)]


# -- OpenAI ----------------------------------------------------------------------------------


def _openai_part(part: Any, role: str, path: str, repairs: list[Repair]) -> dict[str, Any] | None:
    kind = part.get("type") if isinstance(part, dict) else None
    if not isinstance(kind, str) or kind not in _OPENAI_ROLE_PARTS.get(role, frozenset()):
        repairs.append(Repair(path, f"dropped: a {kind!r} part cannot be in a {role} message"))
        return None
    if kind == "text" and not _has_text(part.get("text")):
        repairs.append(Repair(path, "dropped: an empty text part"))
        return None
    shaped = _only(part, OPENAI_PART_KEYS[kind])
    if kind == "image_url" and isinstance(shaped.get("image_url"), dict):
        shaped["image_url"] = _only(shaped["image_url"], frozenset({"url", "detail"}))
    return shaped


def _tool_call(call: Any) -> dict[str, Any]:
    shaped = _only(call, _TOOL_CALL_KEYS) if isinstance(call, dict) else {}
    function = shaped.get("function")
    if isinstance(function, dict):
        shaped["function"] = _only(function, _FUNCTION_KEYS)
    return shaped


def openai_message(message: Message, path: str, repairs: list[Repair]) -> Message:
    """``message`` as Chat Completions takes it (a new dict); changes are added to ``repairs``."""
    role = str(message.get("role"))
    shaped = _only(message, OPENAI_MESSAGE_KEYS.get(role, frozenset({"role", "content"})))
    calls = shaped.get("tool_calls")
    if isinstance(calls, list):
        shaped["tool_calls"] = [_tool_call(call) for call in calls]
    content = message.get("content")
    if isinstance(content, list):
        parts = []
        for position, part in enumerate(content):
            kept = _openai_part(part, role, f"{path}.content[{position}]", repairs)
            if kept is not None:
                parts.append(kept)
        if parts:
            shaped["content"] = parts
        elif calls:
            shaped["content"] = None
        else:
            repairs.append(Repair(f"{path}.content", EMPTIED))
            shaped["content"] = EMPTY_MESSAGE_NOTICE
    elif not content and not calls:
        repairs.append(Repair(f"{path}.content", EMPTIED))
        shaped["content"] = EMPTY_MESSAGE_NOTICE
    elif role == "assistant" and calls and content is None:
        shaped["content"] = None
    return shaped


def openai_wire(messages: Sequence[Message], name: str = "messages") -> list[Message]:
    """``messages`` in the Chat Completions shape (see the module docstring); repairs are lost."""
    return [openai_message(m, f"{name}[{i}]", []) for i, m in enumerate(messages)]


# -- the session's stage ---------------------------------------------------------------------


class _Watched:
    """A flag shared by the containers of one message's copy: set when any of them is changed,
    which also puts it in its shaper's list of changed copies."""

    __slots__ = ("changed", "changes")

    def __init__(self, changes: list[_Watched]) -> None:
        self.changed = False
        self.changes = changes


def _mutator(base: type, name: str) -> Any:
    method = getattr(base, name)

    def mutate(self: Any, *args: Any, **kwargs: Any) -> Any:
        watched = self._watched
        if not watched.changed:
            watched.changed = True
            watched.changes.append(watched)
        return method(self, *args, **kwargs)

    mutate.__name__ = name
    return mutate


class SentDict(dict):  # type: ignore[type-arg]
    """A plain dict for every reader; changing it tells the shaper that handed it out."""

    __slots__ = ("_watched",)
    _watched: _Watched

    def __reduce_ex__(self, protocol: Any) -> Any:  # copies and pickles are plain dicts
        return (dict, (dict(self),))


class SentList(list):  # type: ignore[type-arg]
    """A plain list for every reader; changing it tells the shaper that handed it out."""

    __slots__ = ("_watched",)
    _watched: _Watched

    def __reduce_ex__(self, protocol: Any) -> Any:  # copies and pickles are plain lists
        return (list, (list(self),))


for _name in (
    "__setitem__",
    "__delitem__",
    "__ior__",
    "clear",
    "pop",
    "popitem",
    "setdefault",
    "update",
):
    setattr(SentDict, _name, _mutator(dict, _name))
for _name in (
    "__setitem__",
    "__delitem__",
    "__iadd__",
    "__imul__",
    "append",
    "clear",
    "extend",
    "insert",
    "pop",
    "remove",
    "reverse",
    "sort",
):
    setattr(SentList, _name, _mutator(list, _name))


def _watched_dict(value: dict[str, Any], watched: _Watched) -> SentDict:
    copy = SentDict(value)
    copy._watched = watched
    return copy


def _watched_list(items: list[Any], watched: _Watched) -> SentList:
    copy = SentList(items)
    copy._watched = watched
    return copy


def _fresh(message: Message, watched: _Watched) -> Message:
    """A copy of a shaped message down to a tool_result's inner blocks and a call's function.

    Every container of the copy reports a change to ``watched``.
    """
    content = message.get("content")
    copy = _watched_dict(message, watched)
    if isinstance(content, list):
        blocks = []
        for block in content:
            own = _watched_dict(block, watched)
            inner = own.get("content")
            if isinstance(inner, list):
                dict.__setitem__(
                    own,
                    "content",
                    _watched_list([_watched_dict(item, watched) for item in inner], watched),
                )
            blocks.append(own)
        dict.__setitem__(copy, "content", _watched_list(blocks, watched))
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        fresh_calls = []
        for call in calls:
            own = _watched_dict(call, watched)
            if isinstance(call.get("function"), dict):
                dict.__setitem__(own, "function", _watched_dict(call["function"], watched))
            fresh_calls.append(own)
        dict.__setitem__(copy, "tool_calls", _watched_list(fresh_calls, watched))
    return copy


class WireShaper:
    """Shapes each request for the wire, remembering each message's copy.

    A message object is shaped once (messages are treated as values), into the copy a caller
    receives; the same copy is handed out again while the caller has not changed it. The copies
    are dicts and lists of their own subclasses (:class:`SentDict`, :class:`SentList`), which
    read as plain ones and note any change made to them, per message: a changed copy is shaped
    again from its message, the others stay. While none was changed, a request that starts
    with the last one's messages reuses that part whole, so a steady turn costs time in its new
    messages only, and one copy per message sent is kept. Not thread-safe.
    """

    __slots__ = ("_changes", "_last", "_memo", "_shape")

    def __init__(self, shape: Callable[[Message, str, list[Repair]], Message | None]) -> None:
        self._shape = shape
        # id -> (source, repairs relative to the message, handed out copy, its watcher); the
        # copy and watcher are None for a message the shape drops
        self._memo: dict[int, tuple[Message, tuple[Repair, ...], Message | None, Any]] = {}
        # the last call: sources, copies handed out (None: dropped), (position, repairs) for
        # the positions with repairs, the positions dropped
        self._last: tuple[
            list[Message], list[Message | None], list[tuple[int, tuple[Repair, ...]]], list[int]
        ]
        self._last = ([], [], [], [])
        self._changes: list[_Watched] = []  # watchers of the copies the caller changed

    def shape(
        self, messages: Sequence[Message], name: str = "messages"
    ) -> tuple[list[Message], tuple[Repair, ...]]:
        """The shaped messages (caller-owned copies) and the repairs, named ``name[i]...``."""
        sources, handed, found, dropped = self._last
        done = shared_prefix(sources, messages)
        if self._changes:  # the caller edited something it got: look at every message
            done = 0
            self._changes.clear()
        memo = self._memo
        out_handed = handed[:done]
        out_found = [entry for entry in found if entry[0] < done]
        out_dropped = [position for position in dropped if position < done]
        for position in range(done, len(messages)):
            message = messages[position]
            known = memo.get(id(message))
            if (
                known is None
                or known[0] is not message
                or (known[3] is not None and known[3].changed)
            ):
                problems: list[Repair] = []
                form = self._shape(message, "@", problems)
                if form is None:
                    known = (message, tuple(problems), None, None)
                else:
                    watched = _Watched(self._changes)
                    known = (message, tuple(problems), _fresh(form, watched), watched)
                memo[id(message)] = known
            out_handed.append(known[2])
            if known[2] is None:
                out_dropped.append(position)
            if known[1]:
                path = f"{name}[{position}]"
                repaired = tuple(Repair(r.path.replace("@", path, 1), r.detail) for r in known[1])
                out_found.append((position, repaired))
        if len(memo) > 2 * len(messages) + 64:  # forget messages no longer sent
            live = {id(message) for message in messages}
            self._memo = {key: entry for key, entry in memo.items() if key in live}
        self._last = (list(messages), out_handed, out_found, out_dropped)
        # nothing dropped: every position holds a copy
        wired = (
            list(filter(None, out_handed)) if out_dropped else cast(list[Message], out_handed[:])
        )
        return wired, tuple(chain.from_iterable(repairs for _, repairs in out_found))
