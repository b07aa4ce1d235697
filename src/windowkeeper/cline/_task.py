"""Cline task folders: load one, and find what the original reads from it before each request.

A Cline task folder holds ``api_conversation_history.json`` (the full history), ``ui_messages.json``
(what the chat panel shows, including one ``api_req_started`` entry per model request with its
token usage), ``context_history.json`` (the overwrite store) and ``task_metadata.json``. Only the
history is required: a history-only folder (as traces are often shared) takes each request's usage
from the ``metrics.tokens`` that Cline stores on every assistant message.

Everything is checked when the folder is loaded, so a :class:`ClineTask` never fails later: the
messages' shapes (with the string fields of known blocks, such as tool ids), their nesting (at
most :data:`MAX_JSON_DEPTH` levels), every integer (at most :data:`MAX_SAFE_INTEGER`, as JavaScript
writes them) and token count (at most :data:`MAX_TOKEN_COUNT`). A file that cannot be used, or
that is not a regular file (a FIFO is refused without being opened), raises
:class:`~windowkeeper.TaskFolderError` naming the file and the JSON path of the offending value,
e.g. ``ui_messages.json[12].text: ...``. Nothing here writes.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .._errors import InvalidUsageError, MalformedMessageError, TaskFolderError
from ..core._messages import Message, check_message
from ..core._overwrites import CorruptStoreError, OverwriteStore
from ..core._truncation import DeletedRange
from ..core._usage import TokenUsage
from ..storage import CONTEXT_HISTORY_FILE
from ._forks import answers_by_time, folder_agent, fork_usage, is_fork_info
from ._json_checks import MAX_JSON_DEPTH, check_block_fields, check_depth

__all__ = [
    "API_HISTORY_FILE",
    "MAX_JSON_DEPTH",
    "MAX_SAFE_INTEGER",
    "MAX_TOKEN_COUNT",
    "TASK_METADATA_FILE",
    "UI_MESSAGES_FILE",
    "ApiRequest",
    "ClineTask",
    "check_block_fields",
    "check_depth",
    "load_task",
    "previous_api_request",
    "special_file_kind",
]

API_HISTORY_FILE = "api_conversation_history.json"
UI_MESSAGES_FILE = "ui_messages.json"
TASK_METADATA_FILE = "task_metadata.json"

_API_REQ_STARTED = "api_req_started"
_METRIC_FIELDS = ("prompt", "completion", "cached")
_USAGE_FIELDS = {
    "tokens_in": "tokensIn",
    "tokens_out": "tokensOut",
    "cache_writes": "cacheWrites",
    "cache_reads": "cacheReads",
}

MAX_SAFE_INTEGER = 2**53 - 1
"""The largest integer a JavaScript number holds exactly: no count or time Cline writes is larger."""

MAX_TOKEN_COUNT = 10**15 - 1
"""The largest token count of a request accepted (a session refuses larger ones too): nothing is
near a quadrillion tokens, and a count this large is a bug in whatever wrote it."""

_SPECIAL_FILES = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


@dataclass(frozen=True, slots=True)
class ApiRequest:
    """One model request as a task folder records it.

    ``usage`` is None when nothing was recorded (an ``api_req_started`` with empty text, or an
    assistant message without ``metrics.tokens``); the original then makes no decision.
    ``conversation_history_index`` is Cline's: the history length minus one when the request was
    announced, before its user message was appended, so the request sent
    ``history[: conversation_history_index + 2]``. In a fork's folder whose UI messages record
    none (Roo Code, Kilo Code: their requests name ``apiProtocol``) it is found by time: the
    request sent the history before the first assistant message written at or after it started.
    """

    usage: TokenUsage | None
    ts: int | None
    conversation_history_index: int | None
    ui_index: int | None = None
    """Position of its ``api_req_started`` in ``ui_messages.json``; None in a history-only folder."""
    history_index: int | None = None
    """The assistant message whose ``metrics.tokens`` gave the usage (history-only folders)."""


@dataclass(frozen=True, slots=True, repr=False)
class ClineTask:
    """A loaded Cline task folder; ``ui_messages`` is None for a history-only folder.

    ``requests`` lists every request in order, with its usage; ``deleted_range`` is the
    ``conversationHistoryDeletedRange`` of the latest UI message that has one. Both are derived,
    and every value they read is checked, when the task is built.
    """

    path: Path
    history: tuple[Message, ...]
    ui_messages: tuple[dict[str, Any], ...] | None = None
    metadata: dict[str, Any] | None = None
    context_history: OverwriteStore | None = None
    requests: tuple[ApiRequest, ...] = field(init=False)
    deleted_range: DeletedRange | None = field(init=False)
    agent: str = field(init=False)
    """Which agent wrote the folder: ``"Cline"``, ``"Kilo Code"`` or ``"Roo Code (or a fork of
    it)"`` (see :func:`~windowkeeper.cline._forks.folder_agent`)."""

    def __post_init__(self) -> None:
        _check_history(self.path / API_HISTORY_FILE, self.history)
        forked = False
        if self.ui_messages is None:
            requests = _history_requests(self.path / API_HISTORY_FILE, self.history)
            deleted_range = None
        else:
            ui_file = self.path / UI_MESSAGES_FILE
            requests, forked = _ui_requests(ui_file, self.ui_messages)
            if forked and all(request.conversation_history_index is None for request in requests):
                requests = _placed_by_time(requests, self.history)  # Roo Code, Kilo Code
            deleted_range = _recorded_deleted_range(ui_file, self.ui_messages)
        object.__setattr__(self, "requests", requests)
        object.__setattr__(self, "deleted_range", deleted_range)
        agent = folder_agent(self.ui_messages, self.metadata, forked=forked)
        object.__setattr__(self, "agent", agent)

    def __repr__(self) -> str:
        ui = "None" if self.ui_messages is None else str(len(self.ui_messages))
        return (
            f"ClineTask(path={str(self.path)!r}, messages={len(self.history)}, ui_messages={ui},"
            f" requests={len(self.requests)}, deleted_range={self.deleted_range!r})"
        )

    @property
    def history_only(self) -> bool:
        """True when the folder has no ``ui_messages.json`` (usage comes from the history)."""
        return self.ui_messages is None

    def previous_request(self, history_length: int | None = None) -> ApiRequest | None:
        """The previous request, as the original's Task finds it before each request.

        Without ``history_length``: the last request recorded (the last UI message whose ``say``
        is ``api_req_started``; reference 8.1). With it: the last request made before the one that
        sends ``history[:history_length]``, i.e. the previous request as the Task saw it then, for
        replaying a task turn by turn. Requests without a ``conversationHistoryIndex`` cannot be
        placed and are not considered then. None when there is no such request.
        """
        if history_length is None:
            return self.requests[-1] if self.requests else None
        announced_at = history_length - 2  # the index the request for that history was given
        for request in reversed(self.requests):
            index = request.conversation_history_index
            if index is not None and index < announced_at:
                return request
        return None


def load_task(path: str | os.PathLike[str]) -> ClineTask:
    """Load a Cline task folder (or the folder of a file inside it, such as its history).

    ``api_conversation_history.json`` is required; ``ui_messages.json``, ``context_history.json``
    and ``task_metadata.json`` are read when present. Raises :class:`TaskFolderError` when a file
    is missing, unreadable, not JSON or not of Cline's shape.
    """
    folder = Path(path)
    if folder.exists() and not folder.is_dir():  # a file inside the folder (checked when read)
        folder = folder.parent
    history = _read_json(folder / API_HISTORY_FILE, required=True)
    if not isinstance(history, list):
        raise _error(
            folder / API_HISTORY_FILE, "", f"expected a list of messages, got {_kind(history)}"
        )
    ui_messages = _read_json(folder / UI_MESSAGES_FILE)
    if ui_messages is not None and not isinstance(ui_messages, list):
        raise _error(
            folder / UI_MESSAGES_FILE,
            "",
            f"expected a list of UI messages, got {_kind(ui_messages)}",
        )
    metadata = _read_json(folder / TASK_METADATA_FILE)
    if metadata is not None and not isinstance(metadata, dict):
        raise _error(folder / TASK_METADATA_FILE, "", f"expected an object, got {_kind(metadata)}")
    return ClineTask(
        path=folder,
        history=tuple(history),
        ui_messages=None if ui_messages is None else tuple(ui_messages),
        metadata=metadata,
        context_history=_read_store(folder / CONTEXT_HISTORY_FILE),
    )


def previous_api_request(
    ui_messages: Sequence[Mapping[str, Any]], *, file: str = UI_MESSAGES_FILE
) -> ApiRequest | None:
    """The last ``api_req_started`` of a list of UI messages, with its usage and ``ts``.

    This is how the original's Task finds ``previousApiReqIndex`` before each request. Malformed
    values raise :class:`TaskFolderError` naming ``file`` and the JSON path.
    """
    for position in range(len(ui_messages) - 1, -1, -1):
        message = ui_messages[position]
        if isinstance(message, Mapping) and message.get("say") == _API_REQ_STARTED:
            return _ui_request(Path(file), position, message)[0]
    return None


# -- reading files ---------------------------------------------------------------------------


def special_file_kind(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` is when it is neither a regular file nor a folder (``"a FIFO"``, ...).

    None when it is one of those, or does not exist. Nothing is opened: reading a FIFO would block.
    """
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return next((name for test, name in _SPECIAL_FILES if test(mode)), "a special file")


def _check_regular(path: Path) -> None:
    kind = special_file_kind(path)
    if kind is not None:
        raise _error(path, "", f"not a regular file ({kind})")


def _read_json(path: Path, *, required: bool = False) -> Any:
    """The parsed JSON of ``path``; None when an optional file is missing."""
    _check_regular(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        if required:
            raise _error(path, "", "missing: not a Cline task folder") from None
        return None
    except OSError as error:
        raise _error(path, "", f"cannot be read: {error}") from None
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except ValueError as error:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise _error(path, "", f"not JSON: {error}") from None
    except RecursionError:
        raise _error(path, "", "JSON nested too deeply") from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _read_store(path: Path) -> OverwriteStore | None:
    _check_regular(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise _error(path, "", f"cannot be read: {error}") from None
    try:
        return OverwriteStore.from_json(raw.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise _error(path, "", f"not JSON: {error}") from None
    except CorruptStoreError as error:
        text = str(error)  # "[0][1]: problem" names a JSON path; anything else is about the file
        if text.startswith("["):
            raise TaskFolderError(f"{path}{text}") from None
        raise _error(path, "", text) from None


def _error(path: Path, where: str, problem: str) -> TaskFolderError:
    return TaskFolderError(f"{path}{where}: {problem}")


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


# -- checking values -------------------------------------------------------------------------


def _integer(value: Any, path: Path, where: str) -> int:
    """``value`` as an int (a JSON number such as ``3.0`` is an integer too), at most
    :data:`MAX_SAFE_INTEGER` either way."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        raise _error(path, where, f"expected an integer, got {value!r:.60}")
    if abs(number) > MAX_SAFE_INTEGER:
        raise _error(path, where, _too_large(value))
    return number


def _too_large(value: float, limit: int = MAX_SAFE_INTEGER) -> str:
    """Why a number no JavaScript program could have written is refused."""
    if isinstance(value, int) and abs(value) >= 10**20:
        shown = f"a {len(str(abs(value)))}-digit number"
    else:
        shown = repr(value)
    return f"{shown} is larger than any count Cline writes (at most {limit:,})"


def _token_problem(count: float) -> str | None:
    """Why a token count cannot be used (negative, or beyond :data:`MAX_TOKEN_COUNT`), or None."""
    if count < 0:
        return f"expected a token count of 0 or more, got {count!r}"
    if count > MAX_TOKEN_COUNT:
        return _too_large(count, MAX_TOKEN_COUNT)
    return None


def _optional_integer(value: Any, path: Path, where: str) -> int | None:
    """Like :func:`_integer`, but a missing or null value is None."""
    return None if value is None else _integer(value, path, where)


def _check_history(path: Path, history: Sequence[Any]) -> None:
    for index, message in enumerate(history):
        where = f"[{index}]"
        try:
            check_message(message, where)
            check_depth(message, where)
            content = message["content"]
            if isinstance(content, list):  # of dicts, as check_message made sure
                for position, block in enumerate(content):
                    check_block_fields(block, f"{where}.content[{position}]")
        except MalformedMessageError as error:
            raise _error(path, error.path, error.problem) from None
        _optional_integer(message.get("ts"), path, f"{where}.ts")


# -- requests from ui_messages.json ----------------------------------------------------------


def _ui_requests(path: Path, ui_messages: Sequence[Any]) -> tuple[tuple[ApiRequest, ...], bool]:
    """The requests, and whether a fork of Cline wrote them (one names ``apiProtocol``)."""
    requests: list[ApiRequest] = []
    forked = False
    for position, message in enumerate(ui_messages):
        _check_ui_message(path, position, message)
        if message.get("say") == _API_REQ_STARTED:
            request, by_fork = _ui_request(path, position, message)
            requests.append(request)
            forked |= by_fork
    return tuple(requests), forked


def _check_ui_message(path: Path, position: int, message: Any) -> None:
    where = f"[{position}]"
    if not isinstance(message, dict):
        raise _error(path, where, f"expected an object, got {_kind(message)}")
    _integer(message.get("ts"), path, f"{where}.ts")
    for key in ("type", "say", "ask", "text"):
        value = message.get(key)
        if value is not None and not isinstance(value, str):
            raise _error(path, f"{where}.{key}", f"expected a string, got {_kind(value)}")
    _optional_integer(
        message.get("conversationHistoryIndex"), path, f"{where}.conversationHistoryIndex"
    )
    _deleted_range(path, position, message)


def _ui_request(path: Path, position: int, message: Mapping[str, Any]) -> tuple[ApiRequest, bool]:
    where = f"[{position}]"
    ts = _integer(message.get("ts"), path, f"{where}.ts")
    text = message.get("text")
    usage = None
    by_fork = False
    if text:  # the original makes no decision on an empty or missing text
        if not isinstance(text, str):
            raise _error(path, f"{where}.text", f"expected a string, got {_kind(text)}")
        try:
            info = json.loads(text)
            usage = TokenUsage.from_api_req_info(info)
        except InvalidUsageError as error:  # a ValueError too: caught first
            raise _error(path, f"{where}.text", str(error)) from None
        except ValueError as error:
            raise _error(
                path, f"{where}.text", f"api_req_started text is not JSON: {error}"
            ) from None
        except RecursionError:
            raise _error(path, f"{where}.text", "JSON nested too deeply") from None
        for name, field_name in _USAGE_FIELDS.items():
            problem = _token_problem(getattr(usage, name))
            if problem is not None:
                raise _error(path, f"{where}.text", f"{field_name}: {problem}")
        by_fork = is_fork_info(info)
        usage = fork_usage(info, usage)
    index = _optional_integer(
        message.get("conversationHistoryIndex"), path, f"{where}.conversationHistoryIndex"
    )
    return ApiRequest(usage, ts, index, ui_index=position), by_fork


def _placed_by_time(
    requests: tuple[ApiRequest, ...], history: Sequence[Message]
) -> tuple[ApiRequest, ...]:
    """The requests, each placed before the assistant message that answered it (by time)."""
    times = [request.ts for request in requests]
    return tuple(
        request if answer is None else replace(request, conversation_history_index=answer - 2)
        for request, answer in zip(requests, answers_by_time(times, history), strict=True)
    )


def _deleted_range(path: Path, position: int, message: Mapping[str, Any]) -> DeletedRange | None:
    where = f"[{position}].conversationHistoryDeletedRange"
    value = message.get("conversationHistoryDeletedRange")
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != 2:
        raise _error(path, where, f"expected [start, end], got {value!r}")
    return (_integer(value[0], path, f"{where}[0]"), _integer(value[1], path, f"{where}[1]"))


def _recorded_deleted_range(path: Path, ui_messages: Sequence[Any]) -> DeletedRange | None:
    for position in range(len(ui_messages) - 1, -1, -1):
        found = _deleted_range(path, position, ui_messages[position])
        if found is not None:
            return found
    return None


# -- requests from the history's metrics (history-only folders) ------------------------------


def _history_requests(path: Path, history: Sequence[Message]) -> tuple[ApiRequest, ...]:
    """One request per assistant message, its usage from ``metrics.tokens``.

    ``prompt`` is the uncached input, ``completion`` the output and ``cached`` every cached input
    token (Cline adds cache writes and reads there), so the total is the one the original compares.
    The request's ``ts`` is that of the user message it sent, the closest recorded time to its start.
    """
    requests: list[ApiRequest] = []
    for index, message in enumerate(history):
        if message.get("role") != "assistant":
            continue
        usage = _metrics_usage(path, index, message)
        sent = max(index - 1, 0)  # the user message this request ended with
        ts = _optional_integer(history[sent].get("ts"), path, f"[{sent}].ts")
        requests.append(ApiRequest(usage, ts, index - 2, history_index=index))
    return tuple(requests)


def _metrics_usage(path: Path, index: int, message: Message) -> TokenUsage | None:
    where = f"[{index}].metrics"
    metrics = message.get("metrics")
    if metrics is None:
        return None
    if not isinstance(metrics, dict):
        raise _error(path, where, f"expected an object, got {_kind(metrics)}")
    tokens = metrics.get("tokens")
    if tokens is None:
        return None
    if not isinstance(tokens, dict):
        raise _error(path, f"{where}.tokens", f"expected an object, got {_kind(tokens)}")
    counts = [_metric(tokens.get(name), path, f"{where}.tokens.{name}") for name in _METRIC_FIELDS]
    prompt, completion, cached = counts
    return TokenUsage(tokens_in=prompt, tokens_out=completion, cache_reads=cached)


def _metric(value: Any, path: Path, where: str) -> int:
    """One ``metrics.tokens`` count; a missing or null one is 0."""
    count = _optional_integer(value, path, where) or 0
    problem = _token_problem(count)
    if problem is not None:
        raise _error(path, where, problem)
    return count
