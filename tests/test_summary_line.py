"""A clone without ../shared/corpus says so in one line of the test summary, with the count."""

from __future__ import annotations

from typing import Any

import pytest

from . import conftest


class Reporter:
    """The part of pytest's terminal reporter the hook uses: the reports so far and write_line."""

    def __init__(self, skipped: list[Any]) -> None:
        self.stats = {"skipped": skipped}
        self.lines: list[str] = []

    def write_line(self, line: str, **markup: bool) -> None:
        self.lines.append(line)


def skipped(reason: str) -> pytest.TestReport:
    return pytest.TestReport(
        "t.py::test", ("t.py", 1, "test"), {}, "skipped", ("t.py", 3, f"Skipped: {reason}"), "call"
    )


def test_corpus_skips_are_counted_in_one_line() -> None:
    """Skips for want of the corpus (the fixture's and a missing trace's) make one counted line."""
    reporter = Reporter(
        [
            skipped("needs the corpus (not present at /x/corpus/raw)"),
            skipped("trace gcp not in the corpus"),
            skipped("needs FIFOs"),
        ]
    )
    conftest.pytest_terminal_summary(reporter)  # type: ignore[arg-type]
    assert len(reporter.lines) == 1
    assert reporter.lines[0].startswith(
        "windowkeeper: 2 tests skipped for want of ../shared/corpus"
    )


def test_nothing_is_said_when_the_corpus_is_there() -> None:
    """Without a corpus skip, the summary has no such line."""
    reporter = Reporter([skipped("needs FIFOs")])
    conftest.pytest_terminal_summary(reporter)  # type: ignore[arg-type]
    assert reporter.lines == []


def test_the_fixture_skips_with_the_counted_phrase(monkeypatch: pytest.MonkeyPatch) -> None:
    """The corpus fixture's skip reason carries the phrase the summary counts."""
    monkeypatch.setattr(conftest, "CORPUS", conftest.shared_path("no-such-folder"))
    with pytest.raises(pytest.skip.Exception, match="needs the corpus"):
        conftest.corpus.__wrapped__()  # type: ignore[attr-defined]
