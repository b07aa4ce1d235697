"""The "Compaction" section of docs/benchmarks.md: summaries, their bill, the task frontier,
per-request times, and the issue's compaction targets, each met or missed with its numbers."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from _evaluation import HEADLINE, LABELS, Evaluation
from _metrics import SUMMARY_OUTPUT, Totals, percentile
from _runner import (
    CLINE,
    CLINE_CONDENSE,
    COMPACTION,
    LAST_TOKENS,
    LC_SUMMARY,
    MASKING,
    SKIPPED,
    WINDOWKEEPER,
    WK_COMPACT,
    WK_INBAND,
    WK_LEDGER,
    Run,
)
from _tables import ms, number, pct, table, window_label

__all__ = ["format_compaction"]

COMPARED = (CLINE, WINDOWKEEPER, LAST_TOKENS, MASKING, *COMPACTION)
OURS = tuple(p for p in (WK_COMPACT, WK_INBAND, WK_LEDGER) if p in COMPACTION)
TARGET_SUMMARY_REUSE = 0.9
COST_WINDOWS = (64_000, 128_000)
_HIDING = ("reported-usage-truncation", "hide-turns")  # steps that hide turns without a fold


def _share(value: float | None) -> str:
    return "–" if value is None else pct(value)


def _status(met: bool) -> str:
    return "**met**" if met else "**missed**"


def _summary_calls(totals: Totals) -> str:
    if not totals.summary_calls:
        return "0"
    out_of_band = totals.summary_calls - totals.in_band_calls
    kinds = []
    if totals.in_band_calls:
        kinds.append(f"{totals.in_band_calls} in-band")
    if out_of_band:
        kinds.append(f"{out_of_band} out-of-band")
    return ", ".join(kinds)


def _headline_table(evaluation: Evaluation) -> list[str]:
    rows = []
    for choice in evaluation.windows.get(HEADLINE, []):
        base = evaluation.run(HEADLINE, choice.nominal, CLINE)
        for policy in COMPARED:
            run = evaluation.run(HEADLINE, choice.nominal, policy)
            if run is None:
                continue
            totals = run.totals
            ratio = f"{totals.cost / base.totals.cost:.2f}×" if base and base.totals.cost else "–"
            label = f"**{LABELS[policy]}**" if policy in OURS else LABELS[policy]
            rows.append(
                [
                    window_label(choice),
                    label,
                    str(totals.over_window),
                    str(totals.bad_requests),
                    _summary_calls(totals),
                    _share(totals.mean_summary_reuse),
                    _share(totals.mean_prefix_reuse),
                    number(totals.summary_cost),
                    number(totals.cost),
                    ratio,
                    _share(totals.frontier_share("task")),
                    _share(totals.frontier_share("instruction")),
                    _share(totals.frontier_share("files")),
                    _share(totals.frontier_share()),
                ]
            )
    header = [
        "window",
        "policy",
        "over window",
        "invalid req.",
        "summary calls",
        "summary reuse",
        "prefix reuse",
        "summary cost",
        "billed, with summaries",
        "vs cline",
        "task",
        "latest instr.",
        "files edited",
        "frontier",
    ]
    return table(header, rows, "ll" + "r" * (len(header) - 2))


def _notes(evaluation: Evaluation) -> list[str]:
    """What the headline table does not say by itself, computed from the runs."""
    notes = []
    counts = []
    for choice in evaluation.windows.get(HEADLINE, []):
        run = evaluation.run(HEADLINE, choice.nominal, LC_SUMMARY)
        if run is not None and run.steps:
            total = run.steps["summarize"] + run.steps["no-model"]
            counts.append(
                f"{window_label(choice)}: {total} requests, {run.steps['no-model']} of them"
                " without a model call"
            )
    if counts:
        notes.append(
            "- LangChain's middleware summarizes at every request while its state is over the"
            " trigger, and the 20 messages it keeps can be over it by themselves; when the"
            " messages to summarize, trimmed to their last 4,000 tokens, come to nothing (large"
            " tool outputs), it replaces them with its stock text *Previous conversation was too"
            f" long to summarize.* without calling the model. Summarizations: {'; '.join(counts)}."
        )
    if any(
        evaluation.run(HEADLINE, c.nominal, CLINE_CONDENSE)
        for c in evaluation.windows.get(HEADLINE, [])
    ):
        notes.append(
            "- cline auto-condense replaces message 0's task text with its notice when it"
            " summarizes, as the original does, so the task survives only in the summary; the"
            " scripted summary quotes the task's first lines clipped to 240 characters, so a"
            " longer task is not carried verbatim. That loss is the stand-in summary's as much"
            " as the original's: a model may quote the task whole."
        )
    return notes


def _frontier_table(evaluation: Evaluation) -> list[str]:
    """Whole-frontier retention of every policy on every trace, at its three windows."""
    rows = []
    for policy in COMPARED:
        row = [LABELS[policy]]
        for case in evaluation.cases:
            cells = []
            for choice in evaluation.windows[case.name]:
                run = evaluation.run(case.name, choice.nominal, policy)
                share = run.totals.frontier_share() if run else None
                cells.append("–" if share is None else f"{100 * share:.0f}")
            row.append(" / ".join(cells))
        rows.append(row)
    return table(["policy", *(f"`{case.name}`" for case in evaluation.cases)], rows)


def _times_table(evaluation: Evaluation) -> list[str]:
    rows = []
    for policy in (CLINE, WINDOWKEEPER, *COMPACTION):
        row = [LABELS[policy]]
        for choice in evaluation.windows.get(HEADLINE, []):
            run = evaluation.run(HEADLINE, choice.nominal, policy)
            samples = run.totals.times_ms if run else []
            row.append(
                f"{ms(statistics.median(samples))} / {ms(percentile(samples, 0.95))}"
                if samples
                else "–"
            )
        rows.append(row)
    header = ["per-request call, ms (median / p95)"] + [
        window_label(choice) for choice in evaluation.windows.get(HEADLINE, [])
    ]
    return table(header, rows)


def _runs(evaluation: Evaluation, policy: str) -> list[Run]:
    return [
        run
        for case in evaluation.cases
        for choice in evaluation.windows[case.name]
        if (run := evaluation.run(case.name, choice.nominal, policy)) is not None
    ]


def _where(run: Run) -> str:
    return f"`{run.case}` at {window_label(run.choice)}"


def _valid_rows(evaluation: Evaluation) -> tuple[list[list[str]], list[str]]:
    rows, reasons = [], []
    for policy in OURS:
        runs = _runs(evaluation, policy)
        if not runs:
            continue
        over = [f"{_where(r)}: {r.totals.over_window}" for r in runs if r.totals.over_window]
        bad = [
            f"{_where(r)}: {r.totals.bad_requests} ({', '.join(sorted(r.totals.rules))})"
            for r in runs
            if r.totals.bad_requests
        ]
        measured = "; ".join(over + bad) or f"0 and 0 on all {len(runs)} settings"
        rows.append(
            [
                f"0 invalid and 0 over-window requests: {LABELS[policy]}",
                measured,
                _status(not over and not bad),
            ]
        )
        if bad:
            reasons.append(
                f"Invalid requests of {LABELS[policy]}: the rules broken are"
                f" {', '.join(sorted({rule for r in runs for rule in r.totals.rules}))}; compare"
                " the violations the traces hold as stored (table *Every trace*)."
            )
    return rows, reasons


def _reuse_rows(evaluation: Evaluation) -> tuple[list[list[str]], list[str]]:
    rows: list[list[str]] = []
    reasons: list[str] = []
    for policy in (WK_INBAND, CLINE_CONDENSE):
        cells, ok, seen = [], True, False
        for choice in evaluation.windows.get(HEADLINE, []):
            run = evaluation.run(HEADLINE, choice.nominal, policy)
            if run is None or not run.totals.prefix_reuse:
                continue
            seen = True
            reuse = run.totals.prefix_reuse
            mean = statistics.fmean(reuse)
            whole = run.totals.mean_summary_reuse or 0.0
            cells.append(
                f"{window_label(choice)}: {pct(mean)} over {len(reuse)} calls, lowest"
                f" {pct(min(reuse))} (of the whole request: {pct(whole)})"
            )
            ok &= min(reuse) >= TARGET_SUMMARY_REUSE
        if not seen:
            continue
        reference = " (the original's, for reference)" if policy == CLINE_CONDENSE else ""
        rows.append(
            [
                "in-band summary request reads ≥ 90 % of its prefix from cache, every call"
                f" (443 trace): {LABELS[policy]}" + reference,
                "; ".join(cells),
                _status(ok) if policy == WK_INBAND else ("≥ 90 %" if ok else "< 90 %"),
            ]
        )
        if policy == WK_INBAND and not ok:
            reasons.append(
                "Prefix reuse of the in-band summary requests: a call below 90 % follows a"
                " request whose prefix the session changed (a shrink step, a clip) before it"
                " asked, so part of what precedes the instruction is new to the cache."
            )
    if WK_INBAND in SKIPPED:
        rows.append(
            [
                "in-band summary request reads ≥ 90 % of its prefix from cache (443 trace)",
                f"not measured: {SKIPPED[WK_INBAND]}",
                "**not measured**",
            ]
        )
    return rows, reasons


def _frontier_rows(evaluation: Evaluation) -> tuple[list[list[str]], list[str]]:
    rows, reasons = [], []
    for policy in (WINDOWKEEPER, *OURS):
        runs = [r for r in _runs(evaluation, policy) if r.totals.frontier]
        if not runs:
            continue
        short = [(r.totals.frontier_share() or 0.0, r) for r in runs]
        misses = sorted((share, _where(r)) for share, r in short if share < 1.0)
        lowest = min(share for share, _ in short)
        measured = (
            f"100 % on all {len(runs)} settings that shrank"
            if not misses
            else f"lowest {pct(lowest)}; below 100 % on {len(misses)} of {len(runs)} settings"
            f" ({'; '.join(f'{where}: {pct(share)}' for share, where in misses[:4])}"
            f"{'; …' if len(misses) > 4 else ''})"
        )
        rows.append(
            [f"task-frontier retention 100 %: {LABELS[policy]}", measured, _status(not misses)]
        )
        if misses:
            reasons.append(_frontier_reason(policy, [r for share, r in short if share < 1.0]))
    return rows, reasons


def _known(share: float | None) -> float:
    return 1.0 if share is None else share


def _frontier_reason(policy: str, runs: Sequence[Run]) -> str:
    lost = {
        item: sum(1 - _known(r.totals.frontier_share(item)) for r in runs) / len(runs)
        for item in ("task", "instruction", "files")
    }
    what = ", ".join(f"{item} {pct(share)}" for item, share in lost.items() if share > 0)
    hidden = sum(r.steps[step] for r in runs for step in _HIDING)
    usage = sum(r.steps["reported-usage-truncation"] for r in runs)
    folds = sum(r.steps["summarize"] + r.steps["summarize-in-band"] for r in runs)
    if policy == WINDOWKEEPER:
        how = "it hides turns and keeps no summary nor ledger of them"
    else:
        how = (
            f"over those settings it hid turns {hidden} times without folding them"
            f" ({usage} of them the original's truncation driven by the reported usage,"
            " which runs before any step), against"
            f" {folds} folds; what those hidden turns held is in no summary and no ledger"
        )
    return (
        f"Task frontier of {LABELS[policy]}: on the settings below 100 % the requests missed,"
        f" on average, {what or 'nothing'} of the time; {how}."
    )


def _cost_rows(evaluation: Evaluation) -> tuple[list[list[str]], list[str]]:
    rows, reasons = [], []
    for policy in (*OURS, CLINE_CONDENSE, LC_SUMMARY):
        if policy not in COMPACTION:
            continue
        cells, ok, seen = [], True, False
        for nominal in COST_WINDOWS:
            run = evaluation.run(HEADLINE, nominal, policy)
            base = evaluation.run(HEADLINE, nominal, CLINE)
            if run is None or base is None or not base.totals.cost:
                continue
            seen = True
            ratio = run.totals.cost / base.totals.cost
            cells.append(f"{window_label(run.choice)}: {ratio:.2f}×")
            ok &= ratio <= 1.0
            if policy in OURS and ratio > 1.0:
                reasons.append(_cost_reason(policy, run, base))
        if not seen:
            continue
        ours = policy in OURS
        rows.append(
            [
                f"billed cost with summaries ≤ cline's (443 trace, 64k and 128k): {LABELS[policy]}"
                + ("" if ours else " (peer, for reference)"),
                "; ".join(cells),
                _status(ok) if ours else ("≤ 1" if ok else "> 1"),
            ]
        )
    return rows, reasons


def _cost_reason(policy: str, run: Run, base: Run) -> str:
    a, b = run.totals, base.totals
    stream = a.cost - (a.summary_cost if not a.in_band_calls else a.summary_output * SUMMARY_OUTPUT)
    return (
        f"Billed cost of {LABELS[policy]} at {window_label(run.choice)}:"
        f" {number(a.cost)} against cline's {number(b.cost)}. Its {a.summary_calls} summaries"
        f" add {number(a.summary_cost)} ({number(a.summary_output)} output tokens at"
        f" {SUMMARY_OUTPUT:g}×, and their input), and the conversation's requests bill"
        f" {number(stream)} ({a.requests} requests, {pct(a.mean_reuse)} mean cache reuse) against"
        f" cline's {b.requests} requests at {pct(b.mean_reuse)}: every fold re-writes the request"
        " after messages 0-1, and it folds far more often than cline truncates"
        f" ({a.truncations} shrinks against {b.truncations}: one summary every"
        f" {b.requests / max(a.summary_calls, 1):.1f} requests of the trace)."
    )


def _targets(evaluation: Evaluation) -> list[str]:
    rows: list[list[str]] = []
    reasons: list[str] = []
    for part in (_valid_rows, _reuse_rows, _frontier_rows, _cost_rows):
        part_rows, part_reasons = part(evaluation)
        rows += part_rows
        reasons += part_reasons
    lines = table(["target", "measured", ""], rows, "lll")
    if reasons:
        lines += ["", "Why the missed targets are missed:", ""]
        lines += [f"- {reason}" for reason in reasons]
    return lines


def format_compaction(evaluation: Evaluation) -> list[str]:
    """The section's Markdown lines (without its heading)."""
    lines = [
        "Policies that summarize (or fold into a ledger) instead of only hiding turns, against"
        " the four above. Every summary is scripted"
        " (`windowkeeper.tools._scripted_summary.scripted_summary`: about 1,500 tokens built from"
        " the messages it folds, the same text for the same messages), so runs are reproducible"
        " and no model is called.",
        "",
        "- **cline auto-condense**: the original's task with auto-condense on"
        " (`ClineCondensePolicy`, replay policy `cline-condense`): at the task's threshold the"
        " new user message carries the summary request; the answer is the summary, the"
        " handler hides everything after messages 0-1, and the next request (the continuation)"
        " carries the summary as the tool's result. Both requests are metered.",
        "- **windowkeeper compaction, out-of-band**: `ContextSession(summarize=<summarizer>)`;"
        " the summarizer answers with the scripted summary of what its call sends. The call is"
        " metered as the ready-made summarizers would send it (`summary_messages(request)`),"
        " apart from the conversation: once the session has sent a request, that is the"
        " previous request unchanged with the instruction at the end of its final user turn"
        " (with the conversation's system prompt and tools), else the folded messages as text.",
        '- **windowkeeper compaction, in-band**: `ContextSession(summarize="in-band")`: when a'
        " prepared request says `summary_requested`, it is sent (the instruction on its last"
        " user message, the rest as usual), the scripted summary of it is appended as the reply,"
        " and the next `prepare()` is the continuation.",
        "- **windowkeeper compaction, ledger only**: `ContextSession(summarize=True)`: older"
        " turns folded into the ledger alone, no model.",
        "- **LangChain SummarizationMiddleware**: langchain's own middleware (`before_model`,"
        " its update applied with langgraph's `add_messages`) on the state a LangChain agent"
        ' would hold, with `trigger=("tokens", max_allowed_size - system prompt)`, the ruler as'
        " token counter and its defaults otherwise (keep the last 20 messages, summarize their"
        " predecessors' last 4,000 tokens); its model is a fake chat model answering with the"
        " scripted summary of the messages the prompt quotes (`bench/_lc_summary.py`).",
        "",
    ]
    if SKIPPED:
        lines += [
            "Left out of this run: "
            + "; ".join(f"{policy} ({why})" for policy, why in SKIPPED.items())
            + ".",
            "",
        ]
    lines += [
        "The bill (input price 1 per token) adds the summaries to the conversation's requests:"
        f" a summary is output, at {SUMMARY_OUTPUT:g}×; an in-band ask is a request of the"
        " conversation, so its input pays cache reads for the prefix it shares with the"
        " request before it and writes for the rest, as every request does; an out-of-band call"
        " that sends the previous request unchanged plus the instruction is billed the same way"
        " (its prefix is what the provider cached for the conversation: Anthropic and OpenAI"
        " cache by prefix, tools, system, then messages in order), one that sends the folded"
        " messages as text is a new conversation, nothing of it cached nor reused, so its input"
        " is billed at 1×."
        " *Summary reuse* is the share of the summary calls' input read from the cache,"
        " *prefix reuse* the share of their prefix (all before the last user message, which"
        " carries the new turn and the instruction) read from the cache, both averaged over"
        " the calls (0 for out-of-band calls sent as text). *Summary cost* is what the summary"
        " calls cost,"
        " input and output.",
        "",
        "The task frontier (`bench/_frontier.py`): over the requests from the first one at which"
        " a policy shrank the history (hid, dropped or folded turns), the share that still"
        " carry the task (message 0's task text), the latest user instruction and every file"
        " edited so far, each verbatim anywhere in the request (a kept message, a summary, a"
        " ledger), up to whitespace and path separators. The items are read from the full"
        " history by windowkeeper's ledger, the same for every policy. *–*: the policy never"
        " shrank the history there.",
        "",
        "### On the 443-message trace",
        "",
    ]
    lines += _headline_table(evaluation)
    lines += ["", *_notes(evaluation)]
    lines += [
        "",
        "### Task frontier on every trace",
        "",
        "Share of the requests after the first shrink that carry the whole frontier, in %, at"
        " the trace's 64k / 128k / 200k windows (scaled for the short traces, as above).",
        "",
    ]
    lines += _frontier_table(evaluation)
    lines += [
        "",
        "### Per-request time",
        "",
        "On the 443-message trace, one replay per window (the measured one): the policy's"
        " per-request call as above (for cline auto-condense the original's"
        " `get_new_context_messages_and_metadata`, for the sessions `extend` + `record_usage` +"
        " `prepare` + `append`, for LangChain its `send`), without the time spent writing"
        " the scripted summaries, which stands for the model's.",
        "",
    ]
    lines += _times_table(evaluation)
    lines += ["", "### Compaction targets", ""]
    lines += _targets(evaluation)
    return lines
