"""Which cause the distrusted-usage warning names for a report far above the request."""

from __future__ import annotations

import pytest

from windowkeeper import ContextSession, DistrustedUsageWarning, TokenUsage

WINDOW = 200_000
SYSTEM = "You are a careful coding agent."
TOOLS = [{"name": "read_file", "description": "Read a file.", "input_schema": {"type": "object"}}]


def _warning(**given: object) -> str:
    session = ContextSession(WINDOW)
    session.append({"role": "user", "content": "x" * 4_000})
    session.prepare(**given)
    with pytest.warns(DistrustedUsageWarning) as caught:
        session.record_usage(TokenUsage(tokens_in=5 * WINDOW))
    return str(caught[0].message)


def test_without_system_or_tools_the_prompt_left_out_is_named_first() -> None:
    """A replayed transcript records no system prompt nor tools: the warning says so."""
    text = _warning()
    assert "a system prompt or tools sent to the model but not given to prepare()" in text
    assert "usage summed over several requests" in text


@pytest.mark.parametrize("given", [{"system": SYSTEM}, {"tools": TOOLS}])
def test_with_a_system_prompt_or_tools_only_the_summed_run_is_named(
    given: dict[str, object],
) -> None:
    """Given what the model got, only a run's total can explain so high a report."""
    text = _warning(**given)
    assert "not given to prepare()" not in text
    assert "usage summed over several requests" in text
