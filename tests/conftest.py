"""Shared fixtures: where the project's shared reference material sits, when it is present."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

_CHECKOUT = Path(__file__).resolve().parent.parent


def shared_path(*parts: str) -> Path:
    """A path under ``../shared`` (or ``$WINDOWKEEPER_SHARED``), present or not."""
    root = os.environ.get("WINDOWKEEPER_SHARED")
    base = Path(root) if root else _CHECKOUT.parent / "shared"
    return base.joinpath(*parts)


CORPUS = shared_path("corpus", "raw")


@pytest.fixture
def corpus() -> Path:
    """The real agent traces; the test is skipped when they are not beside the checkout."""
    if not CORPUS.is_dir():
        pytest.skip(f"corpus not present at {CORPUS}")
    return CORPUS
