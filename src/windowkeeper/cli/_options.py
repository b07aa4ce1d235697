"""What the ``windowkeeper`` commands share: their options, the input error, the progress bar.

The choices of ``--format``, ``--policy`` and ``--usage`` are read from the tools' enums when
first needed (:class:`_LateChoice`), so building the command table loads no tool.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, TypeVar

import click

from .._errors import WindowkeeperError

__all__: list[str] = []  # internal: the command module imports what it uses

DEFAULT_WINDOW = 128_000
# Far beyond any model: larger values are typing mistakes. It is the task reader's
# MAX_TOKEN_COUNT (a test says so), written out so that --help does not load the reader.
MAX_WINDOW = 10**15 - 1

F = TypeVar("F", bound=Callable[..., Any])


class InputError(click.ClickException):
    """The input cannot be used: one line on stderr, exit status 1."""

    exit_code = 1


@contextmanager
def reported(debug: bool) -> Iterator[None]:
    """Turn windowkeeper's errors (and I/O errors) into one-line :class:`InputError`s."""
    try:
        yield
    except (WindowkeeperError, OSError) as error:
        if debug:
            raise
        raise InputError(" ".join(str(error).split())) from error


# -- progress ------------------------------------------------------------------------------


class ProgressBar:
    """A progress bar on a terminal stream, shown only once the work has taken over ``delay`` s.

    Nothing is written when ``stream`` is not a terminal.
    """

    def __init__(
        self,
        total: int,
        stream: IO[str],
        *,
        delay: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        width: int = 30,
    ) -> None:
        self.total = max(total, 1)
        self.stream = stream
        self.enabled = stream.isatty()
        self.delay = delay
        self.clock = clock
        self.width = width
        self.started = clock()
        self.done = 0
        self.drawn = ""

    def step(self, _done: int = 0, _total: int = 0) -> None:
        """One more request done (the signature of a replay's progress callback)."""
        self.done += 1
        if not self.enabled or self.clock() - self.started < self.delay:
            return
        filled = self.width * self.done // self.total
        bar = f"\r[{'#' * filled}{'.' * (self.width - filled)}] {self.done}/{self.total} requests"
        if bar != self.drawn:
            self.stream.write(bar)
            self.stream.flush()
            self.drawn = bar

    def close(self) -> None:
        """Erase the bar, if it was drawn."""
        if self.drawn:
            self.stream.write("\r" + " " * (len(self.drawn) - 1) + "\r")
            self.stream.flush()
            self.drawn = ""


# -- options -------------------------------------------------------------------------------


class _LateChoice(click.Choice[str]):
    """A :class:`click.Choice` whose values ``load()`` gives when they are first needed.

    Parsing the option or showing the command's own help reads them; building the command table
    does not, so the module ``load`` imports stays unloaded for ``windowkeeper --help``.
    """

    def __init__(self, load: Callable[[], Iterable[str]]) -> None:
        self._load = load
        self._values: tuple[str, ...] = ()
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        """The values, loaded on first use."""
        if not self._values:
            self._values = tuple(self._load())
        return self._values

    @choices.setter
    def choices(self, values: Iterable[str]) -> None:
        # click.Choice.__init__ sets the (empty) choices: only a non-empty value replaces load().
        self._values = tuple(values)


def _trace_formats() -> list[str]:
    from ..tools._trace import TraceFormat  # noqa: PLC0415 - a tool: loaded when first used

    return [kind.value for kind in TraceFormat]


def _policies() -> list[str]:
    from ..tools._replay import PolicyName  # noqa: PLC0415 - a tool: loaded when first used

    return [name.value for name in PolicyName]


def _usage_sources() -> list[str]:
    from ..tools._replay import UsageSource  # noqa: PLC0415 - a tool: loaded when first used

    return [source.value for source in UsageSource]


_DEFAULT_POLICY = "cline"  # PolicyName.CLINE, the original's decisions


def _path_argument(function: F) -> F:
    return click.argument("path", type=click.Path(exists=True, path_type=Path), metavar="PATH")(
        function
    )


def _format_option(function: F) -> F:
    return click.option(
        "--format",
        "trace_format",
        type=_LateChoice(_trace_formats),
        help="What PATH holds (default: detected).",
    )(function)


def _replay_option(function: F) -> F:
    """``--replay``: replay every request of the trace first (slower: one per model call)."""
    return click.option(
        "--replay",
        is_flag=True,
        help="Replay every request of the trace before the next one (default: start at its last).",
    )(function)


def _debug_option(function: F) -> F:
    return click.option("--debug", is_flag=True, help="Show a traceback on errors.")(function)


def _window_option(function: F) -> F:
    return click.option(
        "--window",
        type=click.IntRange(min=1, max=MAX_WINDOW),
        default=None,
        help="The model's context window, in tokens (default: the window a windowkeeper"
        f" session stored in the folder, else {DEFAULT_WINDOW:,}).",
    )(function)


def _policy_option(function: F) -> F:
    return click.option(
        "--policy",
        type=_LateChoice(_policies),
        default=_DEFAULT_POLICY,
        show_default=True,
        help="cline: the original's decisions; windowkeeper: the session with its pre-flight;"
        " cline-condense: the original with auto-condense (a summary replaces the history).",
    )(function)
