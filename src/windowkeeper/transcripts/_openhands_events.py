"""OpenHands events: the kinds of actions and observations, and the readers of one event's parts (see
transcripts.openhands)."""

from __future__ import annotations

from typing import Any

from ..core._usage import TokenUsage
from ._common import array, count, mapping, string

__all__: list[str] = []  # its names are transcripts.openhands's own


_TOOL_ACTIONS = frozenset(
    {
        "run",
        "run_ipython",
        "read",
        "write",
        "edit",
        "browse",
        "browse_interactive",
        "call_tool_mcp",
        "think",
        "delegate",
        "task_tracking",
    }
)


_SILENT_ACTIONS = frozenset(
    {
        "change_agent_state",
        "recall",
        "null",
        "reject",
        "pause",
        "resume",
        "stop",
        "condensation_request",
        "push",
        "send_pr",
        "start",
    }
)


_TEXT_OBSERVATIONS = frozenset(
    {
        "run",
        "run_ipython",
        "read",
        "write",
        "edit",
        "browse",
        "mcp",
        "think",
        "delegate",
        "error",
        "user_rejected",
        "condense",
        "download",
        "task_tracking",
        "success",
        "chat",
        "message",
    }
)


_SILENT_OBSERVATIONS = frozenset({"agent_state_changed", "null", "recall"})


_BOOKKEEPING = frozenset(
    {
        "thought",
        "is_input",
        "blocking",
        "is_static",
        "cwd",
        "hidden",
        "confirmation_state",
        "impl_source",
        "security_risk",
    }
)
"""Action arguments OpenHands adds to a call (not the model's): left out of a rebuilt tool_use."""


_ERROR_NOTE = "\n[Error occurred in processing last action]"


_REJECT_NOTE = "\n[Last action has been rejected by the user]"


def _command_output(content: str, extras: Any, where: str) -> str:
    """A command's output as OpenHands shows it to the model (``to_agent_observation``)."""
    found = extras.get("metadata") if isinstance(extras, dict) else None
    if not isinstance(found, dict):
        return content
    metadata: dict[str, Any] = found
    at = f"{where}.metadata"
    prefix = string(metadata.get("prefix") or "", f"{at}.prefix")
    suffix = string(metadata.get("suffix") or "", f"{at}.suffix")
    text = f"{prefix}{content}{suffix}"
    working_dir = metadata.get("working_dir")
    if working_dir:
        text += f"\n[Current working directory: {working_dir}]"
    interpreter = metadata.get("py_interpreter_path")
    if interpreter:
        text += f"\n[Python interpreter: {interpreter}]"
    exit_code = metadata.get("exit_code", -1)
    if exit_code != -1 and exit_code is not None:
        text += f"\n[Command finished with exit code {exit_code}]"
    return text


def _latest_response(event: dict[str, Any]) -> str | None:
    """The response id of the model call that produced an event: its latest token usage's."""
    metrics = event.get("llm_metrics")
    usages = metrics.get("token_usages") if isinstance(metrics, dict) else None
    if isinstance(usages, list) and usages and isinstance(usages[-1], dict):
        response_id = usages[-1].get("response_id")
        return response_id if isinstance(response_id, str) else None
    return None


def _view(events: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """The events OpenHands sends after its condensations (``View.from_events``)."""
    forgotten: set[Any] = set()
    summary: tuple[str, Any, Any] | None = None
    for where, event in events:
        if event.get("action") != "condensation":
            continue
        args = mapping(event.get("args", {}), f"{where}.args")
        ids = args.get("forgotten_event_ids")
        if ids is not None:
            forgotten.update(array(ids, f"{where}.args.forgotten_event_ids"))
        else:
            start, end = args.get("forgotten_events_start_id"), args.get("forgotten_events_end_id")
            if isinstance(start, int) and isinstance(end, int):
                forgotten.update(range(start, end + 1))
        if args.get("summary") is not None:
            summary = (where, args["summary"], args.get("summary_offset"))
    kept = [(where, event) for where, event in events if event.get("id") not in forgotten]
    if summary is not None:
        where, text, offset = summary
        inserted = (where, {"observation": "condense", "source": "agent", "content": text})
        if isinstance(offset, int) and not isinstance(offset, bool):
            kept.insert(offset, inserted)
        else:
            kept.append(inserted)
    return kept


def _token_usage(usage: dict[str, Any], where: str, reads: str, writes: str) -> TokenUsage:
    prompt = count(usage, "prompt_tokens", where)
    cache_reads = count(usage, reads, where)
    cache_writes = count(usage, writes, where)
    return TokenUsage(
        tokens_in=max(prompt - cache_reads - cache_writes, 0),
        tokens_out=count(usage, "completion_tokens", where),
        cache_writes=cache_writes,
        cache_reads=cache_reads,
    )


def _response_usage(usage: dict[str, Any], where: str) -> TokenUsage:
    details = usage.get("prompt_tokens_details")
    cached = (
        count(details, "cached_tokens", f"{where}.prompt_tokens_details")
        if isinstance(details, dict)
        else 0
    )
    flat = {**usage, "cache_read_tokens": cached or usage.get("cache_read_input_tokens")}
    return _token_usage(flat, where, "cache_read_tokens", "cache_creation_input_tokens")
