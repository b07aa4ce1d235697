"""``python -m windowkeeper``: the ``windowkeeper`` command."""

from __future__ import annotations

from .cli._main import main

main()
