"""The walk the Anthropic rules share: one :class:`Turn` per message, what it saw in its content."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..core._messages import REFUSED_ID_CHARACTERS, ROLES
from ..core._pairing import id_key

__all__ = [
    "BADLY_NAMED",
    "BLANK",
    "DROPPED",
    "RESULTS_SEEN",
    "THINKING_SEEN",
    "TOOL_USES_SEEN",
    "UNNAMED",
    "Ending",
    "Turn",
    "Turns",
]


_THINKING = frozenset({"thinking", "redacted_thinking"})
_TOOL_USES = frozenset({"tool_use", "server_tool_use"})


# What the walk saw in a message's content (the bits of Turn.seen).
DROPPED = 1
"""A block that is not a dict with a string ``type``."""
BLANK = 2
"""A text block without text."""
UNNAMED = 4
"""A tool_use block without a non-empty string id."""
RESULTS_SEEN = 8
"""A tool_result block."""
THINKING_SEEN = 16
"""A thinking or redacted_thinking block."""
TOOL_USES_SEEN = 32
"""A tool_use or server_tool_use block."""
BADLY_NAMED = 64
"""A tool_use block whose string id holds a character the API refuses."""


class Turn:
    """One message of a request, with what the rules need to know of it and of the ones before.

    ``role`` is None when the message is not a dict with a user or assistant role; no rule but
    :class:`Malformed` looks further at such a message, and the message after it starts afresh.
    ``blocks`` are the content blocks with a string ``type`` (block positions index this list).
    ``offered`` holds the tool_use ids (as :func:`~windowkeeper.core._pairing.id_key` gives them)
    of the previous message when that is an assistant message: what this message must answer;
    ``uses`` holds those of this message. ``earlier`` maps the position of each tool_use block
    whose string id the request used before to the path of that first use (None: no such block).

    ``seen`` holds what the walk saw on its one pass over the content, as bits (:data:`DROPPED`,
    :data:`BLANK`, :data:`UNNAMED`, :data:`RESULTS_SEEN`, :data:`THINKING_SEEN`,
    :data:`TOOL_USES_SEEN`, :data:`BADLY_NAMED`), so that a rule
    with nothing to report returns at once.
    """

    __slots__ = (
        "blocks",
        "content",
        "earlier",
        "index",
        "offered",
        "path",
        "previous_role",
        "role",
        "seen",
        "uses",
    )

    # One Turn per message: positional arguments keep the walk cheap.
    def __init__(  # noqa: PLR0917
        self,
        index: int,
        path: str,
        role: str | None,
        previous_role: str | None,
        content: Any = None,
        blocks: Sequence[dict[str, Any]] = (),
        offered: Sequence[Any] = (),
        uses: Sequence[Any] = (),
        earlier: dict[int, str] | None = None,
        seen: int = 0,
    ) -> None:
        self.index = index
        self.path = path
        self.role = role
        self.previous_role = previous_role
        self.content = content
        self.blocks = blocks
        self.offered = offered
        self.uses = uses
        self.earlier = earlier
        self.seen = seen


@dataclass(frozen=True, slots=True)
class Ending:
    """The request as a whole, once walked: its name, what was passed, and its last message."""

    name: str
    messages: Any
    last: Turn | None


def _is_request(messages: Any) -> bool:
    return isinstance(messages, Sequence) and not isinstance(messages, str | bytes)


class Turns:
    """The walk over an Anthropic request: each message as a :class:`Turn`, then its :class:`Ending`."""

    __slots__ = ("_last", "messages", "name")

    def __init__(self, messages: Any, name: str = "messages") -> None:
        self.messages = messages
        self.name = name
        self._last: Turn | None = None

    def end(self) -> Ending:
        """The request as a whole (its last message is the last one the walk gave)."""
        return Ending(self.name, self.messages, self._last)

    def __iter__(self) -> Iterator[Turn]:
        """Each message in context, in order (nothing when the request is not a list)."""
        messages, name = self.messages, self.name
        self._last = None
        if not _is_request(messages):
            return
        previous_role: str | None = None
        offered: Sequence[Any] = ()
        used: dict[str, str] = {}  # tool_use id -> where it was first used
        for index, message in enumerate(messages):
            path = f"{name}[{index}]"
            if not isinstance(message, dict) or message.get("role") not in ROLES:
                turn = Turn(index, path, None, previous_role)
                self._last = turn
                yield turn
                previous_role, offered = None, ()
                continue
            role: str = message["role"]
            content = message.get("content")
            blocks: list[dict[str, Any]] = []
            uses: list[Any] = []
            earlier: dict[int, str] | None = None
            seen = 0
            if isinstance(content, list):
                for block in content:
                    kind = block.get("type") if isinstance(block, dict) else None
                    if kind == "text":
                        if not block.get("text"):
                            seen |= BLANK
                    elif not isinstance(kind, str):
                        seen |= DROPPED
                        continue
                    elif kind == "tool_use":
                        seen |= TOOL_USES_SEEN
                        tool_use_id = block.get("id")
                        uses.append(id_key(tool_use_id))
                        if not isinstance(tool_use_id, str) or not tool_use_id:
                            seen |= UNNAMED
                        else:
                            if REFUSED_ID_CHARACTERS.search(tool_use_id):
                                seen |= BADLY_NAMED
                            if tool_use_id not in used:
                                used[tool_use_id] = f"{path}.content[{len(blocks)}]"
                            else:
                                if earlier is None:
                                    earlier = {}
                                earlier[len(blocks)] = used[tool_use_id]
                    elif kind == "tool_result":
                        seen |= RESULTS_SEEN
                    elif kind in _THINKING:
                        seen |= THINKING_SEEN
                    elif kind == "server_tool_use":
                        seen |= TOOL_USES_SEEN
                    blocks.append(block)
            turn = Turn(
                index, path, role, previous_role, content, blocks, offered, uses, earlier, seen
            )
            self._last = turn
            yield turn
            offered = uses if role == "assistant" else ()
            previous_role = role
