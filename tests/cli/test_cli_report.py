"""``windowkeeper report``: one HTML file, self-contained, whose numbers are the replay's."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from windowkeeper.cli._main import cli

from ..traces import conversation, write_json


def run_report(tmp_path: Path, *policies: str) -> tuple[Path, str, Any]:
    """Report a 20-turn task with a 64k window: the source, the HTML and its embedded data."""
    source = write_json(tmp_path / "task.json", conversation(20, prompt_step=4_000))
    target = tmp_path / "out.html"
    options = [part for policy in policies for part in ("--policy", policy)]
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
