"""Token usage and the compaction decision (cases 17-24, TokenUsage, api_req_started parsing)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from windowkeeper import ContextManager, InvalidUsageError, TokenUsage, WindowkeeperError
from windowkeeper.core._usage import should_compact


def _decide(usage: TokenUsage | None, threshold: float | None) -> bool:
    return ContextManager().should_compact_context_window(usage, 200_000, threshold)


class TestShouldCompactContextWindow:
    """Cases 17-24 of Cline's shouldCompactContextWindow tests (window 200 000, limit 160 000)."""

    def test_below_threshold(self) -> None:
        """Case 17: 33 000 tokens stay under 75% of the window."""
        assert _decide(TokenUsage(tokens_in=30_000, tokens_out=3_000), 0.75) is False

    def test_above_threshold(self) -> None:
        """Case 18: 155 000 tokens reach 75% of the window (150 000)."""
        assert _decide(TokenUsage(tokens_in=140_000, tokens_out=15_000), 0.75) is True

    def test_custom_low_threshold(self) -> None:
        """Case 19: 10 500 tokens reach floor(200 000 x 0.05) = 10 000."""
        assert _decide(TokenUsage(tokens_in=9_000, tokens_out=1_500), 0.05) is True

    def test_no_threshold_falls_back_to_the_limit(self) -> None:
        """Case 20: without a percentage, 155 000 is compared with 160 000."""
        assert _decide(TokenUsage(tokens_in=150_000, tokens_out=5_000), None) is False

    def test_zero_threshold_falls_back_to_the_limit(self) -> None:
        """Case 21: a percentage of 0 is falsy and falls back to 160 000."""
        assert _decide(TokenUsage(tokens_in=150_000, tokens_out=5_000), 0) is False

    def test_cache_reads_count(self) -> None:
        """Case 22: cache reads are part of the total (155 500 >= 150 000)."""
        usage = TokenUsage(tokens_in=5_000, tokens_out=500, cache_writes=0, cache_reads=150_000)
        assert _decide(usage, 0.75) is True

    def test_no_previous_request(self) -> None:
        """Case 23: no previous request (the original's index -1) never compacts."""
        assert _decide(None, 0.75) is False

    def test_threshold_is_capped_at_the_limit(self) -> None:
        """Case 24: a 100% threshold is capped at 160 000, which 165 000 reaches."""
        assert _decide(TokenUsage(tokens_in=165_000), 1.0) is True

    def test_nan_threshold_falls_back_to_the_limit(self) -> None:
        """A NaN percentage is treated like no percentage, as JavaScript's falsy NaN is."""
        assert _decide(TokenUsage(tokens_in=155_000), float("nan")) is False
        assert _decide(TokenUsage(tokens_in=160_000), float("nan")) is True

    def test_exactly_at_the_limit_compacts(self) -> None:
        """The comparison is "greater or equal": 160 000 tokens compact, 159 999 do not."""
        assert _decide(TokenUsage(tokens_in=160_000), None) is True
        assert _decide(TokenUsage(tokens_in=159_999), None) is False

    @pytest.mark.parametrize(
        "usage",
        ['{"tokensIn": 170000}', {"tokensIn": 100000, "cacheReads": 70000}],
        ids=["json-text", "mapping"],
    )
    def test_api_req_started_info_is_accepted_as_usage(self, usage: str | dict[str, Any]) -> None:
        """Cline's api_req_started info (text or parsed) is read as the usage."""
        assert should_compact(usage, 200_000) is True


class TestTokenUsage:
    """The provider-reported usage of one request."""

    def test_total_sums_the_four_counts(self) -> None:
        """The total is input + output + cache writes + cache reads."""
        assert TokenUsage(1, 20, 300, 4_000).total == 4_321

    def test_defaults_are_zero(self) -> None:
        """An empty usage has a total of 0."""
        assert TokenUsage().total == 0

    def test_usage_is_frozen(self) -> None:
        """A TokenUsage cannot be changed after it is made."""
        usage = TokenUsage(tokens_in=1)
        with pytest.raises(dataclasses.FrozenInstanceError):
            usage.tokens_in = 2  # type: ignore[misc]


class TestFromApiReqInfo:
    """Reading Cline's api_req_started JSON."""

    def test_reads_the_four_fields_from_text(self) -> None:
        """The JSON text's four counts become the usage; other fields are ignored."""
        text = json.dumps(
            {
                "request": "…",
                "tokensIn": 10,
                "tokensOut": 20,
                "cacheWrites": 30,
                "cacheReads": 40,
                "cost": 0.5,
            }
        )
        assert TokenUsage.from_api_req_info(text) == TokenUsage(10, 20, 30, 40)

    def test_reads_a_mapping(self) -> None:
        """An already parsed mapping is read the same way."""
        info = {"tokensIn": 1, "tokensOut": 2, "cacheWrites": 3, "cacheReads": 4}
        assert TokenUsage.from_api_req_info(info) == TokenUsage(1, 2, 3, 4)

    @pytest.mark.parametrize(
        "info",
        ["{}", '{"tokensIn": null, "cacheReads": null}', {"tokensOut": None}, '{"cost": 1}'],
    )
    def test_missing_or_null_fields_count_zero(self, info: str | dict[str, Any]) -> None:
        """Absent and null counts are 0."""
        assert TokenUsage.from_api_req_info(info) == TokenUsage()

    def test_some_fields_missing(self) -> None:
        """Present counts are kept when others are missing."""
        assert TokenUsage.from_api_req_info('{"tokensOut": 7}') == TokenUsage(tokens_out=7)

    def test_integral_floats_are_read_as_integers(self) -> None:
        """1200.0 (as JavaScript may write it) reads as 1200."""
        usage = TokenUsage.from_api_req_info('{"tokensIn": 1200.0}')
        assert usage.tokens_in == 1200
        assert type(usage.tokens_in) is int

    def test_huge_integer_counts_are_read(self) -> None:
        """An integer too large for a float is still a count (JavaScript reads it as a number)."""
        usage = TokenUsage.from_api_req_info('{"tokensIn": 1' + "0" * 400 + "}")
        assert usage.total == 10**400
        assert should_compact(usage, 200_000) is True

    @pytest.mark.parametrize(
        "text",
        ["{not json", "", '{"tokensIn": 5', "undefined"],
    )
    def test_malformed_json_raises(self, text: str) -> None:
        """Text that is not JSON raises InvalidUsageError."""
        with pytest.raises(InvalidUsageError, match="not JSON"):
            TokenUsage.from_api_req_info(text)

    @pytest.mark.parametrize("text", ["[1, 2]", "3", "null", '"tokensIn"'])
    def test_non_object_raises(self, text: str) -> None:
        """JSON that is not an object raises InvalidUsageError naming what it got."""
        with pytest.raises(InvalidUsageError, match="must be a JSON object"):
            TokenUsage.from_api_req_info(text)

    @pytest.mark.parametrize(
        "value", ['"12"', "[12]", '{"n": 1}', "true", "NaN", "Infinity", "-Infinity"]
    )
    def test_non_number_field_raises(self, value: str) -> None:
        """A count that is not a finite number raises InvalidUsageError naming the field."""
        with pytest.raises(InvalidUsageError, match="'cacheWrites' is not a number"):
            TokenUsage.from_api_req_info(f'{{"tokensIn": 1, "cacheWrites": {value}}}')

    def test_error_is_a_value_error_and_ours(self) -> None:
        """InvalidUsageError can be caught as ValueError or as WindowkeeperError."""
        with pytest.raises(ValueError, match="not JSON"):
            TokenUsage.from_api_req_info("{")
        with pytest.raises(WindowkeeperError):
            TokenUsage.from_api_req_info("{")
        assert issubclass(InvalidUsageError, ValueError)
        assert issubclass(InvalidUsageError, WindowkeeperError)
