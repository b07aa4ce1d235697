"""Usage objects as the Anthropic and OpenAI SDKs return them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from windowkeeper import InvalidUsageError, TokenUsage, WindowkeeperError, usage_from_sdk


class TestAnthropicShapes:
    def test_messages_usage_dict(self) -> None:
        """Anthropic's input_tokens exclude the cache; writes and reads are separate fields."""
        usage = usage_from_sdk(
            {
                "input_tokens": 120,
                "output_tokens": 30,
                "cache_creation_input_tokens": 1_000,
                "cache_read_input_tokens": 50_000,
            }
        )
        assert usage == TokenUsage(
            tokens_in=120, tokens_out=30, cache_writes=1_000, cache_reads=50_000
        )

    def test_null_cache_fields_count_zero(self) -> None:
        """The SDK reports absent cache fields as None."""
        usage = usage_from_sdk(
            {"input_tokens": 7, "output_tokens": 3, "cache_creation_input_tokens": None}
        )
        assert usage.total == 10

    def test_pydantic_like_object(self) -> None:
        """SDK objects are read through model_dump()."""

        class Usage:
            def model_dump(self) -> dict[str, Any]:
                return {"input_tokens": 5, "output_tokens": 6}

        assert usage_from_sdk(Usage()) == TokenUsage(tokens_in=5, tokens_out=6)

    def test_plain_object_attributes(self) -> None:
        """Objects without model_dump are read through their attributes."""

        @dataclass
        class Usage:
            input_tokens: int
            output_tokens: int

        assert usage_from_sdk(Usage(1, 2)).total == 3


class TestOpenAIShapes:
    def test_chat_completions_cached_tokens_are_part_of_the_prompt(self) -> None:
        """prompt_tokens include cached ones; they are split out as cache reads."""
        usage = usage_from_sdk(
            {
                "prompt_tokens": 1_000,
                "completion_tokens": 20,
                "total_tokens": 1_020,
                "prompt_tokens_details": {"cached_tokens": 800},
            }
        )
        assert usage == TokenUsage(tokens_in=200, tokens_out=20, cache_reads=800)
        assert usage.total == 1_020

    def test_responses_api_input_details(self) -> None:
        """The Responses API reports input_tokens with cached tokens included."""
        usage = usage_from_sdk(
            {
                "input_tokens": 900,
                "output_tokens": 10,
                "input_tokens_details": {"cached_tokens": 400},
            }
        )
        assert usage == TokenUsage(tokens_in=500, tokens_out=10, cache_reads=400)


class TestRejected:
    @pytest.mark.parametrize("value", [None, 42, "1000", ["input_tokens", 1]])
    def test_not_a_usage_object(self, value: Any) -> None:
        """Anything that is not a usage shape raises InvalidUsageError."""
        with pytest.raises(InvalidUsageError, match="usage must be"):
            usage_from_sdk(value)

    def test_unknown_fields(self) -> None:
        """A mapping without known fields names what it found."""
        with pytest.raises(InvalidUsageError, match="tokens_used"):
            usage_from_sdk({"tokens_used": 5})

    @pytest.mark.parametrize("bad", [-1, 1.5, "7", True])
    def test_bad_counts_name_the_field(self, bad: Any) -> None:
        """A count that is not a non-negative integer names its field."""
        with pytest.raises(InvalidUsageError, match=r"usage\.input_tokens"):
            usage_from_sdk({"input_tokens": bad, "output_tokens": 1})

    def test_errors_are_windowkeeper_and_value_errors(self) -> None:
        """Callers can catch ours or the builtin."""
        with pytest.raises(WindowkeeperError):
            usage_from_sdk({})
        with pytest.raises(ValueError, match="neither"):
            usage_from_sdk({})

    def test_token_usage_passes_through(self) -> None:
        """A TokenUsage is returned as it is."""
        usage = TokenUsage(tokens_in=1)
        assert usage_from_sdk(usage) is usage
