"""The ``windowkeeper`` command (click); the only layer that prints."""

from __future__ import annotations

from ._main import cli, main

__all__ = ["cli", "main"]
