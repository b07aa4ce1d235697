"""The HTML report in a real headless browser: what a user sees after clicking, hovering, typing.

Chromium is driven over its DevTools protocol and Firefox over WebDriver BiDi (``_browser``, a
small client on the standard library): the mouse clicks at an element's box
(``Input.dispatchMouseEvent``), keys are real key events (``Input.dispatchKeyEvent``), and what
the page logged (``Runtime.consoleAPICalled``, ``Runtime.exceptionThrown``, ``Log.entryAdded``)
and fetched (``Network.requestWillBeSent``) is read from the protocol's events. Outside CI a
test skips when its browser is absent; with ``CI=true`` a missing Chromium or Firefox fails.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from windowkeeper.tools import price_model, report
from windowkeeper.tools._replay import replay
from windowkeeper.tools._trace import load_trace

from ..traces import conversation, one_large_result, write_json
from ._browser import CHROMIUM, FIREFOX, Chromium, ChromiumPage, Firefox, running

if not Path(CHROMIUM).exists() and os.environ.get("CI") != "true":
    pytest.skip(
        f"chromium is not installed at {CHROMIUM} (apt-get install chromium)",
        allow_module_level=True,
    )

WINDOW = 64_000


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chromium]:
    """One headless Chromium for the module (each test opens its own tab)."""
    with running(Chromium, tmp_path_factory.mktemp("chromium")) as found:
        yield found


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A 60-turn task reported under cline with Sonnet prices, and what ``replay`` says of it."""
    folder = tmp_path_factory.mktemp("report")
    source = write_json(folder / "task.json", conversation(60, chars=4_000, prompt_step=2_500))
    trace = load_trace(source)
    prices = price_model("claude-sonnet-4")
    page = report(trace, folder / "report.html", window=WINDOW, prices=prices, title="task.json")
    result = replay(trace.history, window=WINDOW, requests=trace.requests).to_json()
    truncated = [i for i, r in enumerate(result["requests"]) if r["truncated"]]
    return {"page": page, "source": source, "replay": result, "truncated": truncated}


@pytest.fixture
def tab(browser: Chromium, task: dict[str, Any]) -> ChromiumPage:
    """A new tab with the report open and drawn."""
    opened = browser.page()
    opened.open(task["page"].as_uri())
    return opened


def bar(request: int, policy: int = 0) -> str:
    return f'.bar[data-policy="{policy}"][data-request="{request}"]'


class TestTimeline:
    """The timeline as drawn: one bar per request, a marker wherever the replay truncated."""

    def test_one_bar_per_request(self, tab: ChromiumPage, task: dict[str, Any]) -> None:
        """The timeline holds one bar for each request the replay made."""
        count = tab.evaluate("document.querySelectorAll('.bar').length")
        assert count == len(task["replay"]["requests"]) > 10

    def test_a_marker_at_each_truncation(self, tab: ChromiumPage, task: dict[str, Any]) -> None:
        """Every request the replay reports as truncated, and no other, shows a 'turns hidden' marker."""
        marked = tab.evaluate(
            "[...document.querySelectorAll('.marker[data-kind=truncated]')]"
            ".filter((m) => m.getBoundingClientRect().width > 0)"
            ".map((m) => Number(m.dataset.request))"
        )
        assert task["truncated"]
        assert marked == task["truncated"]

    def test_summary_shows_the_replay_numbers_and_the_price_model(
        self, tab: ChromiumPage, task: dict[str, Any]
    ) -> None:
        """The summary row shows what ``replay --json`` prints, the price model and violations."""
        out = subprocess.run(
            [
                str(Path(sys.executable).parent / "windowkeeper"),
                "replay",
                str(task["source"]),
                "--window",
                str(WINDOW),
                "--json",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        summary = json.loads(out.splitlines()[0])["summary"]
        cells = tab.evaluate(
            "Object.fromEntries([...document.querySelectorAll('tr[data-policy=cline] td')]"
            ".map((td) => [td.dataset.col, td.innerText]))"
        )
        assert cells["requests"] == f"{summary['requests']:,}"
        assert cells["tokens sent"] == f"{summary['estimated_tokens_sent']:,}"
        assert cells["truncations"] == f"{summary['truncations']:,}"
        assert cells["replaced reads"] == f"{summary['replaced_reads']:,}"
        assert cells["violations"] == f"{summary['overflows']} over the window, 0 invalid"
        shown = tab.evaluate("document.getElementById('price-model').innerText")
        assert shown.startswith("Price model: claude-sonnet-4: per million tokens, input 3,")


class TestMouse:
    """Clicking a bar opens its request; hovering shows its numbers."""

    def test_click_shows_the_messages_and_the_hidden_range(
        self, tab: ChromiumPage, task: dict[str, Any]
    ) -> None:
        """A click on the first truncating bar lists its messages and labels the range it hid."""
        first = task["truncated"][0]
        start, end = task["replay"]["requests"][first]["deleted_range"]
        assert tab.evaluate("document.getElementById('request-title')") is None
        tab.click(bar(first) + " rect.sent")
        title = tab.evaluate("document.getElementById('request-title').innerText")
        assert title.startswith(f"Request {first + 1} of cline:")
        heads = tab.evaluate(
            "[...document.querySelectorAll('#messages .msg .head')].map((h) => h.innerText)"
        )
        assert heads[0].startswith("[0] history[0] user")
        assert heads[2].startswith(f"[2] history[{end + 1}]")
        labels = tab.evaluate(
            "[...document.querySelectorAll('.hidden-range')].map((h) => h.innerText)"
        )
        assert len(labels) == 1
        assert labels[0].startswith(f"messages {start}-{end} hidden at request {first + 1}: ")
        assert labels[0].endswith("% of the window")

    def test_hover_shows_the_numbers(self, tab: ChromiumPage, task: dict[str, Any]) -> None:
        """Moving the mouse over a bar shows a visible box with its tokens and cache numbers."""
        assert tab.evaluate("document.getElementById('tooltip').hidden") is True
        tab.hover(bar(5) + " rect.sent")
        shown = tab.evaluate(
            "(() => { const t = document.getElementById('tooltip');"
            " return [t.hidden, t.getBoundingClientRect().height > 0, t.innerText]; })()"
        )
        tokens = task["replay"]["requests"][5]["estimated_tokens"]
        assert shown[:2] == [False, True]
        assert shown[2].startswith(
            f"request 6 (history length {task['replay']['requests'][5]['index']}): {tokens:,} tokens sent"
        )
        assert "cache read " in shown[2]
        tab.hover("h1")
        assert tab.evaluate("document.getElementById('tooltip').hidden") is True


class TestKeyboard:
    """Tab reaches the timeline with a visible focus; arrows, Home and End move between requests."""

    def active(self, tab: ChromiumPage) -> list[Any]:
        return tab.evaluate(
            "(() => { const a = document.activeElement; const hit = a.querySelector && a.querySelector('rect.hit');"
            " return [a.getAttribute('data-request'), a.matches(':focus-visible'),"
            " hit ? getComputedStyle(hit).stroke : null,"
            " (document.getElementById('request-title') || {}).innerText || null]; })()"
        )

    def test_tab_focuses_the_first_request_visibly(self, tab: ChromiumPage) -> None:
        """The first Tab focuses the first request, and the focus is drawn (a black outline)."""
        tab.key("Tab")
        request, visible, stroke, _ = self.active(tab)
        assert (request, visible, stroke) == ("0", True, "rgb(0, 0, 0)")

    def test_arrows_move_between_requests_and_open_them(
        self, tab: ChromiumPage, task: dict[str, Any]
    ) -> None:
        """ArrowRight and ArrowLeft step through the requests, opening each; End and Home jump."""
        last = len(task["replay"]["requests"]) - 1
        tab.key("Tab")
        for key, expected in [
            ("ArrowRight", 1),
            ("ArrowRight", 2),
            ("ArrowLeft", 1),
            ("End", last),
            ("ArrowRight", last),
            ("Home", 0),
        ]:
            tab.key(key)
            request, visible, _, title = self.active(tab)
            assert (key, request, visible) == (key, str(expected), True)
            assert title.startswith(f"Request {expected + 1} of cline")

    def test_the_timeline_is_one_tab_stop(self, tab: ChromiumPage) -> None:
        """Tab enters the timeline at its open request and the next Tab leaves it; Shift+Tab returns."""
        tab.key("Tab")
        assert self.active(tab)[0] == "0"
        tab.key("Tab")
        assert self.active(tab)[0] is None  # not the next request: out of the timeline
        tab.key("Tab", shift=True)
        assert self.active(tab)[0] == "0"
        tab.key("ArrowRight")
        tab.key("ArrowRight")
        tab.key("Tab")
        assert self.active(tab)[0] is None
        tab.key("Tab", shift=True)
        assert self.active(tab)[0] == "2"


class TestRequestDetails:
    """What an opened request says about clipped blocks and broken rules."""

    def test_a_clipped_block_shows_what_was_cut(self, browser: Chromium, tmp_path: Path) -> None:
        """The clipped result says how many of its 200,000 characters were cut and kept."""
        source = write_json(tmp_path / "log.json", one_large_result(200_000))
        page = report(
            load_trace(source), tmp_path / "log.html", window=WINDOW, policies=["windowkeeper"]
        )
        tab = browser.page()
        tab.open(page.as_uri())
        tab.click(bar(1) + " rect.sent")
        notes = tab.evaluate(
            "[...document.querySelectorAll('#messages .clipped')].map((n) => n.innerText)"
        )
        tab.click("#messages .msg:nth-child(3) button")  # "show all": the notice is past the start
        sent = tab.evaluate("document.querySelector('#messages .msg:nth-child(3)').innerText")
        assert len(notes) == 1
        found = re.fullmatch(
            r"\u2702 clipped history\[2\] block 0: ([\d,]+) of 200,000 characters cut \(([\d,]+) kept\)",
            notes[0],
        )
        assert found is not None
        cut, kept = (int(g.replace(",", "")) for g in found.groups())
        assert cut + kept == 200_000
        assert f"[... {cut:,} characters cut by windowkeeper" in sent

    def test_violations_in_the_summary_and_the_request(
        self, browser: Chromium, tmp_path: Path
    ) -> None:
        """Requests over the window and invalid ones are counted, marked, and listed when opened."""
        history = conversation(6, chars=6_000)
        history.insert(5, {"role": "user", "content": [{"type": "text", "text": "Also b."}]})
        trace = load_trace(write_json(tmp_path / "bad.json", history))
        page = report(trace, tmp_path / "bad.html", window=8_000)
        result = replay(trace.history, window=8_000, usage="estimated").to_json()
        tab = browser.page()
        tab.open(page.as_uri())
        data = tab.evaluate(
            "JSON.parse(document.getElementById('data').textContent).policies[0].details.map((d) => d.violations !== null)"
        )
        invalid = [i for i, bad in enumerate(data) if bad]
        cell = tab.evaluate(
            "document.querySelector('tr[data-policy=cline] td[data-col=violations]').innerText"
        )
        assert result["summary"]["overflows"] == 1
        assert invalid
        assert cell == f"1 over the window, {len(invalid)} invalid"
        marked = tab.evaluate(
            "[...document.querySelectorAll('.marker[data-kind=invalid]')].map((m) => Number(m.dataset.request))"
        )
        assert marked == invalid
        tab.click(bar(invalid[0]) + " rect.sent")
        note = tab.evaluate("document.querySelector('#request .violations').innerText")
        assert note.startswith("invalid request: 1 violation of the provider's rules")
        assert "same-role-twice: two user messages in a row" in note


class TestQuiet:
    """The page logs no error and fetches nothing but itself, through every interaction."""

    def test_no_console_error_and_no_network_request(
        self, tab: ChromiumPage, task: dict[str, Any]
    ) -> None:
        """After a click, a hover, keys and 'show all', nothing was logged and only the file loaded."""
        tab.click(bar(task["truncated"][0]) + " rect.sent")
        tab.hover(bar(3) + " rect.sent")
        tab.key("Tab")
        tab.key("ArrowRight")
        tab.click("#messages button")
        tab.evaluate("0")  # one more round trip: the events of the clicks have arrived
        console = tab.mine("Runtime.consoleAPICalled")
        thrown = tab.mine("Runtime.exceptionThrown")
        logged = [
            e["entry"] for e in tab.mine("Log.entryAdded") if e["entry"]["level"] != "verbose"
        ]
        assert (console, thrown, logged) == ([], [], [])
        fetched = [e["request"]["url"] for e in tab.mine("Network.requestWillBeSent")]
        assert fetched == [task["page"].as_uri()]

    def test_a_fetch_would_be_seen(self, tab: ChromiumPage) -> None:
        """The control: a fetch the page tried would be refused by its policy, and logged."""
        tab.evaluate("fetch('http://127.0.0.1:9/x').catch(() => null); 0")
        tab.wait_for(
            lambda: bool(tab.mine("Log.entryAdded") or tab.mine("Runtime.consoleAPICalled")),
            "a log entry",
        )
        logged = [e["entry"]["text"] for e in tab.mine("Log.entryAdded")]
        assert any("Content Security Policy" in text for text in logged), logged


def test_a_7000_message_task_renders_fast_and_stays_small(
    browser: Chromium, tmp_path: Path
) -> None:
    """A 7,002-message task: the file is under 20 MB, it draws in under 5 s, and a click opens a request."""
    source = write_json(tmp_path / "big.json", conversation(3_500, prompt_step=300))
    page = report(load_trace(source), tmp_path / "big.html", window=128_000)
    assert page.stat().st_size < 20_000_000
    tab = browser.page()
    tab.open(page.as_uri())
    assert int(tab.evaluate("document.body.dataset.renderMs")) < 5_000
    assert tab.evaluate("document.querySelectorAll('.bar').length") == 3_501  # + the answer
    tab.click(bar(3_000) + " rect.sent")
    assert tab.evaluate("document.getElementById('request-title').innerText").startswith(
        "Request 3001 of cline"
    )


@pytest.mark.skipif(
    not Path(FIREFOX).exists() and os.environ.get("CI") != "true",
    reason=f"firefox is not installed at {FIREFOX} (apt-get install firefox-esr)",
)
def test_firefox_draws_the_timeline_and_opens_a_click(task: dict[str, Any], tmp_path: Path) -> None:
    """Headless Firefox (WebDriver BiDi): one bar per request, a click opens one, an arrow moves on.

    Nothing is logged as an error or a warning, and nothing but the file itself is fetched.
    """
    with running(Firefox, tmp_path / "firefox") as firefox:
        firefox.open(task["page"].as_uri())
        assert firefox.evaluate("document.querySelectorAll('.bar').length") == len(
            task["replay"]["requests"]
        )
        first = task["truncated"][0]
        firefox.click(bar(first) + " rect.sent")
        title = firefox.evaluate("document.getElementById('request-title').innerText")
        assert title.startswith(f"Request {first + 1} of cline:")
        labels = firefox.evaluate(
            "[...document.querySelectorAll('.hidden-range')].map((h) => h.innerText)"
        )
        assert len(labels) == 1
        firefox.key("ArrowRight")
        title = firefox.evaluate("document.getElementById('request-title').innerText")
        assert title.startswith(f"Request {first + 2} of cline:")
        assert firefox.evaluate("document.activeElement.dataset.request") == str(first + 1)
        logged = [e["params"] for e in firefox.events if e["method"] == "log.entryAdded"]
        fetched = [
            e["params"]["request"]["url"]
            for e in firefox.events
            if e["method"] == "network.beforeRequestSent"
            and not e["params"]["request"]["url"].startswith("data:")  # its own built-in font
        ]
        assert [e for e in logged if e["level"] in ("error", "warn")] == []
        assert set(fetched) <= {task["page"].as_uri()}
