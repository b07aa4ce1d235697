"""The ``windowkeeper`` command: inspect, check, view and replay agent traces; run the demo.

The only module that imports click or prints. ``format_*`` functions are pure and return the
text; command bodies parse their options, call the library, render, and echo. Errors in the
input are one line on stderr and exit 1 (``--debug`` shows the traceback instead); usage errors
exit 2, as click makes them.

The tools (traces, replay, previews, inspection, plots, the demo) and the storage backends are
imported by the commands that use them, and the choices of ``--format``, ``--policy`` and
``--usage`` are read from the tools' enums when first needed: building the command table, and so
``windowkeeper --help``, loads click and this module only.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

import click

from .._errors import MalformedMessageError, TraceError, WindowkeeperError
from .._version import __version__

if TYPE_CHECKING:
    from ..core._window import ContextWindowInfo
    from ..rules._anthropic import Violation
    from ..storage import SessionStore
    from ..tools._inspection import Inspection
    from ..tools._preview import NextRequest
    from ..tools._replay import Replay
    from ..tools._trace import Trace

__all__ = ["cli", "main"]

DEFAULT_WINDOW = 128_000
# Far beyond any model: larger values are typing mistakes. It is the task reader's
# MAX_TOKEN_COUNT (a test says so), written out so that --help does not load the reader.
MAX_WINDOW = 10**15 - 1
DEMO_PLOT = "windowkeeper-demo.png"
_TOP = 8  # names listed before "and N more"

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


# -- formatting (pure) -----------------------------------------------------------------------


def format_count(value: float | None) -> str:
    """A token or message count with thousands separators; "-" for none."""
    if value is None:
        return "-"
    if isinstance(value, int) or value.is_integer():  # ints of any size: no float conversion
        return f"{int(value):,}"
    return f"{value:,.1f}"


def format_range(deleted_range: tuple[int, int] | None) -> str:
    """``2-39`` for a deleted range, ``none`` for None."""
    return "none" if deleted_range is None else f"{deleted_range[0]}-{deleted_range[1]}"


def _top(counts: dict[str, int], suffix: str = " ") -> str:
    items = [f"{name}{suffix}{count}" for name, count in list(counts.items())[:_TOP]]
    if len(counts) > _TOP:
        items.append(f"and {len(counts) - _TOP} more")
    return ", ".join(items)


def format_inspection(found: Inspection) -> str:
    """The text of ``windowkeeper inspect``."""
    roles = ", ".join(f"{count} {role}" for role, count in found.roles.items())
    lines = [f"{found.source} ({found.format})", *format_transcript_lines(found)]
    lines.append(f"messages      {found.messages}: {roles}")
    calls = sum(found.tool_calls.values())
    lines.append(f"tool calls    {calls}" + (f": {_top(found.tool_calls)}" if calls else ""))
    copies = sum(found.file_reads.values())
    reads = f"file reads    {copies} copies of {len(found.file_reads)} files"
    repeated = found.repeated_reads
    if repeated:
        reads += f"; read more than once: {_top(repeated, ' x')}"
    lines.append(reads)
    usage = found.usage
    requests = f"requests      {usage.requests}, "
    if usage.with_usage:
        requests += (
            f"{usage.with_usage} with recorded usage: min {format_count(usage.minimum)},"
            f" median {format_count(usage.median)}, max {format_count(usage.maximum)} tokens"
        )
    else:
        requests += "none with recorded usage"
    lines.append(requests)
    stored = f"stored        deleted range {format_range(found.deleted_range)}"
    stored += f"; {found.overwrite_entries} overwrite entries"
    if found.overwrites:
        stored += f" ({_top(found.overwrites)} updates)"
    lines.append(stored)
    lines.append(format_violation_summary(found.violations, "in the stored history"))
    if found.unknown:
        lines.append(format_unknown(found.unknown))
    if found.model:
        lines.append(f"model         {found.model}")
    return "\n".join(lines)


def format_transcript_lines(found: Inspection) -> list[str]:
    """What ``inspect`` says of the file as its agent wrote it: agent, model calls, skipped, forks.

    The numbers a user checks against the agent's own view: the responses (each one model call,
    one request), how many recorded their usage, what was skipped as unknown, the branches left
    out, and what the reader repaired.
    """
    lines = []
    if found.agent:
        lines.append(
            f"agent         {found.agent}" + (f" {found.version}" if found.version else "")
        )
    usage = found.usage.with_usage
    recorded = f"usage recorded for {usage}" if usage else "no usage recorded"
    lines.append(f"model calls   {found.model_calls} ({recorded})")
    skipped = found.skipped
    if skipped:
        lines.append(f"skipped       {len(found.unknown)} of unknown types: {_top(skipped, ' ')}")
    if found.forks:
        branches = "branch" if found.forks == 1 else "branches"
        lines.append(f"forks         {found.forks} {branches} left out (the live one is read)")
    lines.extend(f"warning       {warning}" for warning in found.warnings)
    return lines


def format_unknown(unknown: Sequence[str]) -> str:
    """``unknown  N left out of requests: where: type, ...`` (the first few named)."""
    listed = ", ".join(unknown[:_TOP]) + (
        f", and {len(unknown) - _TOP} more" if len(unknown) > _TOP else ""
    )
    return f"unknown       {len(unknown)} left out of every request: {listed}"


def format_violation_summary(violations: Sequence[Violation], where: str) -> str:
    """``violations  N <where>: rule count, ...``."""
    if not violations:
        return f"violations    none {where}"
    rules: dict[str, int] = {}
    for violation in violations:
        rules[violation.rule] = rules.get(violation.rule, 0) + 1
    listed = ", ".join(f"{rule} {count}" for rule, count in rules.items())
    return f"violations    {len(violations)} {where}: {listed}"


def format_violations(violations: Sequence[Violation]) -> str:
    """One line per violation."""
    return "\n".join(str(violation) for violation in violations)


def format_window(window: ContextWindowInfo) -> str:
    """``window 128,000 tokens, limit 98,000``."""
    return (
        f"window {format_count(window.context_window)} tokens,"
        f" limit {format_count(window.max_allowed_size)}"
    )


def format_request_header(request: NextRequest) -> str:
    """What the next request is, in two or three lines."""
    lines = [
        f"next request ({request.policy} policy, {format_window(request.window)}):"
        f" {len(request.messages)} of {request.history_length} messages,"
        f" about {format_count(request.estimated_tokens)} tokens",
    ]
    hidden = f"hidden: {format_range(request.deleted_range)}"
    if request.truncated:
        hidden += " (the range grew for this request)"
    if request.replaced_reads:
        hidden += f"; {request.replaced_reads} older file reads replaced for this request"
    lines.append(hidden)
    problem = request.window_problem()
    if problem is not None:
        lines.append(f"warning: {problem}")
    lines.append(format_actions(request))
    if request.awaiting_reply:
        lines.append(
            "the history ends with an assistant message: the request also carries the reply"
        )
    return "\n".join(lines)


def format_actions(request: NextRequest) -> str:
    """What shrank the request, one line per action with its reason and the tokens it freed."""
    explained = request.explained()
    if not explained:
        return "actions: none"
    return "\n".join(["actions:", *(f"  {item.line()}" for item in explained)])


def format_request_summary_json(request: NextRequest) -> dict[str, Any]:
    """The next request's numbers and actions, for ``--json``."""
    return {
        "policy": request.policy,
        "context_window": request.window.context_window,
        "max_allowed_size": request.window.max_allowed_size,
        "messages": len(request.messages),
        "history_length": request.history_length,
        "estimated_tokens": request.estimated_tokens,
        "over_window": request.over_window,
        "deleted_range": list(request.deleted_range) if request.deleted_range else None,
        "actions": [item.to_json() for item in request.explained()],
    }


def format_block(block: Any) -> str:
    """One content block as text."""
    if not isinstance(block, dict):
        return json.dumps(block, ensure_ascii=False)
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_use":
        arguments = json.dumps(block.get("input", {}), ensure_ascii=False)
        return f"[tool_use {block.get('name')} {block.get('id')}] {arguments}"
    if kind == "tool_result":
        inner = block.get("content", "")
        parts = [inner] if isinstance(inner, str) else [format_block(part) for part in inner]
        return "\n".join([f"[tool_result {block.get('tool_use_id')}]", *parts])
    if kind == "thinking":
        return f"[thinking]\n{block.get('thinking', '')}"
    if kind == "image":
        source = block.get("source")
        detail = source.get("media_type", "") if isinstance(source, dict) else ""
        return f"[image {detail}]".replace(" ]", "]")
    return json.dumps(block, ensure_ascii=False)


def format_request_text(request: NextRequest) -> str:
    """The next request for people: a header, then every message in full."""
    parts = [format_request_header(request)]
    if request.system is not None:
        system = request.system
        text = system if isinstance(system, str) else "\n".join(map(format_block, system))
        parts.append(f"--- system ---\n{text}")
    for position, message in enumerate(request.messages):
        content = message["content"]
        blocks = [content] if isinstance(content, str) else [format_block(b) for b in content]
        title = (
            f"--- [{position}] {message['role']} (history[{request.history_index(position)}]) ---"
        )
        parts.append("\n".join([title, *blocks]))
    return "\n\n".join(parts)


def format_json(value: Any, *, indent: int | None = 2) -> str:
    """JSON text, non-ASCII kept."""
    separators = (",", ": ") if indent is not None else (",", ":")
    return json.dumps(value, ensure_ascii=False, indent=indent, separators=separators)


_TABLE_HEAD = (
    "policy",
    "requests",
    "truncations",
    "overflows",
    "replaced reads",
    "tokens sent",
    "largest request",
)


def format_summary_table(replays: Sequence[Replay]) -> str:
    """One row per replay: requests, truncations, overflows, replaced reads, tokens, largest."""
    rows = [_TABLE_HEAD]
    for result in replays:
        summary = result.summary
        rows.append(
            (
                result.policy,
                format_count(summary.requests),
                format_count(summary.truncations),
                format_count(summary.overflows),
                format_count(summary.replaced_reads),
                format_count(summary.estimated_tokens_sent),
                format_count(result.largest_request),
            )
        )
    widths = [max(len(row[column]) for row in rows) for column in range(len(_TABLE_HEAD))]
    return "\n".join(
        "  ".join(
            cell.ljust(widths[0]) if column == 0 else cell.rjust(widths[column])
            for column, cell in enumerate(row)
        ).rstrip()
        for row in rows
    )


def format_events(replays: Sequence[Replay]) -> str:
    """Where each replay truncated and overflowed (history length at the request)."""
    width = max(len(result.policy) for result in replays)
    lines = []
    for result in replays:
        truncated = [str(r.index) for r in result.requests if r.truncated]
        overflowed = [str(r.index) for r in result.requests if r.overflow]
        line = f"  {result.policy.ljust(width)}  truncated at {', '.join(truncated) or 'none'}"
        if overflowed:
            line += f"; over the window at {', '.join(overflowed)}"
        lines.append(line)
    return "\n".join(["history length at each event:", *lines])


def format_replay_intro(name: str, trace_messages: int, replays: Sequence[Replay]) -> str:
    """The line above the table: what was replayed, with which window and usage."""
    first = replays[0]
    return (
        f"{name}: {trace_messages} messages, {first.summary.requests} requests;"
        f" {format_window(first.window)}; decisions from {first.usage.value} usage"
    )


def format_replay_report(name: str, trace_messages: int, replays: Sequence[Replay]) -> str:
    """The text of ``windowkeeper replay`` and ``windowkeeper demo``."""
    return "\n\n".join(
        [
            format_replay_intro(name, trace_messages, replays),
            format_summary_table(replays),
            format_events(replays),
        ]
    )


def format_demo_intro(history: Sequence[Any]) -> str:
    """What the demo replays, in two lines."""
    calls = sum(
        1
        for message in history
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_use"
    )
    return (
        f"windowkeeper demo: a generated coding-agent session ({calls} tool calls: files read,"
        " re-read and edited, tests run),\nreplayed request by request under the original's"
        " policy (cline) and windowkeeper's session (pre-flight checked).\n"
    )


def format_replay_json(replays: Sequence[Replay]) -> str:
    """One line of documented JSON per replay."""
    return "\n".join(format_json(result.to_json(), indent=None) for result in replays)


# -- progress --------------------------------------------------------------------------------


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


# -- commands --------------------------------------------------------------------------------


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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="windowkeeper")
def cli() -> None:
    """Keep an LLM agent's conversation inside its model's context window.

    PATH is a Cline task folder (a windowkeeper session's folder too), a JSON file of
    Anthropic- or OpenAI-shaped messages, a SWE-agent .traj file, or a transcript of Claude
    Code, Codex, Gemini CLI, OpenHands or Roo Code (--format: cline, anthropic, openai,
    swe-agent, claude-code, codex, gemini-cli, openhands, roo; detected when not given).
    """


@cli.command()
@_path_argument
@_format_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@_debug_option
def inspect(*, path: Path, trace_format: str | None, as_json: bool, debug: bool) -> None:
    """What a trace holds: messages, tool calls, file reads, recorded usage, stored context."""
    from ..tools._inspection import inspect_trace  # noqa: PLC0415 - tools load in their command
    from ..tools._trace import load_trace  # noqa: PLC0415

    with reported(debug):
        found = inspect_trace(load_trace(path, trace_format))
    click.echo(format_json(found.to_json()) if as_json else format_inspection(found))


@cli.command()
@_path_argument
@_format_option
@_window_option
@_policy_option
@click.option("--stored", is_flag=True, help="Check the history as stored, not the next request.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@_replay_option
@_debug_option
def check(
    *,
    path: Path,
    trace_format: str | None,
    window: int | None,
    policy: str,
    stored: bool,
    as_json: bool,
    replay: bool,
    debug: bool,
) -> None:
    """Check the next request against the provider's rules and the window.

    Exit 1 with one line per violation, and with the numbers when the request is larger than
    the window.
    """
    from ..rules._anthropic import validate_messages  # noqa: PLC0415 - loaded in its command
    from ..tools._inspection import unknown_blocks  # noqa: PLC0415
    from ..tools._preview import next_request  # noqa: PLC0415
    from ..tools._trace import load_trace  # noqa: PLC0415

    with reported(debug):
        trace = load_trace(path, trace_format)
        request = None
        if stored:
            violations = validate_messages(list(trace.history), "history")
            what = f"the stored history ({len(trace.history)} messages)"
        else:
            request = next_request(trace, window=window, policy=policy, replay=replay)
            violations = request.violations()
            what = f"the next request ({len(request.messages)} messages, {request.policy} policy)"
        unknown = (*trace.unknown, *unknown_blocks(trace.history))
    problem = request.window_problem() if request is not None else None
    failed = bool(violations) or problem is not None
    if as_json:
        report: dict[str, Any] = {
            "ok": not failed,
            "violations": [str(violation) for violation in violations],
            "unknown": list(unknown),
        }
        if request is not None:
            report["request"] = format_request_summary_json(request)
        click.echo(format_json(report))
        if failed:
            raise SystemExit(1)
        return
    if unknown:
        click.echo(format_unknown(unknown))
    if violations:
        click.echo(format_violations(violations))
    if problem is not None:
        click.echo(problem)
    if not failed:
        click.echo(f"ok: {what} follows the provider's rules and fits the window")
    if request is not None and request.actions:
        click.echo(format_actions(request))
    if failed:
        raise SystemExit(1)


@cli.command()
@_path_argument
@_format_option
@_window_option
@_policy_option
@click.option(
    "--as",
    "shape",
    type=click.Choice(["text", "anthropic", "openai"]),
    default="text",
    show_default=True,
    help="text for people; anthropic or openai for the JSON body of the request.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="The request's numbers and actions as one JSON object."
)
@_replay_option
@_debug_option
def view(
    *,
    path: Path,
    trace_format: str | None,
    window: int | None,
    policy: str,
    shape: str,
    as_json: bool,
    replay: bool,
    debug: bool,
) -> None:
    """Exactly what would be sent next, and why it lost what it lost.

    Exit 1 (after showing it) when the request is larger than the window.
    """
    from ..tools._preview import next_request  # noqa: PLC0415 - tools load in their command
    from ..tools._trace import load_trace  # noqa: PLC0415

    with reported(debug):
        trace = load_trace(path, trace_format)
        request = next_request(trace, window=window, policy=policy, replay=replay)
        if as_json:
            text = format_json(format_request_summary_json(request))
        elif shape == "anthropic":
            text = format_json(request.as_anthropic())
        elif shape == "openai":
            text = format_json(request.as_openai())
        else:
            text = format_request_text(request)
    click.echo(text)
    problem = request.window_problem()
    if problem is not None:
        if shape != "text" or as_json:  # the text header carries it already
            click.echo(f"warning: {problem}", err=True)
        raise SystemExit(1)


@cli.command(name="replay")
@_path_argument
@_format_option
@click.option(
    "--window",
    type=click.IntRange(min=1, max=MAX_WINDOW),
    required=True,
    help="Context window, in tokens.",
)
@click.option(
    "--policy",
    "policies",
    type=_LateChoice(_policies),
    multiple=True,
    help="Policy to replay (repeat to compare; default: cline only). cline: the original's"
    " decisions; windowkeeper: the session with its pre-flight; cline-condense: the original"
    " with auto-condense on (a summary request replaces the history when it grows too large).",
)
@click.option(
    "--usage",
    type=_LateChoice(_usage_sources),
    help="What drives decisions: the usage the trace recorded, or the estimate of what the"
    " policy sent (default: recorded when the trace recorded any).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per policy, one per line.")
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write a PNG of tokens per request.",
)
@_debug_option
def replay_command(
    *,
    path: Path,
    trace_format: str | None,
    window: int,
    policies: tuple[str, ...],
    usage: str | None,
    as_json: bool,
    plot: Path | None,
    debug: bool,
) -> None:
    """Feed the history request by request (one request before each assistant message)."""
    from ..tools._plot import check_plotting, plot_replays  # noqa: PLC0415 - in their command
    from ..tools._replay import UsageSource  # noqa: PLC0415
    from ..tools._trace import load_trace  # noqa: PLC0415

    with reported(debug):
        if plot is not None:
            check_plotting()  # before the replay, which can take a while
        trace = load_trace(path, trace_format)
        source = usage or (
            UsageSource.RECORDED if trace.has_recorded_usage else UsageSource.ESTIMATED
        )
        results = _replay_all(trace, window, policies or (_DEFAULT_POLICY,), source)
    click.echo(
        format_replay_json(results)
        if as_json
        else format_replay_report(path.name, len(trace.history), results)
    )
    if plot is not None:
        with reported(debug):
            plot_replays(results, plot, title=f"{path.name}: {format_window(results[0].window)}")
        click.echo(f"wrote {plot}", err=as_json)


def _replay_all(trace: Trace, window: int, policies: Sequence[str], source: str) -> list[Replay]:
    from ..tools._replay import request_points  # noqa: PLC0415 - tools load in their command

    total = len(request_points(trace.history)) * len(policies)
    bar = ProgressBar(total, sys.stderr)
    try:
        return _replays(trace, window, policies, source, bar)
    except MalformedMessageError as error:  # a message the session refuses (it checks more)
        raise TraceError(f"{trace.path}: {error}") from error
    finally:
        bar.close()


def _replays(
    trace: Trace, window: int, policies: Sequence[str], source: str, bar: ProgressBar
) -> list[Replay]:
    from ..tools._replay import replay  # noqa: PLC0415 - tools load in their command

    return [
        replay(
            trace.history,
            window=window,
            policy=policy,
            usage=source,
            requests=trace.requests,
            system=trace.system,
            tools=trace.tools,
            progress=bar.step,
        )
        for policy in policies
    ]


@cli.command()
@_path_argument
@_format_option
@_window_option
@click.option(
    "--policy",
    "policies",
    type=_LateChoice(_policies),
    multiple=True,
    help="Policy to show (repeat to compare; default: cline).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("report.html"),
    show_default=True,
    help="Where to write the HTML file.",
)
@_debug_option
def report(
    *,
    path: Path,
    trace_format: str | None,
    window: int,
    policies: tuple[str, ...],
    output: Path,
    debug: bool,
) -> None:
    """Write one self-contained HTML file: a timeline of every request, each one openable."""
    from ..tools._report import report as write_report  # noqa: PLC0415 - loaded in its command
    from ..tools._trace import load_trace  # noqa: PLC0415

    with reported(debug):
        trace = load_trace(path, trace_format)
        write_report(
            trace, output, window=window, policies=policies or (_DEFAULT_POLICY,), title=path.name
        )
    click.echo(f"wrote {output}")


@cli.command()
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, path_type=Path),
    default=DEMO_PLOT,
    show_default=True,
    help="Where to write the plot.",
)
@click.option("--no-plot", is_flag=True, help="Print the summary only.")
@_debug_option
def demo(*, plot: Path, no_plot: bool, debug: bool) -> None:
    """Replay the bundled demo conversation under both policies and plot it."""
    from ..tools._demo import DEMO_WINDOW, demo_conversation  # noqa: PLC0415 - tools load in
    from ..tools._plot import plot_replays  # noqa: PLC0415 - their command
    from ..tools._replay import PolicyName, UsageSource, replay  # noqa: PLC0415

    history = demo_conversation()
    with reported(debug):
        results = [
            replay(history, window=DEMO_WINDOW, policy=policy, usage=UsageSource.ESTIMATED)
            for policy in PolicyName
        ]
    click.echo(format_demo_intro(history))
    click.echo(format_replay_report("demo conversation", len(history), results))
    if not no_plot:
        with reported(debug):
            plot_replays(
                results, plot, title=f"windowkeeper demo: {format_window(results[0].window)}"
            )
        click.echo(f"\nwrote {plot}")


@cli.command()
@click.argument("destination", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--sqlite",
    "sqlite_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The SQLite database holding the task.",
)
@click.option("--postgres", "conninfo", help="The PostgreSQL database holding the task (a URL).")
@click.option("--task", "task_id", required=True, help="The task id in that database.")
@_debug_option
def export(
    *,
    destination: Path,
    sqlite_path: Path | None,
    conninfo: str | None,
    task_id: str,
    debug: bool,
) -> None:
    """Write a task kept in a database as a Cline task folder DESTINATION (new or empty).

    The folder then works like any other: Cline reads it, `windowkeeper view` shows it, and a
    ContextSession(task_dir=DESTINATION) resumes the task.
    """
    from ..storage import SQLiteStore, TaskFolderStore, copy_task  # noqa: PLC0415 - in its command

    if (sqlite_path is None) == (conninfo is None):
        raise click.UsageError("give --sqlite or --postgres")
    with reported(debug):
        source: SessionStore
        if sqlite_path is not None:
            source = SQLiteStore(sqlite_path, task_id)
        else:
            from ..storage.postgres import PostgresStore  # noqa: PLC0415 - the optional extra

            source = PostgresStore(conninfo, task_id)
        try:
            copied = copy_task(source, TaskFolderStore(destination))
        finally:
            source.close()
    click.echo(f"wrote {copied} messages of task {task_id!r} to {destination}")


def main() -> None:
    """The console script."""
    cli(prog_name="windowkeeper")


if __name__ == "__main__":  # pragma: no cover
    main()
