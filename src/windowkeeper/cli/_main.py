"""The ``windowkeeper`` command: inspect, check, view and replay agent traces; run the demo.

The only module that imports click or prints. ``format_*`` functions (:mod:`._format`) are pure
and return the text; command bodies parse their options (:mod:`._options`), call the library,
render, and echo. Errors in the input are one line on stderr and exit 1 (``--debug`` shows the
traceback instead); usage errors exit 2, as click makes them.

The tools (traces, replay, previews, inspection, plots, the demo) and the storage backends are
imported by the commands that use them, and the choices of ``--format``, ``--policy`` and
``--usage`` are read from the tools' enums when first needed: building the command table, and so
``windowkeeper --help``, loads click and the cli package only.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .._errors import MalformedMessageError, TraceError
from .._version import __version__
from ._format import (
    format_actions,
    format_demo_intro,
    format_inspection,
    format_json,
    format_replay_json,
    format_replay_report,
    format_request_summary_json,
    format_request_text,
    format_unknown,
    format_violations,
    format_window,
)
from ._options import (
    _DEFAULT_POLICY,
    MAX_WINDOW,
    ProgressBar,
    _debug_option,
    _format_option,
    _LateChoice,
    _path_argument,
    _policies,
    _policy_option,
    _replay_option,
    _usage_sources,
    _window_option,
    reported,
)

if TYPE_CHECKING:
    from ..storage import SessionStore
    from ..tools._replay import Replay
    from ..tools._trace import Trace

__all__ = ["cli", "main"]

DEMO_PLOT = "windowkeeper-demo.png"


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
            what = f"the stored history ({_messages(len(trace.history))})"
        else:
            request = next_request(trace, window=window, policy=policy, replay=replay)
            violations = request.violations()
            what = f"the next request ({_messages(len(request.messages))}, {request.policy} policy)"
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
@click.option(
    "--price",
    "price",
    metavar="MODEL|PRICES",
    help="The price model of the billed cost: a name (relative, claude-sonnet-4,"
    " claude-opus-4.5, claude-haiku-4.5) or prices per million tokens written out as"
    " input=N,output=N[,cache-read=N,cache-write=N] (default: relative).",
)
@_debug_option
def report(
    *,
    path: Path,
    trace_format: str | None,
    window: int,
    policies: tuple[str, ...],
    output: Path,
    price: str | None,
    debug: bool,
) -> None:
    """Write one self-contained HTML file: a timeline of every request, each one openable."""
    from .._errors import ConfigurationError  # noqa: PLC0415 - loaded in its command
    from ..tools._prices import price_model  # noqa: PLC0415
    from ..tools._report import report as write_report  # noqa: PLC0415
    from ..tools._trace import load_trace  # noqa: PLC0415

    try:
        prices = None if price is None else price_model(price)
    except ConfigurationError as error:
        raise click.BadParameter(str(error), param_hint="'--price'") from error
    with reported(debug):
        trace = load_trace(path, trace_format)
        write_report(
            trace,
            output,
            window=window,
            policies=policies or (_DEFAULT_POLICY,),
            prices=prices,
            title=path.name,
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


def _messages(count: int) -> str:
    return "1 message" if count == 1 else f"{count} messages"
