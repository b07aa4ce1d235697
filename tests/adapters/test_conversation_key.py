"""One name for the conversation a call without an id belongs to: ``default_conversation_id``.

The LangChain middleware called it ``default_thread_id`` and the OpenAI Agents filter
``default_key``; both older keywords still work, with a DeprecationWarning.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from windowkeeper import ConfigurationError
from windowkeeper.adapters.langchain import WindowkeeperMiddleware
from windowkeeper.adapters.openai_agents import WindowkeeperInputFilter

WINDOW = 50_000


def _langchain(**options: Any) -> list[str]:
    middleware = WindowkeeperMiddleware(context_window=WINDOW, **options)
    middleware.session()
    return middleware.conversation_ids


def _openai_agents(**options: Any) -> list[str]:
    input_filter = WindowkeeperInputFilter(context_window=WINDOW, **options)
    input_filter.session()
    return input_filter.conversation_ids


ADAPTERS: dict[str, tuple[Callable[..., list[str]], str]] = {
    "langchain": (_langchain, "default_thread_id"),
    "openai-agents": (_openai_agents, "default_key"),
}


@pytest.mark.parametrize(("made", "old"), ADAPTERS.values(), ids=list(ADAPTERS))
class TestDefaultConversationId:
    def test_the_new_name(self, made: Callable[..., list[str]], old: str) -> None:
        """``default_conversation_id`` names the session a call without an id gets."""
        assert made(default_conversation_id="solo") == ["solo"]

    def test_without_one_it_is_default(self, made: Callable[..., list[str]], old: str) -> None:
        """Given neither keyword, the conversation is ``"default"``, as before."""
        assert made() == ["default"]

    def test_the_old_name_still_works_and_warns(
        self, made: Callable[..., list[str]], old: str
    ) -> None:
        """The adapter's older keyword gives the same session, with a DeprecationWarning."""
        with pytest.warns(DeprecationWarning, match=f"{old} is deprecated"):
            assert made(**{old: "solo"}) == ["solo"]

    def test_not_both(self, made: Callable[..., list[str]], old: str) -> None:
        """Both names at once are refused."""
        with pytest.raises(ConfigurationError, match="not both"):
            made(default_conversation_id="a", **{old: "b"})

    def test_a_string(self, made: Callable[..., list[str]], old: str) -> None:
        """A non-string id is refused, naming the keyword given."""
        bad: Any = 3
        with pytest.raises(ConfigurationError, match="default_conversation_id must be a string"):
            made(default_conversation_id=bad)
