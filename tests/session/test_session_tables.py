"""The session's own arithmetic, row by row: what a usage report teaches the counter, what a
sync reports, and the bound on the verbatim tail a fold may keep."""

from __future__ import annotations

import pytest

from windowkeeper import ConfigurationError, ContextSession, Prepared, Synced, TokenUsage

from ..counters import RuleCounter
from .policy_tables import TASK, session, tokens, turn


def test_a_report_teaches_the_counter_every_input_token_cached_or_not() -> None:
    counter = RuleCounter(tokens)
    keeper = ContextSession(10_000, counter=counter)
    keeper.extend([TASK, *turn(0, 10)])
    prepared = keeper.prepare()
    assert prepared.estimated_tokens == tokens(prepared.messages)  # no output reserved by default
    keeper.record_usage(TokenUsage(tokens_in=100, tokens_out=5, cache_writes=20, cache_reads=30))
    assert counter.observed == 150


def test_a_report_before_any_request_teaches_nothing() -> None:
    counter = RuleCounter(tokens)
    keeper = ContextSession(10_000, counter=counter)
    keeper.extend([TASK, *turn(0, 10)])
    keeper.record_usage(TokenUsage(tokens_in=100, tokens_out=5))
    assert counter.observed is None


@pytest.mark.parametrize(
    ("wanted", "synced"),
    [
        ([TASK, *turn(0, 10)], Synced(kept=3, appended=0, dropped=0)),
        ([TASK, *turn(0, 10), *turn(1, 10)], Synced(kept=3, appended=2, dropped=0)),
        ([TASK, {"role": "assistant", "content": "x"}], Synced(kept=1, appended=1, dropped=2)),
        (
            [{"role": "user", "content": "other"}],
            Synced(kept=0, appended=1, dropped=3, restarted=True),
        ),
    ],
)
def test_what_a_sync_reports(wanted: list[dict[str, object]], synced: Synced) -> None:
    keeper = ContextSession(10_000)
    keeper.extend([TASK, *turn(0, 10)])
    result = keeper.sync(wanted)
    assert result == synced
    assert (result.dropped, result.restarted) == (synced.dropped, wanted[0] != TASK)
    assert keeper.history == wanted


@pytest.mark.parametrize(("keep", "taken"), [(4_000, True), (4_001, False)])
def test_the_tail_kept_may_be_at_most_half_the_limit(keep: int, taken: bool) -> None:
    """A 10,000-token window has a limit of 8,000: a fold keeping more than 4,000 tokens
    verbatim could free nothing."""
    if taken:
        ContextSession(10_000, summarize=True, keep_recent_tokens=keep)
        return
    with pytest.raises(ConfigurationError) as raised:
        ContextSession(10_000, summarize=True, keep_recent_tokens=keep)
    assert str(raised.value) == (
        "keep_recent_tokens=4,001 is over half the limit (8,000 tokens): a fold could free nothing"
    )


def test_the_edits_of_messages_a_sync_drops_go_with_them() -> None:
    """Hiding wrote the truncation notice over message 1; a sync back to the task alone drops
    message 1, and the message 1 appended next is sent as written."""
    keeper = session(3_000, mask_keep_recent=None)
    keeper.append(TASK)
    for number in range(6):
        keeper.extend(turn(number, 2_000))
    assert keeper.prepare().messages[1]["content"][0]["text"].startswith("[NOTE] Some previous")
    keeper.sync([TASK])
    fresh = {"role": "assistant", "content": [{"type": "text", "text": "fresh"}]}
    keeper.extend([fresh, {"role": "user", "content": "go"}])
    assert keeper.prepare().messages[1] == fresh


def test_a_prepared_request_made_by_hand_reports_nothing_it_was_not_told() -> None:
    """A caller's own Prepared (a test double, a replay) states only what it is given."""
    prepared = Prepared(
        messages=[TASK],
        deleted_range=None,
        range_changed=False,
        replaced_reads=0,
        estimated_tokens=5,
        max_allowed_size=8_000.0,
        preflight_acted=False,
    )
    assert (prepared.clipped, prepared.repairs, prepared.actions) == ((), (), ())
    assert (prepared.ignored_stale_usage, prepared.summary_requested) == (False, False)
    assert Synced(kept=2, appended=1) == Synced(kept=2, appended=1, dropped=0, restarted=False)


def _sized(total: int) -> list[dict[str, object]]:
    """The task, five reads of 4,000 characters and a last user text: ``total`` tokens by the
    tables' counter (four characters a token, five a message)."""
    history: list[dict[str, object]] = [TASK]
    for number in range(5):
        history += turn(number, 4_000)
    history.append({"role": "assistant", "content": "ok"})
    base = tokens([*history, {"role": "user", "content": ""}])
    history.append({"role": "user", "content": "x" * ((total - base) * 4)})
    assert tokens(history) == total
    return history


@pytest.mark.parametrize(("total", "shrunk"), [(8_000, False), (8_001, True)])
def test_a_request_at_the_limit_is_sent_as_it_is(total: int, shrunk: bool) -> None:
    keeper = session(10_000, mask_keep_recent=None)  # a limit of 8,000
    keeper.extend(_sized(total))
    prepared = keeper.prepare()
    assert prepared.preflight_acted is shrunk
    assert (prepared.estimated_tokens == total) is not shrunk


@pytest.mark.parametrize(
    ("total", "asks", "shrunk"),
    [
        (6_400, False, False),
        (6_401, True, False),
        (8_000, True, False),
        # past the limit, the ask (and its 376-token instruction) may take half the margin to
        # the 10,000-token window: 9,000 tokens; one token more and the pre-flight folds
        (8_624, True, False),
        (8_625, False, True),
    ],
)
def test_an_in_band_ask_is_made_past_the_share_of_the_limit(
    total: int, asks: bool, shrunk: bool
) -> None:
    """80 % of the 8,000-token limit is 6,400: a request of exactly that does not ask; past
    the limit it still asks while the ask fits under its ceiling."""
    keeper = session(10_000, summarize="in-band", keep_recent_tokens=100, mask_keep_recent=None)
    keeper.extend(_sized(total))
    prepared = keeper.prepare()
    assert (prepared.summary_requested, prepared.preflight_acted) == (asks, shrunk)
    if asks:
        assert prepared.actions == ()
        assert prepared.estimated_tokens == total + 376
    else:
        assert [action.step for action in prepared.actions] == (["summarize"] if shrunk else [])
