"""The pure renderers of the ``windowkeeper`` command: each ``format_*`` returns the text.

Inspections, violations, windows, next requests, replay tables and the JSON lines; nothing here
imports the tools at run time (their types only), so the command table stays cheap to build.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..core._window import ContextWindowInfo
    from ..rules._anthropic import Violation
    from ..tools._inspection import Inspection
    from ..tools._preview import NextRequest
    from ..tools._replay import Replay

__all__: list[str] = []  # internal: the command module imports what it renders with

_TOP = 8  # names listed before "and N more"


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
    if found.compactions:
        lines.append(
            f"compactions   {found.compactions}: the agent put a summary in place of earlier"
            " turns (the messages counted are those it kept)"
        )
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
