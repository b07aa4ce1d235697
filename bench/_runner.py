"""Traces, windows and policies of the evaluation, and the replay loop that measures them.

:func:`load_cases` gives every trace of the corpus beside the checkout (``../shared/corpus/raw``:
three Cline task folders, the Roo Code export, two SWE-agent trajectories) and the bundled demo
conversation; :func:`windows_for` picks the windows a trace is replayed at; :func:`run` replays
one trace at one window under one policy and returns what :class:`~_metrics.Meter` measured,
with the time of each of the policy's per-request calls.

Policies that summarize make more than one request at some points (the ask for a summary, then
the continuation): each is metered with its own record. The summaries themselves are billed
as :mod:`_metrics` says; the time spent writing the scripted summaries (the model's part) is
left out of the per-request times. ``windowkeeper-inband`` is evaluated only when this
windowkeeper's ``prepare()`` asks for summaries in-band (:data:`~_compaction.IN_BAND`), and the
LangChain summarization peer only when ``langchain`` is installed (:data:`SKIPPED` says why a
policy was left out).
"""

from __future__ import annotations

import gc
import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _compaction import IN_BAND, SessionPolicy, Summaries
from _metrics import Meter, Totals
from _peers import LastTokensPolicy, MaskingPolicy
from _roo import load_roo_export
from _traces import CORPUS
from windowkeeper import ContextWindowInfo, context_window_info
from windowkeeper.cline._task import ApiRequest
from windowkeeper.core._messages import Message
from windowkeeper.tools._demo import demo_conversation
from windowkeeper.tools._replay import (
    ClineCondensePolicy,
    ClinePolicy,
    CondenseStep,
    Policy,
    Replayer,
    Ruler,
    Sent,
    WindowkeeperPolicy,
    request_points,
)
from windowkeeper.tools._trace import load_trace

try:
    from _lc_summary import SummarizationPolicy
except ImportError:  # langchain (with langgraph) is not installed, only langchain-core
    SummarizationPolicy = None  # type: ignore[assignment,misc]

__all__ = [
    "COMPACTION",
    "NOMINAL_WINDOWS",
    "POLICIES",
    "SKIPPED",
    "Case",
    "Run",
    "WindowChoice",
    "load_cases",
    "make_case",
    "run",
    "windows_for",
]

NOMINAL_WINDOWS = (64_000, 128_000, 200_000)
FULL_SIZE = 250_000
"""A trace at least this large (by the ruler) is replayed at the nominal windows."""
SCALED_SHARES = (0.35, 0.55, 0.75)
"""Shorter traces: the limit sits this far from the fixed head (system prompt and messages 0-1)
to the whole trace, one share per nominal window, so that every window truncates."""

CLINE = "cline"
CLINE_RECORDED = "cline (recorded usage)"
WINDOWKEEPER = "windowkeeper"
LAST_TOKENS = "last-tokens"
MASKING = "masking"
CLINE_CONDENSE = "cline-condense"
WK_COMPACT = "windowkeeper-compact"
WK_LEDGER = "windowkeeper-ledger"
WK_INBAND = "windowkeeper-inband"
LC_SUMMARY = "langchain-summarization"
SKIPPED: dict[str, str] = {}
"""Policies left out of this run, and why."""
if not IN_BAND:
    SKIPPED[WK_INBAND] = (
        "this windowkeeper's `Prepared` has no `summary_requested` field yet (in-band"
        " compaction is not there)"
    )
if SummarizationPolicy is None:
    SKIPPED[LC_SUMMARY] = "`langchain` (with langgraph) is not installed, only langchain-core"
COMPACTION = tuple(
    policy
    for policy in (CLINE_CONDENSE, WK_COMPACT, WK_INBAND, WK_LEDGER, LC_SUMMARY)
    if policy not in SKIPPED
)
"""The policies that summarize (or fold into a ledger) instead of only hiding turns."""
POLICIES = (CLINE, WINDOWKEEPER, LAST_TOKENS, MASKING, CLINE_RECORDED, *COMPACTION)


@dataclass(frozen=True, slots=True)
class Case:
    """One conversation to replay."""

    name: str
    source: str
    history: tuple[Message, ...]
    system: Any = None
    requests: tuple[ApiRequest, ...] = ()

    @property
    def has_recorded_usage(self) -> bool:
        return any(request.usage is not None for request in self.requests)


@dataclass(frozen=True, slots=True)
class WindowChoice:
    """A nominal window and the window a trace is replayed at (scaled down when short)."""

    nominal: int
    info: ContextWindowInfo
    scaled: bool

    @property
    def window(self) -> int:
        return self.info.context_window


@dataclass(slots=True)
class Run:
    """One replay: what was measured, and per request the time of parts of the policy's call
    (for windowkeeper's session: the original algorithm inside it, and its estimates)."""

    case: str
    policy: str
    choice: WindowChoice
    totals: Totals
    parts_ms: dict[str, list[float]]
    store_entries: int | None = None  # edited messages in the policy's store at the end
    steps: Counter[str] = field(default_factory=Counter)  # a session's actions, by step
    asks: int = 0  # in-band asks
    reasks: int = 0  # in-band asks on a request that folded or the one right after
    pauses: list[tuple[str, int]] = field(default_factory=list)  # (pause or resume, length)
    summary_folds: int = 0  # a session's folds whose continuation carries a model's summary
    ledger_folds: int = 0  # and those that carry the ledger alone
    length: int = 0  # the history length at the last request


def make_case(
    name: str, source: str, history: Sequence[Message], system: Any = None, requests: Any = ()
) -> Case:
    return Case(name, source, tuple(history), system, tuple(requests))


def load_cases(corpus: Path = CORPUS) -> list[Case]:
    """Every trace of the corpus that is present, then the demo conversation."""
    cases: list[Case] = []
    traces = (
        ("cline-gcp-443", "cline-native-gcp-refactor-redacted", "Cline task folder"),
        ("cline-unity-1", "cline-native-unity-task1", "Cline task folder"),
        ("cline-unity-2", "cline-native-unity-task2", "Cline task folder"),
        ("swe-marshmallow", "swe-agent/marshmallow-1867_function_calling.traj", "SWE-agent .traj"),
        ("swe-pydicom", "swe-agent/pydicom-1458_gpt4.traj", "SWE-agent .traj"),
    )
    for name, relative, kind in traces:
        path = corpus / relative
        if path.exists():
            trace = load_trace(path)
            cases.append(make_case(name, kind, trace.history, trace.system, trace.requests))
    roo = corpus / "roo-markdown-export" / "roo_task_export_courseLLM.md"
    if roo.exists():
        cases.append(make_case("roo-export", "Roo Code Markdown export", load_roo_export(roo)))
    cases.append(make_case("demo", "windowkeeper.tools._demo (generated)", demo_conversation()))
    return cases


def windows_for(case: Case) -> list[WindowChoice]:
    """64k, 128k and 200k; for a trace under :data:`FULL_SIZE`, windows scaled to it."""
    ruler = Ruler()
    total = ruler.count(case.history, system=case.system)
    if total >= FULL_SIZE:
        return [WindowChoice(n, context_window_info(n), False) for n in NOMINAL_WINDOWS]
    head = ruler.count(case.history[:2], system=case.system)
    choices = []
    for nominal, share in zip(NOMINAL_WINDOWS, SCALED_SHARES, strict=True):
        limit = head + (total - head) * share
        window = math.ceil(limit / 0.8 / 100) * 100
        choices.append(WindowChoice(nominal, context_window_info(window), True))
    return choices


class _Clock:
    """Milliseconds spent in the wrapped calls during the current request."""

    def __init__(self) -> None:
        self.current = 0.0

    def wrap(self, owner: Any, method: str) -> None:
        """Time every call of ``owner.method`` (an instance attribute shadows the method)."""
        inner: Callable[..., Any] = getattr(owner, method)

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.current += (time.perf_counter() - started) * 1000

        setattr(owner, method, timed)

    def take(self) -> float:
        value, self.current = self.current, 0.0
        return value


STRICT = frozenset({WINDOWKEEPER, CLINE_CONDENSE, WK_COMPACT, WK_INBAND, WK_LEDGER})
"""Policies whose requests the strict API double also judges (it is slow on long requests)."""


def _policy(
    name: str,
    info: ContextWindowInfo,
    counter: Ruler,
    system: Any,
    settings: dict[str, Any] | None = None,
) -> Policy:
    if name in (CLINE, CLINE_RECORDED):
        return ClinePolicy(info)
    if name == WINDOWKEEPER:  # the default session, judging requests by a ruler of its own
        return WindowkeeperPolicy(info, counter=counter, system=system)
    if name == LAST_TOKENS:
        return LastTokensPolicy(info, system=system)
    if name == MASKING:
        return MaskingPolicy(info, system=system)
    if name == CLINE_CONDENSE:
        summaries = Summaries(Ruler(), timed=False)  # the model answers outside the timed call
        policy = ClineCondensePolicy(
            info, summarizer=summaries.for_messages, counter=counter, system=system
        )
        policy.summaries = summaries  # type: ignore[attr-defined]
        return policy
    given = settings or {}
    if name == WK_COMPACT:
        return SessionPolicy(info, "out-of-band", counter=counter, system=system, **given)
    if name == WK_LEDGER:
        return SessionPolicy(info, "ledger", counter=counter, system=system, **given)
    if name == WK_INBAND:
        return SessionPolicy(info, "in-band", counter=counter, system=system, **given)
    if name == LC_SUMMARY and SummarizationPolicy is not None:
        return SummarizationPolicy(info, system=system)
    raise ValueError(f"unknown policy {name!r}")


def _install_clocks(policy: Policy, counter: Ruler) -> tuple[_Clock, dict[str, _Clock]]:
    """A clock on the policy's per-request call, and clocks on parts of it.

    The per-request call is what an agent loop would call: the manager's
    ``get_new_context_messages_and_metadata`` for cline; ``extend``, ``record_usage`` and
    ``prepare`` of the session for windowkeeper; ``send`` for the peers. Replay bookkeeping
    (counting the store's replacements for the report) is left out. Inside the session, the
    original algorithm (the manager's call) and the pre-flight estimates (its counter) are also
    timed apart.
    """
    call = _Clock()
    if isinstance(policy, ClinePolicy | ClineCondensePolicy):
        call.wrap(policy.manager, "get_new_context_messages_and_metadata")
        return call, {}
    if isinstance(policy, SessionPolicy):
        for method in ("extend", "record_usage", "prepare", "append"):
            call.wrap(policy.session, method)
        return call, {}
    if isinstance(policy, WindowkeeperPolicy):
        parts = {"original algorithm": _Clock(), "estimates": _Clock()}
        for method in ("extend", "record_usage", "prepare"):
            call.wrap(policy.session, method)
        parts["original algorithm"].wrap(
            policy.session.manager, "get_new_context_messages_and_metadata"
        )
        parts["estimates"].wrap(counter, "count")
        return call, parts
    call.wrap(policy, "send")
    return call, {}


def run(
    case: Case,
    choice: WindowChoice,
    policy_name: str,
    *,
    measure: bool = True,
    upto: int | None = None,
    settings: dict[str, Any] | None = None,
    strict: bool | None = None,
) -> Run:
    """Replay ``case`` at ``choice`` under ``policy_name``, request by request.

    ``measure=False`` only times the calls (no metrics between them); ``upto`` stops before the
    first request past that history length; ``settings`` are given to a windowkeeper
    compaction session (``in_band_at``, ``keep_recent_tokens``); ``strict``: whether the strict
    API double judges the requests (default: for the policies of :data:`STRICT`).
    """
    history = case.history
    ruler = Ruler()
    counter = Ruler()  # counts as the replay's ruler does; its own, so its time can be taken
    policy = _policy(policy_name, choice.info, counter, case.system, settings)
    call, parts = _install_clocks(policy, counter)
    part_times: dict[str, list[float]] = {name: [] for name in parts}
    usage = "recorded" if policy_name == CLINE_RECORDED else "estimated"
    replayer = Replayer(
        history,
        window=choice.info,
        policy=policy,
        usage=usage,
        requests=case.requests,
        ruler=ruler,
        system=case.system,
    )
    meter = Meter(
        window=choice.window,
        limit=choice.info.max_allowed_size,
        ruler=ruler,
        system=case.system,
        strict=policy_name in STRICT if strict is None else strict,
        history=history,
    )
    folds: list[bool] | None = getattr(policy, "folded", None)
    last = 0
    gc.collect()
    summaries: Summaries | None = getattr(policy, "summaries", None)
    model = getattr(policy, "model", None)  # the LangChain peer's fake chat model
    prompts = Ruler()  # its own: the meter's ruler counts the requests incrementally
    for length in request_points(history):
        if upto is not None and length > upto:
            break
        last = length
        first = len(replayer.records)
        sent, _ = replayer.request(length)
        elapsed = call.take()
        in_band: list[int] = []
        out_of_band: list[tuple[int, int, int]] = []
        if summaries is not None:
            in_band, out_of_band, model_ms = summaries.take()
            elapsed -= model_ms
        elif model is not None:
            out_of_band = [
                (
                    prompts.count([{"role": "user", "content": prompt}]),
                    _answer(prompts, summary),
                    0,
                )
                for prompt, summary in model.calls
            ]
            model.calls.clear()
            elapsed -= model.model_ms
            model.model_ms = 0.0
        for name, clock in parts.items():
            part_times[name].append(clock.take())
        if measure:
            retained = getattr(policy, "retained_messages", None)
            current: Sent | None = sent
            for record in replayer.records[first:]:  # the request, then its follow-ups
                assert current is not None
                output = in_band.pop(0) if record.condense is CondenseStep.SUMMARIZE else None
                folded = (
                    folds.pop(0)
                    if folds
                    else folds is None and record.condense is CondenseStep.CONTINUATION
                )
                meter.add(
                    history[:length],
                    current,
                    record,
                    retained_messages=retained,
                    elapsed_ms=elapsed if current is sent else None,
                    summary_output=output,
                    folded=folded,
                )
                current = current.follow_up
            for input_tokens, output_tokens, cached in out_of_band:
                meter.add_summary(input_tokens, output_tokens, cached=cached)
        else:
            meter.totals.times_ms.append(elapsed)
            meter.totals.lengths.append(length)
        if folds is not None:
            folds.clear()
    manager = getattr(policy, "manager", None)
    session = getattr(policy, "session", None)
    if session is not None:
        manager = session.manager
    entries = len(manager.store) if manager is not None else None
    steps = Counter(getattr(policy, "steps", {}))
    return Run(
        case.name,
        policy_name,
        choice,
        meter.totals,
        part_times,
        entries,
        steps,
        asks=getattr(policy, "asks", 0),
        reasks=getattr(policy, "reasks", 0),
        pauses=list(getattr(policy, "pauses", [])),
        summary_folds=getattr(policy, "summary_folds", 0),
        ledger_folds=getattr(policy, "ledger_folds", 0),
        length=last,
    )


def _answer(ruler: Ruler, text: str) -> int:
    return ruler.count([{"role": "assistant", "content": text}])
