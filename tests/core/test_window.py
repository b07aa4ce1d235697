"""Context windows and their limits (Appendix B2, the DeepSeek rule, fractional limits)."""

from __future__ import annotations

import dataclasses

import pytest

from windowkeeper import ContextManager, ContextWindowInfo, TokenUsage, context_window_info

# Appendix B2: window -> (context_window, max_allowed_size), recorded from the original.
B2_TABLE = [
    (None, 128_000, 98_000),
    (0, 128_000, 98_000),
    (32_768, 32_768, 26_214.4),
    (64_000, 64_000, 37_000),
    (100_000, 100_000, 80_000),
    (128_000, 128_000, 98_000),
    (200_000, 200_000, 160_000),
    (400_000, 400_000, 360_000),
    (1_000_000, 1_000_000, 960_000),
]


class TestContextWindowInfo:
    """The original's getContextWindowInfo."""

    @pytest.mark.parametrize(("window", "expected_window", "expected_limit"), B2_TABLE)
    def test_limits_match_the_original(
        self, window: int | None, expected_window: int, expected_limit: float
    ) -> None:
        """B2: each window gets the original's window and max_allowed_size."""
        info = context_window_info(window)
        assert info == ContextWindowInfo(expected_window, expected_limit)

    def test_fractional_limit_is_kept_exactly(self) -> None:
        """32 768 tokens give 26 214.4, not a rounded integer."""
        limit = context_window_info(32_768).max_allowed_size
        assert limit == pytest.approx(26_214.4, abs=0)
        assert limit != int(limit)

    @pytest.mark.parametrize(
        ("window", "expected"),
        [(150_000, 120_000.0), (250_000, 210_000), (190_000, 152_000.0)],
    )
    def test_other_windows_take_the_larger_of_the_two_rules(
        self, window: int, expected: float
    ) -> None:
        """Outside the table the limit is max(window - 40 000, 0.8 x window)."""
        assert context_window_info(window).max_allowed_size == expected

    def test_info_is_frozen(self) -> None:
        """A ContextWindowInfo cannot be changed after it is made."""
        info = context_window_info(200_000)
        with pytest.raises(dataclasses.FrozenInstanceError):
            info.max_allowed_size = 1  # type: ignore[misc]


class TestDeepSeekRule:
    """An OpenAI-compatible handler serving a DeepSeek model is treated as 128 000 tokens."""

    @pytest.mark.parametrize("model_id", ["deepseek-chat", "DeepSeek-V3", "org/DEEPSEEK-r1"])
    def test_openai_compatible_deepseek_is_forced_to_128k(self, model_id: str) -> None:
        """Any casing of "deepseek" in the id forces the 128 000 window and its limit."""
        info = context_window_info(64_000, model_id=model_id, openai_compatible=True)
        assert info == ContextWindowInfo(128_000, 98_000)

    def test_other_handlers_keep_the_reported_window(self) -> None:
        """Without the OpenAI-compatible handler a DeepSeek model keeps its own window."""
        info = context_window_info(64_000, model_id="deepseek-chat")
        assert info == ContextWindowInfo(64_000, 37_000)

    def test_other_models_keep_the_reported_window(self) -> None:
        """The OpenAI-compatible handler alone does not change the window."""
        info = context_window_info(64_000, model_id="gpt-4o", openai_compatible=True)
        assert info == ContextWindowInfo(64_000, 37_000)


class TestFractionalLimitInDecisions:
    """A fractional limit is compared as it is, as the original compares it."""

    @pytest.mark.parametrize(("tokens", "expected"), [(26_214, False), (26_215, True)])
    def test_compaction_compares_against_the_fraction(self, tokens: int, expected: bool) -> None:
        """26 214 tokens stay under 26 214.4, 26 215 reach it."""
        manager = ContextManager()
        usage = TokenUsage(tokens_in=tokens)
        assert manager.should_compact_context_window(usage, 32_768) is expected

    def test_window_info_is_accepted_in_place_of_a_size(self) -> None:
        """A ContextWindowInfo is used as given, not recomputed from its window."""
        manager = ContextManager()
        custom = ContextWindowInfo(context_window=200_000, max_allowed_size=1_000)
        assert manager.should_compact_context_window(TokenUsage(tokens_in=1_000), custom)
        assert not manager.should_compact_context_window(TokenUsage(tokens_in=1_000), 200_000)
