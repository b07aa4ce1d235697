"""SWE-agent trajectories (``.traj`` files): the conversation the agent had, in Anthropic shape.

A ``.traj`` file is one JSON object: ``history`` (every message of the run, in order),
``trajectory`` (one entry per step: thought, action, observation, ...) and ``info``, whose
``model_stats`` holds totals for the whole run. Both formats SWE-agent has written are read:

- function calling (SWE-agent 1.x): assistant items carry OpenAI ``tool_calls``; each
  observation is a ``tool`` item naming its call in ``tool_call_ids`` (SWE-agent allows one
  call per step and sends the first id as ``tool_call_id``);
- thought/action (SWE-agent 0.x): user and assistant text only; a demonstration is a user item
  marked ``is_demo`` before the task, so the task is a second user message in a row, which
  :func:`~windowkeeper.validate_messages` reports as such.

The OpenAI messages are built from ``history`` as SWE-agent's ``history_to_messages`` sends them:
``role``, ``content``, ``tool_calls``, ``tool_call_id``, and ``thinking_blocks`` and
``cache_control`` when present. Its bookkeeping keys (``agent``, ``message_type``, ``thought``,
``action``, ``is_demo``, ...) are left out. Every item is kept, demonstrations included, so
``history[i]`` and ``openai_messages[i]`` are the same message, and errors name ``history[i]``.

Usage: SWE-agent records no per-request token usage, only the run's totals
(``info.model_stats``: tokens sent and received over all requests, API calls, cost), returned
as :class:`ModelStats`. Totals are not the size of any one request, so they are not a
:class:`~windowkeeper.TokenUsage`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import MalformedMessageError, TaskFolderError
from ..core._messages import JSONValue, Message
from ..formats.openai import AnthropicConversation, to_anthropic

__all__ = [
    "ModelStats",
    "SweAgentTrajectory",
    "parse_swe_agent_trajectory",
    "read_swe_agent_trajectory",
]

_SENT_KEYS = ("thinking_blocks", "cache_control")


@dataclass(frozen=True, slots=True)
class ModelStats:
    """The totals SWE-agent records for a run (``info.model_stats``); missing fields count 0."""

    tokens_sent: int
    tokens_received: int
    api_calls: int
    instance_cost: float
    total_cost: float | None


@dataclass(frozen=True, slots=True)
class SweAgentTrajectory(AnthropicConversation):
    """A trajectory's conversation: Anthropic ``system`` and ``messages``, the OpenAI messages
    they were converted from, and the run's totals (None when the file records none)."""

    openai_messages: list[Message]
    model_stats: ModelStats | None


def read_swe_agent_trajectory(path: str | os.PathLike[str]) -> SweAgentTrajectory:
    """Read a ``.traj`` file.

    Raises :class:`~windowkeeper.TaskFolderError` naming the file when it is not a JSON object
    with a ``history`` list, and :class:`~windowkeeper.MalformedMessageError` naming
    ``history[i]`` for a message outside the supported subset.
    """
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise TaskFolderError(f"{file}: cannot read the trajectory: {error}") from error
    try:
        return parse_swe_agent_trajectory(data)
    except TaskFolderError as error:
        raise TaskFolderError(f"{file}: {error}") from error


def parse_swe_agent_trajectory(data: JSONValue) -> SweAgentTrajectory:
    """The conversation and totals of a trajectory already loaded from JSON; ``data`` is not modified."""
    if not isinstance(data, Mapping):
        raise TaskFolderError(f"expected a JSON object, got {type(data).__name__}")
    history = data.get("history")
    if not isinstance(history, list):
        raise TaskFolderError(f"history: expected a list of messages, got {type(history).__name__}")
    openai_messages = [
        _openai_message(item, f"history[{index}]") for index, item in enumerate(history)
    ]
    conversation = to_anthropic(openai_messages, name="history")
    return SweAgentTrajectory(
        system=conversation.system,
        messages=conversation.messages,
        openai_messages=openai_messages,
        model_stats=_model_stats(data.get("info")),
    )


def _openai_message(item: Any, path: str) -> Message:
    if not isinstance(item, dict):
        raise MalformedMessageError(path, f"expected a message dict, got {type(item).__name__}")
    role = item.get("role")
    message: Message = {"role": role, "content": item.get("content")}
    if role == "tool":
        ids = item.get("tool_call_ids")
        if "tool_call_id" in item:
            message["tool_call_id"] = item["tool_call_id"]
        elif isinstance(ids, list) and ids:
            message["tool_call_id"] = ids[0]
        else:
            raise MalformedMessageError(
                f"{path}.tool_call_ids", "a tool observation names no tool call"
            )
    elif item.get("tool_calls") is not None:
        message["tool_calls"] = item["tool_calls"]
        if item.get("thinking_blocks"):
            message["thinking_blocks"] = item["thinking_blocks"]
    if "cache_control" in item:
        message["cache_control"] = item["cache_control"]
    return message


def _model_stats(info: Any) -> ModelStats | None:
    stats = info.get("model_stats") if isinstance(info, Mapping) else None
    if stats is None:
        return None
    if not isinstance(stats, Mapping):
        raise TaskFolderError(f"info.model_stats: expected an object, got {type(stats).__name__}")
    total_cost = stats.get("total_cost")
    return ModelStats(
        tokens_sent=int(_number(stats, "tokens_sent", integer=True)),
        tokens_received=int(_number(stats, "tokens_received", integer=True)),
        api_calls=int(_number(stats, "api_calls", integer=True)),
        instance_cost=float(_number(stats, "instance_cost")),
        total_cost=None if total_cost is None else float(_number(stats, "total_cost")),
    )


def _number(stats: Mapping[str, Any], key: str, *, integer: bool = False) -> int | float:
    value = stats.get(key)
    if value is None:
        return 0
    number = isinstance(value, int) if integer else isinstance(value, int | float)
    if isinstance(value, bool) or not number or value < 0:
        kind = "a non-negative integer" if integer else "a non-negative number"
        raise TaskFolderError(f"info.model_stats.{key}: expected {kind}, got {value!r}")
    return value  # type: ignore[no-any-return]
