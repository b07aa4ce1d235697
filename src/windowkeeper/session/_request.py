"""From the history and the session's state to the request sent: view, render, estimate.

The pipeline every request goes through, each stage remembering its work so that a steady turn
costs what is new, not the history: the *view* (tool ids made unique, Cline's text results
placed in their tool_result blocks, clips applied), the original's truncation of it by the
hidden range, then what the session adds (the truncation notice where the model sees it, a
fold's continuation after messages 0-1, in-band summary replies left out, runs of one role
merged, results whose call is not sent turned into text) and the estimate of its size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..cline._manager import ContextManager
from ..core._incremental import replaced_spans
from ..core._messages import Message
from ..core._notices import TRUNCATION_NOTICE
from ..core._overwrites import OverwriteStore
from ..core._pairing import OrphanResults, orphans_as_text
from ..core._truncation import visible_start
from ..formats._wire import EMPTY_MESSAGE_NOTICE, Repair, anthropic_emptied
from ._alternation import RoleMerger, merge_same_roles
from ._clipping import MIN_KEPT_CHARS, Clip, ClipMemo, clippable_blocks
from ._greeting import opens_with_greeting, with_opening
from ._native_results import ResultPlacer
from ._state import SessionState
from ._tokens import TokenCounter
from ._tool_ids import UniqueToolIds
from .steps import newest_turn

__all__ = [
    "FOLDED_RESULT",
    "RequestBuilder",
    "arrival_clips",
    "finish_request",
    "place_truncation_notice",
]

FOLDED_RESULT = "[windowkeeper: this result was folded into the summary that follows]"
_THINKING = frozenset({"thinking", "redacted_thinking"})


class RequestBuilder:
    """The request pipeline of one session (see the module docstring); not thread-safe."""

    __slots__ = (
        "_after_fold",
        "_continued",
        "_counter",
        "_empties",
        "_greeted",
        "_ids",
        "_manager",
        "_merger",
        "_noticed",
        "_opening",
        "_orphans",
        "_placer",
        "clip_memo",
        "orphaned",
    )

    def __init__(
        self,
        manager: ContextManager,
        counter: TokenCounter,
        *,
        place_results: bool,
        opening: bool = False,
    ):
        self._manager = manager
        self._opening = opening  # a placeholder user turn before a greeting (Anthropic's shape)
        self._counter = counter
        self._placer = ResultPlacer() if place_results else None
        self._ids = UniqueToolIds(anthropic_ids=opening)  # the same shape: Anthropic's
        self.clip_memo = ClipMemo()
        self._merger = RoleMerger()
        self._orphans = OrphanResults()
        self._empties = _EmptyMessages()
        self._noticed: tuple[Message, Message] | None = None
        self._greeted: tuple[Message, Message] | None = None
        self._continued: tuple[tuple[str, tuple[str, ...]], Message] | None = None
        self._after_fold: tuple[Message, Message] | None = None
        self.orphaned: tuple[Repair, ...] = ()  # the last render's results turned into text

    def forget(self) -> None:
        """The history changed below what was seen (a cut or a rollback): ids start over."""
        self._ids.reset()

    def view(self, history: Sequence[Message], state: SessionState) -> list[Message]:
        """The history as the manager sees it: ids unique, text results placed, clips applied."""
        view = self._ids.apply(history)
        if self._placer is not None:
            view = self._placer.place(view)
        if not state.clips:
            return view
        return self.clip_memo.apply(view, state.clips)

    def render(self, view: list[Message], state: SessionState) -> list[Message]:
        """What ``state`` sends of ``view``: the original's truncation, then :meth:`visible`.

        When a fold took the answer the newest turn replies to, the tail opens with that user
        turn: its tool results are made text first (their call is folded), as the original's
        pairing repair would put a missing result in their place after message 1's calls."""
        hidden = state.deleted_range
        if state.compaction.fold is not None and hidden is not None:
            after = hidden[1] + 1
            if after < len(view) and view[after].get("role") == "user":
                opened = self._results_as_text(view[after])
                if opened is not view[after]:
                    view = [*view[:after], opened, *view[after + 1 :]]
        return self.visible(self._manager.get_truncated_messages(view, state.deleted_range), state)

    def visible(self, sent: list[Message], state: SessionState) -> list[Message]:
        """The session's part of a request, given what the original would send (``sent``)."""
        excluded = state.compaction.excluded
        if excluded:
            start = max(visible_start(state.deleted_range), 2)
            drop = {index - start + 2 for index in excluded if index >= start}
            if drop:
                sent = [m for position, m in enumerate(sent) if position not in drop]
        placed = place_truncation_notice(sent, self._manager.store)
        if placed is not sent:
            # the same first answer gets the same noticed copy, so the prefix stays cached
            known = self._noticed
            if known is not None and known[0] is sent[1]:
                placed[1] = known[1]
            else:
                self._noticed = (sent[1], placed[1])
        fold = state.compaction.fold
        continued = fold.continuation if fold is not None else None
        if opens_with_greeting(placed) and continued is None:
            placed = self._greeting_noticed(placed, state)
        if continued is not None and len(placed) >= 2:  # also when only messages 0-1 are left
            placed = [*placed[:2], self._continuation(continued, placed[1]), *placed[2:]]
        merged = self._merger.merge(placed)
        fixed = self._orphans.apply(merged)
        opened = with_opening(fixed) if self._opening else fixed
        shift = len(opened) - len(fixed)  # the placeholder before a greeting
        self.orphaned = (
            tuple(
                Repair(
                    f"messages[{position + shift}]",
                    "tool results whose call is not sent became text",
                )
                for position, (a, b) in enumerate(zip(merged, fixed, strict=True))
                if a is not b
            )
            if merged != fixed  # in C: a message turned into text never equals its source
            else ()
        )
        return opened

    def _greeting_noticed(self, sent: list[Message], state: SessionState) -> list[Message]:
        """``sent`` with the truncation notice in the greeting (message 0) while turns are hidden.

        The greeting is the first assistant message the model sees, where the original puts the
        notice (see :mod:`windowkeeper.session._greeting`); the same copy while nothing changes.
        """
        if state.deleted_range is None or state.deleted_range[1] < state.deleted_range[0]:
            return sent
        greeting = sent[0]
        known = self._greeted
        if known is None or known[0] is not greeting:
            known = self._greeted = (greeting, with_notice_block(greeting))
        return [known[1], *sent[1:]]

    def estimate(
        self,
        messages: list[Message],
        system: Any,
        tools: Sequence[Mapping[str, Any]] | None,
        reserve: int,
    ) -> int:
        """The size of a request of ``messages`` by the session's counter, output reserve included."""
        counter = self._counter
        counted = counter.count(messages, system=system, tools=tools) + reserve
        noticed = self._empties.count(messages)
        if noticed:  # the wire gives each a notice (see formats._wire): count it in
            notice = [{"role": "user", "content": [{"type": "text", "text": EMPTY_MESSAGE_NOTICE}]}]
            extra = counter.count(notice) - counter.count([{"role": "user", "content": ""}])
            counted += noticed * max(extra, 0)
        return counted

    def id_repairs(self, state: SessionState) -> tuple[Repair, ...]:
        """The renamed tool_use ids (used before, or holding characters the API refuses) among
        the messages a request of ``state`` sends."""
        start = visible_start(state.deleted_range)
        return tuple(
            Repair(
                f"history[{index}].content[{position}].id",
                f"a tool_use id with characters the API refuses: sent as {new!r}"
                if refused
                else f"a tool_use id used before: sent as {new!r}",
            )
            for index, renamed in sorted(self._ids.renamed().items())
            if index < 2 or index >= start
            for position, (new, refused) in renamed.items()
        )

    def _results_as_text(self, message: Message) -> Message:
        """``message``, the newest turn right after a fold that took the answer it replies to,
        with its tool results as text (their call is folded), the same object while it is
        unchanged."""
        known = self._after_fold
        if known is None or known[0] is not message:
            converted = orphans_as_text({"role": "assistant", "content": []}, message)
            known = self._after_fold = (message, converted if converted is not None else message)
        return known[1]

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


def arrival_clips(
    history: Sequence[Message], view: list[Message], state: SessionState, budget_chars: int
) -> list[Clip]:
    """Clips for results of the newest turn longer than ``budget_chars`` (not clipped before).

    Clipping the newest message changes nothing already sent, so it costs no prompt-cache
    reuse, and every later request is smaller for it.
    """
    clipped = {clip.message_index for clip in state.clips}
    budget = max(MIN_KEPT_CHARS, budget_chars)
    return [
        Clip(index, block_index, budget)
        for index in newest_turn(history)
        if index not in clipped
        for block_index, size in clippable_blocks(view[index])
        if size > budget
    ]


class _EmptyMessages:
    """How many messages of a request the wire fills with a notice, judging only the messages
    replaced or added since the last count (see :func:`~windowkeeper.core._incremental.replaced_spans`).

    A message with nothing the provider accepts (empty or blank text, only dropped blocks) is
    sent with a notice; the estimate must count that text, or a request at the limit goes over.
    """

    __slots__ = ("_known", "_last", "_total")

    def __init__(self) -> None:
        self._last: list[Message] | None = None  # the messages counted last
        self._total = 0  # such messages among them
        self._known: dict[int, tuple[Message, bool]] = {}  # by id: a message judged before

    def count(self, messages: Sequence[Message]) -> int:
        last = self._last
        spans = replaced_spans(last, messages) if last is not None else None
        if last is None or spans is None:
            total = self._among(messages, 0, len(messages))
        else:  # the last count, with the messages replaced since (a shrink's edits) swapped
            total = self._total
            for a, b, c, d in spans:
                total += self._among(messages, c, d) - self._among(last, a, b)
        if len(self._known) > 2 * len(messages) + 64:  # forget messages no longer sent
            live = set(map(id, messages))
            self._known = {key: entry for key, entry in self._known.items() if key in live}
        self._last, self._total = list(messages), total
        return total

    def _among(self, messages: Sequence[Message], start: int, stop: int) -> int:
        """How many of ``messages[start:stop]`` the wire fills with a notice, each judged once."""
        known = self._known
        found = 0
        for index in range(start, stop):
            message = messages[index]
            entry = known.get(id(message))
            if entry is None or entry[0] is not message:
                entry = (message, anthropic_emptied(message))
                known[id(message)] = entry
            found += entry[1]
        return found


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
    if (
        isinstance(content, list)
        and content
        and isinstance(content[0], dict)
        and content[0].get("type") == "text"
    ):
        return sent  # the original's placement works
    noticed = with_notice_block(first_answer)
    if noticed is first_answer:
        return sent
    output = list(sent)
    output[1] = noticed
    return output


def with_notice_block(message: Message) -> Message:
    """A copy of an assistant ``message`` with the truncation notice as a text block of its own,
    after any leading thinking blocks (the API wants those first); ``message`` itself when its
    content is neither a string nor a list."""
    content = message.get("content")
    notice = {"type": "text", "text": TRUNCATION_NOTICE}
    if isinstance(content, str):
        new_content: list[Any] = (
            [notice, {"type": "text", "text": content}] if content else [notice]
        )
    elif isinstance(content, list):
        at = 0
        while (
            at < len(content)
            and isinstance(content[at], dict)
            and content[at].get("type") in _THINKING
        ):
            at += 1
        new_content = [*content[:at], notice, *content[at:]]
    else:
        return message
    return {**message, "content": new_content}
