"""Agent traces from disk: a Cline task folder or a file of messages, in windowkeeper's shape.

:func:`load_trace` reads any input the command-line tool accepts and gives a :class:`Trace`: the
full history as Anthropic-shaped messages, the requests the trace recorded (with the usage the
provider reported for each), and what Cline stored about the context (the deleted range and the
overwrite store) when the input is a task folder. Accepted inputs, told apart by
:func:`detect_format` unless a format is given:

- ``cline``: a Cline task folder (or a file inside it); see :mod:`windowkeeper.cline._task`;
- ``anthropic``: a JSON file holding a list of Anthropic-shaped messages, or an object with a
  ``messages`` list (and an optional ``system``); assistant messages' ``metrics.tokens``, as Cline
  stores them, give recorded usage;
- ``openai``: the same with OpenAI Chat Completions messages (converted by
  :mod:`windowkeeper.formats.openai`);
- ``swe-agent``: a SWE-agent ``.traj`` file (converted by :mod:`windowkeeper.transcripts.swe_agent`);
- ``claude-code``, ``codex``, ``gemini-cli``, ``openhands``, ``roo``: the transcripts those
  agents write (read by :mod:`windowkeeper.transcripts._detect`, which tells them apart by
  content), with the system prompt, tool definitions, model and per-request usage they record.
  What a reader does not know is left out of the messages and listed in :attr:`Trace.unknown`.

A Cline task folder where a :class:`~windowkeeper.ContextSession` keeps its state (its journal)
is marked (:attr:`Trace.session_folder`): the next request shown for it is the session's own.

Nothing here writes. An input that cannot be used raises :class:`TraceError` (or the
:class:`~windowkeeper.TaskFolderError` / :class:`~windowkeeper.MalformedMessageError` of the
part that rejected it), naming the file and, where it can, the JSON path. Refused, besides what
is not JSON or not of a known shape: a path that is neither a regular file nor a folder (a FIFO
is refused before anything opens it), JSON nested too deeply to walk (a message nesting more than
:data:`~windowkeeper.cline._task.MAX_JSON_DEPTH` arrays and objects), tool ids, names and texts that are
not strings, counts beyond what Cline can write, and a system prompt that is not a string or a
list of text blocks; so a loaded trace never fails later for its shape.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from .._errors import MalformedMessageError, TaskFolderError, TraceError
from ..cline._forks import condensed_notes
from ..cline._task import (
    API_HISTORY_FILE,
    ApiRequest,
    ClineTask,
    check_block_fields,
    check_depth,
    load_task,
    special_file_kind,
)
from ..core._messages import Message, check_history
from ..core._overwrites import OverwriteStore
from ..core._truncation import DeletedRange
from ..formats.openai import to_anthropic
from ..storage._folder import JOURNAL_FILE, LEGACY_STATE_FILE
from ..transcripts._detect import detect_transcript, read_transcript
from ..transcripts.openhands_v1 import is_openhands_folder
from ..transcripts.swe_agent import parse_swe_agent_trajectory

__all__ = ["Trace", "TraceError", "TraceFormat", "detect_format", "load_trace"]

_ANTHROPIC_ROLES = frozenset({"user", "assistant"})
_OPENAI_ONLY_ROLES = frozenset({"system", "developer", "tool", "function"})
_OPENAI_ONLY_PARTS = frozenset({"image_url", "input_audio", "refusal", "file"})
_ANTHROPIC_ONLY_BLOCKS = frozenset(
    {"tool_use", "tool_result", "image", "thinking", "redacted_thinking", "document"}
)


class TraceFormat(StrEnum):
    """The kinds of input :func:`load_trace` reads."""

    CLINE = "cline"
    ANTHROPIC = "anthropic"
    OPENAI = "openai"
    SWE_AGENT = "swe-agent"
    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
    GEMINI_CLI = "gemini-cli"
    OPENHANDS = "openhands"
    ROO = "roo"


_TRANSCRIPTS = frozenset(
    {
        TraceFormat.CLAUDE_CODE,
        TraceFormat.CODEX,
        TraceFormat.GEMINI_CLI,
        TraceFormat.OPENHANDS,
        TraceFormat.ROO,
    }
)


@dataclass(frozen=True, slots=True)
class Trace:
    """A conversation as loaded from disk, in the Anthropic shape windowkeeper works on.

    ``requests`` are the model requests the trace recorded, in order (empty when it recorded
    none); ``deleted_range`` and ``store`` are what Cline saved for the task (None elsewhere).
    ``system`` is the system prompt when the input carries one (a string or a list of text
    blocks), ``tools`` the tool definitions sent with every request when it carries them (no
    format read here does yet); replays count both in every request.
    """

    path: Path
    format: TraceFormat
    history: tuple[Message, ...]
    requests: tuple[ApiRequest, ...] = ()
    deleted_range: DeletedRange | None = None
    store: OverwriteStore | None = None
    system: Any = None
    tools: tuple[dict[str, Any], ...] | None = None
    model: str | None = None
    unknown: tuple[str, ...] = ()
    """What the reader met and left out of the messages, each ``where: type`` (never forwarded)."""
    session_folder: Path | None = None
    """The task folder, when a ContextSession stored its state there (its next request is the
    session's own)."""
    version: str | None = None
    """The agent's version, when the transcript records it."""
    forks: int = 0
    """Branches of the transcript the reader left out (a file whose chain forks)."""
    warnings: tuple[str, ...] = ()
    """What the reader repaired or dropped (e.g. a partial last line)."""
    agent: str | None = None
    """The agent that wrote the trace, when the format alone does not tell (a task folder of
    Cline's shape written by Roo Code or Kilo Code)."""
    compactions: int = 0
    """How many times the agent compacted its history (a summary in place of earlier turns);
    the history read starts where the last one left it."""

    @property
    def has_recorded_usage(self) -> bool:
        """Whether any request recorded the usage the provider reported."""
        return any(request.usage is not None for request in self.requests)


def load_trace(path: str | os.PathLike[str], format: str | None = None) -> Trace:
    """Load ``path`` as a :class:`Trace`; ``format`` (a :class:`TraceFormat` value) skips detection.

    A trace without any message is refused: there is nothing to inspect or send.
    """
    trace = _load(Path(path), format)
    if not trace.history:
        raise TraceError(f"{trace.path}: holds no messages")
    return trace


def _load(source: Path, format: str | None) -> Trace:
    if not source.exists():
        raise TraceError(f"{source}: no such file or folder")
    _check_regular(source)
    kind = None if format is None else _format(format)
    if kind in (None, TraceFormat.OPENHANDS) and is_openhands_folder(source):
        return _transcript_trace(source, TraceFormat.OPENHANDS)
    if kind is TraceFormat.CLINE or (kind is None and _is_cline(source)):
        task = load_task(source)
        stored = any((task.path / name).is_file() for name in (JOURNAL_FILE, LEGACY_STATE_FILE))
        return Trace(
            task.path,
            TraceFormat.CLINE,
            task.history,
            task.requests,
            task.deleted_range,
            task.context_history,
            session_folder=task.path if stored else None,
            warnings=tuple(condensed_notes(task.history)),
            agent=task.agent,
        )
    if source.is_dir():
        raise TraceError(f"{source}: a folder can only be read as a Cline task folder")
    if kind is None:
        found = _transcript_format(source)
        kind = TraceFormat(found) if found is not None else None
    if kind in _TRANSCRIPTS:
        return _transcript_trace(source, kind)
    value = _read_json(source)
    if kind is None:
        kind = _detect(source, value)
    try:
        return _convert(source, kind, value)
    except (MalformedMessageError, TaskFolderError) as error:
        raise TraceError(f"{source}: {error}") from None
    except RecursionError:  # a converter walked a value nested deeper than the stack allows
        raise TraceError(f"{source}: JSON nested too deeply") from None


def _convert(source: Path, kind: TraceFormat, value: Any) -> Trace:
    if kind is TraceFormat.SWE_AGENT:
        trajectory = parse_swe_agent_trajectory(value)
        return _message_trace(source, kind, trajectory.messages, trajectory.system)
    messages, system = _messages_of(source, value)
    if kind is TraceFormat.OPENAI:
        conversation = to_anthropic(messages, name="messages")
        return _message_trace(source, kind, conversation.messages, conversation.system)
    return _message_trace(source, kind, messages, system)


def _transcript_format(source: Path) -> str | None:
    try:
        return detect_transcript(source)
    except (TaskFolderError, OSError):
        return None


def _transcript_trace(source: Path, kind: TraceFormat) -> Trace:
    """A trace of another agent's transcript (see :mod:`windowkeeper.transcripts._detect`)."""
    try:
        transcript = read_transcript(source, kind.value)
        check_history(list(transcript.messages), "messages")
    except (MalformedMessageError, TaskFolderError) as error:
        message = str(error)
        raise TraceError(message if str(source) in message else f"{source}: {message}") from None
    except RecursionError:
        raise TraceError(f"{source}: JSON nested too deeply") from None
    return Trace(
        source,
        kind,
        tuple(transcript.messages),
        transcript.api_requests(),
        system=transcript.system,
        tools=tuple(transcript.tools) if transcript.tools is not None else None,
        model=transcript.model,
        unknown=tuple(f"{item.where}: {item.type}" for item in transcript.unknown),
        version=transcript.version,
        forks=transcript.forks,
        warnings=transcript.warnings,
        compactions=transcript.compactions,
    )


def detect_format(path: str | os.PathLike[str]) -> TraceFormat:
    """Tell what ``path`` holds: a folder or Cline file, a ``.traj`` file, or a JSON message list.

    A JSON list counts as OpenAI-shaped when a message has a role only OpenAI uses (system,
    developer, tool), ``tool_calls``, or a content part only OpenAI uses; otherwise Anthropic-shaped
    (a conversation of plain text messages reads the same in both).
    """
    source = Path(path)
    if _is_cline(source):
        return TraceFormat.CLINE
    found = _transcript_format(source)
    if found is not None:
        return TraceFormat(found)
    return _detect(source, _read_json(source))


def _is_cline(source: Path) -> bool:
    return (source.is_dir() and not is_openhands_folder(source)) or source.name == API_HISTORY_FILE


def _detect(source: Path, value: Any) -> TraceFormat:
    if source.suffix == ".traj" or (
        isinstance(value, Mapping) and isinstance(value.get("trajectory"), list)
    ):
        return TraceFormat.SWE_AGENT
    messages, _ = _messages_of(source, value)
    _check_claimed(source, messages)
    return TraceFormat.OPENAI if _looks_openai(messages) else TraceFormat.ANTHROPIC


def _check_claimed(source: Path, messages: Sequence[Any]) -> None:
    """Refuse a message list of no format read here (e.g. messages of typed ``parts``).

    Anthropic and OpenAI messages all have a ``content`` (an OpenAI assistant message may have
    ``tool_calls`` instead); a list whose messages have neither is some other tool's export,
    which reading as one of them would empty of its tool calls.
    """
    for index, message in enumerate(messages):
        if isinstance(message, Mapping) and not (
            "content" in message or "tool_calls" in message or "function_call" in message
        ):
            keys = ", ".join(sorted(str(key) for key in message)[:6])
            raise TraceError(
                f"{source}: not a transcript of a known format: messages[{index}] has no"
                f" 'content' (its keys: {keys}); give --format to read it as one"
            )


def _format(name: str) -> TraceFormat:
    try:
        return TraceFormat(name)
    except ValueError:
        choices = ", ".join(kind.value for kind in TraceFormat)
        raise TraceError(f"unknown format {name!r} (choose from {choices})") from None


def _check_regular(path: Path) -> None:
    """Refuse a FIFO, socket or device before anything opens it (reading a FIFO blocks)."""
    kind = special_file_kind(path)
    if kind is not None:
        raise TraceError(f"{path}: not a regular file or a folder ({kind})")


def _read_json(path: Path) -> Any:
    _check_regular(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as error:
        raise TraceError(f"{path}: cannot be read: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise TraceError(f"{path}: not JSON: {error}") from None
    try:
        return json.loads(text)
    except ValueError as error:
        keys = _json_lines_keys(text)
        if keys is not None:
            raise TraceError(
                f"{path}: JSON Lines of no known transcript format (line 1 has the keys"
                f" {keys}); give --format to read it as one"
            ) from None
        raise TraceError(f"{path}: not JSON: {error}") from None
    except RecursionError:
        raise TraceError(f"{path}: JSON nested too deeply") from None


def _json_lines_keys(text: str) -> str | None:
    """The first keys of line 1, when ``text`` is JSON Lines: several lines, the first two
    JSON objects (a file no reader recognized, e.g. another tool's own export)."""
    lines = text.lstrip("\ufeff").split("\n", 2)
    if len(lines) < 2:
        return None
    records = []
    for line in lines[:2]:
        try:
            records.append(json.loads(line))
        except (ValueError, RecursionError):
            return None
    if not all(isinstance(record, dict) for record in records):
        return None
    names = sorted(str(key) for key in records[0])
    return ", ".join(names[:6]) + (", ..." if len(names) > 6 else "") if names else "none"


def _messages_of(path: Path, value: Any) -> tuple[list[Any], Any]:
    """The message list of a JSON file (a list, or an object with ``messages``), and its system."""
    system = None
    if isinstance(value, Mapping) and "messages" in value:
        system = value.get("system")
        value = value["messages"]
    if not isinstance(value, list):
        raise TraceError(
            f"{path}: expected a list of messages or an object with a 'messages' list,"
            f" got {type(value).__name__}"
        )
    return value, system


def _looks_openai(messages: Sequence[Any]) -> bool:
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        if message.get("role") in _OPENAI_ONLY_ROLES or "tool_calls" in message:
            return True
        content = message.get("content")
        if isinstance(content, list):
            kinds = {part.get("type") for part in content if isinstance(part, Mapping)}
            if kinds & _ANTHROPIC_ONLY_BLOCKS:
                return False
            if kinds & _OPENAI_ONLY_PARTS:
                return True
    return False


def _message_trace(path: Path, kind: TraceFormat, messages: Sequence[Any], system: Any) -> Trace:
    """A trace of plain messages; ``metrics.tokens`` on assistant messages give recorded usage."""
    check_history(messages, "messages")
    _check_system(system)
    try:
        task = ClineTask(path=path.parent, history=tuple(messages))
    except TaskFolderError as error:  # a bad metrics value: say where, without the folder's file
        where = str(error).removeprefix(str(path.parent / API_HISTORY_FILE))
        raise TaskFolderError(f"messages{where}") from None
    return Trace(path, kind, task.history, task.requests, system=system)


def _check_system(system: Any) -> None:
    """A system prompt is None, a string or a list of text blocks, as the Messages API takes."""
    if system is None or isinstance(system, str):
        return
    if not isinstance(system, list):
        raise MalformedMessageError(
            "system",
            f"expected a string or a list of text blocks, got {type(system).__name__}",
        )
    check_depth(system, "system")
    for position, block in enumerate(system):
        where = f"system[{position}]"
        if not isinstance(block, Mapping) or block.get("type") != "text":
            raise MalformedMessageError(where, "expected a block dict of type 'text'")
        check_block_fields(dict(block), where)
