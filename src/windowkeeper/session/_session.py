"""ContextSession: the per-turn object an agent loop holds for one task.

It owns the full history, the deleted range, a :class:`~windowkeeper.cline._manager.ContextManager`, the
model's window and, optionally, a task folder where all of it persists, so that re-opening the
folder resumes exactly. Each turn::

    session.append(user_message)
    prepared = session.prepare(system=SYSTEM, tools=TOOLS, max_output_tokens=4096)
    reply = client.messages.create(messages=prepared.messages, ...)
    session.record_usage(reply.usage)
    session.append({"role": "assistant", "content": reply.content})

``prepare`` first makes the original's decision from the usage the provider reported for the
previous request, then checks the request it is about to return (pre-flight): when the estimate
exceeds ``max_allowed_size`` it applies the original's remedies (duplicate-read replacement, then
truncation) until it fits, clips oversized results of the newest turn as a last resort, and raises
:class:`~windowkeeper.ContextOverflowError` only when nothing can make it fit.
"""

from __future__ import annotations

import operator
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .._errors import (
    ConfigurationError,
    ContextOverflowError,
    InvalidRangeError,
    MalformedMessageError,
    TaskFolderError,
)
from ..cline._manager import ContextManager
from ..core._file_reads import ReadDetector
from ..core._incremental import Growing, Seen
from ..core._inputs import check_json_value, check_session_message
from ..core._messages import Message, SystemPrompt
from ..core._notices import TRUNCATION_NOTICE
from ..core._overwrites import CorruptStoreError, OverwriteStore
from ..core._pairing import OrphanResults
from ..core._truncation import DeletedRange, check_range, visible_start
from ..core._usage import TokenUsage
from ..core._window import ContextWindowInfo, context_window_info
from ..formats import from_anthropic, responses
from ..formats._wire import (
    EMPTIED,
    EMPTY_MESSAGE_NOTICE,
    Repair,
    WireShaper,
    anthropic_message,
    openai_message,
)
from ..storage import Commit, SessionStore, TaskFolderStore
from ._alternation import RoleMerger, merge_same_roles
from ._clipping import MIN_KEPT_CHARS, Clip, ClipMemo, clippable_blocks
from ._models import model_window, warn_no_window
from ._native_reads import NativeReadDetector
from ._native_results import ResultPlacer
from ._openai_history import OpenAIHistory, OpenAIShaper
from ._sdk import MessageLike, UsageInput, message_from_sdk, usage_from_sdk
from ._state_extras import load_calibration, stored_window, with_extras
from ._summary import (
    AsyncSummarizer,
    Summarizer,
    continuation,
    summary_instruction,
    summary_of,
    with_instruction,
)
from ._tokens import CalibratedEstimator, TokenCounter
from ._tool_ids import UniqueToolIds
from ._usage_trust import UsageTrust
from .steps import (
    REFOLD,
    Action,
    Draft,
    ReplaceDuplicateReads,
    Step,
    SummarizeTurns,
    SummaryNeeded,
    default_steps,
    fold_point,
    newest_turn,
    run_steps,
)

__all__ = [
    "Checkpoint",
    "ContextSession",
    "Prepared",
    "Synced",
    "finish_request",
    "place_truncation_notice",
]

HISTORY_FILE = "api_conversation_history.json"
_STATE_VERSION = 1
FOLDED_RESULT = "[windowkeeper: this result was folded into the summary that follows]"
_THINKING = frozenset({"thinking", "redacted_thinking"})


@dataclass(frozen=True, slots=True)
class Prepared:
    """The request to send, and what the session did to build it.

    ``messages`` belong to the caller: they are fresh objects down to each block (and a
    tool_result's inner blocks), so setting ``cache_control`` on them changes nothing the
    session holds; deeper values (tool inputs, image sources) are shared and read-only.
    """

    messages: list[Message]
    deleted_range: DeletedRange | None
    range_changed: bool  # the range grew while preparing this request
    replaced_reads: int  # messages whose older file copies were replaced while preparing
    estimated_tokens: int  # messages + system + tools + reserved output, by the session's counter
    max_allowed_size: float
    preflight_acted: bool  # the estimate exceeded the limit, so the session shrank the request
    clipped: tuple[Clip, ...] = ()  # clips added while preparing (on arrival or to fit)
    ignored_stale_usage: bool = False  # usage described a context that no longer exists
    repairs: tuple[Repair, ...] = ()  # what was changed so the provider accepts the request
    # in-band compaction: the last user message asks for a summary; append the reply as usual
    summary_requested: bool = False
    actions: tuple[Action, ...] = ()  # what shrank the request, in order (see session.steps)


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A point to roll back to: the history length and everything the session had decided."""

    history_length: int
    deleted_range: DeletedRange | None
    timestamp: int
    clips: tuple[Clip, ...]
    store_json: str  # the overwrite store as the original serializes it
    usage: TokenUsage | None = None
    usage_timestamp: int = 0
    usage_generation: int = -1
    generation: int = 0
    counter_state: object = None  # the counter's snapshot(), when it has one
    # the fold and its counters, as the session held them (see _State)
    compaction: (
        tuple[tuple[int, str] | None, int, int, int, int, tuple[int, int] | None, tuple[int, ...]]
        | None
    ) = None


@dataclass(frozen=True, slots=True)
class Synced:
    """What :meth:`ContextSession.sync` did: messages kept, appended and dropped."""

    kept: int
    appended: int
    dropped: int = 0  # messages past the common prefix, cut with their decisions
    restarted: bool = False  # the first message differed: the task started over


def _entry_index(entry: Any) -> int:
    """The message index of a store entry in the original's JSON layout (odd ones sort last)."""
    index = entry[0] if isinstance(entry, list) and entry else None
    return index if isinstance(index, int) and not isinstance(index, bool) else 10**12


@dataclass(slots=True)
class _LastRequest:
    messages: list[Message]
    system: Any
    tools: Sequence[Mapping[str, Any]] | None
    timestamp: int
    generation: int


@dataclass(slots=True)
class _State:
    deleted_range: DeletedRange | None = None
    generation: int = 0  # bumped whenever the range grows: older usage becomes stale
    last_timestamp: int = 0
    usage: TokenUsage | None = None
    usage_timestamp: int = 0
    usage_generation: int = -1
    clips: list[Clip] = field(default_factory=list)
    folded: tuple[int, str] | None = None  # the last fold's range end and continuation text
    folds: int = 0  # folds made; with the two below, what keeps compaction from thrashing
    poor_folds: int = 0  # folds that freed less than a tenth of the request
    folded_at: int = -1  # the request (counted by ``requests``) that made the last fold
    requests: int = 0
    pending: tuple[int, int] | None = None  # in-band: (fold point, history length when asked)
    excluded: tuple[int, ...] = ()  # in-band summary replies, never sent again

    def copy(self) -> _State:
        return replace(self, clips=list(self.clips))


def _window(
    context_window: Any, model: Any
) -> ContextWindowInfo:  # the window a session is given, checked
    if model is not None and not isinstance(model, str):
        raise ConfigurationError(f"model must be a model id string, got {type(model).__name__}")
    if isinstance(context_window, ContextWindowInfo):
        return context_window
    if context_window is None:
        return model_window(model) if model is not None else context_window_info(None)
    if isinstance(context_window, str):
        raise ConfigurationError(
            f"context_window must be a number of tokens, got the string {context_window!r}"
            " (to look a model up, pass model=...)"
        )
    if isinstance(context_window, bool) or not isinstance(context_window, int):
        raise ConfigurationError(
            f"context_window must be an int or a ContextWindowInfo, got {type(context_window).__name__}"
        )
    if context_window <= 0:
        raise ConfigurationError(
            f"context_window must be a positive number of tokens, got {context_window}"
        )
    return context_window_info(context_window)


def _count_argument(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigurationError(f"{name} must be a non-negative int, got {value!r}")
    return value


def _check_system(system: Any) -> Any:
    """``system`` checked: None, a string, or a sequence of text blocks (given back as a list)."""
    if system is None or isinstance(system, str):
        return system
    if isinstance(system, Sequence) and not isinstance(system, bytes):
        for position, block in enumerate(system):
            if not isinstance(block, dict) or block.get("type") != "text":
                raise MalformedMessageError(f"system[{position}]", "expected a text block")
            if not isinstance(block.get("text"), str):
                raise MalformedMessageError(f"system[{position}].text", "expected a string")
        return system if isinstance(system, list) else list(system)
    raise MalformedMessageError(
        "system", f"expected a string or a list of text blocks, got {type(system).__name__}"
    )


def _summary_text(reply: Message) -> str | None:
    """The summary an in-band reply holds: an assistant message of text (and thinking) only."""
    content = reply.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if reply.get("role") != "assistant" or not isinstance(blocks, list):
        return None
    kinds = {block.get("type") if isinstance(block, dict) else None for block in blocks}
    if kinds - {"text", "thinking", "redacted_thinking"}:
        return None
    text = "\n".join(
        block["text"]
        for block in blocks
        if block.get("type") == "text" and isinstance(block.get("text"), str)
    ).strip()
    return text or None


class _EmptyMessages:
    """How many messages of a request the wire will fill with a notice, counted for new ones only.

    A message with nothing the provider accepts (empty or blank text, only dropped blocks) is
    sent with a notice; the estimate must count that text, or a request at the limit goes over.
    """

    __slots__ = ("_running", "_seen")

    def __init__(self) -> None:
        self._seen = Seen()
        self._running: list[int] = [0]  # _running[i]: such messages among the first i

    def count(self, messages: Sequence[Message]) -> int:
        done = self._seen.prefix(messages)
        running = self._running
        del running[done + 1 :]
        for message in messages[done:]:
            problems: list[Repair] = []
            anthropic_message(message, "", problems)
            empty = any(problem.detail == EMPTIED for problem in problems)
            running.append(running[-1] + empty)
        self._seen.remember(messages)
        return running[-1]


def _summarize_step(summarize: Any, keep_recent_tokens: Any) -> SummarizeTurns | None:
    keep = _count_argument("keep_recent_tokens", keep_recent_tokens)
    if summarize is False or summarize is None:
        return None
    if summarize is True or summarize == "in-band":
        return SummarizeTurns(None, keep_recent_tokens=keep)  # in-band: when it did not fit
    if not callable(summarize):
        raise ConfigurationError(
            "summarize must be True, False, 'in-band' or a summarizer callable,"
            f" got {type(summarize).__name__}"
        )
    return SummarizeTurns(summarize, keep_recent_tokens=keep)


def _check_steps(steps: Any) -> list[Step]:
    if isinstance(steps, str | bytes | Mapping) or not isinstance(steps, Sequence):
        raise ConfigurationError(f"steps must be a list of steps, got {type(steps).__name__}")
    for position, step in enumerate(steps):
        if not isinstance(step, Step) or not isinstance(step.name, str):
            raise ConfigurationError(
                f"steps[{position}] must be a step (name, repeats, apply(draft)),"
                f" got {type(step).__name__}"
            )
    return list(steps)


class ContextSession:
    """One task's conversation, kept within ``context_window`` on every request.

    ``context_window`` is an int (tokens) or a :class:`ContextWindowInfo`; without it, ``model``
    looks the window up in the shipped model table (:func:`windowkeeper.model_window`: an unknown
    model gets the original's 128 000 with an :class:`UnknownModelWarning`); ``counter`` estimates
    request sizes (default: :class:`~windowkeeper.session._tokens.CalibratedEstimator`, calibrated from the
    usage you record); ``detector`` finds duplicate reads (default:
    :class:`~windowkeeper.session._native_reads.NativeReadDetector`, every block and native tool calls;
    pass :class:`~windowkeeper.ClineReadDetector` for the original's); ``place_results`` sends
    Cline's text-block tool results inside their tool_result blocks; ``max_result_share`` clips
    any result of the newest turn larger than that share of the limit as it arrives (keeping its
    head and tail; None never clips on arrival); when a request must shrink, tool outputs older
    than the last ``mask_keep_recent`` are masked first (None never masks), and the session shrinks
    it to ``shrink_target`` of the limit, so that shrinking, which costs prompt-cache reuse, is rare;
    ``steps`` replaces those remedies with your own list of
    :class:`~windowkeeper.session.steps.Step` objects (default: duplicate reads, masking, hiding
    turns, clipping; ``mask_keep_recent`` then plays no part), each reported in
    ``Prepared.actions``;
    ``task_dir`` persists everything: each call that changes the session (``append``, ``extend``,
    ``record_usage``, ``prepare``, ``rollback``) has written it when it returns, so reopening the
    folder resumes exactly where the last call left; ``clock`` returns milliseconds since the
    epoch (injectable for tests).

    Bad arguments raise :class:`~windowkeeper.ConfigurationError` naming them. Not thread-safe:
    one session per task. Sessions share nothing mutable with each other.
    """

    def __init__(
        self,
        context_window: int | ContextWindowInfo | None = None,
        *,
        model: str | None = None,
        task_dir: str | os.PathLike[str] | None = None,
        store: SessionStore | None = None,
        counter: TokenCounter | None = None,
        detector: ReadDetector | None = None,
        max_output_tokens: int = 0,
        place_results: bool = True,
        max_result_share: float | None = 0.25,
        mask_keep_recent: int | None = 2,
        shrink_target: float = 0.6,
        format: Literal["anthropic", "openai", "responses"] = "anthropic",
        clock: Callable[[], int] | None = None,
        steps: Sequence[Step] | None = None,
        summarize: bool | Literal["in-band"] | Summarizer | AsyncSummarizer = False,
        keep_recent_tokens: int = 8_000,
        in_band_at: float = 0.85,
    ) -> None:
        self._info = _window(context_window, model)
        if task_dir is not None and store is not None:
            raise ConfigurationError("give task_dir or store, not both")
        self._backend: SessionStore | None = (
            TaskFolderStore(task_dir) if task_dir is not None else store
        )
        if self._backend is not None and not isinstance(self._backend, SessionStore):
            raise ConfigurationError(
                f"store must be a SessionStore (load, commit, close), got {type(store).__name__}"
            )
        self._counter: TokenCounter = counter if counter is not None else CalibratedEstimator()
        self._manager = ContextManager(
            detector=detector if detector is not None else NativeReadDetector()
        )
        self._placer = ResultPlacer() if place_results else None
        self._ids = UniqueToolIds()
        self._clip_memo = ClipMemo()
        self._merger = RoleMerger()
        self._orphans = OrphanResults()
        self._orphaned: tuple[Repair, ...] = ()
        self._noticed: tuple[Message, Message] | None = None
        if max_result_share is not None and not (
            isinstance(max_result_share, int | float) and 0 < max_result_share <= 1
        ):
            raise ConfigurationError(
                f"max_result_share must be in (0, 1] or None, got {max_result_share!r}"
            )
        self._max_result_share = max_result_share
        if mask_keep_recent is not None:
            _count_argument("mask_keep_recent", mask_keep_recent)
        if not (isinstance(shrink_target, int | float) and 0 < shrink_target <= 1):
            raise ConfigurationError(f"shrink_target must be in (0, 1], got {shrink_target!r}")
        self._mask_keep_recent = mask_keep_recent
        self._summarize = _summarize_step(summarize, keep_recent_tokens)
        self._in_band = summarize == "in-band"
        if not (isinstance(in_band_at, int | float) and 0 < in_band_at <= 1):
            raise ConfigurationError(f"in_band_at must be in (0, 1], got {in_band_at!r}")
        self._in_band_at = in_band_at
        if steps is not None and self._summarize is not None:
            raise ConfigurationError("give steps or summarize, not both (SummarizeTurns is a step)")
        self._steps = (
            _check_steps(steps)
            if steps is not None
            else default_steps(mask_keep_recent, summarize=self._summarize)
        )
        self._continued: tuple[tuple[str, tuple[str, ...]], Message] | None = None
        self._empties = _EmptyMessages()
        self._awaiting = False  # inside aprepare: an async summarizer's request is awaited there
        self._shrink_target = shrink_target
        self._max_output_tokens = _count_argument("max_output_tokens", max_output_tokens)
        self._clock = clock if clock is not None else (lambda: time.time_ns() // 1_000_000)
        if format not in ("anthropic", "openai", "responses"):
            raise ConfigurationError(
                f"format must be 'anthropic', 'openai' or 'responses', got {format!r}"
            )
        self._format = format
        self._history: list[Message] = Growing()  # appended to; any other change is logged
        dialect: Literal["chat", "responses"] = "responses" if format == "responses" else "chat"
        self._dialect = dialect
        self._openai = OpenAIHistory(dialect=dialect) if format != "anthropic" else None
        self._to_openai = OpenAIShaper(
            responses.from_anthropic if format == "responses" else from_anthropic
        )
        shapes = {
            "anthropic": anthropic_message,
            "openai": openai_message,
            "responses": responses.responses_item,
        }
        self._wire = WireShaper(shapes[format])
        self._state = _State()
        self._usage_trust = UsageTrust()  # reported usage checked before it is believed
        self._last: _LastRequest | None = None
        self._version = 0  # of what the backend holds
        # The history as the backend holds it: how much of the history is still what was
        # committed (constant time for the Growing history, no copy).
        self._committed = Seen()
        self._committed_store: tuple[OverwriteStore, int] | None = None  # (store, revision)
        self._stored_window: ContextWindowInfo | None = None
        if self._backend is not None:
            self._load(self._backend)
        if context_window is None and model is None:  # the stored window, else the default
            if self._stored_window is None:
                warn_no_window()
            self._info = self._stored_window or self._info

    # -- what the session holds ------------------------------------------------------------

    @property
    def history(self) -> list[Message]:
        """A copy of the full history, in the session's format (messages shared, never modified)."""
        return self._openai.messages if self._openai is not None else list(self._history)

    @property
    def deleted_range(self) -> DeletedRange | None:
        """The inclusive range of history indices hidden from requests, or None."""
        return self._state.deleted_range

    @deleted_range.setter
    def deleted_range(self, value: DeletedRange | None) -> None:
        # For flows that hide history themselves, as Cline's summarize and condense tools do.
        checked = check_range(value)
        self._sync()
        if checked is not None and checked[1] >= len(self._history):
            raise InvalidRangeError(
                f"deleted_range {checked} reaches past the history's {len(self._history)} messages"
            )
        state = self._state.copy()
        state.deleted_range = checked
        self._commit(state)
        self._state = state

    @property
    def window(self) -> ContextWindowInfo:
        """The model's window and the limit requests are kept under."""
        return self._info

    @window.setter
    def window(self, value: int | ContextWindowInfo) -> None:
        # A model switch: the next decision uses the new limit, as in the original.
        self._info = _window(value, None)

    @property
    def summarizing(self) -> bool:
        """An in-band summary was asked for and its reply is not folded in yet.

        True from the request with ``summary_requested`` until the model's next reply, while
        the history ends with that request's turn or with the summary replying to it (an
        assistant message of text only, folded in or not yet): an agent loop then prepares again instead of
        treating the reply as a final answer. Persisted, so a resumed loop knows it too.
        """
        pending = self._state.pending
        if pending is None:
            # folded already, but the summary is still the newest message: no answer yet
            excluded = self._state.excluded
            self._sync()
            return bool(excluded) and excluded[-1] == len(self._history) - 1
        self._sync()
        history = self._history
        if len(history) == pending[1]:
            return True
        if len(history) != pending[1] + 1:
            return False
        return _summary_text(history[pending[1]]) is not None

    @property
    def manager(self) -> ContextManager:
        """The underlying manager (its store holds every content edit)."""
        return self._manager

    # -- feeding the session ---------------------------------------------------------------

    def append(self, message: MessageLike) -> None:
        """Add a message (a dict, or an SDK reply object), checked; persisted with ``task_dir``.

        A dict is kept as it is (never modified, not copied); an SDK object (an Anthropic
        ``Message``, an OpenAI ``ChatCompletion`` or its message) is read into a dict first
        (:func:`windowkeeper.session._sdk.message_from_sdk`).
        """
        self.extend([message])

    def extend(self, messages: Iterable[MessageLike]) -> None:
        """Add several messages: all are checked before any is added, then persisted.

        Raises :class:`~windowkeeper.MalformedMessageError` naming the first message that a
        provider or the task folder could not take (see :mod:`windowkeeper.core._inputs`); the first
        message of a conversation must be a user message (the task).
        """
        batch = [message_from_sdk(message) for message in messages]
        if not batch:
            return
        if self._openai is not None:
            for offset, message in enumerate(batch):
                check_json_value(message, f"history[{len(self._openai) + offset}]")
            self._openai.extend(batch)
            try:
                self._sync()
                self._check_first(self._history, "history")
                self._commit(self._state)
            except BaseException:
                self._openai.cut(len(self._openai) - len(batch))
                self._sync()
                raise
        else:
            start = len(self._history)
            for offset, message in enumerate(batch):
                check_session_message(message, f"history[{start + offset}]")
            self._check_first([*self._history[:1], *batch[:1]], "history")
            self._history.extend(batch)
            try:
                self._commit(self._state)
            except BaseException:
                del self._history[start:]
                raise

    @staticmethod
    def _check_first(history: Sequence[Message], name: str) -> None:
        if history and history[0].get("role") != "user":
            raise MalformedMessageError(
                f"{name}[0].role", "the first message must be a user message (the task)"
            )

    def _sync(self) -> Any:
        """Bring the Anthropic-shaped history up to date; the system prompt of an OpenAI history."""
        if self._openai is None:
            return None
        self._history, system = self._openai.anthropic()
        return system

    def sync(self, messages: Iterable[MessageLike]) -> Synced:
        """Make the history ``messages`` (the whole conversation, as a framework holds it).

        The one entry point for frameworks, which hand their hook the full message list on
        every model call. When ``messages`` extends the history, only the new suffix is
        appended (the usual case). When it differs inside the history (an edit, a fork, the
        framework's own trimming), the history is cut back to the longest common prefix and
        the rest appended: every decision about a message past the cut (store edits, clips, the
        part of the hidden range past it, the last usage) is dropped with it, as a rollback
        would, so two histories are never mixed. A different first message starts the task
        over. Messages compare by value, SDK objects read as by :meth:`append`.
        """
        wanted = [message_from_sdk(message) for message in messages]
        if self._format == "openai":
            wanted = OpenAIHistory.canonical(wanted)
        current = self._openai.messages if self._openai is not None else list(self._history)
        known = len(current)
        if len(wanted) >= known and all(map(operator.eq, current, wanted[:known])):
            self.extend(wanted[known:])
            return Synced(kept=known, appended=len(wanted) - known)
        common = next(
            (i for i, (old, new) in enumerate(zip(current, wanted, strict=False)) if old != new),
            min(len(current), len(wanted)),
        )
        self._cut(common)
        self.extend(wanted[common:])
        return Synced(
            kept=common,
            appended=len(wanted) - common,
            dropped=len(current) - common,
            restarted=common == 0,
        )

    def _cut(self, length: int) -> None:
        """Cut the history to ``length`` messages and forget every decision past the cut."""
        self._sync()
        state = self._state.copy()
        if self._openai is not None:
            self._openai.cut(length)
            self._sync()
            kept = len(self._history)
        else:
            del self._history[length:]
            kept = length
        if state.deleted_range is not None and state.deleted_range[1] >= kept - 1:
            start = state.deleted_range[0]
            state.deleted_range = (start, kept - 2) if kept - 2 >= start else None
        state.clips = [clip for clip in state.clips if clip.message_index < kept]
        if state.folded is not None and (
            state.deleted_range is None or state.folded[0] > state.deleted_range[1]
        ):
            state.folded = None  # the fold reached past the cut: its text describes turns gone
        if state.pending is not None and state.pending[1] >= kept:
            state.pending = None
        state.excluded = tuple(index for index in state.excluded if index < kept)
        state.usage = None
        state.generation += 1
        store = OverwriteStore.from_json_value(
            [entry for entry in self._manager.store.to_json_value() if _entry_index(entry) < kept]
        )
        self._commit(state, store)
        self._ids.reset()
        self._state = state
        self._last = None
        self._usage_trust.forget()
        self._manager.store = store

    def record_usage(self, usage: UsageInput, *, timestamp: int | None = None) -> None:
        """What the provider reported for the last prepared request.

        Accepts a :class:`TokenUsage` or an Anthropic or OpenAI usage object or dict, checked
        before anything is kept. It teaches the counter the real size of that request and drives
        the next decision, unless the range has grown since that request was prepared (then the
        usage is stale and ignored). ``timestamp`` overrides when that request was sent (ms).
        """
        parsed = usage_from_sdk(usage)
        if timestamp is not None:
            _count_argument("timestamp", timestamp)
        last = self._last
        generation = last.generation if last is not None else self._state.generation
        sent_at = timestamp if timestamp is not None else (last.timestamp if last else self._tick())
        distrusted = last is not None and self._usage_trust.judge(
            parsed,
            last.messages,
            system=last.system,
            tools=last.tools,
            counter=self._counter,
            context_window=self._info.context_window,
        )
        state = self._state.copy()
        state.usage = None if distrusted else parsed  # a distrusted report decides nothing
        state.usage_timestamp = sent_at
        state.usage_generation = generation
        snapshot = getattr(self._counter, "snapshot", None)
        learnt = snapshot() if callable(snapshot) else None
        if last is not None and not distrusted:  # learnt first: the commit keeps what it learnt
            reported = parsed.tokens_in + parsed.cache_writes + parsed.cache_reads
            self._counter.observe(
                last.messages, system=last.system, tools=last.tools, reported_input_tokens=reported
            )
        try:
            self._commit(state)
        except BaseException:
            if learnt is not None:
                self._counter.restore(learnt)  # type: ignore[attr-defined]
            raise
        self._state = state

    # -- building a request ----------------------------------------------------------------

    def prepare(
        self,
        *,
        system: SystemPrompt | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        max_output_tokens: int | None = None,
    ) -> Prepared:
        """The messages to send now, within the window, and what was done to get them.

        With ``format="openai"`` the messages come back in OpenAI's shape, system messages
        included, and ``system`` defaults to the history's own system messages for the estimate.
        Raises :class:`~windowkeeper.ContextOverflowError` when nothing can make the request fit;
        the session is then left exactly as it was before the call.
        """
        openai_system = self._sync()
        if not self._history:
            raise MalformedMessageError("history", "no messages to send: append the task first")
        if system is None:
            system = openai_system
        system = _check_system(system)
        if tools is not None and (
            isinstance(tools, str | bytes | Mapping)
            or not isinstance(tools, Sequence)
            or not all(isinstance(tool, Mapping) for tool in tools)
        ):
            raise ConfigurationError("tools must be a list of tool definition dicts")
        reserve = self._max_output_tokens
        if max_output_tokens is not None:
            reserve = _count_argument("max_output_tokens", max_output_tokens)
        before = self._state.copy()
        store = self._manager.store
        store.open_journal()
        try:
            prepared = self._prepare(system, tools, reserve)
        except BaseException as error:
            store.undo_journal()
            self._state = before
            if isinstance(error, SummaryNeeded) and not self._awaiting:
                raise ConfigurationError(
                    "summarize= is an async summarizer: call aprepare(), not prepare()"
                ) from None
            raise
        store.close_journal()
        return prepared

    async def aprepare(
        self,
        *,
        system: SystemPrompt | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        max_output_tokens: int | None = None,
    ) -> Prepared:
        """:meth:`prepare` for a session whose ``summarize=`` is an async summarizer.

        When a fold needs a summary, the summarizer is awaited and the request prepared again
        with it (the first attempt leaves the session as it was). Same result as ``prepare`` for
        any other session.
        """
        step = self._summarize
        for _attempt in range(2):  # the second attempt has the summary it asked for
            self._awaiting = True
            try:
                return self.prepare(system=system, tools=tools, max_output_tokens=max_output_tokens)
            except SummaryNeeded as needed:
                request = needed.request
            finally:
                self._awaiting = False
            assert step is not None
            assert step.summarizer is not None
            try:
                summary = await step.summarizer(request)  # type: ignore[misc]
            except Exception as error:  # no summary: the ledger stands in
                step.last_error = error
                summary = None
            step.ready = (request.messages, summary if isinstance(summary, str) else None)
        raise AssertionError("unreachable: the second attempt had its summary")  # pragma: no cover

    def _prepare(
        self, system: Any, tools: Sequence[Mapping[str, Any]] | None, reserve: int
    ) -> Prepared:
        now = self._tick()
        state = self._state
        clips: dict[tuple[int, int], Clip] = {}
        actions: list[Action] = list(self._usage_trust.pending())
        if state.pending is not None:
            adopted = self._adopt_summary(state)
            if adopted is not None:
                actions.append(adopted)
        view = self._view()
        for arrived in self._arrival_clips(view):
            clips[arrived.message_index, arrived.block_index] = arrived
            state.clips.append(arrived)
        if clips:
            view = self._view()
            arrivals = tuple(clips.values())
            actions.append(
                Action(
                    "clip-on-arrival",
                    tuple(sorted({c.message_index for c in arrivals})),
                    clips=arrivals,
                )
            )
        usage = state.usage
        stale = usage is not None and state.usage_generation != state.generation
        self._manager.last_replaced = frozenset()
        result = self._manager.get_new_context_messages_and_metadata(
            view,
            usage=None if stale else usage,
            timestamp=state.usage_timestamp,  # edits are dated by the request, as in the original
            context_window=self._info,
            deleted_range=state.deleted_range,
            # With compaction on, the pre-flight folds instead of the original's truncation,
            # as the original itself skips it when it auto-condenses.
            use_auto_condense=self._summarize is not None,
        )
        replaced = set(self._manager.last_replaced)
        if replaced:
            actions.append(Action("reported-usage-reads", tuple(sorted(replaced))))
        range_changed = result.updated_deleted_range
        if range_changed:
            self._set_range(result.deleted_range)
            actions.append(Action("reported-usage-truncation", deleted_range=result.deleted_range))
        messages = self._visible(result.truncated_history)
        estimate = self._estimate(messages, system, tools, reserve)
        limit = self._info.max_allowed_size
        acted = estimate > limit
        if acted:
            draft = Draft(
                history=self._history,
                decisions=state,
                manager=self._manager,
                view_of=self._view,
                measure=lambda view: self._measured(view, system, tools, reserve),
                view=view,
                messages=messages,
                estimate=estimate,
                now=now,
                limit=limit,
                target=limit * self._shrink_target,
                may_fold=state.poor_folds < 2 and state.folded_at != state.requests - 1,
            )
            shrunk = run_steps(self._steps, draft)
            if self._keep_ledger(state):
                draft.refresh()  # the continuation now covers every hidden turn
                shrunk.append(Action(REFOLD, deleted_range=state.deleted_range))
                if draft.estimate > limit:
                    shrunk += run_steps(self._steps, draft)
                    self._keep_ledger(state)
                    draft.refresh()
            for action in shrunk:
                if action.step == SummarizeTurns.name:
                    state.folds += 1
                    state.folded_at = state.requests
                    before_fold, after_fold = action.tokens_before or 0, action.tokens_after or 0
                    if before_fold - after_fold < before_fold / 10:
                        state.poor_folds += 1
            actions += shrunk
            messages, estimate = draft.messages, draft.estimate
            for action in shrunk:
                if action.step == ReplaceDuplicateReads.name:
                    replaced.update(action.messages)
                range_changed = range_changed or action.deleted_range is not None
                for clip in action.clips:
                    clips[clip.message_index, clip.block_index] = clip
            if estimate > limit:
                raise ContextOverflowError(
                    f"the smallest request this session can send is about {estimate:,} tokens"
                    f" (including {reserve:,} reserved for output), over the limit of"
                    f" {limit:,} for a {self._info.context_window:,}-token window",
                    estimated_tokens=estimate,
                    limit=limit,
                )
        requested = False
        if (
            self._in_band
            and not acted
            and estimate > limit * self._in_band_at
            and state.poor_folds < 2
            and state.folded_at != state.requests - 1
        ):
            asked = self._ask_for_summary(
                view, messages, system=system, tools=tools, reserve=reserve, limit=limit
            )
            if asked is not None:
                messages, estimate = asked
                requested = True
        state.requests += 1
        self._commit(state)
        self._usage_trust.forget()  # reported in these actions
        self._last = _LastRequest(messages, system, tools, now, state.generation)
        sent = self._to_openai.to_openai(messages) if self._openai is not None else messages
        wired, repairs = self._wire.shape(
            sent, "input" if self._format == "responses" else "messages"
        )
        if self._format == "responses":
            wired, dropped = responses.without_trailing_reasoning(wired)
            repairs += dropped
        return Prepared(
            messages=wired,
            deleted_range=state.deleted_range,
            range_changed=range_changed,
            replaced_reads=len(replaced),
            estimated_tokens=estimate,
            max_allowed_size=limit,
            preflight_acted=acted,
            clipped=tuple(clips.values()),
            ignored_stale_usage=stale,
            repairs=self._id_repairs() + self._orphaned + repairs,
            actions=tuple(actions),
            summary_requested=requested,
        )

    def _keep_ledger(self, state: _State) -> bool:
        """With compaction on, make the continuation cover every hidden turn; True if it changed.

        Turns hidden past the last fold (hiding went further than folding could) get into its
        ledger, with the same summary; turns hidden with no fold yet get a ledger-only one. So
        what is hidden is always in the ledger: the task, instructions, files, commands.
        """
        step = self._summarize
        hidden = state.deleted_range
        if step is None or hidden is None:
            return False
        folded = state.folded
        if folded is not None and folded[0] >= hidden[1]:
            return False
        summary = summary_of(folded[1]) if folded is not None else None
        ledger = step.ledgers.ledger(self._history, hidden[1] + 1)
        state.folded = (hidden[1], continuation(summary, ledger))
        return True

    def _ask_for_summary(
        self,
        view: list[Message],
        messages: list[Message],
        *,
        system: Any,
        tools: Sequence[Mapping[str, Any]] | None,
        reserve: int,
        limit: float,
    ) -> tuple[list[Message], int] | None:
        """The request with the summary instruction on its last user message, if it fits.

        Everything before the instruction is the request as it would be sent, so the provider
        reads it from its cache; the fold point is decided now and kept with the request.
        """
        state = self._state
        step = self._summarize
        if step is None:
            return None
        if state.pending is not None:  # asked before, no reply yet (a resumed loop): ask again
            point = state.pending[0]
        else:
            found = fold_point(view, visible_start(state.deleted_range), step.keep_recent_tokens)
            if found is None:
                return None
            point = found
        previous = state.folded[1] if state.folded is not None else None
        asked = with_instruction(messages, summary_instruction(previous))
        estimate = self._estimate(asked, system, tools, reserve)
        if estimate > limit:
            return None
        state.pending = (point, len(self._history))
        return asked, estimate

    def _adopt_summary(self, state: _State) -> Action | None:
        """After an in-band request: fold with the reply the caller appended, if it is a summary.

        The reply must be an assistant message of text only; it is then the summary, and is
        never sent again. Anything else (a tool call, the user speaking first) drops the request.
        """
        assert state.pending is not None
        point, length = state.pending
        history = self._history
        if len(history) <= length:
            return None  # nothing appended yet: the request stands
        state.pending = None
        text = _summary_text(history[length])
        current = state.deleted_range
        if text is None or (current is not None and current[1] >= point - 1):
            return None
        start = visible_start(current)
        self._set_range((2, point - 1))
        assert self._summarize is not None  # in-band folds come with a summarize step
        ledger = self._summarize.ledgers.ledger(history, point)
        state.folded = (point - 1, continuation(text, ledger))
        state.excluded = (*state.excluded, length)
        state.folds += 1
        state.folded_at = state.requests
        return Action(
            "summarize-in-band",
            messages=tuple(range(max(start, 2), point)),
            deleted_range=(2, point - 1),
        )

    def _id_repairs(self) -> tuple[Repair, ...]:
        """The renamed duplicate tool_use ids among the messages this request sends."""
        start = visible_start(self._state.deleted_range)
        return tuple(
            Repair(
                f"history[{index}].content[{position}].id",
                f"a tool_use id used before: sent as {new!r}",
            )
            for index, renamed in sorted(self._ids.renamed().items())
            if index < 2 or index >= start
            for position, new in renamed.items()
        )

    def _estimate(
        self,
        messages: list[Message],
        system: Any,
        tools: Sequence[Mapping[str, Any]] | None,
        reserve: int,
    ) -> int:
        counted = self._counter.count(messages, system=system, tools=tools) + reserve
        noticed = self._empties.count(messages)
        if noticed:  # the wire gives each a notice (see formats._wire): count it in
            counter = self._counter
            notice = [{"role": "user", "content": [{"type": "text", "text": EMPTY_MESSAGE_NOTICE}]}]
            extra = counter.count(notice) - counter.count([{"role": "user", "content": ""}])
            counted += noticed * max(extra, 0)
        return counted

    def _measured(
        self,
        view: list[Message],
        system: Any,
        tools: Sequence[Mapping[str, Any]] | None,
        reserve: int,
    ) -> tuple[list[Message], int]:
        messages = self._render(view)
        return messages, self._estimate(messages, system, tools, reserve)

    def _render(self, view: list[Message]) -> list[Message]:
        sent = self._manager.get_truncated_messages(view, self._state.deleted_range)
        return self._visible(sent)

    def _visible(self, sent: list[Message]) -> list[Message]:
        # finish_request, remembering its work: the same first answer gets the same noticed copy,
        # and only what is new since the last request is checked for runs of one role
        excluded = self._state.excluded
        if excluded:
            start = max(visible_start(self._state.deleted_range), 2)
            drop = {index - start + 2 for index in excluded if index >= start}
            if drop:
                sent = [m for position, m in enumerate(sent) if position not in drop]
        placed = place_truncation_notice(sent, self._manager.store)
        if placed is not sent:
            known = self._noticed
            if known is not None and known[0] is sent[1]:
                placed[1] = known[1]
            else:
                self._noticed = (sent[1], placed[1])
        folded = self._state.folded
        if folded is not None and len(placed) > 2:
            placed = [*placed[:2], self._continuation(folded[1], placed[1]), *placed[2:]]
        merged = self._merger.merge(placed)
        fixed = self._orphans.apply(merged)
        self._orphaned = (
            tuple(
                Repair(f"messages[{position}]", "tool results whose call is not sent became text")
                for position, (a, b) in enumerate(zip(merged, fixed, strict=True))
                if a is not b
            )
            if any(map(operator.is_not, merged, fixed))
            else ()
        )
        return fixed

    def _continuation(self, text: str, first_answer: Message) -> Message:
        """The user message that carries a fold's text, the same object while nothing changes.

        It follows message 1, so it answers message 1's tool calls first (their results were
        folded with the rest), as the API requires of the message after a tool call.
        """
        content = first_answer.get("content")
        ids = tuple(
            block["id"]
            for block in (content if isinstance(content, list) else ())
            if isinstance(block, dict) and block.get("type") == "tool_use" and "id" in block
        )
        known = self._continued
        if known is None or known[0] != (text, ids):
            results = [
                {"type": "tool_result", "tool_use_id": tool_use_id, "content": FOLDED_RESULT}
                for tool_use_id in ids
            ]
            message = {"role": "user", "content": [*results, {"type": "text", "text": text}]}
            known = self._continued = ((text, ids), message)
        return known[1]

    def _arrival_clips(self, view: list[Message]) -> list[Clip]:
        """Clips for results of the newest turn that alone would take more than their share.

        Clipping the newest message changes nothing already sent, so it costs no prompt-cache
        reuse, and every later request is smaller for it. Sizes are in characters at a
        conservative 3 characters a token.
        """
        share = self._max_result_share
        if share is None:
            return []
        clipped = {clip.message_index for clip in self._state.clips}
        budget = max(MIN_KEPT_CHARS, int(self._info.max_allowed_size * share * 3))
        return [
            Clip(index, block_index, budget)
            for index in newest_turn(self._history)
            if index not in clipped
            for block_index, size in clippable_blocks(view[index])
            if size > budget
        ]

    def _view(self) -> list[Message]:
        """The history as the manager sees it: ids unique, text results placed, big ones clipped."""
        view = self._ids.apply(self._history)
        if self._placer is not None:
            view = self._placer.place(view)
        if not self._state.clips:
            return view
        return self._clip_memo.apply(view, self._state.clips)

    def _set_range(self, deleted_range: DeletedRange | None) -> None:
        self._state.deleted_range = deleted_range
        self._state.generation += 1

    def _tick(self) -> int:
        now = max(int(self._clock()), self._state.last_timestamp + 1)
        self._state.last_timestamp = now
        return now

    # -- checkpoints -----------------------------------------------------------------------

    def checkpoint(self) -> Checkpoint:
        """Remember this point; :meth:`rollback` returns to it."""
        state = self._state
        snapshot = getattr(self._counter, "snapshot", None)
        return Checkpoint(
            history_length=len(self._openai) if self._openai is not None else len(self._history),
            deleted_range=state.deleted_range,
            timestamp=self._tick(),
            clips=tuple(state.clips),
            store_json=self._manager.context_history_json(),
            usage=state.usage,
            usage_timestamp=state.usage_timestamp,
            usage_generation=state.usage_generation,
            generation=state.generation,
            compaction=(
                state.folded,
                state.folds,
                state.poor_folds,
                state.folded_at,
                state.requests,
                state.pending,
                state.excluded,
            ),
            counter_state=snapshot() if callable(snapshot) else None,
        )

    def rollback(self, checkpoint: Checkpoint) -> None:
        """Return to ``checkpoint``: later messages, range growth, edits, clips and usage undone.

        The store is restored from the checkpoint's copy rather than rolled back by timestamp:
        edits decided from an earlier request's usage carry that request's (earlier) time. What
        the counter learnt since is forgotten too (when it can ``restore``), so that the same
        calls after a rollback give the same requests.
        """
        if not isinstance(checkpoint, Checkpoint):
            raise ConfigurationError(
                f"rollback takes a Checkpoint from checkpoint(), got {type(checkpoint).__name__}"
            )
        length = len(self._openai) if self._openai is not None else len(self._history)
        if checkpoint.history_length > length:
            raise ConfigurationError(
                f"checkpoint holds {checkpoint.history_length} messages, the history only"
                f" {length}: it belongs to another session or a rolled-back branch"
            )
        state = _State(
            deleted_range=checkpoint.deleted_range,
            generation=checkpoint.generation,
            last_timestamp=self._state.last_timestamp,
            usage=checkpoint.usage,
            usage_timestamp=checkpoint.usage_timestamp,
            usage_generation=checkpoint.usage_generation,
            clips=list(checkpoint.clips),
        )
        if checkpoint.compaction is not None:
            (
                state.folded,
                state.folds,
                state.poor_folds,
                state.folded_at,
                state.requests,
                state.pending,
                state.excluded,
            ) = checkpoint.compaction
        store = OverwriteStore.from_json(checkpoint.store_json)
        if self._openai is not None:
            openai_before = self._openai.messages
            self._openai.cut(checkpoint.history_length)
            self._sync()
        history_before = self._history
        self._history = Growing(
            self._history[: len(self._history) if self._openai else checkpoint.history_length]
        )
        snapshot = getattr(self._counter, "snapshot", None)
        restore = getattr(self._counter, "restore", None)
        learnt = snapshot() if callable(snapshot) and callable(restore) else None
        if learnt is not None and checkpoint.counter_state is not None:
            restore(checkpoint.counter_state)  # type: ignore[misc]  # before the commit keeps it
        try:
            self._commit(state, store)
        except BaseException:
            if learnt is not None:
                restore(learnt)  # type: ignore[misc]
            self._history = history_before
            if self._openai is not None:
                self._openai = OpenAIHistory(openai_before, dialect=self._dialect)
                self._sync()
            raise
        self._ids.reset()
        self._state = state
        self._last = None
        self._usage_trust.forget()
        self._manager.store = store

    # -- persistence -----------------------------------------------------------------------

    def close(self) -> None:
        """Release the storage backend (a database connection); the session stays readable."""
        if self._backend is not None:
            self._backend.close()

    def __enter__(self) -> ContextSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _commit(self, state: _State, store: OverwriteStore | None = None) -> None:
        """Make the history, ``state`` and the store (``store`` or the manager's) durable together.

        One commit of what changed since the last: the messages appended (or the cut back, after
        a rollback), the state, and the store's JSON when it changed.
        """
        backend = self._backend
        if backend is None:
            return
        store = store if store is not None else self._manager.store
        history = self._history
        keep = self._committed.prefix(history)
        changed = self._committed_store != (store, store.revision)
        commit = Commit(
            base_version=self._version,
            keep=keep,
            append=history[keep:],
            state=with_extras(_state_value(state, len(history)), self._counter, self._info),
            store_json=store.to_json() if changed else None,
        )
        self._version = backend.commit(commit)
        self._committed.remember(history)
        self._committed_store = (store, store.revision)

    def _load(self, backend: SessionStore) -> None:
        snapshot = backend.load()
        self._manager.last_load = getattr(backend, "last_load", None)
        if snapshot is None:
            return
        history = snapshot.history
        where = backend.name
        try:
            for index, message in enumerate(history):
                check_session_message(message, f"{HISTORY_FILE}[{index}]")
            self._check_first(history, HISTORY_FILE)
        except MalformedMessageError as error:
            raise TaskFolderError(f"{where}: {error}") from None
        self._history = Growing(history)
        self._committed.remember(self._history)
        self._version = snapshot.version
        if self._openai is not None:
            self._openai = OpenAIHistory(dialect=self._dialect)
            self._openai.extend(self._openai.to_openai(history))
            self._sync()
        if snapshot.store_json is not None:
            try:
                self._manager.store = OverwriteStore.from_json(snapshot.store_json)
            except CorruptStoreError as error:
                raise TaskFolderError(f"{where}: the stored overwrite store: {error}") from None
        self._committed_store = (self._manager.store, self._manager.store.revision)
        if snapshot.store_json is None:
            self._committed_store = None  # nothing stored yet: the first commit writes it
        if snapshot.state is not None:
            self._state = _read_state(snapshot.state, f"{where} (session state)", len(history))
            load_calibration(self._counter, snapshot.state, f"{where} (session state)")
            self._stored_window = stored_window(snapshot.state)


def _state_value(state: _State, history_length: int) -> dict[str, Any]:
    """The session state as the backends keep it (the layout of windowkeeper 0.1's state file)."""
    usage = state.usage
    return {
        "version": _STATE_VERSION,
        "history_length": history_length,
        "deleted_range": list(state.deleted_range) if state.deleted_range else None,
        "generation": state.generation,
        "last_timestamp": state.last_timestamp,
        "usage": None
        if usage is None
        else [usage.tokens_in, usage.tokens_out, usage.cache_writes, usage.cache_reads],
        "usage_timestamp": state.usage_timestamp,
        "usage_generation": state.usage_generation,
        "clips": [[c.message_index, c.block_index, c.kept] for c in state.clips],
        **_compaction_value(state),
    }


def _compaction_value(state: _State) -> dict[str, Any]:
    """The compaction part of the state, only once there is one (older files have none)."""
    if not state.folds and state.folded is None and state.pending is None:
        return {}
    return {
        "folded": list(state.folded) if state.folded is not None else None,
        "folds": state.folds,
        "poor_folds": state.poor_folds,
        "folded_at": state.folded_at,
        "requests": state.requests,
        "pending": list(state.pending) if state.pending is not None else None,
        "excluded": list(state.excluded),
    }


def _read_compaction(value: dict[str, Any], deleted_range: DeletedRange | None) -> dict[str, Any]:
    folded = value.get("folded")
    if folded is not None:
        if (
            not isinstance(folded, list)
            or len(folded) != 2
            or not isinstance(folded[1], str)
            or deleted_range is None
            or _state_int(folded[0], "folded[0]") > deleted_range[1]
        ):
            raise ValueError("folded must be null or a range end inside deleted_range and a text")
        folded = (folded[0], folded[1])
    return {
        "folded": folded,
        "folds": _state_int(value.get("folds", 0), "folds"),
        "poor_folds": _state_int(value.get("poor_folds", 0), "poor_folds"),
        "folded_at": _state_int(value.get("folded_at", -1), "folded_at", minimum=-1),
        "requests": _state_int(value.get("requests", 0), "requests"),
        "pending": _pending(value.get("pending")),
        "excluded": tuple(
            _state_int(index, "excluded") for index in _state_list(value.get("excluded", []))
        ),
    }


def _state_list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"expected a list, got {type(value).__name__}")
    return value


def _pending(value: Any) -> tuple[int, int] | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != 2:
        raise ValueError("pending must be null or two integers")
    return (_state_int(value[0], "pending[0]"), _state_int(value[1], "pending[1]"))


def _state_int(value: Any, what: str, *, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value < 10**15:
        raise ValueError(f"{what} must be an integer >= {minimum}, got {value!r:.40}")
    return value


def _read_state(value: Any, where: str, history_length: int) -> _State:
    """The session state ``value``, checked against a history of ``history_length`` messages."""
    try:
        if not isinstance(value, dict):
            raise ValueError(f"expected an object, got {type(value).__name__}")
        usage = value.get("usage")
        if usage is not None and (not isinstance(usage, list) or len(usage) != 4):
            raise ValueError("usage must be null or four counts")
        deleted = value.get("deleted_range")
        deleted_range = None
        if deleted is not None:
            if not isinstance(deleted, list) or len(deleted) != 2:
                raise ValueError("deleted_range must be null or two indices")
            deleted_range = (
                _state_int(deleted[0], "deleted_range[0]"),
                _state_int(deleted[1], "deleted_range[1]"),
            )
            if deleted_range[1] >= history_length:
                raise ValueError(
                    f"deleted_range {list(deleted_range)} reaches past the history's"
                    f" {history_length} messages"
                )
        clips = []
        for position, clip in enumerate(value.get("clips", [])):
            if not isinstance(clip, list) or len(clip) != 3:
                raise ValueError(f"clips[{position}] must be three integers")
            index, block, kept = (_state_int(v, f"clips[{position}]") for v in clip)
            if index < history_length:  # a clip of a message that is gone applies to nothing
                clips.append(Clip(index, block, kept))
        return _State(
            deleted_range=deleted_range,
            generation=_state_int(value.get("generation"), "generation"),
            last_timestamp=_state_int(value.get("last_timestamp"), "last_timestamp"),
            usage=TokenUsage(*(_state_int(v, "usage") for v in usage)) if usage else None,
            usage_timestamp=_state_int(value.get("usage_timestamp"), "usage_timestamp"),
            usage_generation=_state_int(
                value.get("usage_generation"), "usage_generation", minimum=-1
            ),
            clips=clips,
            **_read_compaction(value, deleted_range),
        )
    except ValueError as error:
        raise TaskFolderError(f"{where}: unreadable session state: {error}") from None


def finish_request(sent: list[Message], store: OverwriteStore) -> list[Message]:
    """What the session changes in what the original would send: the truncation notice placed
    where the model sees it, and runs of one role merged so roles alternate."""
    return merge_same_roles(place_truncation_notice(sent, store))


def place_truncation_notice(sent: list[Message], store: OverwriteStore) -> list[Message]:
    """Give the truncation notice a text block of its own when the original's placement drops it.

    The original writes the notice over text block 0 of message 1; when that block is a thinking
    or tool_use block (as in real native-tool traces), the notice is silently lost. Here it is
    inserted after any leading thinking blocks instead. Returns ``sent`` itself when unchanged.
    """
    if len(sent) < 2 or store.effective_text(1, 0) != TRUNCATION_NOTICE:
        return sent
    first_answer = sent[1]
    content = first_answer.get("content")
    notice = {"type": "text", "text": TRUNCATION_NOTICE}
    if isinstance(content, str):
        new_content: list[Any] = (
            [notice, {"type": "text", "text": content}] if content else [notice]
        )
    elif isinstance(content, list):
        if content and isinstance(content[0], dict) and content[0].get("type") == "text":
            return sent  # the original's placement works
        at = 0
        while (
            at < len(content)
            and isinstance(content[at], dict)
            and content[at].get("type") in _THINKING
        ):
            at += 1
        new_content = [*content[:at], notice, *content[at:]]
    else:
        return sent
    output = list(sent)
    output[1] = {**first_answer, "content": new_content}
    return output
