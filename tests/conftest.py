"""Shared fixtures: where the project's shared reference material sits, when it is present."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

_CHECKOUT = Path(__file__).resolve().parent.parent

# Property tests run on shared 2-core machines: no per-example deadline, no "generation is slow"
# health check (a busy machine trips it), and in CI a fixed seed so a run is reproducible.
# Two depths: "windowkeeper", the default of `make test` and CI, and "deep" (HYPOTHESIS_PROFILE=deep,
# `make test-deep`, nightly), where the law suites and the state machines run at full depth.
PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or "windowkeeper"
_COMMON = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow],
    "derandomize": os.environ.get("CI") == "true",
}
settings.register_profile("windowkeeper", max_examples=60, **_COMMON)
settings.register_profile("deep", max_examples=1_000, **_COMMON)
settings.load_profile(PROFILE)


def examples(default: int, deep: int) -> int:
    """An explicit example count (or step count) for the profile in use: ``deep`` when nightly."""
    return deep if PROFILE == "deep" else default


def shared_path(*parts: str) -> Path:
    """A path under ``../shared`` (or ``$WINDOWKEEPER_SHARED``), present or not."""
    root = os.environ.get("WINDOWKEEPER_SHARED")
    base = Path(root) if root else _CHECKOUT.parent / "shared"
    return base.joinpath(*parts)


pytest_plugins = ["tests.doubles", "tests.postgres"]

CORPUS = shared_path("corpus", "raw")


# Every skip for want of the third-party corpus says "the corpus" (the fixture below, and the tests
# that need one trace of it): the summary counts them by that phrase.
_CORPUS_PHRASE = "the corpus"


@pytest.fixture
def corpus() -> Path:
    """The real agent traces; the test is skipped when they are not beside the checkout."""
    if not CORPUS.is_dir():
        pytest.skip(f"needs {_CORPUS_PHRASE} (not present at {CORPUS})")
    return CORPUS


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    return longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say in one line how many tests did not run because the corpus is not beside the checkout."""
    skipped = terminalreporter.stats.get("skipped", [])
    missing = sum(_CORPUS_PHRASE in _skip_reason(report) for report in skipped)
    if missing:
        terminalreporter.write_line(
            f"windowkeeper: {missing} tests skipped for want of ../shared/corpus"
            f" (the third-party agent traces; looked in {CORPUS})",
            yellow=True,
        )
