"""ContextSession: the per-turn object an agent loop holds for one task.

It owns the full history, the deleted range, a :class:`~windowkeeper.manager.ContextManager`, the
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

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ._errors import ContextOverflowError, TaskFolderError
from ._openai_history import OpenAIHistory
from .alternation import RoleMerger, merge_same_roles
from .clipping import MIN_KEPT_CHARS, Clip, apply_clips, clippable_blocks
from .file_reads import ReadDetector
from .manager import ContextManager
from .masking import mask_old_context
from .messages import Message, check_message
from .models import model_window
from .native_reads import NativeReadDetector
from .native_results import ResultPlacer
from .notices import TRUNCATION_NOTICE
from .overwrites import OverwriteStore
from .sdk import usage_from_sdk
from .storage import atomic_write_text
from .tokens import CalibratedEstimator, TokenCounter
from .truncation import DeletedRange, Keep, check_range, next_range, visible_start
from .usage import TokenUsage
from .window import ContextWindowInfo, context_window_info

__all__ = [
    "Checkpoint",
    "ContextSession",
    "Prepared",
    "finish_request",
    "place_truncation_notice",
]

HISTORY_FILE = "api_conversation_history.json"
STATE_FILE = "windowkeeper_session.json"
_STATE_VERSION = 1
_THINKING = frozenset({"thinking", "redacted_thinking"})


@dataclass(frozen=True, slots=True)
class Prepared:
    """The request to send, and what the session did to build it."""

    messages: list[Message]
    deleted_range: DeletedRange | None
    range_changed: bool  # the range grew while preparing this request
    replaced_reads: int  # messages whose older file copies were replaced while preparing
    estimated_tokens: int  # messages + system + tools + reserved output, by the session's counter
    max_allowed_size: float
    preflight_acted: bool  # the estimate exceeded the limit and the session shrank the request
    clipped: tuple[Clip, ...] = ()  # clips added while preparing this request
    ignored_stale_usage: bool = False  # usage described a context that no longer exists


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A point to roll back to: history length, range, clips, and the edits made so far."""

    history_length: int
    deleted_range: DeletedRange | None
    timestamp: int
    clips: tuple[Clip, ...]
    store_json: str  # the overwrite store as the original serializes it


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


class ContextSession:
    """One task's conversation, kept within ``context_window`` on every request.

    ``context_window`` is an int (tokens) or a :class:`ContextWindowInfo`; without it, ``model``
    looks the window up in the shipped model table (:func:`windowkeeper.model_window`: an unknown
    model gets the original's 128 000 with an :class:`UnknownModelWarning`); ``counter`` estimates
    request sizes (default: :class:`~windowkeeper.tokens.CalibratedEstimator`, calibrated from the
    usage you record); ``detector`` finds duplicate reads (default:
    :class:`~windowkeeper.native_reads.NativeReadDetector`, every block and native tool calls;
    pass :class:`~windowkeeper.ClineReadDetector` for the original's); ``place_results`` sends
    Cline's text-block tool results inside their tool_result blocks; ``max_result_share`` clips
    any result of the newest turn larger than that share of the limit as it arrives (keeping its
    head and tail; None never clips on arrival); when a request must shrink, tool outputs older
    than the last ``mask_keep_recent`` are masked first (None never masks), and the session shrinks
    it to ``shrink_target`` of the limit, so that shrinking, which costs prompt-cache reuse, is rare; ``task_dir`` persists everything;
    ``clock`` returns milliseconds since the epoch (injectable for tests).

    Not thread-safe: one session per task. Sessions share nothing mutable with each other.
    """

    def __init__(
        self,
        context_window: int | ContextWindowInfo | None = None,
        *,
        model: str | None = None,
        task_dir: str | os.PathLike[str] | None = None,
        counter: TokenCounter | None = None,
        detector: ReadDetector | None = None,
        max_output_tokens: int = 0,
        place_results: bool = True,
        max_result_share: float | None = 0.25,
        mask_keep_recent: int | None = 2,
        shrink_target: float = 0.6,
        format: Literal["anthropic", "openai"] = "anthropic",
        clock: Callable[[], int] | None = None,
    ) -> None:
        if isinstance(context_window, ContextWindowInfo):
            self._info = context_window
        elif context_window is None and model is not None:
            self._info = model_window(model)
        else:
            self._info = context_window_info(context_window)
        self._task_dir = Path(task_dir) if task_dir is not None else None
        self._counter: TokenCounter = counter if counter is not None else CalibratedEstimator()
        self._manager = ContextManager(
            detector=detector if detector is not None else NativeReadDetector()
        )
        self._placer = ResultPlacer() if place_results else None
        self._clip_memo: dict[Clip, tuple[Message, Message]] = {}
        self._merger = RoleMerger()
        self._noticed: tuple[Message, Message] | None = None
        if max_result_share is not None and not 0 < max_result_share <= 1:
            raise ValueError(
                f"max_result_share must be in (0, 1] or None, got {max_result_share!r}"
            )
        self._max_result_share = max_result_share
        if mask_keep_recent is not None and mask_keep_recent < 0:
            raise ValueError(f"mask_keep_recent must be >= 0 or None, got {mask_keep_recent!r}")
        if not 0 < shrink_target <= 1:
            raise ValueError(f"shrink_target must be in (0, 1], got {shrink_target!r}")
        self._mask_keep_recent = mask_keep_recent
        self._shrink_target = shrink_target
        self._max_output_tokens = max_output_tokens
        self._clock = clock if clock is not None else (lambda: time.time_ns() // 1_000_000)
        if format not in ("anthropic", "openai"):
            raise ValueError(f"format must be 'anthropic' or 'openai', got {format!r}")
        self._history: list[Message] = []
        self._openai = OpenAIHistory() if format == "openai" else None
        self._state = _State()
        self._last: _LastRequest | None = None
        self._saved_length = 0
        if self._task_dir is not None:
            self._load(self._task_dir)

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
        self._state.deleted_range = check_range(value)
        self._save_state()

    @property
    def window(self) -> ContextWindowInfo:
        """The model's window and the limit requests are kept under."""
        return self._info

    @window.setter
    def window(self, value: int | ContextWindowInfo) -> None:
        # A model switch: the next decision uses the new limit, as in the original.
        self._info = value if isinstance(value, ContextWindowInfo) else context_window_info(value)

    @property
    def manager(self) -> ContextManager:
        """The underlying manager (its store holds every content edit)."""
        return self._manager

    # -- feeding the session ---------------------------------------------------------------

    def append(self, message: Message) -> None:
        """Add a message to the history (checked, never modified, not copied)."""
        self.extend([message])

    def extend(self, messages: Sequence[Message]) -> None:
        """Add several messages, all checked before any is added."""
        if self._openai is not None:
            self._openai.extend(messages)
            return
        for offset, message in enumerate(messages):
            check_message(message, f"history[{len(self._history) + offset}]")
        self._history.extend(messages)

    def _sync(self) -> Any:
        """Bring the Anthropic-shaped history up to date; the system prompt of an OpenAI history."""
        if self._openai is None:
            return None
        self._history, system = self._openai.anthropic()
        return system

    def record_usage(self, usage: Any, *, timestamp: int | None = None) -> None:
        """What the provider reported for the last prepared request.

        Accepts a :class:`TokenUsage` or an Anthropic or OpenAI usage object or dict. It teaches
        the counter the real size of that request and drives the next decision, unless the range
        has grown since that request was prepared (then the usage is stale and ignored).
        ``timestamp`` overrides when that request was sent (ms).
        """
        parsed = usage_from_sdk(usage)
        last = self._last
        generation = last.generation if last is not None else self._state.generation
        sent_at = timestamp if timestamp is not None else (last.timestamp if last else self._tick())
        self._state.usage = parsed
        self._state.usage_timestamp = sent_at
        self._state.usage_generation = generation
        if last is not None:
            reported = parsed.tokens_in + parsed.cache_writes + parsed.cache_reads
            self._counter.observe(
                last.messages, system=last.system, tools=last.tools, reported_input_tokens=reported
            )
        self._save_state()

    # -- building a request ----------------------------------------------------------------

    def prepare(
        self,
        *,
        system: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        max_output_tokens: int | None = None,
    ) -> Prepared:
        """The messages to send now, within the window, and what was done to get them.

        With ``format="openai"`` the messages come back in OpenAI's shape, system messages
        included, and ``system`` defaults to the history's own system messages for the estimate.
        """
        openai_system = self._sync()
        if system is None:
            system = openai_system
        now = self._tick()
        state = self._state
        reserve = self._max_output_tokens if max_output_tokens is None else max_output_tokens
        clips: dict[tuple[int, int], Clip] = {}
        view = self._view()
        for arrived in self._arrival_clips(view):
            clips[arrived.message_index, arrived.block_index] = arrived
            state.clips.append(arrived)
        if clips:
            view = self._view()
        stored_before = len(self._manager.store)
        usage = state.usage
        stale = usage is not None and state.usage_generation != state.generation
        result = self._manager.get_new_context_messages_and_metadata(
            view,
            usage=None if stale else usage,
            timestamp=state.usage_timestamp,  # edits are dated by the request, as in the original
            context_window=self._info,
            deleted_range=state.deleted_range,
        )
        replaced = 0
        range_changed = result.updated_deleted_range
        if range_changed:
            self._set_range(result.deleted_range)
        messages = self._visible(result.truncated_history)
        estimate = self._estimate(messages, system, tools, reserve)
        limit = self._info.max_allowed_size
        acted = estimate > limit or bool(clips)
        if estimate > limit:
            changed, altered = self._manager.apply_context_optimizations(
                view, visible_start(state.deleted_range), now
            )
            replaced += len(altered)
            if changed:
                messages = self._render(view)
                estimate = self._estimate(messages, system, tools, reserve)
            target = limit * self._shrink_target
            if estimate > target and self._mask_keep_recent is not None:
                masked = mask_old_context(
                    view,
                    visible_start(state.deleted_range),
                    self._manager.store,
                    now,
                    self._mask_keep_recent,
                )
                if masked:
                    messages = self._render(view)
                    estimate = self._estimate(messages, system, tools, reserve)
            while estimate > target:
                keep = Keep.QUARTER if estimate / 2 > limit else Keep.HALF
                candidate = next_range(view, state.deleted_range, keep)
                if candidate[1] < candidate[0] or candidate == state.deleted_range:
                    break
                self._manager._add_truncation_notice(now)
                self._set_range(candidate)
                range_changed = True
                messages = self._render(view)
                estimate = self._estimate(messages, system, tools, reserve)
            while estimate > limit:
                tighter = self._next_clip(estimate, limit)
                if tighter is None:
                    raise ContextOverflowError(
                        f"the smallest request this session can send is about {estimate:,} tokens"
                        f" (including {reserve:,} reserved for output), over the limit of"
                        f" {limit:,} for a {self._info.context_window:,}-token window",
                        estimated_tokens=estimate,
                        limit=limit,
                    )
                clips[tighter.message_index, tighter.block_index] = tighter
                state.clips = [
                    c
                    for c in state.clips
                    if (c.message_index, c.block_index)
                    != (tighter.message_index, tighter.block_index)
                ]
                state.clips.append(tighter)
                view = self._view()
                messages = self._render(view)
                estimate = self._estimate(messages, system, tools, reserve)
        if len(self._manager.store) != stored_before or acted:
            self._save_store()
        self._last = _LastRequest(messages, system, tools, now, state.generation)
        self._save()
        return Prepared(
            messages=OpenAIHistory.to_openai(messages) if self._openai is not None else messages,
            deleted_range=state.deleted_range,
            range_changed=range_changed,
            replaced_reads=replaced,
            estimated_tokens=estimate,
            max_allowed_size=limit,
            preflight_acted=acted,
            clipped=tuple(clips.values()),
            ignored_stale_usage=stale,
        )

    def _estimate(
        self,
        messages: list[Message],
        system: Any,
        tools: Sequence[Mapping[str, Any]] | None,
        reserve: int,
    ) -> int:
        return self._counter.count(messages, system=system, tools=tools) + reserve

    def _render(self, view: list[Message]) -> list[Message]:
        sent = self._manager.get_truncated_messages(view, self._state.deleted_range)
        return self._visible(sent)

    def _visible(self, sent: list[Message]) -> list[Message]:
        # finish_request, remembering its work: the same first answer gets the same noticed copy,
        # and only what is new since the last request is checked for runs of one role
        placed = place_truncation_notice(sent, self._manager.store)
        if placed is not sent:
            known = self._noticed
            if known is not None and known[0] is sent[1]:
                placed[1] = known[1]
            else:
                self._noticed = (sent[1], placed[1])
        return self._merger.merge(placed)

    def _next_clip(self, estimate: int, limit: float) -> Clip | None:
        """A tighter clip of the newest turn's largest result that removes the excess, or None."""
        if len(self._history) < 3 or self._history[-1].get("role") != "user":
            return None
        index = len(self._history) - 1
        current = {
            clip.block_index: clip.kept for clip in self._state.clips if clip.message_index == index
        }
        # Four characters per token over-cuts for typical text; the caller re-estimates anyway.
        excess_chars = int((estimate - limit) * 4) + 1
        for block_index, size in clippable_blocks(self._history[index]):
            kept_now = min(size, current.get(block_index, size))
            kept = max(MIN_KEPT_CHARS, kept_now - excess_chars)
            if kept < kept_now:
                return Clip(index, block_index, kept)
        return None

    def _arrival_clips(self, view: list[Message]) -> list[Clip]:
        """Clips for results of the newest turn that alone would take more than their share.

        Clipping the newest message changes nothing already sent, so it costs no prompt-cache
        reuse, and every later request is smaller for it. Sizes are in characters at a
        conservative 3 characters a token.
        """
        share = self._max_result_share
        history = self._history
        if share is None or len(history) < 3 or history[-1].get("role") != "user":
            return []
        index = len(history) - 1
        if any(clip.message_index == index for clip in self._state.clips):
            return []
        budget = max(MIN_KEPT_CHARS, int(self._info.max_allowed_size * share * 3))
        newest = view[index]
        return [
            Clip(index, block_index, budget)
            for block_index, size in clippable_blocks(newest)
            if size > budget
        ]

    def _view(self) -> list[Message]:
        """The history as the manager sees it: text results placed, oversized results clipped."""
        view = self._placer.place(self._history) if self._placer is not None else self._history
        if not self._state.clips:
            return view
        return apply_clips(view, self._state.clips, self._clip_memo)

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
        return Checkpoint(
            history_length=len(self._openai) if self._openai is not None else len(self._history),
            deleted_range=state.deleted_range,
            timestamp=self._tick(),
            clips=tuple(state.clips),
            store_json=self._manager.context_history_json(),
        )

    def rollback(self, checkpoint: Checkpoint) -> None:
        """Return to ``checkpoint``: later messages, range growth, edits and clips are undone.

        The store is restored from the checkpoint's copy rather than rolled back by timestamp:
        edits decided from an earlier request's usage carry that request's (earlier) time.
        """
        length = len(self._openai) if self._openai is not None else len(self._history)
        if checkpoint.history_length > length:
            raise ValueError(
                f"checkpoint holds {checkpoint.history_length} messages, the history only"
                f" {length}: it belongs to another session or a rolled-back branch"
            )
        if self._openai is not None:
            self._openai.cut(checkpoint.history_length)
            self._sync()
        else:
            del self._history[checkpoint.history_length :]
        state = self._state
        state.deleted_range = checkpoint.deleted_range
        state.clips = list(checkpoint.clips)
        state.generation += 1  # usage reported after the checkpoint no longer applies
        state.usage = None
        self._last = None
        self._manager.store = OverwriteStore.from_json(checkpoint.store_json)
        self._saved_length = min(self._saved_length, checkpoint.history_length)
        self._save(rewrite=True)

    # -- persistence -----------------------------------------------------------------------

    def _save(self, *, rewrite: bool = False) -> None:
        if self._task_dir is None:
            return
        if rewrite or self._saved_length != len(self._history):
            text = json.dumps(self._history, separators=(",", ":"), ensure_ascii=False)
            atomic_write_text(self._task_dir / HISTORY_FILE, text)
            self._saved_length = len(self._history)
        self._save_store()
        self._save_state()

    def _save_store(self) -> None:
        if self._task_dir is not None:
            self._manager.save_context_history(self._task_dir)

    def _save_state(self) -> None:
        if self._task_dir is None:
            return
        state = self._state
        usage = state.usage
        value = {
            "version": _STATE_VERSION,
            "history_length": len(self._history),
            "deleted_range": list(state.deleted_range) if state.deleted_range else None,
            "generation": state.generation,
            "last_timestamp": state.last_timestamp,
            "usage": None
            if usage is None
            else [usage.tokens_in, usage.tokens_out, usage.cache_writes, usage.cache_reads],
            "usage_timestamp": state.usage_timestamp,
            "usage_generation": state.usage_generation,
            "clips": [[c.message_index, c.block_index, c.kept] for c in state.clips],
        }
        atomic_write_text(self._task_dir / STATE_FILE, json.dumps(value, separators=(",", ":")))

    def _load(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        history_path = folder / HISTORY_FILE
        if history_path.exists():
            try:
                history = json.loads(history_path.read_text(encoding="utf-8"))
            except ValueError as error:
                raise TaskFolderError(f"{history_path}: not JSON: {error}") from None
            if not isinstance(history, list):
                raise TaskFolderError(f"{history_path}: expected a list of messages")
            for index, message in enumerate(history):
                check_message(message, f"{HISTORY_FILE}[{index}]")
            self._history = history
            self._saved_length = len(history)
            if self._openai is not None:
                self._openai = OpenAIHistory(OpenAIHistory.to_openai(history))
        self._manager.initialize_context_history(folder)
        state_path = folder / STATE_FILE
        if not state_path.exists():
            return
        try:
            value = json.loads(state_path.read_text(encoding="utf-8"))
            usage = value.get("usage")
            deleted = value.get("deleted_range")
            self._state = _State(
                deleted_range=(int(deleted[0]), int(deleted[1])) if deleted else None,
                generation=int(value["generation"]),
                last_timestamp=int(value["last_timestamp"]),
                usage=TokenUsage(*map(int, usage)) if usage else None,
                usage_timestamp=int(value["usage_timestamp"]),
                usage_generation=int(value["usage_generation"]),
                clips=[Clip(int(a), int(b), int(c)) for a, b, c in value.get("clips", [])],
            )
        except (ValueError, KeyError, TypeError, IndexError) as error:
            raise TaskFolderError(f"{state_path}: unreadable session state: {error!r}") from None


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
