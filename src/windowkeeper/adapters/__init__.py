"""Adapters that put a :class:`~windowkeeper.ContextSession` where agents are built.

- :mod:`windowkeeper.adapters.langchain`: ``WindowkeeperMiddleware``, a LangChain v1
  ``AgentMiddleware`` for ``langchain.agents.create_agent`` (extra ``windowkeeper[langchain]``);
- :mod:`windowkeeper.adapters.pydantic_ai`: ``WindowkeeperCapability``, a PydanticAI v2
  capability for ``pydantic_ai.Agent(capabilities=[...])`` (extra ``windowkeeper[pydantic-ai]``).

Each keeps one session per conversation (a LangGraph thread, a PydanticAI conversation id). On
every model call it converts the framework's messages to Anthropic-shaped dicts (each message
object once), ``sync``\\ s the session to them, ``prepare``\\ s the request, and hands the model
the framework's own message objects for what the session sends: the very objects where the
session sends a message unchanged, copies with the new content where it changed one (a masked
or clipped tool result, the truncation notice), and nothing for the hidden middle. The view is
for that call only: the framework's history keeps every message. The usage the model reports is
then recorded, which calibrates the session's estimate.

Importing this package imports no framework; each adapter module imports its own. What follows
is the machinery both share, private to the adapters (see docs/adapters.md for the adapters).
"""

from __future__ import annotations

import hashlib
import inspect
import math
import os
import re
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from .._errors import ConfigurationError
from ..core._truncation import FIRST_KEPT, DeletedRange, visible_start
from ..core._window import ContextWindowInfo
from ..session._greeting import is_opening
from ..session._session import ContextSession, Prepared, Synced
from ..storage import SessionStore

__all__ = ["SessionFactory", "StoreFactory"]  # the factories the adapters take

T = TypeVar("T")

OPAQUE_PREFIX = "x-"
"""Blocks whose type starts with this hold what the framework sends but the session must not
touch (thinking, provider-native parts, system prompts inside the conversation): counted by the
estimate, left out of what the session sends, and put back by the adapter where they stood."""

_PROBE_WINDOW = 128_000  # a window for the probe session when the model decides it later
_RESERVED_OPTIONS = frozenset({"context_window", "model", "task_dir", "store", "format"})
_SAFE_FOLDER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def default_conversation(value: str | None, old: str | None, old_name: str) -> str:
    """The id of the conversation a call without one belongs to: ``default_conversation_id``, the
    one name every adapter gives it, or the adapter's older keyword (``old_name``, deprecated)."""
    name = "default_conversation_id"
    if old is not None:
        if value is not None:
            raise ConfigurationError(f"give default_conversation_id or {old_name}, not both")
        warnings.warn(
            f"{old_name} is deprecated: use default_conversation_id",
            DeprecationWarning,
            stacklevel=3,
        )
        value, name = old, old_name
    if value is None:
        return "default"
    if not isinstance(value, str):
        raise ConfigurationError(f"{name} must be a string")
    return value


def renamed(
    value: T | None, old: T | None, old_name: str, name: str = "conversation_id"
) -> T | None:
    """``value``, or the value given under its deprecated older name ``old_name`` (warned).

    Every adapter calls the conversation key ``conversation_id``; the names an adapter used
    before (``thread_id``, ``key``) keep working for one release with a DeprecationWarning.
    """
    if old is None:
        return value
    if value is not None:
        raise ConfigurationError(f"give {name} or {old_name}, not both")
    warn_renamed(old_name, name, stacklevel=4)
    return old


def warn_renamed(old_name: str, name: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old_name`` is deprecated for ``name`` (at the caller's caller by default)."""
    warnings.warn(
        f"{old_name} is deprecated: use {name}", DeprecationWarning, stacklevel=stacklevel
    )


def folder_name(key: str) -> str:
    """A folder name for a conversation key: the key itself when it is a safe name, else a
    readable part and a hash (so that two keys never share a folder)."""
    if _SAFE_FOLDER.fullmatch(key):
        return key
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", key).strip("._-")[:48]
    return f"{readable}-{digest}" if readable else digest


def jsonable(value: Any, depth: int = 0) -> Any:
    """``value`` as plain JSON (what a session accepts): tuples become lists, non-string keys and
    other objects their ``str``, non-finite floats their ``repr``."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if depth >= 64:
        return str(value)
    if isinstance(value, Mapping):
        return {str(key): jsonable(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(item, depth + 1) for item in value]
    return str(value)


def is_opaque(block: Mapping[str, Any]) -> bool:
    kind = block.get("type")
    return isinstance(kind, str) and kind.startswith(OPAQUE_PREFIX)


def sent_blocks(content: Any) -> list[dict[str, Any]]:
    """A message's content as a list of blocks (a string is one text block, ``""`` none)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content) if isinstance(content, list) else []


def merge_blocks(
    originals: Sequence[tuple[T, dict[str, Any] | None]],
    sent: Sequence[dict[str, Any]],
    back: Callable[[dict[str, Any]], T],
) -> list[T]:
    """The framework items for the ``sent`` blocks of a message that changed.

    ``originals`` pairs each item of the source message(s) with the block the session sends for
    it (None for an opaque item, which the session never sends). An item whose block is still
    sent is kept as it is; one the session never sends is kept where it stood; a sent block that
    matches no original (a changed or added one) becomes ``back(block)``, in order.
    """
    output: list[T] = []
    position = 0
    for original, block in originals:
        if block is None:
            output.append(original)
            continue
        try:
            found = list(sent).index(block, position)
        except ValueError:
            continue  # changed or gone: its replacement, if any, comes from ``sent`` in order
        output.extend(back(item) for item in sent[position:found])
        output.append(original)
        position = found + 1
    output.extend(back(item) for item in sent[position:])
    return output


def sources(
    roles: Sequence[str], deleted_range: DeletedRange | None, sent: Sequence[Mapping[str, Any]]
) -> list[list[int]] | None:
    """For each sent message, the history indices it was made from; None when that is unclear.

    A session sends messages 0-1 and those after its hidden range, each run of one role merged
    into one message; before a greeting (an assistant message 0) the placeholder user turn,
    made from no message of the history (an empty list: the adapter makes its own).
    """
    if roles and roles[0] == "assistant" and sent and is_opening(sent[0]):
        after = sources(roles, deleted_range, sent[1:])
        return None if after is None else [[], *after]
    count = len(roles)
    if count <= 1:
        visible = list(range(count))
    else:
        visible = [0, 1, *range(max(visible_start(deleted_range), FIRST_KEPT), count)]
    runs: list[list[int]] = []
    for index in visible:
        if runs and roles[runs[-1][-1]] == roles[index]:
            runs[-1].append(index)
        else:
            runs.append([index])
    if len(runs) != len(sent):
        return None
    if any(message.get("role") != roles[run[0]] for run, message in zip(runs, sent, strict=True)):
        return None
    return runs


class _Piece(Protocol):
    """A framework message the adapter converted, with the blocks it became on the wire."""

    @property
    def wire(self) -> Sequence[Mapping[str, Any]]: ...


P = TypeVar("P", bound=_Piece)


def sent_from(
    groups: Sequence[Sequence[P]],
    runs: list[list[int]] | None,
    position: int,
    message: Mapping[str, Any],
) -> tuple[list[P], bool]:
    """The pieces sent message ``position`` was made from (none when :func:`sources` could not
    tell), and whether it is sent exactly as they were (then the framework's own messages go
    back, not rebuilt ones)."""
    group = (
        [piece for index in runs[position] for piece in groups[index]] if runs is not None else []
    )
    unchanged = bool(group) and sent_blocks(message.get("content")) == [
        block for piece in group for block in piece.wire
    ]
    return group, unchanged


@dataclass(eq=False)
class Conversation:
    """One conversation's session, its lock and the adapter's per-message memo."""

    key: str
    session: ContextSession
    lock: threading.Lock = field(default_factory=threading.Lock)
    memo: dict[Any, Any] = field(default_factory=dict)
    last_prepared: Prepared | None = None
    last_synced: Synced | None = None

    def prepare(
        self,
        history: list[dict[str, Any]],
        *,
        system: str | None,
        tools: list[dict[str, Any]] | None,
        max_output_tokens: int | None,
    ) -> Prepared:
        """``sync`` the session to ``history``, then ``prepare`` (under the conversation's lock)."""
        with self.lock:
            self.last_synced = self.session.sync(history)
            prepared = self.session.prepare(
                system=system or None, tools=tools or None, max_output_tokens=max_output_tokens
            )
            self.last_prepared = prepared
            return prepared

    def record_usage(self, usage: Any) -> None:
        with self.lock:
            self.session.record_usage(usage)


StoreFactory = Callable[[str], SessionStore]
SessionFactory = Callable[[str], ContextSession]


class Sessions:
    """One :class:`ContextSession` per conversation key, made on first use (thread-safe)."""

    def __init__(
        self,
        *,
        context_window: int | ContextWindowInfo | None,
        model: str | None,
        task_root: str | os.PathLike[str] | None,
        store_factory: StoreFactory | None,
        session_factory: SessionFactory | None,
        options: Mapping[str, Any],
        adapter: str = "adapter",
        session_format: str = "anthropic",
    ) -> None:
        try:
            self._check(context_window, model, options, session_format)
        except ConfigurationError as error:
            raise ConfigurationError(f"{adapter}: {error}") from None
        given = [
            name
            for name, value in (
                ("task_root", task_root),
                ("store_factory", store_factory),
                ("session_factory", session_factory),
            )
            if value is not None
        ]
        if len(given) > 1:
            raise ConfigurationError(f"give at most one of {', '.join(given)}")
        if session_factory is not None and (
            options or context_window is not None or model is not None
        ):
            raise ConfigurationError(
                "session_factory makes the whole session: give the window, model and session"
                " options to it, not to the adapter"
            )
        reserved = sorted(_RESERVED_OPTIONS.intersection(options))
        if reserved:
            raise ConfigurationError(
                f"session option(s) {', '.join(reserved)} are set by the adapter"
                " (use context_window=, model=, task_root= or store_factory=)"
            )
        if "counter" in options:
            raise ConfigurationError(
                "counter= would be shared by every conversation's session; pass"
                " session_factory= to give each session its own counter"
            )
        for name, value in (("store_factory", store_factory), ("session_factory", session_factory)):
            if value is not None and not callable(value):
                raise ConfigurationError(f"{name} must be callable, got {type(value).__name__}")
        self._window = context_window
        self._model = model
        self._root = Path(task_root) if task_root is not None else None
        self._store_factory = store_factory
        self._session_factory = session_factory
        self._options = dict(options)
        self._conversations: dict[str, Conversation] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _check(
        context_window: Any, model: Any, options: Mapping[str, Any], session_format: str
    ) -> None:
        """Refuse now what the first model call would refuse: the window, the model, options.

        A probe session (in memory, never used) is made with the options, so a misspelt option
        or a bad value is named at construction rather than as a ``TypeError`` at the first call.
        """
        if model is not None and not isinstance(model, str):
            raise ConfigurationError(f"model must be a model id string, got {type(model).__name__}")
        allowed = set(inspect.signature(ContextSession.__init__).parameters) - {"self"}
        unknown = sorted(set(options) - allowed - _RESERVED_OPTIONS)
        if unknown:
            known = ", ".join(sorted(allowed - _RESERVED_OPTIONS))
            raise ConfigurationError(
                f"unknown session option(s) {', '.join(unknown)} (ContextSession takes {known})"
            )
        if _RESERVED_OPTIONS.intersection(options) or "counter" in options:
            return  # refused below, with its own message
        window = context_window if context_window is not None else _PROBE_WINDOW
        ContextSession(window, format=session_format, **options)  # type: ignore[arg-type]

    def get(self, key: str, *, model_hint: str | None = None) -> Conversation:
        """The conversation for ``key``, its session made (or resumed) on first use."""
        with self._lock:
            conversation = self._conversations.get(key)
            if conversation is None:
                conversation = Conversation(key, self._new_session(key, model_hint))
                self._conversations[key] = conversation
            return conversation

    def known(self) -> list[str]:
        with self._lock:
            return list(self._conversations)

    def forget(self, key: str) -> None:
        """Drop (and close) the session of ``key``; a later call makes or resumes it again."""
        with self._lock:
            conversation = self._conversations.pop(key, None)
        if conversation is not None:
            conversation.session.close()

    def close(self) -> None:
        with self._lock:
            conversations = list(self._conversations.values())
            self._conversations.clear()
        for conversation in conversations:
            conversation.session.close()

    def _new_session(self, key: str, model_hint: str | None) -> ContextSession:
        if self._session_factory is not None:
            session = self._session_factory(key)
            if not isinstance(session, ContextSession):
                raise ConfigurationError(
                    f"session_factory must return a ContextSession, got {type(session).__name__}"
                )
            return session
        options = dict(self._options)
        if self._root is not None:
            options["task_dir"] = self._root / folder_name(key)
        elif self._store_factory is not None:
            options["store"] = self._store_factory(key)
        model = self._model
        if self._window is None and model is None and model_hint:
            model = model_hint
        return ContextSession(self._window, model=model, format="anthropic", **options)


def usage_counts(
    input_tokens: Any, output_tokens: Any, cache_reads: Any, cache_writes: Any
) -> tuple[int, int, int, int] | None:
    """(uncached input, output, cache writes, cache reads) from counts where the input includes
    the cached tokens, as both frameworks report them; None when nothing was measured."""
    values = []
    for value in (input_tokens, output_tokens, cache_reads, cache_writes):
        values.append(value if isinstance(value, int) and not isinstance(value, bool) else 0)
    total_in, out, reads, writes = (max(value, 0) for value in values)
    if total_in <= 0:
        return None
    reads = min(reads, total_in)
    writes = min(writes, total_in - reads)
    return total_in - reads - writes, out, writes, reads
