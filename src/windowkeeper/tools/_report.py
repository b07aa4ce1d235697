"""A self-contained HTML report of a replayed trace: a timeline per policy, each request openable.

:func:`report` replays a history under one or more policies (as ``windowkeeper replay`` does,
with the same numbers: each policy's :meth:`~windowkeeper.tools._replay.Replay.to_json` is
embedded as it is) and writes one HTML file that needs nothing else: the page's script and
styles are inline, the timeline is drawn as inline SVG, and the messages are embedded JSON that
the script renders only for the request a reader opens, so a long task stays small in the DOM.

Per request the page keeps what the replay measured and what the report adds: which history
messages were sent (runs of indices), the messages whose content the policy changed (as sent),
the usage that drove the decision (for the label of a hidden range), and the part of the request
a prompt cache could reuse (the leading messages equal to the previous request's), and what our
validator of the provider's rules finds wrong in it. Billed cost follows a
:class:`~windowkeeper.tools._prices.PriceModel`: the reused prefix is read from the cache, the
rest of the input written to it, and the answer the trace recorded after the request is output.

Nothing here prints; the file is written atomically.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from ..core._messages import Message
from ..core._truncation import DeletedRange
from ..core._usage import TokenUsage
from ..rules._anthropic import validate_messages
from ..session._clipping import Clip, block_size
from ..session._session import ContextSession, Prepared
from ..storage._files import atomic_write_text
from ._prices import PriceModel
from ._replay import PolicyName, Replayer, Ruler, Sent, UsageSource, request_points
from ._trace import Trace

__all__ = ["report", "report_html"]


_STEP_MARKERS = {
    "duplicate-reads": "replaced",
    "mask-outputs": "masked",
    "hide-turns": "truncated",
    "clip-blocks": "clipped",
    "clip-on-arrival": "clipped",
    "reported-usage-reads": "replaced",
    "reported-usage-truncation": "truncated",
    "summarize": "continuation",
}
"""The timeline marker of each shrink step's actions (``Prepared.actions``)."""


class _Observed:
    """A policy that remembers what it was asked and what it sent (for the report).

    A session's :class:`~windowkeeper.Prepared` of each request is kept too (its ``actions``
    and flags give the markers), by watching the session's ``prepare``.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[tuple[TokenUsage | None, Sent]] = []
        self.prepared: list[Prepared | None] = []
        self._latest: list[Prepared] = []
        session = getattr(inner, "session", None)
        if isinstance(session, ContextSession):
            prepare = session.prepare

            def watched(*args: Any, **kwargs: Any) -> Prepared:
                found = prepare(*args, **kwargs)
                self._latest.append(found)
                return found

            setattr(session, "prepare", watched)  # noqa: B010 - an instance's method, watched

    @property
    def name(self) -> str:
        return str(self.inner.name)

    def send(self, history: Sequence[Message], *, usage: TokenUsage | None, timestamp: int) -> Sent:
        self._latest.clear()
        sent: Sent = self.inner.send(history, usage=usage, timestamp=timestamp)
        self.calls.append((usage, sent))
        self.prepared.append(self._latest[-1] if self._latest else None)
        follow = sent.follow_up
        while follow is not None:
            self.calls.append((None, follow))
            self.prepared.append(None)
            follow = follow.follow_up
        return sent


def _visible_start(deleted_range: DeletedRange | None) -> int:
    return 2 if deleted_range is None else max(deleted_range[1] + 1, 2)


def _request_entry(
    history: Sequence[Message], sent: Sent, previous: list[Any] | None, variants: dict[str, int]
) -> tuple[dict[str, Any], list[Any]]:
    """What the page needs of one request: runs of history indices, changed messages, reuse."""
    start = _visible_start(sent.deleted_range)
    runs: list[list[int]] = []
    changed: dict[str, Any] = {}
    extra: list[Any] = []
    keys: list[Any] = []
    room = len(sent.messages) - 2 - max(0, len(history) - start)
    for position, message in enumerate(sent.messages):
        if position < 2:
            index: int | None = position
        elif position - 2 < room:
            index = None  # not from the history: a fold's continuation
        else:
            index = start + position - 2 - max(room, 0)
        if index is None or index >= len(history):
            text = json.dumps(message, sort_keys=True, default=str)
            extra.append(variants.setdefault(text, len(variants)))
            keys.append(("x", text))
            continue
        if message != history[index]:
            text = json.dumps(message, sort_keys=True, default=str)
            changed[str(index)] = variants.setdefault(text, len(variants))
            keys.append(("c", index, text))
        else:
            keys.append(("h", index))
        if runs and runs[-1][1] == index - 1:
            runs[-1][1] = index
        else:
            runs.append([index, index])
    common = 0
    if previous is not None:
        for new, old in zip(keys, previous, strict=False):
            if new != old:
                break
            common += 1
    entry = {
        "runs": runs,
        "changed": changed,
        "extra": extra,
        "count": len(sent.messages),
        "common": common,
        "cache_break": previous is not None and common < len(previous),
    }
    return entry, keys


def _policy_data(
    trace: Trace, policy: str, window: int, usage: UsageSource, prices: PriceModel
) -> dict[str, Any]:
    replayer = Replayer(
        trace.history,
        window=window,
        policy=policy,
        usage=usage,
        requests=trace.requests,
        system=trace.system,
        tools=trace.tools,
    )
    observed = replayer.policy = _Observed(replayer.policy)  # as replay() builds it, watched
    for length in request_points(trace.history):
        replayer.request(length)
    result = replayer.result()
    own = getattr(observed.inner, "history", None)
    history = own if isinstance(own, list) else trace.history
    entries: list[dict[str, Any]] = []
    previous: list[Any] | None = None
    variants: dict[str, int] = {}  # a changed message's JSON -> its place in "variants"
    cost = 0.0
    reused = 0
    invalid = 0
    answers = _answer_tokens(trace.history, [record.index for record in result.requests])
    ruler = Ruler()
    for number, (record, (driving, sent), prepared) in enumerate(
        zip(result.requests, observed.calls, observed.prepared, strict=True)
    ):
        entry, previous = _request_entry(history[: record.index], sent, previous, variants)
        entry.update(_prepared_entry(prepared, history))
        tokens = record.estimated_tokens
        read = _prefix_tokens(ruler, trace, sent.messages[: entry["common"]], tokens)
        entry["cache_read"] = read
        entry["cache_write"] = tokens - read
        entry["output"] = answers[number]
        entry["driving"] = None if driving is None else driving.total
        entry["violations"] = _violations(sent)
        invalid += bool(entry["violations"])
        cost += prices.cost(cache_read=read, cache_write=tokens - read, output=answers[number])
        reused += read
        entries.append(entry)
    replay_json = result.to_json()
    sent_total = replay_json["summary"]["estimated_tokens_sent"]
    return {
        "replay": replay_json,
        "usage": result.usage.value,
        "details": entries,
        "variants": [json.loads(text) for text in variants],
        "cost": round(cost, 4),
        "invalid_requests": invalid,
        "cache_reuse": round(reused / sent_total, 4) if sent_total else 0.0,
        "history_length": len(history),
    }


_SHOWN_VIOLATIONS = 3  # per request; the count says how many in all


def _violations(sent: Sent) -> dict[str, Any] | None:
    """What the provider's rules (our validator) find wrong in a request that was sent."""
    if sent.overflow_estimate is not None:
        return None  # refused before sending: over the window, which the replay reports
    found = validate_messages(sent.messages, "request")
    if not found:
        return None
    return {"count": len(found), "first": [str(v) for v in found[:_SHOWN_VIOLATIONS]]}


def _prefix_tokens(ruler: Ruler, trace: Trace, prefix: Sequence[Message], tokens: int) -> int:
    """The tokens a prompt cache reads: the system prompt, the tools and the shared messages."""
    if not prefix:
        return 0
    return min(tokens, ruler.count(prefix, system=trace.system, tools=trace.tools))


def _answer_tokens(history: Sequence[Message], indices: Sequence[int]) -> list[int]:
    """The output tokens of each request: the answer recorded after it, counted once.

    A policy's extra requests at one history length (a summary and its continuation) share the
    recorded answer; it is billed to the last of them, the one it answered.
    """
    ruler = Ruler()
    found = [0] * len(indices)
    for number, index in enumerate(indices):
        last = number + 1 == len(indices) or indices[number + 1] != index
        if last and index < len(history):
            found[number] = ruler.count([history[index]])
    return found


def _clip_sizes(history: Sequence[Message], clip: Clip) -> list[int]:
    """A clip as [message, block, characters kept, characters the block held]."""
    size = 0
    if 0 <= clip.message_index < len(history):
        content = history[clip.message_index].get("content")
        if isinstance(content, list) and 0 <= clip.block_index < len(content):
            size = block_size(content[clip.block_index])
    return [clip.message_index, clip.block_index, clip.kept, max(size, clip.kept)]


def _prepared_entry(prepared: Prepared | None, history: Sequence[Message]) -> dict[str, Any]:
    """The markers and the list of actions of a session's request (none for other policies)."""
    if prepared is None:
        return {"kinds": [], "actions": []}
    kinds = [_STEP_MARKERS.get(action.step, action.step) for action in prepared.actions]
    if prepared.clipped:
        kinds.append("clipped")
    if prepared.ignored_stale_usage:
        kinds.append("distrusted")
    if prepared.summary_requested:
        kinds.append("summarize")
    actions = [
        {
            "step": action.step,
            "messages": list(action.messages),
            "tokens_before": action.tokens_before,
            "tokens_after": action.tokens_after,
            "clips": [_clip_sizes(history, c) for c in action.clips],
        }
        for action in prepared.actions
    ]
    return {"kinds": sorted(set(kinds)), "actions": actions}


def _history_json(history: Sequence[Message]) -> list[Any]:
    return [dict(message) for message in history]


def report_html(
    trace: Trace,
    *,
    window: int,
    policies: Sequence[str] = (PolicyName.CLINE.value,),
    usage: str | None = None,
    prices: PriceModel | None = None,
    title: str | None = None,
) -> str:
    """The report's HTML text for ``trace`` replayed under ``policies``."""
    source = (
        UsageSource(usage)
        if usage
        else (UsageSource.RECORDED if trace.has_recorded_usage else UsageSource.ESTIMATED)
    )
    model = prices or PriceModel()
    data = {
        "title": title or str(trace.path),
        "prices": {
            "name": model.name,
            "text": model.describe(),
            "input": model.input,
            "output": model.output,
            "cache_read": model.cache_read,
            "cache_write": model.cache_write,
        },
        "history": _history_json(trace.history),
        "policies": [_policy_data(trace, name, window, source, model) for name in policies],
    }
    payload = json.dumps(data, ensure_ascii=False, default=str).replace("</", "<\\/")
    assets = resources.files("windowkeeper.tools") / "report_assets"
    script = (assets / "report.js").read_text(encoding="utf-8")
    style = (assets / "report.css").read_text(encoding="utf-8")
    heading = html.escape(str(data["title"]))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\';'
        " script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">"
        f"<title>windowkeeper report: {heading}</title><style>{style}</style></head><body>"
        f"<h1>windowkeeper report: {heading}</h1>"
        '<section id="summary" aria-label="Summary per policy"></section>'
        '<section id="timelines" aria-label="Timeline of requests"></section>'
        '<section id="request" aria-live="polite" aria-label="Request view"></section>'
        f'<script type="application/json" id="data">{payload}</script>'
        f"<script>{script}</script></body></html>\n"
    )


def report(
    trace: Trace,
    destination: str | os.PathLike[str],
    *,
    window: int,
    policies: Sequence[str] = (PolicyName.CLINE.value,),
    usage: str | None = None,
    prices: PriceModel | None = None,
    title: str | None = None,
) -> Path:
    """Write the report of ``trace`` (see :func:`report_html`) to ``destination``; return it."""
    path = Path(destination)
    text = report_html(
        trace, window=window, policies=policies, usage=usage, prices=prices, title=title
    )
    atomic_write_text(path, text)
    return path
