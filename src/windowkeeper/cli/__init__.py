"""The ``windowkeeper`` command (click); the only layer that prints.

Importing this package does not import click: :func:`main` checks for it first, so that the
command installed without the ``cli`` extra says how to install it instead of a traceback.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

__all__ = ["cli", "main"]

INSTALL_HINT = (
    "windowkeeper: the command needs the 'cli' extra (click). Install it with\n"
    "    pip install 'windowkeeper[cli]'\n"
    "or, from a checkout or a built wheel:\n"
    "    pip install '.[cli]'    or    pip install 'dist/windowkeeper-<version>-py3-none-any.whl[cli]'\n"
)


def main() -> None:
    """The console script: the click command, or the install line when click is missing."""
    if importlib.util.find_spec("click") is None:
        sys.stderr.write(INSTALL_HINT)
        raise SystemExit(1)
    from ._main import main as run  # noqa: PLC0415 - click is there: load the command

    run()


def __getattr__(name: str) -> Any:
    if name == "cli":
        from ._main import cli  # noqa: PLC0415 - imports click

        return cli
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
