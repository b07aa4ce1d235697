"""What is measured on every replayed request, and the totals per policy, trace and window.

One :class:`Meter` follows one replay. For each request it is given the history up to the
request, what the policy sent and the replay's record of it, and it keeps:

- tokens: the replay ruler's count of the request (messages and system prompt);
- over the window / over ``max_allowed_size``: that count against each;
- prompt-cache reuse: the leading messages equal to the previous request's (role and content
  compared, which is comparing them as JSON), then the leading content blocks of the first
  message that differs, when its role is the same (a provider caches a prefix of the content:
  blocks appended to a message leave the ones before them cached), counted by the ruler with
  the system prompt, as a share of the request; the first request reuses nothing;
- billed cost with caching: the common prefix read at 0.1, the rest written at 1.25 (input
  price 1.0 per token; output not counted, as it is the same for every policy);
- provider-rule violations (:func:`windowkeeper.validate_messages`), tool pairing apart;
- context retained: of the content of the full history at that request (every text, tool
  input, tool result, thinking and image, in UTF-8 bytes, the ruler's unit), the share present
  unchanged in the request; content a policy replaced (a notice, a placeholder, a clip) or hid
  counts as lost;
- messages retained: history messages the request carries (hidden by no range; a message merged
  into another or edited still counts), as a share of the history;
- summary calls: a request that asks for a summary inside the conversation (in-band: the
  record says ``condense="summarize"``) is metered as any request, and its answer, the summary,
  is billed as output at :data:`SUMMARY_OUTPUT`; a summary call made apart from the conversation
  (out-of-band, :meth:`Meter.add_summary`) is billed as uncached input at 1.0 plus its output,
  unless it sends the conversation's previous request unchanged: that part is then read from
  the cache and the rest written, as for an in-band ask.
  Either adds to the billed cost. Kept per call: the share of its input read from the cache,
  and the share of its prefix (everything before its last user message, which carries the new
  turn and the instruction) read from the cache, 0 for an out-of-band call;
- task frontier (:mod:`_frontier`): from the first request at which the policy shrank the
  history (``truncated``), whether each request carries the task, the latest user instruction
  and every file edited so far; and on each request right after a fold, the latest
  instruction, every edited file and the latest todo state;
- for the compaction policies (``strict=True``): whether the strict Anthropic double of
  ``tests/doubles`` rejects the request (:mod:`_doubles`; judged on every request that is not
  the previous one with the trace's next messages appended), and the refusals' positions, so a
  refusal can be compared with what the default session sent at the same point.

A request a policy refused to build (windowkeeper's ``ContextOverflowError``) sends nothing: it
counts as over the window with the policy's estimate, and is left out of the other metrics.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from _doubles import StrictDouble
from _frontier import FoldCheck, Frontier, FrontierCheck
from windowkeeper import validate_messages
from windowkeeper.core._messages import Message
from windowkeeper.session._tokens import image_tokens
from windowkeeper.tools._replay import RequestRecord, Ruler, Sent

__all__ = [
    "CACHE_READ",
    "CACHE_WRITE",
    "SUMMARY_INPUT",
    "SUMMARY_OUTPUT",
    "Meter",
    "Totals",
    "percentile",
]

CACHE_WRITE = 1.25
CACHE_READ = 0.1
SUMMARY_OUTPUT = 5.0
"""A summary's output tokens, priced against an input price of 1.0."""
SUMMARY_INPUT = 1.0
"""An out-of-band summary call's input: nothing reuses it, so it is sent without cache writes."""
_PAIRING = frozenset({"tool-use-unanswered", "tool-result-unknown"})
_BYTES_PER_TOKEN = 3  # the ruler's uncalibrated ratio, to weigh images with text


def percentile(samples: Sequence[float], share: float) -> float:
    """The ``share`` quantile of ``samples`` (nearest rank), 0 for none."""
    if not samples:
        return 0.0
    ranked = sorted(samples)
    return ranked[min(len(ranked) - 1, int(len(ranked) * share))]


@dataclass(slots=True)
class Totals:
    """Everything measured over one replay."""

    requests: int = 0
    refused: int = 0
    over_window: int = 0
    over_limit: int = 0
    truncations: int = 0
    tokens: list[int] = field(default_factory=list)  # per sent request
    lengths: list[int] = field(default_factory=list)  # history length per sent request
    reuse: list[float] = field(default_factory=list)
    cost: float = 0.0
    violations: int = 0
    pairing: int = 0
    bad_requests: int = 0
    rules: Counter[str] = field(default_factory=Counter)  # violations per provider rule
    context: list[float] = field(default_factory=list)
    messages: list[float] = field(default_factory=list)
    times_ms: list[float] = field(default_factory=list)
    events: list[tuple[int, bool, int, float]] = field(default_factory=list)
    """Per sent request: (history length, truncated, file reads replaced, cache reuse)."""
    summary_calls: int = 0
    in_band_calls: int = 0
    summary_input: int = 0  # input tokens of the summary calls
    summary_output: int = 0  # their output tokens (the summaries)
    summary_cost: float = 0.0  # what the summary calls add to ``cost``
    summary_reuse: list[float] = field(default_factory=list)  # per call: input read from cache
    prefix_reuse: list[float] = field(default_factory=list)
    """Per call: the share of its prefix (all before its last user message) read from cache."""
    compacted_at: int | None = None  # history length at the first request that shrank it
    refused_at: list[int] = field(default_factory=list)  # history length of each refusal
    summary_previous_read: list[float] = field(default_factory=list)
    """Per in-band call: its prefix read from the cache, as a share of the previous request."""
    fold_checks: list[FoldCheck] = field(default_factory=list)  # per request right after a fold
    strict_bad: int = 0  # requests the strict API double rejects (size apart)
    strict_rules: Counter[str] = field(default_factory=Counter)
    frontier: list[FrontierCheck] = field(default_factory=list)  # per request from then on

    @property
    def tokens_sent(self) -> int:
        return sum(self.tokens)

    @property
    def mean_reuse(self) -> float:
        return statistics.fmean(self.reuse) if self.reuse else 0.0

    @property
    def mean_context(self) -> float:
        return statistics.fmean(self.context) if self.context else 0.0

    @property
    def mean_messages(self) -> float:
        return statistics.fmean(self.messages) if self.messages else 0.0

    @property
    def mean_summary_reuse(self) -> float | None:
        return statistics.fmean(self.summary_reuse) if self.summary_reuse else None

    @property
    def mean_prefix_reuse(self) -> float | None:
        return statistics.fmean(self.prefix_reuse) if self.prefix_reuse else None

    def frontier_share(self, item: str = "whole") -> float | None:
        """The share of requests since the first shrink carrying ``item`` ("task",
        "instruction", "files" or "whole"), None when the policy never shrank."""
        if not self.frontier:
            return None
        return sum(bool(getattr(check, item)) for check in self.frontier) / len(self.frontier)


def _utf8(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _block_pieces(block: Any) -> list[tuple[str, int]]:
    """(key, weight) of each piece of content in a block."""
    if not isinstance(block, dict):
        text = json.dumps(block, sort_keys=True, default=str)
        return [(text, _utf8(text))]
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return [(block["text"], _utf8(block["text"]))]
    if kind == "tool_result":
        inner = block.get("content")
        if isinstance(inner, str):
            return [(inner, _utf8(inner))] if inner else []
        if isinstance(inner, list):
            return [piece for part in inner for piece in _block_pieces(part)]
        return []
    if kind == "tool_use":
        text = "\x00tool_use" + json.dumps([block.get("name"), block.get("input")], sort_keys=True)
        return [(text, _utf8(text))]
    if kind == "thinking" and isinstance(block.get("thinking"), str):
        return [(block["thinking"], _utf8(block["thinking"]))]
    if kind == "image":
        key = "\x00image" + json.dumps(block.get("source"), sort_keys=True)
        return [(key, image_tokens(block) * _BYTES_PER_TOKEN)]
    text = json.dumps(block, sort_keys=True, default=str)
    return [(text, _utf8(text))]


class _Pieces:
    """Content pieces of messages, remembered per block object and per string."""

    def __init__(self) -> None:
        self._memo: dict[int, tuple[Any, list[tuple[str, int]]]] = {}

    def of(self, message: Message) -> list[tuple[str, int]]:
        content = message.get("content")
        if isinstance(content, str):
            return self._cached(content, lambda: [(content, _utf8(content))] if content else [])
        if not isinstance(content, list):
            return []
        pieces: list[tuple[str, int]] = []
        for block in content:
            pieces.extend(self._cached(block, lambda block=block: _block_pieces(block)))
        return pieces

    def _cached(self, value: Any, compute: Any) -> list[tuple[str, int]]:
        entry = self._memo.get(id(value))
        if entry is None or entry[0] is not value:
            entry = self._memo[id(value)] = (value, compute())
        return entry[1]


def _api_view(message: Message) -> tuple[Any, Any]:
    return message.get("role"), message.get("content")


class Meter:
    """Measures the requests of one replay (see the module docstring)."""

    def __init__(
        self,
        *,
        window: int,
        limit: float,
        ruler: Ruler,
        system: Any = None,
        strict: bool = False,
        history: Sequence[Message] = (),
    ) -> None:
        self.window = window
        self.limit = limit
        self.ruler = ruler
        self.system = system
        self.totals = Totals()
        self._previous: list[tuple[Any, Any]] | None = None
        self._pieces = _Pieces()
        self._history_counts: Counter[str] = Counter()
        self._history_bytes = 0
        self._seen = 0
        self._frontier = Frontier()
        self._previous_tokens = 0
        self.strict = StrictDouble(system, history) if strict else None

    def add(
        self,
        history: Sequence[Message],
        sent: Sent,
        record: RequestRecord,
        *,
        retained_messages: int | None = None,
        elapsed_ms: float | None = None,
        summary_output: int | None = None,
        folded: bool = False,
    ) -> None:
        """Measure one request: ``history`` is the full history up to it; ``summary_output``,
        for a request that asks for a summary in-band, the tokens of the summary it got;
        ``folded``: the request is the first after a fold (its continuation)."""
        totals = self.totals
        totals.requests += 1
        totals.truncations += record.truncated
        if elapsed_ms is not None:
            totals.times_ms.append(elapsed_ms)
        if sent.overflow_estimate is not None:
            totals.refused += 1
            totals.refused_at.append(record.index)
            totals.over_window += record.estimated_tokens > self.window
            totals.over_limit += record.estimated_tokens > self.limit
            return
        messages = sent.messages
        tokens = record.estimated_tokens
        totals.tokens.append(tokens)
        totals.lengths.append(record.index)
        totals.over_window += tokens > self.window
        totals.over_limit += tokens > self.limit
        # prompt cache
        view = [_api_view(message) for message in messages]
        previous = self._previous
        prefix_tokens = 0
        common = 0
        if previous is not None:
            common = 0
            for new, old in zip(view, previous, strict=False):
                if new[0] != old[0] or not (new[1] is old[1] or new[1] == old[1]):
                    break
                common += 1
            prefix_tokens = self.ruler.count(messages[:common], system=self.system)
            if common < min(len(view), len(previous)):
                prefix_tokens += self._leading_blocks(messages[common], previous[common])
        self._previous = view
        previous_tokens, self._previous_tokens = self._previous_tokens, tokens
        reuse = prefix_tokens / tokens if tokens else 0.0
        totals.reuse.append(reuse)
        totals.events.append((record.index, record.truncated, record.replaced_reads, reuse))
        totals.cost += CACHE_READ * prefix_tokens + CACHE_WRITE * (tokens - prefix_tokens)
        if summary_output is not None:
            totals.in_band_calls += 1
            totals.summary_input += tokens
            stream = CACHE_READ * prefix_tokens + CACHE_WRITE * (tokens - prefix_tokens)
            self._summary(summary_output, reuse, stream, input_billed=True)
            before_last = self.ruler.count(messages[:-1], system=self.system)
            totals.prefix_reuse.append(
                min(1.0, prefix_tokens / before_last) if before_last else 0.0
            )
            totals.summary_previous_read.append(
                min(1.0, prefix_tokens / previous_tokens) if previous_tokens else 0.0
            )
        if folded:
            totals.fold_checks.append(self._frontier.after_fold(history, messages))
        if record.truncated and totals.compacted_at is None:
            totals.compacted_at = record.index
        if totals.compacted_at is not None:
            totals.frontier.append(self._frontier.check(history, messages))
        # provider rules
        violations = validate_messages(messages)
        totals.violations += len(violations)
        totals.pairing += sum(violation.rule in _PAIRING for violation in violations)
        totals.bad_requests += bool(violations)
        totals.rules.update(violation.rule for violation in violations)
        # The strict double is slow on long requests: it judges those that are not the
        # previous request with the trace's next messages appended (those add only what the
        # trace holds, the same for every policy).
        rebuilt = previous is None or common < len(previous) or summary_output is not None
        if self.strict is not None and (rebuilt or folded):
            problems = self.strict.problems(messages)
            totals.strict_bad += bool(problems)
            totals.strict_rules.update(problems)
        # context retained
        for message in history[self._seen :]:
            for key, weight in self._pieces.of(message):
                self._history_counts[key] += 1
                self._history_bytes += weight
        self._seen = len(history)
        sent_counts: Counter[str] = Counter()
        weights: dict[str, int] = {}
        for message in messages:
            for key, weight in self._pieces.of(message):
                sent_counts[key] += 1
                weights[key] = weight
        kept = sum(
            min(count, self._history_counts.get(key, 0)) * weights[key]
            for key, count in sent_counts.items()
        )
        totals.context.append(kept / self._history_bytes if self._history_bytes else 1.0)
        carried = (
            _carried(len(history), record.deleted_range)
            if retained_messages is None
            else retained_messages
        )
        totals.messages.append(carried / len(history) if history else 1.0)

    def _leading_blocks(self, message: Message, before: tuple[Any, Any]) -> int:
        """The tokens of ``message``'s leading content blocks equal to those of ``before`` (the
        previous request's message at the same place, as role and content), when the roles
        match: a provider's cache is a prefix of the request's content, so blocks appended to a
        message (a merged turn, an instruction) leave what precedes them cached."""
        role, content = before
        blocks = message.get("content")
        if role != message.get("role") or not isinstance(blocks, list):
            return 0
        old = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(old, list):
            return 0
        equal = 0
        for new_block, old_block in zip(blocks, old, strict=False):
            if new_block != old_block:
                break
            equal += 1
        if not equal:
            return 0
        return self.ruler.count([{"role": role, "content": blocks[:equal]}])

    def add_summary(self, input_tokens: int, output_tokens: int, *, cached: int = 0) -> None:
        """Meter a summary call made apart from the conversation: ``cached`` of its input
        tokens are the conversation's previous request, unchanged (read from the cache, the
        rest written, as for an in-band ask); with none, nothing of it is cached nor reused and
        its input is billed at :data:`SUMMARY_INPUT`."""
        self.totals.summary_input += input_tokens
        if cached:
            cost = CACHE_READ * cached + CACHE_WRITE * (input_tokens - cached)
            reuse = cached / input_tokens if input_tokens else 0.0
            self._summary(output_tokens, reuse, cost, input_billed=False)
            self.totals.prefix_reuse.append(1.0)
            return
        self._summary(output_tokens, 0.0, SUMMARY_INPUT * input_tokens, input_billed=False)
        self.totals.prefix_reuse.append(0.0)

    def _summary(
        self, output_tokens: int, reuse: float, input_cost: float, *, input_billed: bool
    ) -> None:
        """Count one summary call; ``input_billed``: its input is already in ``cost`` (a
        request of the conversation), so only the output is added there."""
        totals = self.totals
        output_cost = SUMMARY_OUTPUT * output_tokens
        totals.summary_calls += 1
        totals.summary_output += output_tokens
        totals.summary_cost += input_cost + output_cost
        totals.cost += output_cost if input_billed else input_cost + output_cost
        totals.summary_reuse.append(reuse)


def _carried(length: int, deleted_range: tuple[int, int] | None) -> int:
    """History messages a request carries when ``deleted_range`` is hidden (merged or not)."""
    if deleted_range is None:
        return length
    start, end = deleted_range
    return length - max(0, min(end, length - 1) - max(start, 0) + 1)
