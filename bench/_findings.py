"""What the tables say, in sentences computed from them (so they follow the numbers)."""

from __future__ import annotations

import statistics

from _evaluation import HEADLINE, LABELS, Evaluation
from _runner import CLINE, CLINE_RECORDED, LAST_TOKENS, MASKING, WINDOWKEEPER, Run
from _tables import window_label
from windowkeeper import validate_messages

__all__ = ["format_findings"]

_COMPARED = (CLINE, WINDOWKEEPER, LAST_TOKENS, MASKING)


def _runs(evaluation: Evaluation, policy: str) -> list[Run]:
    return [run for (_, _, name), run in evaluation.runs.items() if name == policy]


def _pairs(evaluation: Evaluation, policy: str) -> list[tuple[Run, Run]]:
    """(run of ``policy``, run of cline) on the same trace and window."""
    pairs = []
    for (case, nominal, name), run in evaluation.runs.items():
        base = evaluation.run(case, nominal, CLINE)
        if name == policy and base is not None:
            pairs.append((run, base))
    return pairs


def format_findings(evaluation: Evaluation) -> list[str]:
    """A few computed observations over every trace and window."""
    lines: list[str] = []
    settings = sum(len(choices) for choices in evaluation.windows.values())
    over = ", ".join(
        f"{LABELS[p]} {sum(r.totals.over_window for r in _runs(evaluation, p))}"
        f" / {sum(r.totals.over_limit for r in _runs(evaluation, p))}"
        for p in _COMPARED
    )
    lines.append(
        f"- Requests over the window / over `max_allowed_size`, summed over the {settings}"
        f" trace-and-window settings: {over}. The original decides from the size of the"
        " *previous* request, so a large new tool result goes out before it can react; the"
        " other three judge the request they are about to send."
    )
    costs = []
    for policy in (WINDOWKEEPER, LAST_TOKENS, MASKING):
        ratios = sorted(
            (r.totals.cost / b.totals.cost, f"`{r.case}` at {window_label(r.choice)}")
            for r, b in _pairs(evaluation, policy)
            if b.totals.cost
        )
        if ratios:
            (low, low_at), (high, high_at) = ratios[0], ratios[-1]
            middle = statistics.median(ratio for ratio, _ in ratios)
            costs.append(
                f"{LABELS[policy]} {middle:.2f}× ({low:.2f}× on {low_at} to {high:.2f}× on"
                f" {high_at})"
            )
    lines.append(
        "- Billed cost with caching relative to cline, median (range) over every setting: "
        + "; ".join(costs)
        + ". Trimming to the last N tokens moves the start of the request at almost every"
        " request once the conversation is full, and masking rewrites an old message at almost"
        " every request (each new output pushes one more out of the last ten), so both pay"
        " cache writes for most of each request; truncating in large steps, as the original"
        " and windowkeeper do, breaks the cache rarely."
    )
    empty = [
        (run.case, run.choice, run.totals.rules["empty-content"])
        for run in _runs(evaluation, LAST_TOKENS)
        if run.totals.rules.get("empty-content")
    ]
    if empty:
        where = sorted({case for case, _, _ in empty})
        lines.append(
            f"- LangChain's `trim_messages` sent {sum(n for *_, n in empty)} empty requests"
            f' (on {", ".join(f"`{w}`" for w in where)}): with `start_on="human"` the kept'
            " messages must start at a human message, and in a tool-calling agent every user"
            " turn after the task is a tool result, so once the task no longer fits nothing is"
            " kept. A provider rejects such a request; it counts 0 message tokens here, which"
            " flatters that policy's tokens and cost on those traces."
        )
    gains = [
        (
            r.totals.mean_messages - b.totals.mean_messages,
            r.totals.mean_context - b.totals.mean_context,
        )
        for r, b in _pairs(evaluation, WINDOWKEEPER)
    ]
    if gains:
        messages = statistics.fmean(g for g, _ in gains)
        context = statistics.fmean(c for _, c in gains)
        lines.append(
            f"- windowkeeper against cline, averaged over every setting: messages retained"
            f" {100 * messages:+.1f} points, context retained {100 * context:+.1f} points."
            " Messages retained counts a message whose content was replaced (a duplicate-read"
            " notice, a masked or clipped tool output) as kept; context retained counts only"
            " content sent unchanged."
        )
    inherited = []
    for case in evaluation.cases:
        rules = {v.rule for v in validate_messages(list(case.history))} - {"tool-use-unanswered"}
        if not rules:
            continue
        senders = [
            policy
            for policy in _COMPARED
            if any(
                rules & set(run.totals.rules)
                for (name, _, p), run in evaluation.runs.items()
                if name == case.name and p == policy
            )
        ]
        others = [LABELS[p] for p in _COMPARED if p not in senders]
        sent = ", ".join(LABELS[p] for p in senders) or "no policy"
        inherited.append(
            f"`{case.name}` breaks {', '.join(sorted(rules))} in the history itself: {sent}"
            f" sent it as it is"
            + (
                f"; {', '.join(others)} did not (they merge consecutive messages of one role)"
                if others
                else ""
            )
        )
    if inherited:
        lines.append(
            "- Violations inherited from a trace: "
            + "; ".join(inherited)
            + ". The Cline traces' many unanswered tool_use blocks (results stored as text) are"
            " answered in what every policy sends: by the original's pairing repair, by placing"
            " the text results, or, for LangChain, in the history it is given."
        )
    reference = evaluation.run(HEADLINE, 200_000, CLINE_RECORDED)
    if reference is not None:
        lines.append(
            "- The *recorded usage* rows are a reference, not a policy: they decide from what the"
            " provider reported when the trace was made, after the live task's own truncations"
            " at its own window, not from what the replay sends. At 200k on the 443 trace that"
            f" usage rarely reaches the limit, so the replay sends {reference.totals.over_window}"
            " requests over the window by the ruler."
        )
    return lines
