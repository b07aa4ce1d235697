"""How the compaction defaults are chosen: on part of the corpus, reported on the rest.

The procedure (leave one trace out): for each real trace of the corpus in turn, the other
traces choose each setting, and the held-out trace reports what the choice gives there. Each
setting is swept alone, the others at their defaults:

- ``in_band_at``: the share of the limit past which an in-band session asks for a summary;
- the verbatim tail a fold keeps by default, as a share of the room (what the limit leaves
  beside the system prompt, tools and messages 0-1; at most 8,000 tokens): the session's
  ``_KEEP_SHARE``;
- the continuation's budget, as a share of the room (the session's ``_BUDGET_SHARE``);
- how much a new summary must add to be asked for: the turns it would be the first to
  summarize, as a multiple of the last summary's size (``SUMMARY_WORTH`` of the summarize step;
  0 asks at every fold);
- whether masking old tool outputs runs before the fold (1) or right after it (0)
  (``_MASK_BEFORE_FOLD`` of the steps), measured on the out-of-band session, whose folds run
  among the shrink steps;
- how far past the limit an in-band ask may go, as a share of the margin between the limit and
  the window (the session's ``_ASK_MARGIN_SHARE``; 0: never past the limit);
- whether an in-band fold takes the turn the ask was made on as well (1: the summary was
  written with it in view) or keeps it verbatim (0) (the session's ``_FOLD_ASKED_TURN``).

The shares and the multiple are module constants, set for the replay only: they are not
arguments.

A candidate is *admissible* on a set of traces when, on every one of their settings (each
window), the in-band session sends nothing over the window, refuses nothing the default
session sends, asks on no request that folded, and carries the latest instruction, every
edited file and the latest todo state after every fold, and every fold carries a summary the
model wrote (none falls back to the ledger alone). Among the admissible candidates the
choice is the one with the lowest median billed cost against cline's auto-condense over those
settings; ties go to the lower maximum, then to the current default. With none admissible,
the candidate with the fewest failed settings is taken, then by cost as above. The default
moves to the value most folds pick only when, held out, the choices beat the default (a lower
median over the held-out traces): a value that wins on the other traces but not on the one
left out does not generalize.
"""

from __future__ import annotations

import contextlib
import statistics
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from _compaction_traces import SettingFigures
from _runner import (
    CLINE_CONDENSE,
    WINDOWKEEPER,
    WK_COMPACT,
    WK_INBAND,
    Case,
    Run,
    WindowChoice,
    run,
)
from _tables import table
from windowkeeper.session import _compaction
from windowkeeper.session import steps as _steps
from windowkeeper.session.steps import _summarize

__all__ = ["SWEEPS", "Tuning", "format_tuning", "tune"]

DEFAULT_AT = 0.8
DEFAULT_KEEP = _compaction._KEEP_SHARE
DEFAULT_BUDGET = _compaction._BUDGET_SHARE
DEFAULT_WORTH = _summarize.SUMMARY_WORTH
DEFAULT_MASK = float(_steps._MASK_BEFORE_FOLD)
DEFAULT_MARGIN = _compaction._ASK_MARGIN_SHARE
DEFAULT_ASKED = float(_compaction._FOLD_ASKED_TURN)
SWEEPS: dict[str, tuple[float, ...]] = {
    "in_band_at": (0.75, 0.8, 0.85, 0.9, 0.95, 1.0),
    "verbatim tail share of the room": (0.0, 0.05, 0.1, 0.15, 0.25, 0.35),
    "continuation budget share of the room": (0.1, 0.15, 0.25, 0.35),
    "new summary worth (last summary's sizes)": (0.0, 1.0, 2.0, 4.0, 8.0),
    "masking before the fold (1) or after (0), out-of-band": (0.0, 1.0),
    "in-band ask past the limit, share of the margin to the window": (0.0, 0.25, 0.5, 0.75),
    "in-band fold takes the asked turn (1) or keeps it (0)": (0.0, 1.0),
}
KEEP, BUDGET = "verbatim tail share of the room", "continuation budget share of the room"
WORTH = "new summary worth (last summary's sizes)"
MASK = "masking before the fold (1) or after (0), out-of-band"
MARGIN = "in-band ask past the limit, share of the margin to the window"
ASKED = "in-band fold takes the asked turn (1) or keeps it (0)"
DEFAULTS = {
    "in_band_at": DEFAULT_AT,
    KEEP: DEFAULT_KEEP,
    BUDGET: DEFAULT_BUDGET,
    WORTH: DEFAULT_WORTH,
    MASK: DEFAULT_MASK,
    MARGIN: DEFAULT_MARGIN,
    ASKED: DEFAULT_ASKED,
}
POLICY = {MASK: WK_COMPACT}
"""The session a setting is measured on, when not the in-band one."""
Runs = dict[tuple[str, int, str], Run]


@contextlib.contextmanager
def _shares(values: dict[str, float]) -> Iterator[None]:
    """The module constants of every setting but ``in_band_at`` set to ``values``, for the
    replays inside (restored after)."""
    saved = (
        _compaction._KEEP_SHARE,
        _compaction._BUDGET_SHARE,
        _summarize.SUMMARY_WORTH,
        _steps._MASK_BEFORE_FOLD,
        _compaction._ASK_MARGIN_SHARE,
        _compaction._FOLD_ASKED_TURN,
    )
    _compaction._KEEP_SHARE, _compaction._BUDGET_SHARE = values[KEEP], values[BUDGET]
    _summarize.SUMMARY_WORTH = values[WORTH]
    _steps._MASK_BEFORE_FOLD = bool(values[MASK])
    _compaction._ASK_MARGIN_SHARE = values[MARGIN]
    _compaction._FOLD_ASKED_TURN = bool(values[ASKED])
    try:
        yield
    finally:
        (
            _compaction._KEEP_SHARE,
            _compaction._BUDGET_SHARE,
            _summarize.SUMMARY_WORTH,
            _steps._MASK_BEFORE_FOLD,
            _compaction._ASK_MARGIN_SHARE,
            _compaction._FOLD_ASKED_TURN,
        ) = saved


def _replay(case: Case, choice: WindowChoice, setting: str, value: float) -> Run:
    settings: dict[str, float | int] = {}
    if setting == "in_band_at":
        settings["in_band_at"] = value
    values = {**DEFAULTS, setting: value}
    with _shares(values):
        return run(case, choice, POLICY.get(setting, WK_INBAND), settings=settings, strict=False)


@dataclass(slots=True)
class Outcome:
    """One candidate on one trace: per window, whether it is admissible, and its cost ratio."""

    admissible: list[bool] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)


def _outcome(figures: SettingFigures) -> tuple[bool, float | None]:
    ok = (
        figures.over_window == 0
        and figures.refused_sent_by_default == 0
        and figures.reasks == 0
        and all(share is None or share >= 1.0 for share in figures.fold_shares.values())
        and figures.ledger_folds == 0
    )
    return ok, figures.ratio


@dataclass(slots=True)
class Tuning:
    """Every candidate's outcome per trace, and the leave-one-trace-out choices."""

    traces: list[str]
    outcomes: dict[tuple[str, float, str], Outcome] = field(default_factory=dict)
    """(setting, value, trace) -> outcome."""

    def score(self, setting: str, value: float, traces: Sequence[str]) -> tuple[int, float, float]:
        """(failed settings, median ratio, max ratio) of a candidate over ``traces``."""
        failed, ratios = 0, []
        for trace in traces:
            outcome = self.outcomes[setting, value, trace]
            failed += sum(not ok for ok in outcome.admissible)
            ratios += outcome.ratios
        if not ratios:
            return failed, 0.0, 0.0
        return failed, statistics.median(ratios), max(ratios)

    def choose(self, setting: str, traces: Sequence[str]) -> float:
        """The candidate the procedure picks on ``traces``."""
        default = DEFAULTS[setting]
        return min(
            SWEEPS[setting],
            key=lambda value: (*self.score(setting, value, traces), value != default),
        )


def tune(cases: Sequence[Case], windows: dict[str, list[WindowChoice]], runs: Runs) -> Tuning:
    """Replay the in-band session (or the setting's :data:`POLICY`) with every candidate of
    every sweep on every real trace."""
    real = [case for case in cases if case.name != "demo"]
    tuning = Tuning([case.name for case in real])
    for setting, values in SWEEPS.items():
        for value in values:
            for case in real:
                outcome = Outcome()
                policy = POLICY.get(setting, WK_INBAND)
                for choice in windows[case.name]:
                    default = runs.get((case.name, choice.nominal, WINDOWKEEPER))
                    condense = runs.get((case.name, choice.nominal, CLINE_CONDENSE))
                    if value == DEFAULTS[setting] and (case.name, choice.nominal, policy) in runs:
                        replayed = runs[case.name, choice.nominal, policy]
                    else:
                        replayed = _replay(case, choice, setting, value)
                    ok, ratio = _outcome(SettingFigures(replayed, default, condense))
                    outcome.admissible.append(ok)
                    if ratio is not None:
                        outcome.ratios.append(ratio)
                tuning.outcomes[setting, value, case.name] = outcome
            print(f"  tuned {setting} = {value:g}", file=sys.stderr)
    return tuning


def _cell(score: tuple[int, float, float]) -> str:
    failed, median, worst = score
    return f"{median:.3f} / {worst:.3f}" + (f" ({failed} failed)" if failed else "")


def format_tuning(tuning: Tuning) -> list[str]:
    """The procedure's Markdown: every candidate on the whole corpus, then the held-out folds."""
    lines = [
        "The procedure (`bench/_tuning.py`): each setting of the in-band session is swept"
        " alone, the others at their defaults, and chosen by leaving one trace out: the other"
        " real traces choose, the held-out trace reports. A candidate is admissible on a set of"
        " traces when, at every window of each, it sends nothing over the window, refuses"
        " nothing the default session sends, asks on no request that folded and carries the"
        " latest instruction, every edited file and the latest todo state after every fold,"
        " and every fold carries a summary the model wrote (none falls back to the ledger"
        " alone);"
        " among the admissible ones the lowest median billed cost against cline auto-condense"
        " wins (ties: the lower maximum, then the current default); with none admissible, the"
        " fewest failed settings first. The default moves to the value most folds pick only"
        " when, held out, the choices beat the default's median. The demo conversation takes"
        " no part.",
        "",
        "The settings: `in_band_at`, the share of the limit past which the in-band session"
        " asks; the verbatim tail a fold keeps beyond the newest turn (which it always keeps"
        " whole), as a share of the room (what the limit leaves beside the system prompt,"
        " tools and messages 0-1); the continuation's budget, as a share of the room; and the"
        " worth of a new summary: once there is one, a fold asks for a new summary only when"
        " the turns it would add hold this many times the last summary's size, else it keeps"
        " the last summary with a fresh ledger (0: a new summary at every fold); and whether"
        " masking old tool outputs runs before the fold (1) or right after it (0), measured on"
        " the out-of-band session, whose folds run among the shrink steps; how far past the"
        " limit an in-band ask may go, as a share of the margin between the limit and the"
        " window (the rest of the margin is left for the summary and the estimate's error);"
        " and whether an in-band fold takes the turn the ask was made on (1: the model wrote"
        " its summary with that turn in view) or keeps it verbatim (0).",
        "",
    ]
    for setting, values in SWEEPS.items():
        default = DEFAULTS[setting]
        lines += [f"#### `{setting}` (default {default:g})", ""]
        rows = []
        for value in values:
            label = f"**{value:g}**" if value == default else f"{value:g}"
            rows.append(
                [label, _cell(tuning.score(setting, value, tuning.traces))]
                + [_cell(tuning.score(setting, value, [trace])) for trace in tuning.traces]
            )
        lines += table(
            ["value", "all traces: median / max vs cline-condense"]
            + [f"`{trace}`" for trace in tuning.traces],
            rows,
        )
        picks = []
        held: list[float] = []
        held_default: list[float] = []
        for trace in tuning.traces:
            rest = [other for other in tuning.traces if other != trace]
            chosen = tuning.choose(setting, rest)
            outcome = tuning.outcomes[setting, chosen, trace]
            baseline = tuning.outcomes[setting, default, trace]
            held += outcome.ratios
            held_default += baseline.ratios
            failed = sum(not ok for ok in outcome.admissible)
            picks.append(
                f"`{trace}` held out: {chosen:g} chosen; there"
                f" {_cell(tuning.score(setting, chosen, [trace]))}"
                + (" (admissible)" if not failed else "")
            )
        counts = dict.fromkeys(values, 0)
        for trace in tuning.traces:
            counts[tuning.choose(setting, [t for t in tuning.traces if t != trace])] += 1
        majority = max(values, key=lambda value: (counts[value], value == default))
        if not held or not held_default:
            lines += ["", "No setting had a cline-condense cost to compare with.", ""]
            continue
        generalizes = statistics.median(held) < statistics.median(held_default)
        if majority == default:
            verdict = f"the procedure keeps the default, {default:g}"
        elif not generalizes:
            verdict = (
                f"most folds pick {majority:g}, but held out the choices do no better than the"
                f" default: the procedure keeps {default:g}"
            )
        else:
            verdict = f"the procedure picks {majority:g}, not the current default {default:g}"
        lines += [
            "",
            "Leave one trace out: " + "; ".join(picks) + ".",
            "",
            f"Held out, over every trace's windows: median {statistics.median(held):.3f}×,"
            f" max {max(held):.3f}× cline-condense with the values chosen without the trace,"
            f" against {statistics.median(held_default):.3f}× / {max(held_default):.3f}× with"
            f" the default. Chosen on {counts[majority]} of {len(tuning.traces)} folds:"
            f" {verdict}.",
            "",
        ]
    return lines
