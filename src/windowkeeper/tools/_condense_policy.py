"""The original's auto-condense path as a replay policy: summaries instead of truncation.

Nothing here prints, and nothing given is modified.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..cline._manager import ContextManager
from ..core._condense import (
    bumped_range,
    is_next_gen_model_family,
    summary_call,
    summary_range,
    summary_result,
    summary_would_fold_a_summary,
    task_compact_threshold,
    with_summary_request,
)
from ..core._messages import Message
from ..core._truncation import DeletedRange, Keep, next_range
from ..core._usage import TokenUsage
from ..core._window import ContextWindowInfo
from ._policies import (
    CondenseStep,
    PolicyName,
    Ruler,
    Sent,
    Summarizer,
    _read_replacements,
    _window_info,
)
from ._scripted_summary import scripted_summary

__all__ = ["ClineCondensePolicy"]


class ClineCondensePolicy:
    """The original's task with auto-condense on: summaries instead of truncation.

    Before each request, as the original's task does: when the previous request reached
    ``max_allowed_size`` (the task's threshold), at least three messages follow the last summary
    and replacing duplicate file reads would save under 30%, the new user message carries the
    summary request and goes out whole. The model's answer (``summarizer`` over what was sent;
    :func:`~windowkeeper.tools._scripted_summary.scripted_summary` by default) is a
    ``summarize_task`` call; as its handler does, everything after the first pair up to that user
    message is hidden (keep "none"), the truncation notice is set on message 1 and the task text
    of message 0 is replaced, and the next request, the continuation, hides the user message and
    the call too (+2) and carries the summary as the tool's result. The recorded answer follows
    that continuation, and the replay goes on from there.

    The policy keeps its own history: the recorded one with the summary request folded into its
    user message and each summary's call and result inserted. Calls are tool_use blocks when the
    history has any, else Cline's XML text; results are tool_result blocks when the history has
    any, else text. ``native_calls``/``native_results`` fix either choice. With native results
    the summary is dropped as an orphan by the original's truncation, as it is in Cline.

    A request that ``counter`` (with ``system`` and ``tools``) finds larger than the window is
    refused as the provider would refuse it, and handled as the original's task handles a
    context-window error, once per request: a quarter more is hidden, the notice set and the task
    text replaced, and the request sent again (the refused one is not recorded). If it still does
    not fit, it is recorded as it is, overflowing: the original gives up there.

    ``model_id`` gates auto-condense as the original does: a model that is not next-gen
    (:func:`~windowkeeper.core._condense.is_next_gen_model_family`) gets the plain truncation
    of ``"cline"``. None (the default) means a next-gen model.
    """

    def __init__(
        self,
        window: int | ContextWindowInfo,
        *,
        summarizer: Summarizer | None = None,
        model_id: str | None = None,
        native_calls: bool | None = None,
        native_results: bool | None = None,
        counter: Ruler | None = None,
        system: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        self.window = _window_info(window)
        self.manager = ContextManager()
        self.counter = counter if counter is not None else Ruler()
        self.system = system
        self.tools = tools
        self.summarizer: Summarizer = summarizer if summarizer is not None else scripted_summary
        self.auto_condense = model_id is None or is_next_gen_model_family(model_id)
        self.native_calls = native_calls
        self.native_results = native_results
        self.deleted_range: DeletedRange | None = None
        self.history: list[Message] = []
        """The conversation as this policy made it (summary requests, calls and results in it)."""
        self.condensations = 0
        self._fed = 0

    @property
    def name(self) -> str:
        """``"cline-condense"``."""
        return PolicyName.CLINE_CONDENSE.value

    def send(self, history: Sequence[Message], *, usage: TokenUsage | None, timestamp: int) -> Sent:
        """The request for ``history``, and the continuation after it when it asks for a summary."""
        new = list(history[self._fed :])
        self._fed = len(history)
        own = self.history
        before = _read_replacements(self.manager.store)
        if not self.auto_condense:
            own.extend(new)
            return self._send(usage, timestamp, before, use_auto_condense=False)
        asks = bool(new) and new[-1].get("role") == "user"
        own.extend(new[:-1] if asks else new)
        if asks:
            summarize = self._should_summarize(usage, timestamp)
            own.append(with_summary_request(new[-1]) if summarize else new[-1])
            asks = summarize
        sent = self._send(usage, timestamp, before, use_auto_condense=True)
        if not asks:
            return sent
        continuation = self._condense(sent.messages, timestamp)
        return Sent(
            sent.messages,
            sent.deleted_range,
            sent.truncated,
            sent.replaced_reads,
            condense=CondenseStep.SUMMARIZE,
            follow_up=continuation,
        )

    def _should_summarize(self, usage: TokenUsage | None, timestamp: int) -> bool:
        """The task's decision, on the history before the new user message is appended."""
        own = self.history
        if usage is None or usage.total < task_compact_threshold(self.window):
            return False
        if summary_would_fold_a_summary(own, self.deleted_range):
            return False
        optimization = self.manager.attempt_file_read_optimization_in_memory(
            own, self.deleted_range, timestamp
        )
        return optimization.need_to_truncate

    def _condense(self, asked: Sequence[Message], timestamp: int) -> Sent:
        """The model's summary, its handler, and the continuation request that follows."""
        own = self.history
        summary = self.summarizer(asked)
        self.condensations += 1
        tool_id = f"toolu_windowkeeper_summary_{self.condensations}"
        native_calls = self.native_calls
        if native_calls is None:
            native_calls = _has_block(own, "tool_use")
        native_results = self.native_results
        if native_results is None:
            native_results = _has_block(own, "tool_result")
        # The summarize_task handler, while the history still ends with the asking message.
        self.deleted_range = summary_range(own, self.deleted_range)
        handled = timestamp + 1  # the handler's own time, just after the request
        self.manager.trigger_apply_standard_context_truncation_notice_change(handled, None, own)
        own.append(summary_call(summary, tool_id, native=native_calls))
        # The next request: the asking message and the call hidden too, the result appended.
        self.deleted_range = bumped_range(own, self.deleted_range)
        own.append(summary_result(summary, tool_id, native=native_results))
        before = _read_replacements(self.manager.store)
        sent = self._send(None, handled, before, use_auto_condense=True)
        return Sent(
            sent.messages,
            sent.deleted_range,
            True,
            sent.replaced_reads,
            condense=CondenseStep.CONTINUATION,
        )

    def _send(
        self, usage: TokenUsage | None, timestamp: int, before: int, *, use_auto_condense: bool
    ) -> Sent:
        result = self.manager.get_new_context_messages_and_metadata(
            self.history,
            usage=usage,
            timestamp=timestamp,
            context_window=self.window,
            deleted_range=self.deleted_range,
            use_auto_condense=use_auto_condense,
        )
        self.deleted_range = result.deleted_range
        messages = result.truncated_history
        truncated = result.updated_deleted_range
        if self._refused(messages):
            # The original's context-window error path: hide a quarter more, notices, retry once.
            self.deleted_range = next_range(self.history, self.deleted_range, Keep.QUARTER)
            self.manager.trigger_apply_standard_context_truncation_notice_change(
                timestamp + 1, None, self.history
            )
            messages = self.manager.get_truncated_messages(self.history, self.deleted_range)
            truncated = True
        replaced = _read_replacements(self.manager.store) - before
        return Sent(messages, self.deleted_range, truncated, replaced)

    def _refused(self, messages: Sequence[Message]) -> bool:
        """Whether the provider would refuse these messages as too large for the window."""
        size = self.counter.count(messages, system=self.system, tools=self.tools)
        return size > self.window.context_window


def _has_block(history: Sequence[Message], kind: str) -> bool:
    return any(
        isinstance(block, dict) and block.get("type") == kind
        for message in history
        if isinstance(message.get("content"), list)
        for block in message["content"]
    )
