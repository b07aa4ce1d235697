"""One name for the conversation key across the adapters: ``conversation_id``.

Each adapter's ``session``, ``last_prepared``, ``last_synced`` and ``forget`` take a
``conversation_id``, and ``conversation_ids`` lists the conversations held. The names the
LangChain middleware (``thread_id``, ``thread_ids``) and the OpenAI Agents filter (``key``,
``conversation_keys``) used before still work for one release, with a DeprecationWarning.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from windowkeeper import ConfigurationError, ContextSession
from windowkeeper.adapters.langchain import WindowkeeperMiddleware
from windowkeeper.adapters.openai_agents import WindowkeeperInputFilter

WINDOW = 50_000
METHODS = ("session", "last_prepared", "last_synced", "forget")


def _adapters() -> dict[str, type[Any]]:
    adapters: dict[str, type[Any]] = {
        "langchain": WindowkeeperMiddleware,
        "openai-agents": WindowkeeperInputFilter,
    }
    try:
        from windowkeeper.adapters.pydantic_ai import WindowkeeperCapability
    except ImportError:  # pragma: no cover - the extra is installed in the test environment
        pass
    else:
        adapters["pydantic-ai"] = WindowkeeperCapability
    return adapters


ADAPTERS = _adapters()
OLD = {"langchain": ("thread_id", "thread_ids"), "openai-agents": ("key", "conversation_keys")}


@pytest.mark.parametrize("name", list(ADAPTERS))
class TestOneName:
    def test_each_method_takes_a_conversation_id(self, name: str) -> None:
        """The first parameter of each per-conversation method is ``conversation_id``."""
        adapter = ADAPTERS[name]
        first = [list(inspect.signature(getattr(adapter, m)).parameters)[1] for m in METHODS]
        assert first == ["conversation_id"] * len(METHODS)

    def test_the_conversations_held_are_its_conversation_ids(self, name: str) -> None:
        """``conversation_ids`` lists the sessions made, by id, and ``forget`` drops one."""
        adapter = ADAPTERS[name](WINDOW)
        session = adapter.session(conversation_id="a")
        assert isinstance(session, ContextSession)
        assert adapter.session("a") is session
        adapter.session("b")
        assert sorted(adapter.conversation_ids) == ["a", "b"]
        assert adapter.last_prepared(conversation_id="a") is None
        assert adapter.last_synced(conversation_id="a") is None
        adapter.forget(conversation_id="a")
        assert adapter.conversation_ids == ["b"]


@pytest.mark.parametrize("name", list(OLD))
class TestOldNames:
    def test_the_old_keyword_gives_the_same_session_and_warns(self, name: str) -> None:
        """``session(thread_id=...)`` / ``session(key=...)`` is ``session(conversation_id)``."""
        adapter = ADAPTERS[name](WINDOW)
        old, _ = OLD[name]
        session = adapter.session("a")
        with pytest.warns(DeprecationWarning, match=f"{old} is deprecated: use conversation_id"):
            assert adapter.session(**{old: "a"}) is session
        with pytest.warns(DeprecationWarning, match=f"{old} is deprecated"):
            assert adapter.last_prepared(**{old: "a"}) is None
        with pytest.warns(DeprecationWarning, match=f"{old} is deprecated"):
            assert adapter.last_synced(**{old: "a"}) is None
        with pytest.warns(DeprecationWarning, match=f"{old} is deprecated"):
            adapter.forget(**{old: "a"})
        assert adapter.conversation_ids == []

    def test_the_old_listing_warns(self, name: str) -> None:
        """``thread_ids`` / ``conversation_keys`` are ``conversation_ids``, with a warning."""
        adapter = ADAPTERS[name](WINDOW)
        adapter.session("a")
        _, listing = OLD[name]
        with pytest.warns(
            DeprecationWarning, match=f"{listing} is deprecated: use conversation_ids"
        ):
            assert getattr(adapter, listing) == ["a"]

    def test_not_both(self, name: str) -> None:
        """Both names at once are refused."""
        adapter = ADAPTERS[name](WINDOW)
        old, _ = OLD[name]
        with pytest.raises(ConfigurationError, match=f"give conversation_id or {old}, not both"):
            adapter.session("a", **{old: "b"})

    def test_forget_needs_an_id(self, name: str) -> None:
        """``forget()`` without an id is refused rather than dropping the default session."""
        adapter = ADAPTERS[name](WINDOW)
        with pytest.raises(ConfigurationError, match="needs the conversation_id"):
            adapter.forget()


def test_the_openai_key_function_has_the_new_name() -> None:
    """``key=``, the filter's older name for ``conversation_id_from=``, still works and warns."""
    with pytest.warns(DeprecationWarning, match="key is deprecated: use conversation_id_from"):
        WindowkeeperInputFilter(WINDOW, key=lambda data: "chat")
    with pytest.raises(ConfigurationError, match="give conversation_id_from or key, not both"):
        WindowkeeperInputFilter(WINDOW, key=lambda data: "a", conversation_id_from=lambda data: "b")
