"""What the report embeds besides the replay: prices, billed cost, clipped sizes, violations."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import ConfigurationError
from windowkeeper.tools import PriceModel, price_model, report_html
from windowkeeper.tools._replay import Ruler
from windowkeeper.tools._trace import load_trace

from ..traces import conversation, one_large_result, write_json


def embedded(html: str) -> Any:
    payload = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S)
    assert payload is not None
    return json.loads(payload.group(1).replace("<\\/", "</"))


def reported(tmp_path: Path, history: list[Any], **options: Any) -> Any:
    trace = load_trace(write_json(tmp_path / "task.json", history))
    return embedded(report_html(trace, **{"window": 64_000, **options}))


class TestPriceModel:
    """Price models by name or written out; anything else is refused with what was wrong."""

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("relative", PriceModel("relative", 1.0, 5.0, 0.1, 1.25)),
            ("claude-sonnet-4", PriceModel("claude-sonnet-4", 3.0, 15.0, 0.3, 3.75)),
            (" claude-haiku-4.5 ", PriceModel("claude-haiku-4.5", 1.0, 5.0, 0.1, 1.25)),
            ("input=2,output=8", PriceModel("custom", 2.0, 8.0, 2.0, 2.0)),
            (
                "output=15, input=3, cache-read=0.3, cache-write=3.75",
                PriceModel("custom", 3.0, 15.0, 0.3, 3.75),
            ),
            ("input=0,output=0,cache-read=0", PriceModel("custom", 0.0, 0.0, 0.0, 0.0)),
        ],
    )
    def test_read(self, text: str, expected: PriceModel) -> None:
        """A name gives its table entry; left-out cache prices are the input price."""
        assert price_model(text) == expected

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("gpt-9", r"unknown price model 'gpt-9': use one of claude-haiku-4.5, .*, relative"),
            ("input=3", r"output missing"),
            ("cache-read=1", r"input and output missing"),
            ("input=3,output=x", r"price output: 'x' is not a number"),
            ("input=-1,output=2", r"price input: '-1' is not a finite price >= 0"),
            ("input=nan,output=2", r"'nan' is not a finite price"),
            ("input=1,output=2,input=3", r"price 'input' given twice"),
            ("input=1,output=2,cached=3", r"price 'cached=3': expected one of input, output"),
            ("input=1,,output=2", r"price '': expected one of"),
        ],
    )
    def test_refused(self, text: str, message: str) -> None:
        """Each mistake is named, and the error is also a ValueError."""
        with pytest.raises(ConfigurationError, match=message) as caught:
            price_model(text)
        assert isinstance(caught.value, ValueError)

    def test_a_model_checks_its_prices(self) -> None:
        """A model built in code refuses a negative or non-numeric price too."""
        with pytest.raises(ConfigurationError, match="cache_write"):
            PriceModel("mine", 1.0, 1.0, 1.0, -1.0)
        with pytest.raises(ConfigurationError, match="output"):
            PriceModel("mine", 1.0, "2", 1.0, 1.0)  # type: ignore[arg-type]

    def test_cost_is_per_million_tokens(self) -> None:
        """A million tokens of each kind cost the four prices."""
        sonnet = price_model("claude-sonnet-4")
        assert sonnet.cost(cache_read=1_000_000, cache_write=0, output=0) == pytest.approx(0.3)
        assert sonnet.cost(cache_read=0, cache_write=2_000_000, output=1_000_000) == pytest.approx(
            22.5
        )


class TestBilledCost:
    """Each request reads its shared prefix from the cache, writes the rest, outputs the answer."""

    def test_read_written_and_output_per_request(self, tmp_path: Path) -> None:
        """The second request reads the first message's tokens; the answers are the output."""
        history = one_large_result(3_000)
        data = reported(tmp_path, history, prices=price_model("claude-sonnet-4"))
        policy = data["policies"][0]
        first, second = policy["details"]
        tokens = [r["estimated_tokens"] for r in policy["replay"]["requests"]]
        ruler = Ruler()
        assert (first["cache_read"], first["cache_write"]) == (0, tokens[0])
        assert second["cache_read"] == ruler.count(history[:1])
        assert second["cache_write"] == tokens[1] - second["cache_read"]
        assert [first["output"], second["output"]] == [
            Ruler().count([history[1]]),
            Ruler().count([history[3]]),
        ]
        expected = sum(
            3.75 * d["cache_write"] + 0.3 * d["cache_read"] + 15 * d["output"]
            for d in policy["details"]
        )
        assert policy["cost"] == pytest.approx(expected / 1e6, abs=1e-4)
        assert data["prices"]["text"] == (
            "claude-sonnet-4: per million tokens, input 3, output 15, cache read 0.3, cache write 3.75"
        )


class TestClippedBlocks:
    """A clipped block records what it kept and what it held, so the page can say what was cut."""

    def test_the_clip_knows_the_blocks_size(self, tmp_path: Path) -> None:
        """A 200,000-character result clipped on arrival: kept as sent, 200,000 in all."""
        data = reported(tmp_path, one_large_result(200_000), policies=["windowkeeper"])
        policy = data["policies"][0]
        detail = policy["details"][1]
        assert "clipped" in detail["kinds"]
        [clip] = [c for action in detail["actions"] for c in action["clips"]]
        message, block, kept, size = clip
        assert (message, block, size) == (2, 0, 200_000)
        sent = policy["variants"][detail["changed"]["2"]]["content"][0]["content"]
        assert sent.count("z") == kept < size
        assert f"[... {size - kept:,} characters cut" in sent


class TestViolations:
    """Each request sent is checked against the provider's rules; the count is per policy."""

    def test_requests_after_a_doubled_user_message_are_invalid(self, tmp_path: Path) -> None:
        """Two user messages in a row make every later request invalid, and only those."""
        history = conversation(4, chars=100)
        history.insert(5, {"role": "user", "content": [{"type": "text", "text": "Also b."}]})
        data = reported(tmp_path, history)
        policy = data["policies"][0]
        found = [
            (r["index"], d["violations"])
            for r, d in zip(policy["replay"]["requests"], policy["details"], strict=True)
        ]
        doubled = {"count": 1, "first": ["request[5]: same-role-twice: two user messages in a row"]}
        assert found == [(1, None), (3, None), (6, doubled), (8, doubled), (10, doubled)]
        assert policy["invalid_requests"] == 3

    def test_a_valid_task_has_none(self, tmp_path: Path) -> None:
        """A well-formed conversation reports no invalid request."""
        policy = reported(tmp_path, conversation(6))["policies"][0]
        assert policy["invalid_requests"] == 0
        assert all(d["violations"] is None for d in policy["details"])
