"""The state of work, read from the history without any model: a :class:`Ledger`.

A summary written by a model may drop what matters most (the task, the files changed, what the
user asked last). The ledger is the part of a compaction that cannot be lost: it is computed
from the messages themselves, so it is exact, reproducible and free. It lists

- the task (message 0's text; Cline's ``<task>`` element when there is one) and every later user
  instruction, verbatim: plain user text, and the user's words that Cline wraps in
  ``<feedback>``, ``<answer>`` or ``<user_message>`` inside its tool-result texts; never tool
  results or the agent's own boilerplate (``<environment_details>``, ``[TASK RESUMPTION]``, ...);
  A user's text after tool results in the same message (a tool_result block, or a Cline
  result text) is an instruction too; the agent's own texts (``<system-reminder>``, Claude
  Code's continuation notice and interruption markers, Cline's notices) are not, nor is the
  output of a command an agent without native tools ran by ending its message with a fenced
  block (SWE-agent); which texts are the user's is decided in :mod:`._user_words`;
- the files read and the files edited, from native tool calls (``read_file``, ``Read``,
  ``str_replace_editor``, ``write_to_file``, ``Edit``, shell reads such as ``cat FILE``), from
  the patch texts of ``apply_patch``-style tools and the redirections, ``tee`` and ``sed -i`` of
  shell commands (:mod:`~windowkeeper.session._writes`), from Cline's and Roo's XML tool calls
  in assistant text and from their result headers (``[read_file for 'x'] Result:``,
  ``[write_to_file for 'x'] Result:``); an edit counts when it was asked for, whether or not it
  succeeded (a history does not always say);
- the latest todo / plan list (:func:`~windowkeeper.session._work_items.todo_state`) and the
  last failed tool call not followed by a success of the same call;
- the shell commands run, the tool calls still waiting for a result, and the assistant's last
  statement (its intent).

Each list is in the order first seen, without repeats; long texts are clipped (an instruction
longer than :data:`INSTRUCTION_CHARS` keeps its head and its tail, with a note of what was cut).
A :class:`LedgerBuilder` reads one message at a time (``feed``), so a session can keep its
ledger up to date on every append at the cost of the new message only; :func:`build_ledger`
feeds a whole history. Nothing here modifies a message. The ledger's text and the must-keep
check live in :mod:`windowkeeper.session._ledger_text` and are re-exported here; the tool
tables in :mod:`windowkeeper.session._ledger_tools`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..core._cline_text import EDIT_TOOLS, READ_TOOL, parse_header
from ..core._messages import Message
from ._cline_calls import xml_tool_calls
from ._ledger_text import (
    LEDGER_HEADING,
    Ledger,
    clip,
    head_and_tail,
    missing_items,
    missing_must_keep,
    must_keep,
    normalized,
    render_ledger,
)
from ._ledger_tools import (
    DEFAULT_EDIT_TOOLS,
    EDITOR_PATH_KEYS,
    EDITOR_TOOLS,
    PATCH_WORD,
    describe,
    first,
    result_texts,
    script,
)
from ._native_reads import DEFAULT_READ_TOOLS, DEFAULT_SHELL_TOOLS, normalize_path
from ._native_results import _RESULT_HEADER, _same_tool
from ._shell_reads import shell_read_path
from ._user_words import issues_command, own_words, tagged_words, task_element
from ._work_items import result_failed, todo_state
from ._writes import patch_paths, shell_write_paths

__all__ = [  # with the names of _ledger_text, which callers import from here
    "DEFAULT_EDIT_TOOLS",
    "LEDGER_HEADING",
    "Ledger",
    "LedgerBuilder",
    "build_ledger",
    "clip",
    "head_and_tail",
    "missing_items",
    "missing_must_keep",
    "must_keep",
    "normalized",
    "render_ledger",
]

TASK_CHARS = 2_000
"""The task is kept up to this many characters."""
INSTRUCTION_CHARS = 8_000
"""Each user instruction is kept whole up to this many characters (beyond, head and tail)."""
COMMAND_CHARS = 300
"""Each shell command is kept up to this many characters."""
INTENT_CHARS = 600
"""The assistant's last statement is kept up to this many characters."""
TODO_CHARS = 4_000
"""The latest todo / plan list is kept up to this many characters."""
ERROR_CHARS = 600
"""The last unresolved error is kept up to this many characters."""

# Tools whose results are file contents or listings: the user's words are not looked for there.
_CONTENT_TOOLS = frozenset({READ_TOOL, "search_files", "list_files", "list_code_definition_names"})
_COMMAND_TOOL = "execute_command"  # Cline's result header names the command it ran


@cache
def _roo_header() -> re.Pattern[str]:
    # Roo Code adds a sentence inside the brackets of some headers
    return re.compile(r"\[([^\s\]]+) for '([^'\n]*)'[^\]\n]*\] Result:")


@dataclass(slots=True)
class _Call:
    name: Any
    description: str
    key: str  # what makes a later call "the same call" (tool and path or command)


class _Ordered:
    """Items in the order first seen, without repeats (by a key)."""

    __slots__ = ("_items",)

    def __init__(self, items: dict[str, str] | None = None) -> None:
        self._items: dict[str, str] = dict(items or {})

    def add(self, item: str, key: str | None = None) -> None:
        if item:
            self._items.setdefault(item if key is None else key, item)

    def values(self) -> tuple[str, ...]:
        return tuple(self._items.values())

    def copy(self) -> _Ordered:
        return _Ordered(self._items)


class LedgerBuilder:
    """Builds a :class:`Ledger` one message at a time: ``feed`` each message, then ``ledger()``.

    Each ``feed`` costs time in the size of that message only. The tool tables default to
    :data:`DEFAULT_EDIT_TOOLS`, :data:`~windowkeeper.session._native_reads.DEFAULT_READ_TOOLS`
    and :data:`~windowkeeper.session._native_reads.DEFAULT_SHELL_TOOLS`. ``copy()`` gives an
    independent builder in the same state (to keep one per checkpoint). Not thread-safe.
    """

    __slots__ = (
        "_commands",
        "_count",
        "_edit_tools",
        "_edited",
        "_error",
        "_instructions",
        "_intent",
        "_last_role",
        "_latest",
        "_latest_at",
        "_ledger",
        "_native",
        "_observes",
        "_pending",
        "_read",
        "_read_tools",
        "_shell_tools",
        "_task",
        "_todos",
    )

    def __init__(
        self,
        *,
        edit_tools: Mapping[str, Sequence[str]] = DEFAULT_EDIT_TOOLS,
        read_tools: Mapping[str, Sequence[str]] = DEFAULT_READ_TOOLS,
        shell_tools: Mapping[str, str] = DEFAULT_SHELL_TOOLS,
    ) -> None:
        self._edit_tools = edit_tools
        self._read_tools = read_tools
        self._shell_tools = shell_tools
        self._count = 0
        self._task = ""
        self._instructions = _Ordered()
        self._latest: str | None = None
        self._latest_at: int | None = None  # the message the latest instruction is in
        self._read = _Ordered()
        self._edited = _Ordered()
        self._commands = _Ordered()
        self._pending: dict[Any, _Call] = {}
        self._intent: str | None = None
        self._last_role: Any = None
        self._todos: str | None = None
        self._error: tuple[str, str] | None = None  # (call key, description)
        self._ledger: Ledger | None = Ledger()
        self._native = False  # a native tool call was seen: fenced blocks are not commands
        self._observes = False  # the next user message is the output of a text command

    @property
    def count(self) -> int:
        """How many messages were fed."""
        return self._count

    def copy(self) -> LedgerBuilder:
        """An independent builder in the same state."""
        twin = LedgerBuilder(
            edit_tools=self._edit_tools, read_tools=self._read_tools, shell_tools=self._shell_tools
        )
        twin._count, twin._task, twin._latest = self._count, self._task, self._latest
        twin._latest_at = self._latest_at
        twin._instructions, twin._read = self._instructions.copy(), self._read.copy()
        twin._edited, twin._commands = self._edited.copy(), self._commands.copy()
        twin._pending = dict(self._pending)
        twin._intent, twin._last_role, twin._ledger = self._intent, self._last_role, self._ledger
        twin._todos, twin._error = self._todos, self._error
        twin._native, twin._observes = self._native, self._observes
        return twin

    def feed(self, message: Mapping[str, Any]) -> None:
        """Read the next message of the history (any shape is tolerated; nothing is changed)."""
        index = self._count
        self._count += 1
        self._ledger = None
        if not isinstance(message, Mapping):
            return
        role = message.get("role")
        content = message.get("content")
        blocks: list[Any] = (
            [{"type": "text", "text": content}]
            if isinstance(content, str)
            else content
            if isinstance(content, list)
            else []
        )
        if role == "assistant":
            self._assistant(blocks)
        elif role == "user":
            if index == 0 or (index == 1 and self._last_role == "assistant"):
                self._task = _task_text(blocks)  # after a greeting, message 1 is the task
            else:
                self._user(blocks, output=self._observes)
            self._observes = False
        self._last_role = role

    def extend(self, messages: Iterable[Mapping[str, Any]]) -> None:
        """``feed`` each of ``messages`` in order."""
        for message in messages:
            self.feed(message)

    def ledger(self) -> Ledger:
        """The ledger of every message fed so far (the same object until the next ``feed``)."""
        if self._ledger is None:
            self._ledger = Ledger(
                task=self._task,
                instructions=self._instructions.values(),
                files_read=self._read.values(),
                files_edited=self._edited.values(),
                commands=self._commands.values(),
                unanswered=tuple(call.description for call in self._pending.values()),
                intent=self._intent,
                latest_instruction=self._latest,
                latest_instruction_at=self._latest_at,
                messages=self._count,
                todos=self._todos,
                last_error=None if self._error is None else self._error[1],
            )
        return self._ledger

    # -- assistant messages: tool calls and the last statement -------------------------------

    def _assistant(self, blocks: list[Any]) -> None:
        if self._last_role != "assistant":
            self._pending = {}  # a new turn: earlier calls were answered or abandoned
        last_text = ""
        for block in blocks:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                text = block.get("text")
                last_text = text if isinstance(text, str) else ""
                if isinstance(text, str) and text.strip():
                    self._intent = clip(text, INTENT_CHARS)
                    for tool, parameters in xml_tool_calls(text):
                        self._call(tool, parameters)
            elif kind == "tool_use":
                self._native = True
                name, tool_input = block.get("name"), block.get("input")
                what = self._call(name, tool_input if isinstance(tool_input, dict) else {})
                call_id = block.get("id")
                if call_id is not None:
                    label = name if isinstance(name, str) else "?"
                    self._pending[call_id] = _Call(
                        name, describe(name, what, tool_input), f"{label} {what or ''}".strip()
                    )
        # the harness runs a fenced command the message ends with (see _user_words)
        self._observes = not self._native and issues_command(last_text)

    def _call(self, name: Any, tool_input: Mapping[str, Any]) -> str | None:
        """Record what a tool call reads, edits or runs; the path or command it names, if any."""
        todos = todo_state(name, tool_input)
        if todos is not None:
            self._todos = clip(todos, TODO_CHARS)
        if not isinstance(name, str):
            return None
        if name in EDITOR_TOOLS:
            path = first(tool_input, EDITOR_PATH_KEYS)
            if path is not None:
                (self._read if tool_input.get("command") == "view" else self._edited).add(
                    path, normalize_path(path)
                )
            return path
        keys = self._edit_tools.get(name)
        if keys is not None:
            path = first(tool_input, keys)
            if path is not None:
                self._edited.add(path, normalize_path(path))
            return path
        if PATCH_WORD in name.casefold():
            for value in tool_input.values():
                if isinstance(value, str):
                    self._patched(value)
            return None
        keys = self._read_tools.get(name)
        if keys is not None:
            path = first(tool_input, keys)
            if path is not None:
                self._read.add(path, normalize_path(path))
            return path
        shell_key = self._shell_tools.get(name)
        if shell_key is not None:
            return self._shell(tool_input.get(shell_key))
        return None

    def _shell(self, command: Any) -> str | None:
        argv_patch = False  # Codex's ["apply_patch", PATCH]: read from the argv, not the line
        if isinstance(command, list) and all(isinstance(word, str) for word in command):
            if command and command[0] == "apply_patch" and len(command) == 2:
                argv_patch = True
                self._patched(command[1])
            line = script(command)
        elif isinstance(command, str):
            line = command
        else:
            return None
        # the line quotes the argv for a shell: a path with a quote would be read back garbled,
        # and the patch's own text (its code's quotes and "=>") read as redirections
        if not argv_patch:
            if "*** Begin Patch" in line or "\n+++ " in line:
                self._patched(line)
            for path in shell_write_paths(line):
                self._edited.add(path, normalize_path(path))
        read = shell_read_path(command)
        if read is not None:
            self._read.add(read, normalize_path(read))
        self._commands.add(clip(line, COMMAND_CHARS))
        return line

    def _patched(self, patch: str | None) -> None:
        if patch:
            for path in patch_paths(patch):
                self._edited.add(path, normalize_path(path))

    # -- user messages: results, headers, the user's words -----------------------------------

    def _user(self, blocks: list[Any], *, output: bool) -> None:
        # Cline's older layout: a text that is only a result header has the result in the next
        # text. Any other text after a result (a tool_result block, a header with its result)
        # is read as the user's words unless it is the agent's own. ``output``: the message
        # answers a fenced command (see _user_words), so its texts are that command's output.
        continues = output
        for block in blocks:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "tool_result":
                call = self._pending.pop(block.get("tool_use_id"), None)
                texts = result_texts(block.get("content"))
                for inner in texts:
                    self._text(inner, own=False, answers=False)
                if call is not None:
                    self._outcome(call.key, "\n".join(texts), block.get("is_error"))
                continues = False
            elif kind == "text":
                text = block.get("text")
                if isinstance(text, str):
                    continues = self._text(text, own=not continues, answers=True) or output

    def _text(self, text: str, *, own: bool, answers: bool) -> bool:
        """Read a user text: a Cline result header, the user's words, or the agent's boilerplate.

        ``own``: a text that is not part of a result, so plain text is the user's words;
        ``answers``: a header here answers a waiting call (not inside a tool_result, which
        answered its call already). True when the text is a header alone, whose result is the
        next text.
        """
        header = _RESULT_HEADER.match(text) or _roo_header().match(text)
        if header is not None:
            tool = header.group(1)
            if answers:
                self._answer(tool)
            key = self._header(tool, text, header.group(0))
            self._outcome(key, text[header.end() :], None)
            if tool in _CONTENT_TOOLS:
                return not text[header.end() :].strip()  # contents: not the user's words
            own = False
        found = False
        for tagged in tagged_words(text):
            found = True
            self._instruction(tagged)
        if not found and own:
            words = own_words(text)
            if words is not None:
                self._instruction(words)
        return header is not None and not text[header.end() :].strip()

    def _outcome(self, key: str, text: str, is_error: Any) -> None:
        """Keep a failed call as the last error; a success of the same call resolves it."""
        if result_failed(text, is_error=is_error):
            self._error = (key, clip(f"{key}: {' '.join(text.split())}", ERROR_CHARS))
        elif self._error is not None and self._error[0] == key:
            self._error = None

    def _answer(self, tool: str) -> None:
        """A text result of Cline's answers the first waiting call of that tool."""
        for call_id, call in self._pending.items():
            if _same_tool(call.name, tool):
                del self._pending[call_id]
                return

    def _header(self, tool: str, text: str, header: str) -> str:
        """Record what a Cline result header names; the key of the call it answers."""
        start, end = f"[{tool} for '", "'] Result:"
        if header.startswith(start) and header.endswith(end):
            what = header[len(start) : -len(end)]
        else:  # Roo's "[read_file for 'x'. Reading multiple files ...] Result:"
            roo = _roo_header().match(header)
            what = roo.group(2) if roo is not None else ""
        key = f"{tool} {what}".strip()
        if tool == _COMMAND_TOOL:
            if what:
                self._commands.add(clip(what, COMMAND_CHARS))
                for path in shell_write_paths(what):
                    self._edited.add(path, normalize_path(path))
            return key
        parsed = parse_header(text)
        path = parsed.path if parsed is not None else what
        if not path:
            return key
        if tool == READ_TOOL:
            self._read.add(path, normalize_path(path))
        elif tool in EDIT_TOOLS or tool in self._edit_tools:
            self._edited.add(path, normalize_path(path))
        return key

    def _instruction(self, text: str) -> None:
        words = head_and_tail(text, INSTRUCTION_CHARS)
        if words:
            self._instructions.add(words)
            self._latest = words
            self._latest_at = self._count - 1


def _task_text(blocks: list[Any]) -> str:
    """Message 0's task: Cline's ``<task>`` element, else its texts that are not boilerplate."""
    texts = [
        block["text"]
        for block in blocks
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]
    for text in texts:
        element = task_element(text)
        if element is not None:
            return clip(element, TASK_CHARS)
    own = [words for words in map(own_words, texts) if words is not None]
    return clip("\n\n".join(own), TASK_CHARS)


def build_ledger(history: Sequence[Message], end: int | None = None) -> Ledger:
    """The ledger of ``history[:end]`` (the whole history when ``end`` is None)."""
    builder = LedgerBuilder()
    builder.extend(history[:end])
    return builder.ledger()
