"""The request a policy would send next for a trace, in the provider shape of your choice.

:func:`next_request` is what ``windowkeeper view`` shows and ``windowkeeper check`` validates.
When no request can be sent (the session cannot make it fit the window), it raises
:class:`~windowkeeper.ContextOverflowError` with the numbers rather than showing an empty one.
Nothing stored in the trace is modified.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._errors import ContextOverflowError, MalformedMessageError
from ..core._messages import Message
from ..core._truncation import DeletedRange, visible_start
from ..core._window import DEFAULT_CONTEXT_WINDOW as DEFAULT_WINDOW
from ..core._window import ContextWindowInfo, as_window_info
from ..formats._openai_notes import ARGUMENTS_NOTE
from ..formats._wire import anthropic_wire, openai_wire
from ..formats.openai import from_anthropic
from ..rules._anthropic import TOOL_USE_UNANSWERED, Violation, validate_messages
from ..session._session import ContextSession
from ..session._state_extras import stored_window
from ..session.steps import Action
from ..storage import ReadOnlyStore, TaskFolderStore
from ._actions import Explained, explain
from ._replay import ClinePolicy, PolicyName, Replayer, Ruler, Sent, UsageSource, request_points
from ._trace import Trace, TraceError

__all__ = ["NextRequest", "next_request"]


@dataclass(frozen=True, slots=True)
class NextRequest:
    """The request a policy would send next for a trace, and how it was built."""

    policy: str
    window: ContextWindowInfo
    history_length: int
    messages: list[Message]
    system: Any
    deleted_range: DeletedRange | None
    truncated: bool  # the range grew for this request
    replaced_reads: int  # older copies of file contents replaced for this request
    estimated_tokens: int  # the replay ruler's count, system prompt and tools included
    awaiting_reply: bool
    """The history ends with an assistant message: the request will also carry the reply to it."""
    actions: tuple[Action, ...] = ()
    """What shrank this request, in order (see :mod:`windowkeeper.tools._actions`)."""

    @property
    def over_window(self) -> bool:
        """Whether the request is larger than the model's window: the provider refuses it."""
        return self.estimated_tokens > self.window.context_window

    def window_problem(self) -> str | None:
        """The line ``check`` and ``view`` report for a request over the window, or None."""
        if not self.over_window:
            return None
        size, window = self.estimated_tokens, self.window.context_window
        return (
            f"the next request ({self.policy} policy) is about {size:,} tokens, over the"
            f" {window:,}-token window ({size / window:.1f}x; limit {self.window.max_allowed_size:,.0f}):"
            " the provider refuses it"
        )

    def explained(self) -> list[Explained]:
        """Each action with its reason and the tokens it freed."""
        return [explain(action) for action in self.actions]

    def history_index(self, position: int) -> int:
        """The index in the full history of ``messages[position]``."""
        if position < 2:
            return position
        return visible_start(self.deleted_range) + position - 2

    def violations(self) -> list[Violation]:
        """The provider rules this request breaks.

        When it awaits a reply, a tool_use in the last message is answered by that reply, so it
        is not reported.
        """
        found = validate_messages(self.messages)
        if self.awaiting_reply and self.messages:
            last = f"messages[{len(self.messages) - 1}]"
            found = [v for v in found if not (v.path == last and v.rule == TOOL_USE_UNANSWERED)]
        return found

    def as_anthropic(self) -> dict[str, Any]:
        """The Messages API body: ``messages`` in the API's wire shape, and ``system``.

        Keys a trace keeps beside the API's (Cline's ``ts``, ``metrics``, ``call_id``,
        ``reasoning_details``, windowkeeper's OpenAI notes) are not sent, so they are left out,
        as are blocks the API does not take (see :mod:`windowkeeper.formats._wire`).
        """
        body: dict[str, Any] = {}
        if self.system is not None:
            body["system"] = self.system
        body["messages"] = anthropic_wire(self.messages)
        return body

    def as_openai(self) -> dict[str, Any]:
        """The Chat Completions body: ``messages``, the system prompt first when there is one.

        In Chat Completions' wire shape: only the keys its message params define, no part of a
        type it does not take (a thinking block, for one).
        """
        plain = [
            {"role": message["role"], "content": message["content"]} for message in self.messages
        ]
        return {"messages": openai_wire(from_anthropic(plain, system=self.system))}


def next_request(
    trace: Trace,
    *,
    window: int | ContextWindowInfo | None,
    policy: str = PolicyName.CLINE,
    replay: bool = False,
) -> NextRequest:
    """What ``policy`` sends next for ``trace``: its whole history, as it stands.

    The ``cline`` policy resumes from what a Cline task folder stored (its deleted range and
    overwrites) and decides from the last request's recorded usage, as Cline does on its next
    request. Where nothing was stored (a history-only folder, a message file) and for the
    original's policies (``cline``, ``cline-condense``), every request of the trace is replayed
    first, as :func:`~windowkeeper.tools._replay.replay` does: the original's range grows
    request by request, so only a replay gives the one it would stand at. The ``windowkeeper``
    policy starts fresh at the next request (one request, whatever the length of the trace),
    unless ``replay=True`` asks for every request before it.

    Raises :class:`~windowkeeper.ContextOverflowError` (naming the trace, with the estimate, the
    limit and the window) when the policy cannot send the next request: the session found that
    nothing makes it fit, or the policy would send no message at all. Earlier requests of the
    replay that overflowed do not count: only the next one is shown.

    On a folder where a ContextSession keeps its state, the ``cline`` and ``windowkeeper``
    policies show that session's own next request (its range, folds, clips, usage), with the
    window it stored when ``window`` is None. Elsewhere None means 128 000 tokens.
    """
    history = trace.history
    name = PolicyName(policy)
    if trace.session_folder is not None and name in (PolicyName.CLINE, PolicyName.WINDOWKEEPER):
        return _stored_session_request(trace, window)
    info = as_window_info(window if window is not None else DEFAULT_WINDOW)
    resume = name is PolicyName.CLINE and (
        trace.deleted_range is not None or trace.store is not None
    )
    replayer = Replayer(
        history,
        window=info,
        policy=ClinePolicy(info, store=trace.store, deleted_range=trace.deleted_range)
        if resume
        else name,
        usage=UsageSource.RECORDED if trace.has_recorded_usage else UsageSource.ESTIMATED,
        requests=trace.requests,
        system=trace.system,
        tools=trace.tools,
    )
    try:
        if not resume:
            points = request_points(history)
            # The original's range grows request by request from the usage of each: only a
            # replay of every request gives the range it would stand at now. The session
            # decides from the request itself, so it starts at the next one.
            full = replay or name is not PolicyName.WINDOWKEEPER
            for length in points if full else []:
                replayer.request(length)
        sent, record = replayer.request(len(history))
    except MalformedMessageError as error:  # a message the session refuses (it checks more)
        raise TraceError(f"{trace.path}: {error}") from error
    if sent.overflow_estimate is not None or not sent.messages:
        raise _cannot_fit(trace, replayer.policy.name, info, sent, record.estimated_tokens)
    return NextRequest(
        policy=replayer.policy.name,
        window=info,
        history_length=len(history),
        messages=sent.messages,
        system=trace.system,
        deleted_range=sent.deleted_range,
        truncated=sent.truncated,
        replaced_reads=sent.replaced_reads,
        estimated_tokens=record.estimated_tokens,
        awaiting_reply=bool(history) and history[-1].get("role") == "assistant",
        actions=sent.actions or _replay_actions(sent),
    )


def _replay_actions(sent: Sent) -> tuple[Action, ...]:
    """The original's decisions for a request, as actions (they measure nothing)."""
    actions = []
    if sent.replaced_reads:
        actions.append(Action("replaced-reads"))
    if sent.truncated:
        actions.append(Action("truncation", deleted_range=sent.deleted_range))
    return tuple(actions)


def _stored_session_request(trace: Trace, window: int | ContextWindowInfo | None) -> NextRequest:
    """What the ContextSession that keeps its state in the trace's folder sends next.

    The session is opened read-only (nothing in the folder changes) and prepares its request
    from its own stored range, clips and usage, as it would on its next turn.
    """
    assert trace.session_folder is not None
    store = ReadOnlyStore(TaskFolderStore(trace.session_folder))
    try:
        if window is None:
            snapshot = store.load()
            window = stored_window(snapshot.state if snapshot is not None else None)
        info = as_window_info(window if window is not None else DEFAULT_WINDOW)
        session = ContextSession(info, store=store)
        prepared = session.prepare(system=trace.system, tools=trace.tools)
    except MalformedMessageError as error:
        raise TraceError(f"{trace.path}: {error}") from error
    except ContextOverflowError as error:
        raise ContextOverflowError(
            f"{trace.path}: the next request cannot fit (the stored session): {error}",
            estimated_tokens=error.estimated_tokens,
            limit=error.limit,
        ) from error
    history = trace.history
    return NextRequest(
        policy=f"{PolicyName.WINDOWKEEPER.value} (stored session)",
        window=info,
        history_length=len(history),
        messages=prepared.messages,
        system=trace.system,
        deleted_range=prepared.deleted_range,
        truncated=prepared.range_changed,
        replaced_reads=prepared.replaced_reads,
        estimated_tokens=Ruler().count(prepared.messages, system=trace.system, tools=trace.tools),
        awaiting_reply=bool(history) and history[-1].get("role") == "assistant",
        actions=prepared.actions,
    )


def _cannot_fit(
    trace: Trace, policy: str, info: ContextWindowInfo, sent: Sent, estimate: int
) -> ContextOverflowError:
    """The error for a next request that cannot be sent: why, with the numbers."""
    limit = info.max_allowed_size
    if sent.refused is not None:
        estimate, limit = sent.refused.estimated_tokens, sent.refused.limit
        why = f"the smallest request it can send is about {estimate:,} tokens"
    else:
        why = f"nothing would be sent (about {estimate:,} tokens estimated)"
    shown = f"{limit:,.0f}" if float(limit).is_integer() else f"{limit:,.1f}"
    return ContextOverflowError(
        f"{trace.path}: the next request cannot fit ({policy} policy): {why}, over the limit"
        f" of {shown} for a {info.context_window:,}-token window",
        estimated_tokens=estimate,
        limit=limit,
    )


def _without_notes(content: Any) -> Any:
    if not isinstance(content, list):
        return content
    return [
        {key: value for key, value in block.items() if key != ARGUMENTS_NOTE}
        if isinstance(block, dict) and ARGUMENTS_NOTE in block
        else block
        for block in content
    ]
