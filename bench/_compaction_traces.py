"""Compaction on every trace at every window: the per-trace table and the issue's targets.

For each trace of the corpus (and the demo) at each of its windows, and each policy that
compacts (cline's auto-condense, windowkeeper's compaction out-of-band, in-band and
ledger-only) beside the default windowkeeper session and cline: what was sent over the window,
what a compaction mode refused (``ContextOverflowError``) where the default session sent a
request at the same point, what the strict API double and our validator reject, how much of
the previous request an in-band ask reads from the cache, the asks on a request that folded,
the bill against cline's auto-condense, the state of work after each fold, how often the
summarizer runs, and whether summarizing paused for good.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence

from _evaluation import Evaluation
from _metrics import SUMMARY_OUTPUT
from _runner import (
    CLINE,
    CLINE_CONDENSE,
    COMPACTION,
    WINDOWKEEPER,
    WK_COMPACT,
    WK_INBAND,
    WK_LEDGER,
    Run,
)
from _tables import pct, table, window_label

__all__ = ["FOLD_ITEMS", "SettingFigures", "figures", "format_compaction_traces", "off_for_good"]

POLICIES = tuple(p for p in (CLINE_CONDENSE, WK_COMPACT, WK_INBAND, WK_LEDGER) if p in COMPACTION)
SHORT = {
    CLINE: "cline",
    WINDOWKEEPER: "wk default",
    CLINE_CONDENSE: "cline-condense",
    WK_COMPACT: "wk out-of-band",
    WK_INBAND: "wk in-band",
    WK_LEDGER: "wk ledger-only",
}
FOLD_ITEMS = ("instruction", "files", "todo")
ITEM_LABELS = {
    "instruction": "the latest instruction verbatim",
    "files": "every edited file named",
    "todo": "the latest todo state",
}
TARGET_READ = 0.9
TARGET_MEDIAN = 0.9
TARGET_MAX = 1.2


def off_for_good(run: Run) -> bool:
    """Whether summarizing paused and never resumed although the history grew past the
    session's resume point (a fifth more messages, at least 8) before the trace ended."""
    if not run.pauses or run.pauses[-1][0] != "summarize-paused":
        return False
    paused_at = run.pauses[-1][1]
    return run.length >= paused_at + max(8, paused_at // 5)


class SettingFigures:
    """The figures of one policy on one trace at one window (``default``: the default
    session's run there, ``condense``: cline auto-condense's)."""

    def __init__(self, run: Run, default: Run | None, condense: Run | None) -> None:
        totals = run.totals
        self.run = run
        self.requests = totals.requests
        self.over_window = totals.over_window
        sent_by_default = (
            set(default.totals.lengths) - set(default.totals.refused_at) if default else set()
        )
        self.refused_sent_by_default = sum(at in sent_by_default for at in totals.refused_at)
        self.invalid = totals.bad_requests
        self.strict_invalid = totals.strict_bad
        self.strict_rules = totals.strict_rules
        self.reads = totals.summary_previous_read if run.policy == WK_INBAND else []
        self.reasks = run.reasks
        self.ratio = (
            totals.cost / condense.totals.cost if condense and condense.totals.cost else None
        )
        self.folds = len(totals.fold_checks)
        self.fold_shares = {
            item: (
                sum(bool(getattr(check, item)) for check in totals.fold_checks) / self.folds
                if self.folds
                else None
            )
            for item in FOLD_ITEMS
        }
        self.summary_rate = 100 * totals.summary_calls / totals.requests if totals.requests else 0
        self.summary_folds = run.summary_folds
        self.ledger_folds = run.ledger_folds
        self.pauses = sum(step == "summarize-paused" for step, _ in run.pauses)
        self.resumes = sum(step == "summarize-resumed" for step, _ in run.pauses)
        self.off = off_for_good(run)


def figures(evaluation: Evaluation, policy: str) -> list[SettingFigures]:
    """``policy``'s figures on every trace at every window it was replayed at."""
    out = []
    for case in evaluation.cases:
        for choice in evaluation.windows[case.name]:
            run = evaluation.run(case.name, choice.nominal, policy)
            if run is None:
                continue
            default = evaluation.run(case.name, choice.nominal, WINDOWKEEPER)
            condense = evaluation.run(case.name, choice.nominal, CLINE_CONDENSE)
            out.append(SettingFigures(run, default, condense))
    return out


def _share(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}"


def _row(case: str, window: str, policy: str, f: SettingFigures) -> list[str]:
    reads = f"{100 * min(f.reads):.0f} ({len(f.reads)})" if f.reads else "–"
    folds = (
        " / ".join(_share(f.fold_shares[item]) for item in FOLD_ITEMS) + f" ({f.folds})"
        if f.folds
        else "–"
    )
    summarizing = (
        f"{f.pauses}/{f.resumes}{' **off**' if f.off else ''}" if f.pauses or f.resumes else "–"
    )
    return [
        f"`{case}`",
        window,
        SHORT[policy],
        str(f.requests),
        str(f.over_window),
        str(f.refused_sent_by_default),
        f"{f.invalid} / {f.strict_invalid}",
        reads,
        str(f.reasks) if policy == WK_INBAND else "–",
        "–" if f.ratio is None else f"{f.ratio:.2f}×",
        folds,
        f"{f.summary_rate:.1f}",
        f"{f.summary_folds} / {f.ledger_folds}" if policy in (WK_COMPACT, WK_INBAND) else "–",
        summarizing,
    ]


def _table(evaluation: Evaluation) -> list[str]:
    rows = []
    for case in evaluation.cases:
        for choice in evaluation.windows[case.name]:
            for policy in (CLINE, WINDOWKEEPER, *POLICIES):
                run = evaluation.run(case.name, choice.nominal, policy)
                if run is None:
                    continue
                default = evaluation.run(case.name, choice.nominal, WINDOWKEEPER)
                condense = evaluation.run(case.name, choice.nominal, CLINE_CONDENSE)
                figures_ = SettingFigures(run, default, condense)
                rows.append(_row(case.name, window_label(choice), policy, figures_))
    header = [
        "trace",
        "window",
        "policy",
        "requests",
        "over window",
        "refused, default sends",
        "invalid (ours / strict double)",
        "in-band ask reads prev., lowest % (asks)",
        "asks on a fold",
        "billed vs cline-condense",
        "after a fold: instr. / files / todo, % (folds)",
        "summary calls / 100 req.",
        "folds: model's summary / ledger only",
        "paused / resumed",
    ]
    return table(header, rows, "lll" + "r" * (len(header) - 3))


def _status(met: bool) -> str:
    return "**met**" if met else "**missed**"


def _where(f: SettingFigures) -> str:
    return f"`{f.run.case}` {window_label(f.run.choice)}"


def _listed(items: Iterable[str], limit: int = 4) -> str:
    items = list(items)
    more = f"; … ({len(items)} in all)" if len(items) > limit else ""
    return "; ".join(items[:limit]) + more


def _count_row(name: str, per: Sequence[SettingFigures], value: str) -> list[str]:
    bad = [f for f in per if getattr(f, value)]
    measured = (
        _listed(f"{_where(f)}: {getattr(f, value)}" for f in bad)
        if bad
        else f"0 on all {len(per)} settings"
    )
    return [name, measured, _status(not bad)]


def _targets(evaluation: Evaluation) -> list[str]:
    rows: list[list[str]] = []
    ours = [p for p in (WK_COMPACT, WK_INBAND, WK_LEDGER) if p in POLICIES]
    per = {policy: figures(evaluation, policy) for policy in (WINDOWKEEPER, *POLICIES)}
    for policy in ours:
        label = SHORT[policy]
        rows.append(_count_row(f"0 requests over the window: {label}", per[policy], "over_window"))
        rows.append(
            _count_row(
                f"0 refused where the default sends: {label}",
                per[policy],
                "refused_sent_by_default",
            )
        )
        rows.append(
            _count_row(f"0 invalid by the strict double: {label}", per[policy], "strict_invalid")
        )
        rows.append(_count_row(f"0 invalid by validate_messages: {label}", per[policy], "invalid"))
    if WK_INBAND in per:
        reads = [(min(f.reads), f) for f in per[WK_INBAND] if f.reads]
        low = [(r, f) for r, f in reads if r < TARGET_READ]
        calls = sum(len(f.reads) for f in per[WK_INBAND])
        measured = (
            f"lowest {pct(min(r for r, _ in reads))} over {calls} asks"
            if reads
            else "no in-band asks"
        )
        if low:
            measured += "; under 90 %: " + _listed(f"{_where(f)}: {pct(r)}" for r, f in low)
        rows.append(
            [
                "in-band asks read ≥ 90 % of the previous request from cache",
                measured,
                _status(not low),
            ]
        )
        rows.append(
            _count_row("0 asks on a continuation that just folded", per[WK_INBAND], "reasks")
        )
    for policy in (WK_COMPACT, WK_INBAND):
        ratios = [(f.ratio, f) for f in per.get(policy, []) if f.ratio is not None]
        if not ratios:
            continue
        values = [r for r, _ in ratios]
        median, worst = statistics.median(values), max(values)
        top = max(ratios, key=lambda pair: pair[0])[1]
        rows.append(
            [
                f"billed cost ≤ 0.9× cline-condense (median), ≤ 1.2× (max): {SHORT[policy]}",
                f"median {median:.2f}×, max {worst:.2f}× ({_where(top)}) over {len(values)}"
                " settings",
                _status(median <= TARGET_MEDIAN and worst <= TARGET_MAX),
            ]
        )
    if WK_LEDGER in per:
        dearer = []
        for f in per[WK_LEDGER]:
            default = evaluation.run(f.run.case, f.run.choice.nominal, WINDOWKEEPER)
            if default and f.run.totals.cost > default.totals.cost * 1.000001:
                dearer.append(f"{_where(f)}: {f.run.totals.cost / default.totals.cost:.3f}×")
        rows.append(
            [
                "billed cost of ledger-only ≤ the default's, every setting",
                _listed(dearer) if dearer else f"≤ on all {len(per[WK_LEDGER])} settings",
                _status(not dearer),
            ]
        )
    for policy in ours:
        for item in FOLD_ITEMS:
            folds = sum(f.folds for f in per[policy])
            kept = sum(
                round((f.fold_shares[item] or 0.0) * f.folds) for f in per[policy] if f.folds
            )
            misses = [
                f"{_where(f)}: {_share(f.fold_shares[item])} %"
                for f in per[policy]
                if f.folds and (f.fold_shares[item] or 0.0) < 1.0
            ]
            rows.append(
                [
                    f"after every fold, {ITEM_LABELS[item]}: {SHORT[policy]}",
                    f"{kept} of {folds} folds"
                    + (f" (missed at {_listed(misses)})" if misses else ""),
                    _status(kept == folds),
                ]
            )
    for policy in ours:
        rates = [f.summary_rate for f in per[policy] if f.requests]
        if policy != WK_LEDGER and rates:
            rows.append(
                [
                    f"summarizer calls per 100 requests: {SHORT[policy]}",
                    f"median {statistics.median(rates):.1f}, max {max(rates):.1f}",
                    "reported",
                ]
            )
        if policy != WK_LEDGER:
            carried = sum(f.summary_folds for f in per[policy])
            alone = [f for f in per[policy] if f.ledger_folds]
            rows.append(
                [
                    f"folds carrying the model's summary: {SHORT[policy]}",
                    f"{carried} of {carried + sum(f.ledger_folds for f in alone)} folds"
                    + (
                        "; ledger only at "
                        + _listed(f"{_where(f)}: {f.ledger_folds}" for f in alone)
                        if alone
                        else ""
                    ),
                    "reported",
                ]
            )
        off = [f for f in per[policy] if f.off]
        rows.append(
            [
                f"summarizing never off for good: {SHORT[policy]}",
                _listed(_where(f) for f in off)
                if off
                else (
                    f"{sum(f.pauses for f in per[policy])} pauses,"
                    f" {sum(f.resumes for f in per[policy])} resumes; none left paused while the"
                    " task grew"
                ),
                _status(not off),
            ]
        )
    return table(["target (every trace, every window)", "measured", ""], rows, "lll")


def format_compaction_traces(evaluation: Evaluation) -> list[str]:
    """The section's Markdown lines (without its heading)."""
    lines = [
        "Every trace at every window it is replayed at (the short traces' windows scaled as in"
        " *Every trace*). Columns: *refused, default sends*: requests the policy refused"
        " (`ContextOverflowError`) at a point where the default session sent one; *invalid*:"
        " requests `validate_messages` rejects / the strict Anthropic double of `tests/doubles`"
        " rejects (`bench/_doubles.py`: role and content only, every tool used so far defined,"
        " size judged apart); *in-band ask reads prev.*: the lowest share, over the in-band"
        " summary requests, of the previous request's prompt read from the cache (the cache"
        " model above: the leading messages, then blocks, equal to the previous request's); *asks on a fold*:"
        " in-band asks on a request that folded or on the one right after a fold; *billed vs"
        " cline-condense*: billed cost with caching, summary calls included, against cline's"
        " auto-condense at the same setting; *after a fold*: over the requests right after a"
        " fold (the continuation: for the sessions a request whose actions fold, for"
        " cline-condense the request after its summary), the share carrying the latest user"
        " instruction verbatim, every file edited so far by path, and every item of the latest"
        " todo / plan state (a todo tool's last call, Cline's `task_progress`, Roo Code's"
        " `<update_todo_list>`); *folds: model's summary / ledger only*: the folds whose"
        " continuation carries a summary the model wrote (new, or the last one kept) and those"
        " that fell back to the ledger alone; *paused / resumed*: `summarize-paused` and `summarize-resumed`"
        " actions, **off** when the last pause never resumed although the history grew past"
        " the resume point before the trace ended.",
        "",
    ]
    lines += _table(evaluation)
    lines += ["", "### Compaction targets on every trace", ""]
    lines += _targets(evaluation)
    lines += ["", *_where_the_cost_goes(evaluation)]
    return lines


def _summary_part(run: Run) -> float:
    """What a run's summary calls add to its bill beyond its conversation's requests: their
    output, and for calls made apart (out-of-band) their input too."""
    totals = run.totals
    output = SUMMARY_OUTPUT * totals.summary_output
    if run.policy == WK_COMPACT:
        return totals.summary_cost
    return output


def _where_the_cost_goes(evaluation: Evaluation) -> list[str]:
    """A paragraph on the bill against cline-condense: summaries, then the conversation."""
    parts = []
    for policy in (WK_COMPACT, WK_INBAND):
        pairs = [
            (f.run, evaluation.run(f.run.case, f.run.choice.nominal, CLINE_CONDENSE))
            for f in figures(evaluation, policy)
        ]
        pairs = [(ours, theirs) for ours, theirs in pairs if theirs and theirs.totals.cost]
        if not pairs:
            continue
        conversation = statistics.median(
            (ours.totals.cost - _summary_part(ours)) / theirs.totals.cost for ours, theirs in pairs
        )
        share = statistics.median(_summary_part(ours) / ours.totals.cost for ours, _ in pairs)
        calls = sum(ours.totals.summary_calls for ours, _ in pairs)
        theirs_calls = sum(theirs.totals.summary_calls for _, theirs in pairs)
        parts.append(
            f"{SHORT[policy]}: its summaries are a median {pct(share)} of its bill, its"
            f" conversation's requests alone a median {conversation:.2f}× cline-condense's whole"
            f" bill; {calls} summary calls in all, against cline-condense's {theirs_calls}"
        )
    if not parts:
        return []
    condense = [
        evaluation.run(f.run.case, f.run.choice.nominal, CLINE_CONDENSE)
        for f in figures(evaluation, WK_INBAND)
    ]
    shares = [_summary_part(run) / run.totals.cost for run in condense if run and run.totals.cost]
    ledger = [f.ratio for f in figures(evaluation, WK_LEDGER) if f.ratio is not None]
    lines = [
        "Where the bill goes, over the settings above: "
        + "; ".join(parts)
        + "."
        + (
            f" cline-condense's own summaries are a median {pct(statistics.median(shares))} of"
            " its bill."
            if shares
            else ""
        )
        + (
            f" {SHORT[WK_LEDGER]}, which pays for no summary at all, bills a median"
            f" {statistics.median(ledger):.2f}× cline-condense."
            if ledger
            else ""
        )
        + " A summary of about 2,000 tokens is output at 5×, as much as reading 100,000 tokens"
        " from the cache. cline-condense folds to messages 0-1 and the summary, and lets the"
        " request that asks go over the limit, so its conversation is cheap too: a median of"
        " 0.9× needs a conversation that undercuts cline-condense's whole bill by the"
        " summaries' share and a tenth more.",
        "",
    ]
    return lines
