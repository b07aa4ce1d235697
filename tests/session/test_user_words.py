"""User words right after the hidden range reach the request (the original's repair drops them)."""

from __future__ import annotations

import json

import pytest

from windowkeeper import ContextSession, validate_messages

from ..builders import TR, TU, A, U

WORDS = "USER WORDS: switch the database to PostgreSQL 14 before going on."
HISTORY = [
    U("Build the service."),
    A([TU("a1", "bash", command="ls")]),
    U([TR("a1", "x")]),
    A("Step 1 is done."),
    U(WORDS),
    A([TU("a2", "bash", command="ls")]),
    U([TR("a2", "y")]),
]


@pytest.mark.parametrize("summarize", [False, True])
def test_words_after_the_cut_are_sent(summarize: bool) -> None:
    """A cut right before the user's own text: the text is sent, after the missing results."""
    session = ContextSession(context_window=100_000, summarize=summarize)
    session.extend(HISTORY)
    session.deleted_range = (2, 3)
    prepared = session.prepare()
    assert WORDS in json.dumps(prepared.messages)
    assert validate_messages(prepared.messages) == []
