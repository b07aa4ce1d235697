"""The errors a new user meets first say what to do: model ids as written, a missing window."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from windowkeeper import ContextSession, UnknownModelWarning, model_window


class TestModelIds:
    @pytest.mark.parametrize(
        ("model", "window"),
        [
            ("anthropic:claude-sonnet-4-5", 200_000),
            ("anthropic/claude-sonnet-4-5", 200_000),
            ("claude-sonnet-4-5-20250929", 200_000),
            ("claude-sonnet-4-5-latest", 200_000),
            ("openai:gpt-4o", 128_000),
            ("openai/gpt-4o-2024-08-06", 128_000),
            ("bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0", 200_000),
        ],
    )
    def test_provider_prefixes_and_aliases_are_known(self, model: str, window: int) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert model_window(model).context_window == window

    def test_the_unknown_model_warning_says_what_the_adapters_take(self) -> None:
        with pytest.warns(UnknownModelWarning, match="context_window=.*every adapter"):
            model_window("acme:brand-new-model")


class TestNoWindow:
    def test_no_model_and_no_window_warns(self) -> None:
        with pytest.warns(UnknownModelWarning, match="no model and no context_window"):
            session = ContextSession()
        assert session.window.context_window == 128_000

    def test_a_reopened_folder_uses_the_window_it_stored(self, tmp_path: Path) -> None:
        """Reopening a task needs no window: the session kept its own (and no warning)."""
        first = ContextSession(20_000, task_dir=tmp_path)
        first.append({"role": "user", "content": "Fix the bug."})
        first.close()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            again = ContextSession(task_dir=tmp_path)
        assert again.window == first.window
        assert ContextSession(50_000, task_dir=tmp_path).window.context_window == 50_000
