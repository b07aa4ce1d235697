"""windowkeeper's duplicate-read detector: every block, Cline headers and native tool calls.

The original looks for a tool header only in block 0 of a user message. Agents with native and
parallel tool calls put several results in one message, and many never write Cline's headers
at all: their reads are tool_use blocks (``Read``, ``read_file``, ``str_replace_editor view``...)
answered by tool_result blocks. :class:`NativeReadDetector` finds both, in every block, keyed by
a normalized path and, for a read of part of a file (an offset, a line range, ``sed -n 1,80p``),
by that part: only the same part read again is a newer copy of it. An older copy is replaced
only when its notice is shorter than the copy.

A replaced tool_result keeps its block and ``tool_use_id`` (only its content changes), so pairing
never breaks; the notice names the file and says that a newer copy follows.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .._record import field, record
from ..core._cline_text import EDIT_TOOLS, READ_TOOL, Header, final_content, parse_header
from ..core._file_reads import ReadScan, Sighting, replaced_paths, scan_mentions
from ..core._messages import Message, block_text, tool_calls_before, utf16_len
from ..core._overwrites import CONTENT, TEXT, EditType, OverwriteStore
from ._shell_reads import shell_read

__all__ = ["DEFAULT_READ_TOOLS", "DEFAULT_SHELL_TOOLS", "NativeReadDetector", "normalize_path"]

DEFAULT_READ_TOOLS: Mapping[str, tuple[str, ...]] = {
    "read_file": (
        "path",
        "file_path",
        "target_file",
        "absolute_path",
        "filePath",
    ),  # Cline, generic
    "Read": ("file_path",),  # Claude Code
    "view": ("path",),
    "view_file": ("path", "file_path"),
    "open_file": ("path", "file_path"),
    "open": ("path",),  # SWE-agent (function calling): open FILE [LINE]
    "str_replace_editor": ("path",),  # SWE-agent, OpenHands: only with command "view"
    "str_replace_based_edit_tool": ("path",),  # Anthropic's text editor tool: command "view"
    "text_editor": ("path",),
    "file_editor": ("path",),  # OpenHands V1 (software-agent-sdk): only with command "view"
}
"""Tool name -> input keys that may hold the path, for tools whose result is a file's contents."""

DEFAULT_SHELL_TOOLS: Mapping[str, str] = {
    "execute_command": "command",  # Cline
    "Bash": "command",  # Claude Code
    "shell": "command",  # Codex
    "shell_command": "command",  # Codex 0.60+: one command line
    "exec_command": "cmd",  # Codex 0.60+: one command line
    "local_shell": "command",  # Codex
    "run_shell_command": "command",  # Gemini CLI
    "execute_bash": "command",  # OpenHands
    "terminal": "command",  # OpenHands V1 (software-agent-sdk)
    "bash": "command",  # SWE-agent and generic
}
"""Tool name -> the input key of its command, for tools that run a shell command: their result
is a file's contents when the command is an unambiguous read (``cat FILE``, ``sed -n 1,80p FILE``,
``head``/``tail FILE``, SWE-agent's ``open FILE``; see :func:`~windowkeeper.session._shell_reads.shell_read_path`)."""

_VIEW_COMMAND_TOOLS = frozenset(
    {"str_replace_editor", "str_replace_based_edit_tool", "text_editor", "file_editor"}
)


def normalize_path(path: str) -> str:
    """One key for one file: forward slashes, no ``.`` or ``..`` segments, no leading ``./``."""
    cleaned = posixpath.normpath(path.strip().replace("\\", "/"))
    return cleaned[2:] if cleaned.startswith("./") else cleaned


def notice_for(path: str, latest_index: int, part: str = "") -> str:
    """What replaces an older copy of ``path``: the file, and that a newer copy follows.

    ``part`` names what a read of only part of the file asked for (``"offset=1, limit=80"``,
    ``"sed -n 1,80p"``): the newer copy is of that same part. It names no message index: once the
    middle of the history is hidden, an index into the full history means nothing to the model.
    ``latest_index`` is kept for detectors that want it.
    """
    del latest_index
    if part:
        return (
            f"[windowkeeper: an older copy of '{path}' ({part}) was removed here to save"
            " context; a newer copy of that same part appears further down in this conversation.]"
        )
    return (
        f"[windowkeeper: an older copy of '{path}' was removed here to save context; a newer"
        " copy of the file appears further down in this conversation.]"
    )


_NOT_A_PART = frozenset(
    {"command", "security_risk", "thought", "description", "explanation", "reason", "summary"}
    | {"task_progress", "requires_approval", "timeout"}
)
"""Input keys of a read tool that do not change what it reads: beside the path, any other key
(``offset``, ``limit``, ``view_range``, ``line_ranges``, ...) makes it a read of a part."""


def _part(tool_input: Mapping[str, Any], path_keys: Sequence[str]) -> str:
    """What a read asked for beyond its path (its keys are ``path_keys``), as ``key=value``
    pairs in key order ("" for none)."""
    pairs = []
    for key in sorted(tool_input):
        value = tool_input[key]
        if key in path_keys or key in _NOT_A_PART or value is None or value in ("", [], {}):
            continue
        shown = (
            value
            if isinstance(value, str)
            else json.dumps(value, separators=(",", ":"), default=str)
        )
        pairs.append(f"{key}={shown}")
    return ", ".join(pairs)


def _keyed(path: str, part: str) -> str:
    """The key of a copy of ``path`` (normalized): the path, and the part read when only part
    of the file was."""
    return f"{path} ({part})" if part else path


class _Copy:
    """A copy a tool read, and what a replacement of it keeps around the notice.

    A plain class, not a dataclass: that would cost start-up time for a record nobody compares.
    """

    __slots__ = ("part", "path", "prefix", "sighting", "size", "suffix")

    def __init__(
        self,
        sighting: Sighting,
        size: int,
        prefix: str = "",
        suffix: str = "",
        *,
        path: str = "",
        part: str = "",
    ) -> None:
        self.sighting = sighting
        self.path = path  # the file as the notice names it
        self.part = part  # what a read of part of the file asked for ("" for the whole)
        self.size = size  # UTF-16 length of what the replacement replaces
        self.prefix = (
            prefix  # kept before the notice (a Cline header, or text before a file's contents)
        )
        self.suffix = suffix  # kept after the notice (the closing tag and what follows it)


_Found = tuple[Message, Any, int, tuple[tuple[int, str, _Copy], ...]]


@record
class NativeReadDetector:
    """Finds copies of files in every block of user messages: Cline text headers and native reads.

    ``read_tools`` maps a tool name to the input keys that may hold its path (see
    :data:`DEFAULT_READ_TOOLS`); editor tools count only with ``command == "view"``.
    ``shell_tools`` maps a shell tool to the input key of its command (see
    :data:`DEFAULT_SHELL_TOOLS`): a command that only reads one file counts as a read of it. A
    read's other inputs (``offset``, ``view_range``, ...), or its command without the file, name
    the part it read; :meth:`scan` keys its copies ``"path (part)"``. File mentions
    (``<file_content path=...>``) are found as by the original, in any block.
    """

    read_tools: Mapping[str, Sequence[str]] = field(
        default_factory=lambda: dict(DEFAULT_READ_TOOLS)
    )
    shell_tools: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_SHELL_TOOLS))

    @property
    def _found(self) -> dict[int, _Found]:
        """id of a user message -> (it, the message before it, its index, the copies in its
        blocks: (position, path, copy)); what the store has replaced is left out when a scan
        reads them. A memo, not a field: kept beside the fields, never compared nor shown."""
        memo: dict[int, _Found] | None = self.__dict__.get("_found_memo")
        if memo is None:
            memo = self.__dict__["_found_memo"] = {}
        return memo

    def scan(self, history: Sequence[Message], start_index: int, store: OverwriteStore) -> ReadScan:
        """The copies to replace per path, oldest first, then the latest copy of each path.

        An older copy read by a tool is listed only when its notice is shorter than what it
        replaces; file mentions are replaced as by the original.
        """
        mentions = ReadScan()
        copies = self._copies(history, start_index, store, mentions)
        result = ReadScan(mention_paths=mentions.mention_paths)
        for path in {**copies, **mentions.reads}:
            found: list[tuple[int, int, _Copy | Sighting]] = [
                (c.sighting.message_index, c.sighting.block_index, c) for c in copies.get(path, [])
            ]
            found += [(s.message_index, s.block_index, s) for s in mentions.reads.get(path, [])]
            found.sort(key=lambda item: (item[0], item[1]))
            latest = found[-1][0]
            for _, _, older in found[:-1]:
                if isinstance(older, Sighting):
                    result.add(path, older)
                    continue
                notice = notice_for(older.path or path, latest, older.part)
                text = f"{older.prefix}{notice}{older.suffix}"
                if utf16_len(text) < older.size:
                    seen = older.sighting  # built directly: dataclasses.replace is slow
                    result.add(
                        path,
                        Sighting(
                            seen.message_index,
                            seen.edit_type,
                            seen.search_text,
                            text,
                            seen.block_index,
                            seen.kind,
                        ),
                    )
            last = found[-1][2]
            result.add(path, last if isinstance(last, Sighting) else last.sighting)
        return result

    def copies(
        self, history: Sequence[Message], start_index: int, store: OverwriteStore
    ) -> dict[str, list[tuple[int, int]]]:
        """Every unreplaced copy found, per normalized path (the copies of every part of a
        file together): ``(message index, block index)``, in order."""
        mentions = ReadScan()
        found: dict[str, list[tuple[int, int]]] = {}
        for key, copies in self._copies(history, start_index, store, mentions).items():
            for c in copies:
                found.setdefault(c.path or key, []).append(
                    (c.sighting.message_index, c.sighting.block_index)
                )
        for path, sightings in mentions.reads.items():
            found.setdefault(path, []).extend((s.message_index, s.block_index) for s in sightings)
        for places in found.values():
            places.sort()
        return found

    def _copies(
        self,
        history: Sequence[Message],
        start_index: int,
        store: OverwriteStore,
        mentions: ReadScan,
    ) -> dict[str, list[_Copy]]:
        copies: dict[str, list[_Copy]] = {}
        start = max(start_index, 0)
        memo = self._found
        previous = history[start - 1] if 1 <= start <= len(history) else None
        for index in range(start, len(history)):
            message = history[index]
            before, previous = previous, message
            content = message.get("content")
            if message.get("role") != "user" or not isinstance(content, list) or not content:
                continue
            known = memo.get(id(message))  # _found_in's memo, looked up here: most messages hit
            if (
                known is not None
                and known[0] is message
                and known[1] is before
                and known[2] == index
            ):
                found = known[3]
            else:
                found = self._found_in(history, index, message, content)
            for position, path, copy in found:
                if store.has_update(index, position):
                    continue  # already replaced: an older copy of something
                copies.setdefault(path, []).append(copy)
            if index not in store or store.edit_type(index) == EditType.FILE_MENTION:
                self._mentions(mentions, index, content, store)
        if len(self._found) > 2 * (len(history) - start) + 64:  # messages no longer scanned
            live = set(map(id, history[start:]))
            self.__dict__["_found_memo"] = {
                key: entry for key, entry in self._found.items() if key in live
            }
        return copies

    def _found_in(
        self, history: Sequence[Message], index: int, message: Message, content: list[Any]
    ) -> tuple[tuple[int, str, _Copy], ...]:
        """The copies in the blocks of ``history[index]``, found once while it, the message
        before it (whose calls its results answer) and its index stay the same.

        Messages are values (see :mod:`windowkeeper.core._incremental`), and so are
        ``read_tools`` and ``shell_tools`` once the detector is in use.
        """
        previous = history[index - 1] if index >= 1 else None
        known = self._found.get(id(message))
        if known is not None and known[0] is message and known[1] is previous and known[2] == index:
            return known[3]
        calls = tool_calls_before(history, index)
        found = []
        for position, block in enumerate(content):
            copy = self._copy_in(block, position, index, calls, content)
            if copy is not None:
                found.append((position, *copy))
        result = tuple(found)
        self._found[id(message)] = (message, previous, index, result)
        return result

    def _copy_in(
        self,
        block: Any,
        position: int,
        index: int,
        calls: Mapping[Any, dict[str, Any]],
        content: list[Any],
    ) -> tuple[str, _Copy] | None:
        if not isinstance(block, dict):
            return None
        kind = block.get("type")
        text = block_text(block)
        if text is None and kind == "tool_result" and isinstance(block.get("content"), str):
            text = block["content"] or None
        if text is not None:
            header = _header_copy(text, block, position, index, content)
            if header is not None:
                return header
        if kind != "tool_result":
            return None
        call = calls.get(block.get("tool_use_id"))
        if call is None:
            return None
        read = self._read_path(call.get("name"), call.get("input"))
        if read is None:
            return None
        path, part = read
        update_kind = (
            TEXT if isinstance(block.get("content"), list) and text is not None else CONTENT
        )
        size = utf16_len(text) if text is not None else 0
        sighting = Sighting(index, EditType.READ_FILE_TOOL, "", "", position, update_kind)
        shown = normalize_path(path)
        return _keyed(shown, part), _Copy(sighting, size, path=shown, part=part)

    def _read_path(self, name: Any, tool_input: Any) -> tuple[str, str] | None:
        """The file a call reads and the part of it (see :func:`_part`), or None."""
        if not isinstance(tool_input, dict):
            return None
        shell_key = self.shell_tools.get(name) if isinstance(name, str) else None
        if shell_key is not None:  # a read through the shell, when the command is unambiguous
            command = tool_input.get(shell_key)
            return shell_read(command) if isinstance(command, str | list) else None
        keys = self.read_tools.get(name) if isinstance(name, str) else None
        if keys is None:
            return None
        if name in _VIEW_COMMAND_TOOLS and tool_input.get("command") != "view":
            return None
        for key in keys:
            value = tool_input.get(key)
            if isinstance(value, str) and value:
                return value, _part(tool_input, keys)
        return _only_file(tool_input.get("files"))

    @staticmethod
    def _mentions(result: ReadScan, index: int, content: list[Any], store: OverwriteStore) -> None:
        """File mentions, as the original finds them, in messages no other edit touched."""
        already: list[Any] = []
        if index in store:
            if store.edit_type(index) != EditType.FILE_MENTION:
                return
            replaced = replaced_paths(store.first_block_latest(index))
            if replaced is None:
                return
            already = replaced
        scan_mentions(result, index, content, already, blocks=len(content), key=normalize_path)


def _only_file(files: Any) -> tuple[str, str] | None:
    """The file of a Roo Code / Kilo Code ``read_file`` call's ``files`` list of one file, and
    the part asked for (``line_range``...).

    Their result holds every file asked for in one text; with several, no single path names it.
    """
    if isinstance(files, list) and len(files) == 1 and isinstance(files[0], dict):
        path = files[0].get("path")
        if isinstance(path, str) and path:
            return path, _part(files[0], ("path",))
    return None


_ROO_HEADER = re.compile(
    r"\[(read_file) for '([^']+)'\. Reading multiple files at once[^\]]*\] Result:"
)
"""Roo Code's header of a read of one file (its XML tools): the contents follow in a ``<files>``
block of their own."""


_LINES = re.compile(r'<content lines="([^"]*)"')


def _lines_shown(body: str) -> str:
    """The lines a Roo Code read shows (``<content lines="1-50">``): its part. Roo names them
    for a whole file too (``1-N``); a file read again whole and unchanged shows the same."""
    ranges = _LINES.findall(body)
    return f"lines={','.join(ranges)}" if ranges else ""


def _header_copy(
    text: str, block: dict[str, Any], position: int, index: int, content: list[Any]
) -> tuple[str, _Copy] | None:
    """A copy announced by a Cline header: ``[read_file for 'p'] Result:`` and the edit tools;
    Roo Code's header of a read of one file too."""
    parsed = parse_header(text)
    roo = None
    if parsed is None:
        roo = _ROO_HEADER.match(text)
        if roo is None:
            return None
        parsed = Header(roo.group(1), roo.group(2), roo.group(0))
    tool, path, header = parsed
    string_result = block.get("type") == "tool_result" and isinstance(block.get("content"), str)
    kind = CONTENT if string_result else TEXT
    if tool == READ_TOOL:
        shown = normalize_path(path)
        if text == header:  # the old layout: the contents follow in the next block
            following = content[position + 1] if position + 1 < len(content) else None
            body = block_text(following)
            if body is None:
                return None
            part = "" if roo is None else _lines_shown(body)
            sighting = Sighting(index, EditType.READ_FILE_TOOL, "", "", position + 1, TEXT)
            return _keyed(shown, part), _Copy(sighting, utf16_len(body), path=shown, part=part)
        part = "" if roo is None else _lines_shown(text)
        sighting = Sighting(index, EditType.READ_FILE_TOOL, "", "", position, kind)
        copy = _Copy(sighting, utf16_len(text), prefix=f"{header}\n", path=shown, part=part)
        return _keyed(shown, part), copy
    if tool in EDIT_TOOLS:
        final = final_content(text)
        if final is None:
            return None
        sighting = Sighting(index, EditType.ALTER_FILE_TOOL, "", "", position, kind)
        prefix = f"{text[: final.end(1)]} "
        suffix = f" {text[final.start(2) :]}"
        return normalize_path(path), _Copy(sighting, utf16_len(text), prefix, suffix)
    return None
