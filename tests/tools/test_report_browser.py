"""The HTML report opened in a real headless Chromium: what a user sees, checked from the DOM.

Chromium runs the page from a file:// URL with ``--dump-dom`` after a script that clicks the
first truncating request, so the DOM printed is the page after a click. Console messages go to
Chromium's log (``--enable-logging=stderr``): none may be an error, and the page's
Content-Security-Policy forbids every fetch, so a network request would show there as a
violation. Outside CI the tests skip when Chromium is absent; with ``CI=true`` they fail.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from windowkeeper.tools import report
from windowkeeper.tools._replay import replay
from windowkeeper.tools._trace import load_trace

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
HAVE = Path(CHROMIUM).exists()
if not HAVE and os.environ.get("CI") != "true":
    pytest.skip("chromium is not installed (apt-get install chromium)", allow_module_level=True)

WINDOW = 64_000


def dump_dom(page: Path, fragment: str, tmp_path: Path) -> tuple[str, str]:
    """The DOM Chromium shows for ``page#fragment`` after its script ran, and Chromium's log."""
    done = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
            "--dump-dom",
            f"{page.as_uri()}#{fragment}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout, done.stderr


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A 60-turn task reported under cline, opened at its first truncating request."""
    from ..traces import conversation, write_json

    folder = tmp_path_factory.mktemp("report")
    source = write_json(folder / "task.json", conversation(60, chars=4_000, prompt_step=2_500))
    trace = load_trace(source)
    page = report(trace, folder / "report.html", window=WINDOW, title="task.json")
    result = replay(trace.history, window=WINDOW, requests=trace.requests).to_json()
    first = next(i for i, r in enumerate(result["requests"]) if r["truncated"])
    dom, log = dump_dom(page, f"request=0-{first}", folder)
    return {"dom": dom, "log": log, "replay": result, "first": first, "page": page}


class TestReportInChromium:
    """What a reader of the report sees in a real browser."""

    def test_one_bar_per_request(self, rendered: dict[str, object]) -> None:
        """The timeline holds one focusable bar for each request the replay made."""
        replayed = rendered["replay"]
        assert isinstance(replayed, dict)
        bars = re.findall(r'<g class="bar[^"]*" tabindex="0"', str(rendered["dom"]))
        assert len(bars) == len(replayed["requests"]) > 10

    def test_a_marker_at_each_truncation(self, rendered: dict[str, object]) -> None:
        """Every request the replay reports as truncated carries a 'turns hidden' marker."""
        replayed = rendered["replay"]
        assert isinstance(replayed, dict)
        truncated = [i for i, r in enumerate(replayed["requests"]) if r["truncated"]]
        marked = [
            int(i)
            for i in re.findall(r'data-kind="truncated" data-request="(\d+)"', str(rendered["dom"]))
        ]
        assert truncated
        assert marked == truncated

    def test_opened_request_shows_messages_and_the_hidden_range(
        self, rendered: dict[str, object]
    ) -> None:
        """The opened request lists its messages and labels the range it hid, with the reason."""
        dom = str(rendered["dom"])
        replayed = rendered["replay"]
        assert isinstance(replayed, dict)
        first = rendered["first"]
        assert isinstance(first, int)
        start, end = replayed["requests"][first]["deleted_range"]
        assert f"Request {first + 1} of cline" in dom
        assert "history[0]" in dom
        assert f"history[{end + 1}]" in dom
        label = re.search(rf"messages {start}-{end} hidden at request {first + 1}: ([^<]+)<", dom)
        assert label is not None
        assert "% of the window" in label.group(1)

    def test_no_console_error_and_no_network(self, rendered: dict[str, object]) -> None:
        """The page logs no error and makes no request (its CSP would report one)."""
        log = str(rendered["log"])
        console = [line for line in log.splitlines() if "CONSOLE" in line]
        assert not [line for line in console if "error" in line.lower()], console
        assert "Content Security Policy" not in log
        assert 'data-ready="true"' in str(rendered["dom"])

    def test_numbers_are_the_replay_json(self, rendered: dict[str, object], tmp_path: Path) -> None:
        """The summary row shows exactly what ``windowkeeper replay --json`` prints."""
        page = rendered["page"]
        assert isinstance(page, Path)
        out = subprocess.run(
            [
                str(Path(sys.executable).parent / "windowkeeper"),
                "replay",
                str(page.parent / "task.json"),
                "--window",
                str(WINDOW),
                "--json",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        summary = json.loads(out.splitlines()[0])["summary"]
        dom = str(rendered["dom"])
        row = re.search(r'<tr data-policy="cline">(.*?)</tr>', dom)
        assert row is not None
        cells = dict(re.findall(r'data-col="([^"]+)">([^<]*)<', row.group(1)))
        assert cells["requests"] == f"{summary['requests']:,}"
        assert cells["tokens sent"] == f"{summary['estimated_tokens_sent']:,}"
        assert cells["truncations"] == f"{summary['truncations']:,}"
        assert cells["replaced reads"] == f"{summary['replaced_reads']:,}"


def test_a_7000_message_task_renders_fast_and_stays_small(tmp_path: Path) -> None:
    """A 7,002-message task: the file is under 20 MB and its script renders in under 5 s."""
    from ..traces import conversation, write_json

    source = write_json(tmp_path / "big.json", conversation(3_500, prompt_step=300))
    page = report(load_trace(source), tmp_path / "big.html", window=128_000)
    assert page.stat().st_size < 20_000_000
    dom, _ = dump_dom(page, "request=0-3000", tmp_path)
    rendered = re.search(r'data-render-ms="(\d+)"', dom)
    assert rendered is not None
    assert int(rendered.group(1)) < 5_000
    assert len(re.findall(r"<g class=\"bar[^\"]*\" tabindex=\"0\"", dom)) == 3_501  # + the answer
