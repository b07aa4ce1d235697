"""OpenHands events: the kinds of actions and observations, and the readers of one event's parts (see
transcripts.openhands)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core._usage import TokenUsage
from ._common import array, count, loads, mapping, read_text, string

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


_STATS = ("usage_to_metrics", "service_to_metrics")  # SDK 1.x, and before 1.0


def response_usages(state: Any, where: str) -> dict[str, TokenUsage]:
    """The usage of each model response a V1 conversation's ``base_state.json`` records, by
    ``response_id`` (an ``ActionEvent``'s ``llm_response_id``); empty when it records none.

    ``stats.usage_to_metrics`` (``service_to_metrics`` before SDK 1.0) holds a metrics object per
    LLM the conversation used (the agent's, the condenser's), each with its ``token_usages``:
    ``prompt_tokens``, ``completion_tokens``, ``cache_read_tokens``, ``cache_write_tokens``. The
    prompt counts the cache reads but not the writes: in real conversations the reads and
    writes together exceed it on every request, the reads alone never do.
    """
    stats = state.get("stats") if isinstance(state, dict) else None
    if not isinstance(stats, dict):
        return {}
    found: dict[str, TokenUsage] = {}
    for key in _STATS:
        services = stats.get(key)
        if services is None:
            continue
        for service, metrics in mapping(services, f"{where}: stats.{key}").items():
            at = f"{where}: stats.{key}.{service}"
            usages = mapping(metrics, at).get("token_usages") or []
            for position, value in enumerate(array(usages, f"{at}.token_usages")):
                entry = mapping(value, f"{at}.token_usages[{position}]")
                response = entry.get("response_id")
                if not isinstance(response, str) or not response:
                    continue
                place = f"{at}.token_usages[{position}]"
                prompt = count(entry, "prompt_tokens", place)
                reads = min(count(entry, "cache_read_tokens", place), prompt)
                found[response] = TokenUsage(
                    tokens_in=prompt - reads,
                    tokens_out=count(entry, "completion_tokens", place),
                    cache_writes=count(entry, "cache_write_tokens", place),
                    cache_reads=reads,
                )
    return found


def _session_model(folder: Path) -> str | None:
    """The ``llm_model`` a V0 session folder's ``metadata.json`` names (beside ``events/``), or
    None when it names none or there is no such file."""
    file = (folder if (folder / "events").is_dir() else folder.parent) / "metadata.json"
    value = loads(read_text(file), str(file)) if file.is_file() else None
    model = value.get("llm_model") if isinstance(value, dict) else None
    return model if isinstance(model, str) and model else None
