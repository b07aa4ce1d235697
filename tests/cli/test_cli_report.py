"""``windowkeeper report``: one HTML file, self-contained, whose numbers are the replay's."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from windowkeeper.cli import cli

from ..traces import conversation, write_json


def run_report(tmp_path: Path, *policies: str, price: str | None = None) -> tuple[Path, str, Any]:
    """Report a 20-turn task with a 64k window: the source, the HTML and its embedded data."""
    source = write_json(tmp_path / "task.json", conversation(20, prompt_step=4_000))
    target = tmp_path / "out.html"
    options = [part for policy in policies for part in ("--policy", policy)]
    options += [] if price is None else ["--price", price]
    result = CliRunner().invoke(
        cli, ["report", str(source), "--window", "64000", *options, "-o", str(target)]
    )
    assert result.exit_code == 0, result.output
    assert result.output == f"wrote {target}\n"
    text = target.read_text(encoding="utf-8")
    payload = re.search(r'<script type="application/json" id="data">(.*?)</script>', text, re.S)
    assert payload is not None
    return source, text, json.loads(payload.group(1).replace("<\\/", "</"))


class TestReportCommand:
    """The command writes the report where ``-o`` says, for every policy asked."""

    def test_writes_one_self_contained_file(self, tmp_path: Path) -> None:
        """The file holds its script and data inline and loads nothing from elsewhere."""
        _, text, data = run_report(tmp_path, "cline", "windowkeeper")
        assert not re.search(r"(src|href)=\"(https?:)?//", text)
        assert [p["replay"]["policy"] for p in data["policies"]] == ["cline", "windowkeeper"]

    def test_embedded_numbers_are_replay_json(self, tmp_path: Path) -> None:
        """Each policy's embedded replay equals the line ``replay --json`` prints for it."""
        source, _, data = run_report(tmp_path)
        printed = CliRunner().invoke(cli, ["replay", str(source), "--window", "64000", "--json"])
        assert data["policies"][0]["replay"] == json.loads(printed.output.splitlines()[0])

    def test_session_actions_become_markers(self, tmp_path: Path) -> None:
        """A windowkeeper request that shrank lists its ``Prepared.actions`` and their markers."""
        _, _, data = run_report(tmp_path, "windowkeeper")
        policy = data["policies"][0]
        acted = [d for d in policy["details"] if d["actions"]]
        assert acted
        truncated = [i for i, r in enumerate(policy["replay"]["requests"]) if r["truncated"]]
        assert truncated
        assert all("truncated" in policy["details"][i]["kinds"] for i in truncated)
        assert all(a["step"] for d in acted for a in d["actions"])


class TestPriceOption:
    """``--price`` names a price model or writes one out; a bad one is a usage error."""

    def test_a_named_model(self, tmp_path: Path) -> None:
        """The named model's prices are embedded and described in the summary's line."""
        *_, data = run_report(tmp_path, price="claude-sonnet-4")
        assert data["prices"]["name"] == "claude-sonnet-4"
        assert data["prices"]["text"].startswith("claude-sonnet-4: per million tokens, input 3,")

    def test_written_out_prices(self, tmp_path: Path) -> None:
        """Prices written out are used as given; the cache prices default to the input price."""
        *_, data = run_report(tmp_path, price="input=2,output=8,cache-read=0.2")
        prices = {k: data["prices"][k] for k in ("input", "output", "cache_read", "cache_write")}
        assert prices == {"input": 2.0, "output": 8.0, "cache_read": 0.2, "cache_write": 2.0}

    def test_default_is_relative(self, tmp_path: Path) -> None:
        """Without --price the cost is in units of the input price."""
        *_, data = run_report(tmp_path)
        assert data["prices"]["name"] == "relative"

    @pytest.mark.parametrize(
        ("price", "message"),
        [
            ("gpt-9", "unknown price model 'gpt-9': use one of claude-haiku-4.5,"),
            ("input=3,output=-1", "price output: '-1' is not a finite price >= 0"),
            ("input=3", "output missing"),
        ],
    )
    def test_refused(self, tmp_path: Path, price: str, message: str) -> None:
        """A bad --price exits 2 naming the option and what is wrong, and writes nothing."""
        source = write_json(tmp_path / "task.json", conversation(3))
        target = tmp_path / "out.html"
        result = CliRunner().invoke(
            cli, ["report", str(source), "-o", str(target), "--price", price]
        )
        assert result.exit_code == 2
        assert "'--price'" in result.output
        assert message in result.output
        assert not target.exists()
