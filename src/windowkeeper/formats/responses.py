"""OpenAI Responses API input items to the Anthropic shape windowkeeper works on, and back.

::

    Responses input items                         Anthropic
    system / developer message                    AnthropicConversation.system (joined), and a note
    user message: str | [input_text,              user: str | [text, image, input_file, ...]
                         input_image, input_file]
    a run of model items: assistant message       ONE assistant message:
      (output_text, refusal), function_call,        [text, refusal, tool_use, ...]
      custom_tool_call (reasoning, compaction
      between them ride along as notes)
    function_call_output, ... (+ the next user)   ONE user message: [tool_result, ..., text, ...]

Items. A ``message`` item has ``"type": "message"`` or no ``type`` (an easy input message);
its role is ``user``, ``assistant``, ``system`` or ``developer``. The model's items (assistant
messages, ``function_call``, ``custom_tool_call``) that stand together, with only carried
items (below) between them, make one assistant message: an ``output_text`` part becomes a text block, a
``function_call`` a tool_use block with ``id`` = ``call_id`` and the parsed ``arguments`` as
``input`` (``{}`` when they are not a JSON object), a ``custom_tool_call`` a tool_use block with
``{"input": <its input text>}``. A run of ``function_call_output`` / ``custom_tool_call_output``
items becomes one user message of tool_result blocks (``tool_use_id`` = ``call_id``, ``content``
= ``output``), and a user message with content right after them (notes between allowed) joins
that message. An assistant run that is a single ``{"role": "assistant", "content": <str>}``
becomes an assistant message with that string as content. Items of hosted tools
(``web_search_call``, ``file_search_call``, ``computer_call`` and its output, MCP items, ...:
:data:`~windowkeeper.rules._responses.HOSTED_TYPES`) are the provider's own state: carried like
reasoning items (below), sent back unchanged. Other item types (``item_reference``, ...) are
refused.

Parts. ``input_text`` and ``output_text`` become text blocks (which one comes back is decided by
the message's side), ``input_image`` with a string ``image_url`` an image block (a ``data:<type>;
base64,<data>`` URL a base64 source, any other URL a ``url`` source; ``detail`` and other keys
stay on the block). Other part types (``refusal``, ``input_file``, an ``input_image`` given by
``file_id`` only, unknown types) pass through untouched, both ways. Parts of the other side
(``output_text`` in a user message, ``input_text`` in an assistant one) and the block types the
conversion produces (``text``, ``image``, ``tool_use``, ``tool_result``) are refused as parts.
On the way back, keys of an Anthropic image source other than its type, media type, data and
URL have no place in an ``image_url`` and are left out.

Lossless notes. What the Anthropic shape has no place for travels on the Anthropic dicts under
the keys of :data:`NOTE_KEYS` (strip them before sending to the Anthropic API itself; its wire
shape keeps only the keys the API defines anyway):

- ``responses_before``, on a message or a block: the *carried* items (copies) that stood right
  before the item it starts: system and developer messages, ``reasoning`` and ``compaction``
  items, hosted tools' items. On a message when that item starts the Anthropic message, else on the item's first
  block, so a reasoning item travels with the call or message it precedes and leaves with it
  when truncation hides that message. ``responses_after``, on the last message: carried items
  after everything else. The text of system and developer messages is also joined (``"\\n\\n"``,
  in order) into :attr:`AnthropicConversation.system`, wherever they stood.
- ``responses_message``, on the first block of an assistant message item: the item without its
  ``content`` (``type``, ``role``, ``id``, ``status``, ``phase``, ...); the blocks after it that
  are not tool_use blocks and carry no ``responses_before`` are its other parts. It is left out
  only for ``{"type": "message", "role": "assistant", "content": [parts]}`` items that do not
  directly follow another assistant message item: that is what note-free blocks come back as.
- ``responses_string``, ``True`` on a text block that was a message's string content (an
  assistant message item, or a user message joined to tool results), not a list of parts.
- ``responses_item_id``, on a tool_use block: the call item's ``id`` (``fc_...``); ``id`` is the
  ``call_id`` there.
- ``responses_arguments``, on a tool_use block: the raw ``arguments`` string when the parsed
  ``input`` does not print back to exactly it (compact JSON, ``ensure_ascii=False``). Used on the
  way back as long as ``input`` was not changed. ``NaN``, ``Infinity`` and numbers out of the
  float range count as not JSON.
- ``responses_custom``: ``True`` on the tool_use and tool_result blocks of ``custom_tool_call``
  and ``custom_tool_call_output`` items; ``False`` on the tool_result of a
  ``function_call_output`` whose ``call_id`` names an earlier custom call. Without it a
  tool_result comes back as a custom output when an earlier tool_use of the conversation is a
  custom one with its id (so placeholders that truncation adds answer in the right type).
- Unknown keys of an item or a part (``status``, ``namespace``, ``annotations``, ``detail``, a
  user message's ``type``, ``id``, ...) are copied onto the dict it becomes, and back. A key
  that would collide with one the conversion writes raises
  :class:`~windowkeeper.MalformedMessageError`.

Canonical item lists, for which ``from_anthropic(to_anthropic(items).messages) == items``: every
list :func:`to_anthropic` accepts in which some item is not carried (a list of system,
developer, reasoning and compaction items only converts to no message, and they are lost). The
notes above make everything else come back: easy and typed messages, string and list content,
ids, statuses and phases, carried items anywhere, outputs of either type for any call id.

The reverse law ``to_anthropic(from_anthropic(a)).messages == a`` holds for Anthropic
conversations without notes in which roles alternate, no message has keys besides ``role`` and
``content``, each user message lists its tool_result blocks before its other blocks and each
tool_result has a ``content``, assistant content is a string or a non-empty list without image
blocks, tool_use ids are non-empty and inputs are JSON objects of finite numbers, and image
sources are ``base64`` or ``url`` sources without other keys, with no ``;`` or ``,`` in a media
type. Interleaved text and tool_use blocks come back as they were.

:func:`validate_responses` reports what the Responses API refuses in an input list, and
:func:`responses_wire` keeps what it takes; both are described there.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Collection, Sequence
from typing import Any, cast

from .._errors import MalformedMessageError
from ..core._messages import Message, MessageInput, SystemPrompt, check_history
from ..rules._responses import (
    ASSISTANT_PARTS,
    CALL_TYPES,
    CARRIED_TYPES,
    HOSTED_TYPES,
    ITEM_TYPES,
    OUTPUT_TYPES,
    ROLES,
    SYSTEM_ROLES,
    USER_PARTS,
    validate_responses,
)
from ..rules._responses import in_a as _in_a
from ..rules._responses import one_of as _one_of
from ._extras import extras as _extras
from ._responses_notes import (
    AFTER_NOTE,
    ARGUMENTS_NOTE,
    BEFORE_NOTE,
    CUSTOM_NOTE,
    ITEM_ID_NOTE,
    MESSAGE_NOTE,
    NOTE_KEYS,
    STRING_NOTE,
)
from ._wire import EMPTY_MESSAGE_NOTICE, Repair
from .openai import AnthropicConversation, TrackedConversation

__all__ = [
    "NOTE_KEYS",
    "RESPONSES_ITEM_KEYS",
    "RESPONSES_MESSAGE_KEYS",
    "RESPONSES_PART_KEYS",
    "AnthropicConversation",
    "from_anthropic",
    "responses_item",
    "responses_wire",
    "to_anthropic",
    "validate_responses",
    "without_trailing_reasoning",
]

_PRODUCED_BLOCKS = frozenset({"text", "image", "tool_use", "tool_result"})
_DATA_URL = re.compile(r"data:([^;,]+);base64,(.*)", re.DOTALL)


# -- Responses -> Anthropic ------------------------------------------------------------------


def to_anthropic(items: Sequence[MessageInput], *, name: str = "input") -> AnthropicConversation:
    """The Anthropic form of OpenAI Responses input ``items``; the input is not modified.

    See the module docstring for the mapping and the notes. Raises
    :class:`~windowkeeper.MalformedMessageError` naming the place, e.g.
    ``input[3].arguments``, for input outside the supported subset.
    """
    if not isinstance(items, Sequence) or isinstance(items, str | bytes):
        raise MalformedMessageError(
            name, f"expected a list of input items, got {type(items).__name__}"
        )
    return to_anthropic_tracked(items, name=name).conversation


def to_anthropic_tracked(
    items: Sequence[MessageInput], *, name: str = "input", custom_ids: Collection[str] = ()
) -> TrackedConversation:
    """What :func:`to_anthropic` gives, with where each message and system text came from.

    ``custom_ids`` are the ids of custom tool calls made before ``items`` (for a caller that
    converts a tail of a longer list again).
    """
    if not isinstance(items, Sequence) or isinstance(items, str | bytes):
        raise MalformedMessageError(
            name, f"expected a list of input items, got {type(items).__name__}"
        )
    builder = _Builder()
    builder.custom_ids.update(custom_ids)
    for index, item in enumerate(items):
        builder.index = index
        builder.add(item, f"{name}[{index}]")
    return TrackedConversation(builder.finish(), tuple(builder.ends), tuple(builder.system_parts))


def _item_type(item: Any, path: str) -> str:
    """The type of ``item`` (``message`` for an easy input message); raises for unknown ones."""
    if not isinstance(item, dict):
        raise MalformedMessageError(path, f"expected an input item dict, got {type(item).__name__}")
    kind = item.get("type")
    if kind is None and "type" not in item and "role" in item:
        kind = "message"
    if not _one_of(kind, ITEM_TYPES):
        raise MalformedMessageError(
            f"{path}.type", f"expected one of {', '.join(sorted(ITEM_TYPES))}, got {kind!r}"
        )
    if kind == "message" and not _one_of(item.get("role"), ROLES):
        raise MalformedMessageError(
            f"{path}.role", f"expected one of {', '.join(sorted(ROLES))}, got {item.get('role')!r}"
        )
    return str(kind)


class _Builder:
    """Builds the Anthropic messages item by item (see the module docstring)."""

    def __init__(self) -> None:
        self.output: list[Message] = []
        self.system: list[str] = []
        self.pending: list[Message] = []  # carried items since the last converted item
        self.mode: str | None = None  # "assistant" / "results": what output[-1] is still taking
        self.open_message = False  # the last model item is an assistant message with parts
        self.runs: dict[int, list[Message]] = {}  # assistant message index -> its model items
        self.custom_ids: set[str] = set()
        self.index = 0  # of the item being added
        self.ends: list[int] = []  # per message: the index past the last item it took
        self.system_parts: list[tuple[int, str]] = []

    def add(self, item: Any, path: str) -> None:
        kind = _item_type(item, path)
        role = item.get("role") if kind == "message" else None
        if kind in CARRIED_TYPES or role in SYSTEM_ROLES:
            if role in SYSTEM_ROLES:
                text = _system_text(item, path)
                self.system.append(text)
                self.system_parts.append((self.index, text))
            self.pending.append(dict(item))
            return
        if kind in CALL_TYPES or role == "assistant":
            self._model_item(item, kind, path)
        elif kind in OUTPUT_TYPES:
            self._output(item, kind, path)
        else:
            self._user(item, path)
        del self.ends[len(self.output) :]
        self.ends.extend([0] * (len(self.output) - len(self.ends)))
        self.ends[-1] = self.index + 1

    def finish(self) -> AnthropicConversation:
        if self.pending and self.output:
            self.output[-1][AFTER_NOTE] = self.pending
        for index, run in self.runs.items():
            if len(run) == 1 and set(run[0]) == {"role", "content"}:
                content = run[0]["content"]
                if isinstance(content, str):
                    self.output[index]["content"] = content
        system = "\n\n".join(self.system) if self.system else None
        return AnthropicConversation(system, self.output)

    def _start(self, role: str, mode: str | None) -> Message:
        message: Message = {"role": role, "content": []}
        if self.pending:
            message[BEFORE_NOTE], self.pending = self.pending, []
        self.output.append(message)
        self.mode = mode
        self.open_message = False
        return message

    def _attach(self, blocks: list[Message]) -> None:
        """Notes the carried items on the first of ``blocks`` (an item inside a message)."""
        if self.pending and blocks:
            blocks[0][BEFORE_NOTE], self.pending = self.pending, []

    def _model_item(self, item: Message, kind: str, path: str) -> None:
        if self.mode != "assistant":
            self._start("assistant", "assistant")
            self.runs[len(self.output) - 1] = []
        if kind == "function_call":
            blocks = [_function_call(item, path)]
        elif kind == "custom_tool_call":
            blocks = [_custom_call(item, path)]
            self.custom_ids.add(blocks[0]["id"])
        else:
            blocks = _assistant_blocks(item, path, absorbs=self.open_message and not self.pending)
        self._attach(blocks)
        self.output[-1]["content"].extend(blocks)
        self.runs[len(self.output) - 1].append(item)
        self.open_message = kind == "message" and isinstance(item.get("content"), list)

    def _output(self, item: Message, kind: str, path: str) -> None:
        if self.mode != "results":
            self._start("user", "results")
        block = _tool_result(item, kind, path, self.custom_ids)
        self._attach([block])
        self.output[-1]["content"].append(block)

    def _user(self, item: Message, path: str) -> None:
        extras = _extras(item, {"role", "content"}, path, NOTE_KEYS)
        content = _content(item, path, _user_part)
        if self.mode == "results" and content:
            blocks = (
                [{"type": "text", "text": content, STRING_NOTE: True}]
                if isinstance(content, str)
                else content
            )
            self._attach(blocks)
            message = self.output[-1]
            message.update(extras)
            message["content"].extend(blocks)
            self.mode = None
            return
        message = self._start("user", None)
        message.update(extras)
        message["content"] = content


def _content(item: Message, path: str, convert: Callable[[Any, str], Message]) -> str | list[Any]:
    if "content" not in item:
        raise MalformedMessageError(f"{path}.content", "missing")
    content = item["content"]
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise MalformedMessageError(
            f"{path}.content", f"expected a string or a list of parts, got {type(content).__name__}"
        )
    return [convert(part, f"{path}.content[{position}]") for position, part in enumerate(content)]


def _system_text(item: Message, path: str) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise MalformedMessageError(
            f"{path}.content",
            f"expected a string or input_text parts, got {type(content).__name__}",
        )
    texts = []
    for position, part in enumerate(content):
        where = f"{path}.content[{position}]"
        if not isinstance(part, dict) or part.get("type") != "input_text":
            raise MalformedMessageError(
                where, "system and developer messages take input_text parts only"
            )
        texts.append(_text_of(part, where))
    return "\n\n".join(texts)


def _part_type(part: Any, path: str) -> str:
    if not isinstance(part, dict) or not isinstance(part.get("type"), str):
        raise MalformedMessageError(path, "expected a content part with a string 'type'")
    return str(part["type"])


def _text_of(part: Message, path: str, key: str = "text") -> str:
    text = part.get(key)
    if not isinstance(text, str):
        raise MalformedMessageError(
            f"{path}.{key}", f"expected a string, got {type(text).__name__}"
        )
    return text


def _user_part(part: Any, path: str) -> Message:
    """The block for a part of a user message or of a tool output."""
    kind = _part_type(part, path)
    if kind == "input_text":
        text = _text_of(part, path)
        return {**_extras(part, {"type", "text"}, path, NOTE_KEYS), "type": "text", "text": text}
    if kind == "input_image" and isinstance(part.get("image_url"), str):
        return _image_block(part, path)
    if kind in ASSISTANT_PARTS or kind in _PRODUCED_BLOCKS:
        raise MalformedMessageError(f"{path}.type", f"a {kind!r} part cannot be in a user message")
    return _untouched(part, path)


def _assistant_part(part: Any, path: str) -> Message:
    kind = _part_type(part, path)
    if kind == "output_text":
        text = _text_of(part, path)
        return {**_extras(part, {"type", "text"}, path, NOTE_KEYS), "type": "text", "text": text}
    if kind in USER_PARTS or kind in _PRODUCED_BLOCKS:
        raise MalformedMessageError(
            f"{path}.type", f"a {kind!r} part cannot be in an assistant message"
        )
    return _untouched(part, path)


def _untouched(part: Message, path: str) -> Message:
    return _extras(part, (), path, NOTE_KEYS)


def _image_block(part: Message, path: str) -> Message:
    url = part["image_url"]
    match = _DATA_URL.fullmatch(url)
    if match:
        source = {"type": "base64", "media_type": match[1], "data": match[2]}
    else:
        source = {"type": "url", "url": url}
    extras = _extras(part, {"type", "image_url"}, path, {"source", *NOTE_KEYS})
    return {**extras, "type": "image", "source": source}


def _assistant_blocks(item: Message, path: str, *, absorbs: bool) -> list[Message]:
    """The blocks of an assistant message item; ``absorbs``: note-free blocks would join the last."""
    _extras(item, {"content"}, path, NOTE_KEYS)
    envelope = {key: value for key, value in item.items() if key != "content"}
    content = _content(item, path, _assistant_part)
    if isinstance(content, str):
        return [{"type": "text", "text": content, STRING_NOTE: True, MESSAGE_NOTE: envelope}]
    if not content:
        raise MalformedMessageError(f"{path}.content", "an assistant message needs a part")
    plain = set(item) == {"type", "role", "content"} and item["type"] == "message"
    if absorbs or not plain:
        content[0][MESSAGE_NOTE] = envelope
    return content


def _call_id(item: Message, path: str) -> str:
    call_id = item.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        raise MalformedMessageError(f"{path}.call_id", "expected a non-empty string")
    return call_id


def _function_call(item: Message, path: str) -> Message:
    call_id = _call_id(item, path)
    tool_name = _text_of(item, path, "name")
    arguments = _text_of(item, path, "arguments")
    extras = _extras(
        item, {"type", "call_id", "name", "arguments", "id"}, path, {"input", *NOTE_KEYS}
    )
    parsed = _parse_arguments(arguments)
    block = {**extras, "type": "tool_use", "id": call_id, "name": tool_name, "input": parsed}
    if "id" in item:
        block[ITEM_ID_NOTE] = item["id"]
    if _dump(parsed) != arguments:
        block[ARGUMENTS_NOTE] = arguments
    return block


def _custom_call(item: Message, path: str) -> Message:
    call_id = _call_id(item, path)
    tool_name = _text_of(item, path, "name")
    text = _text_of(item, path, "input")
    extras = _extras(item, {"type", "call_id", "name", "input", "id"}, path, NOTE_KEYS)
    block = {
        **extras,
        "type": "tool_use",
        "id": call_id,
        "name": tool_name,
        "input": {"input": text},
        CUSTOM_NOTE: True,
    }
    if "id" in item:
        block[ITEM_ID_NOTE] = item["id"]
    return block


def _tool_result(item: Message, kind: str, path: str, custom_ids: set[str]) -> Message:
    call_id = _call_id(item, path)
    if "output" not in item:
        raise MalformedMessageError(f"{path}.output", "missing")
    output = item["output"]
    if isinstance(output, list):
        content: Any = [
            _user_part(part, f"{path}.output[{position}]") for position, part in enumerate(output)
        ]
    elif isinstance(output, str):
        content = output
    else:
        raise MalformedMessageError(
            f"{path}.output", f"expected a string or a list of parts, got {type(output).__name__}"
        )
    extras = _extras(
        item, {"type", "call_id", "output"}, path, {"tool_use_id", "content", *NOTE_KEYS}
    )
    block = {**extras, "type": "tool_result", "tool_use_id": call_id, "content": content}
    if kind == "custom_tool_call_output":
        block[CUSTOM_NOTE] = True
    elif call_id in custom_ids:
        block[CUSTOM_NOTE] = False
    return block


def _reject_constant(text: str) -> Any:
    raise ValueError(f"{text} is not a JSON number")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text} is out of range")
    return number


def _parse_arguments(arguments: str) -> dict[str, Any]:
    """The arguments as a JSON object; ``{}`` when they are not one."""
    try:
        parsed = json.loads(arguments, parse_constant=_reject_constant, parse_float=_finite)
    except (ValueError, RecursionError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


# -- Anthropic -> Responses ------------------------------------------------------------------


def from_anthropic(
    messages: Sequence[MessageInput],
    *,
    system: SystemPrompt | None = None,
    name: str = "messages",
) -> list[Message]:
    """OpenAI Responses input items for Anthropic-shaped ``messages``; nothing is modified.

    The notes of :func:`to_anthropic` are used where present. Without them: an assistant
    message's string content becomes ``{"role": "assistant", "content": <str>}``, each run of its
    non-tool_use blocks one ``{"type": "message", "role": "assistant", "content": [...]}`` item
    (text blocks as ``output_text`` parts, other blocks as they are) and each tool_use block a
    ``function_call`` (``arguments`` printed compactly). A user message's tool_result blocks
    become output items (in block order), followed by a user message with its other blocks
    (text as ``input_text``, images as ``input_image``), if any. Keys of a message beside
    ``role`` and ``content`` go onto that user message, or, for a message of tool_results only
    and for an assistant message, onto each item it becomes. ``system`` (Anthropic's system
    parameter: a string or text blocks) becomes a first system message; leave it None for
    messages from :func:`to_anthropic`, whose system messages travel with them as notes.
    """
    check_history(messages, name)
    checked = cast("Sequence[Message]", messages)  # check_history refused any message not a dict
    output: list[Message] = []
    if system is not None:
        if isinstance(system, str):
            output.append({"role": "system", "content": system})
        else:
            parts = [_user_part_back(block, f"system[{i}]") for i, block in enumerate(system)]
            output.append({"role": "system", "content": parts})
    custom_ids: set[str] = set()
    for index, message in enumerate(checked):
        path = f"{name}[{index}]"
        extras = _extras(message, {"role", "content", *NOTE_KEYS}, path, ())
        output.extend(_notes(message, BEFORE_NOTE, path))
        if message["role"] == "assistant":
            output.extend(_assistant_items(message["content"], extras, path, custom_ids))
        else:
            output.extend(_user_items(message["content"], extras, path, custom_ids))
        output.extend(_notes(message, AFTER_NOTE, path))
    return output


def _notes(holder: Message, key: str, path: str) -> list[Message]:
    notes = holder.get(key)
    if notes is None:
        return []
    if not isinstance(notes, list) or not all(isinstance(note, dict) for note in notes):
        raise MalformedMessageError(f"{path}.{key}", "expected a list of input item dicts")
    return [dict(note) for note in notes]


def _strip(block: Message, known: Collection[str], path: str, reserved: Collection[str]) -> Message:
    return _extras(block, {*known, *NOTE_KEYS}, path, reserved)


def _user_items(
    content: Any, extras: dict[str, Any], path: str, custom_ids: set[str]
) -> list[Message]:
    if isinstance(content, str):
        return [{**extras, "role": "user", "content": content}]
    results = []
    rest = []
    for position, block in enumerate(content):
        where = f"{path}.content[{position}]"
        if block["type"] == "tool_result":
            results.append((block, where))
        elif block["type"] == "tool_use":
            raise MalformedMessageError(where, "a tool_use block in a user message")
        else:
            rest.append((block, where))
    items: list[Message] = []
    for block, where in results:
        items.extend(_notes(block, BEFORE_NOTE, where))
        items.append(_output_item(block, {} if rest else extras, where, custom_ids))
    if rest or not results:
        for block, where in rest:
            items.extend(_notes(block, BEFORE_NOTE, where))
        first = rest[0][0] if len(rest) == 1 else None
        if first is not None and first.get(STRING_NOTE) is True and first["type"] == "text":
            user_content: Any = _text_of(first, rest[0][1])
        else:
            user_content = [_user_part_back(block, where) for block, where in rest]
        items.append({**extras, "role": "user", "content": user_content})
    return items


def _output_item(
    block: Message, extras: dict[str, Any], path: str, custom_ids: set[str]
) -> Message:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str):
        raise MalformedMessageError(f"{path}.tool_use_id", "expected a string")
    own = _strip(block, {"type", "tool_use_id", "content"}, path, {"call_id", "output"})
    content = block.get("content", "")
    if isinstance(content, list):
        content = [
            _user_part_back(item, f"{path}.content[{position}]")
            for position, item in enumerate(content)
        ]
    elif not isinstance(content, str):
        raise MalformedMessageError(f"{path}.content", "expected a string or a list of blocks")
    note = block.get(CUSTOM_NOTE)
    custom = note if isinstance(note, bool) else call_id in custom_ids
    kind = "custom_tool_call_output" if custom else "function_call_output"
    return {**extras, **own, "type": kind, "call_id": call_id, "output": content}


def _user_part_back(block: Any, path: str) -> Message:
    """The part of a user message or of a tool output for an Anthropic block."""
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        raise MalformedMessageError(path, "expected a block with a string 'type'")
    kind = block["type"]
    if kind == "text":
        text = _text_of(block, path)
        return {**_strip(block, {"type", "text"}, path, ()), "type": "input_text", "text": text}
    if kind == "image":
        url = _image_url(block, path)
        extras = _strip(block, {"type", "source"}, path, {"image_url"})
        return {**extras, "type": "input_image", "image_url": url}
    return _strip(block, (), path, ())


def _image_url(block: Message, path: str) -> str:
    source = block.get("source")
    kind = source.get("type") if isinstance(source, dict) else None
    if kind == "base64" and isinstance(source, dict):
        media_type, data = source.get("media_type"), source.get("data")
        if not isinstance(media_type, str) or not isinstance(data, str):
            raise MalformedMessageError(f"{path}.source", "needs string media_type and data")
        return f"data:{media_type};base64,{data}"
    if kind == "url" and isinstance(source, dict) and isinstance(source.get("url"), str):
        return str(source["url"])
    raise MalformedMessageError(
        f"{path}.source", f"an image source of type {kind!r} has no Responses form"
    )


def _assistant_items(
    content: Any, extras: dict[str, Any], path: str, custom_ids: set[str]
) -> list[Message]:
    if isinstance(content, str):
        return [{**extras, "role": "assistant", "content": content}]
    items: list[Message] = []
    current: Message | None = None  # the message item note-free blocks join
    for position, block in enumerate(content):
        where = f"{path}.content[{position}]"
        before = _notes(block, BEFORE_NOTE, where)
        if before:
            items.extend(before)
            current = None
        kind = block["type"]
        if kind == "tool_use":
            current = None
            items.append({**extras, **_call_item(block, where, custom_ids)})
            continue
        if kind == "tool_result":
            raise MalformedMessageError(where, "a tool_result block in an assistant message")
        part = _assistant_part_back(block, where)
        envelope = block.get(MESSAGE_NOTE)
        string = block.get(STRING_NOTE) is True and kind == "text"
        if envelope is not None and not isinstance(envelope, dict):
            raise MalformedMessageError(f"{where}.{MESSAGE_NOTE}", "expected an item dict")
        if string:
            head = {"role": "assistant"} if envelope is None else envelope
            items.append({**extras, **head, "content": part["text"]})
            current = None
        elif envelope is not None:
            current = {**extras, **envelope, "content": [part]}
            items.append(current)
        elif current is not None:
            current["content"].append(part)
        else:
            current = {**extras, "type": "message", "role": "assistant", "content": [part]}
            items.append(current)
    return items


def _assistant_part_back(block: Message, path: str) -> Message:
    if block["type"] == "text":
        text = _text_of(block, path)
        return {**_strip(block, {"type", "text"}, path, ()), "type": "output_text", "text": text}
    return _strip(block, (), path, ())


def _call_item(block: Message, path: str, custom_ids: set[str]) -> Message:
    call_id = block.get("id")
    tool_name = block.get("name")
    tool_input = block.get("input")
    if not isinstance(call_id, str) or not isinstance(tool_name, str):
        raise MalformedMessageError(path, "a tool_use block needs a string id and name")
    if not isinstance(tool_input, dict):
        raise MalformedMessageError(f"{path}.input", "expected an object")
    extras = _strip(block, {"type", "id", "name", "input"}, path, {"call_id", "arguments"})
    if block.get(CUSTOM_NOTE) is True:
        custom_ids.add(call_id)
        text = tool_input.get("input")
        if set(tool_input) != {"input"} or not isinstance(text, str):
            text = _printed(tool_input, path)
        item = {**extras, "type": "custom_tool_call", "call_id": call_id, "name": tool_name}
        item["input"] = text
    else:
        arguments = _printed(tool_input, path)
        raw = block.get(ARGUMENTS_NOTE)
        if isinstance(raw, str) and _printed(_parse_arguments(raw), path) == arguments:
            arguments = raw
        item = {
            **extras,
            "type": "function_call",
            "call_id": call_id,
            "name": tool_name,
            "arguments": arguments,
        }
    if ITEM_ID_NOTE in block:
        item["id"] = block[ITEM_ID_NOTE]
    return item


def _printed(value: Any, path: str) -> str:
    try:
        return _dump(value)
    except (TypeError, ValueError, RecursionError) as error:
        raise MalformedMessageError(f"{path}.input", f"not JSON: {error}") from None


# -- the wire shape --------------------------------------------------------------------------

_INPUT_MESSAGE_KEYS = frozenset({"type", "role", "content", "status", "phase"})
RESPONSES_MESSAGE_KEYS: dict[str, frozenset[str]] = {
    "user": _INPUT_MESSAGE_KEYS,
    "system": _INPUT_MESSAGE_KEYS,
    "developer": _INPUT_MESSAGE_KEYS,
    "assistant": frozenset({"type", "role", "content", "id", "status", "phase"}),
}
"""Message role -> the keys a Responses input message of that role may have (the SDK's
``EasyInputMessageParam``, ``Message`` and ``ResponseOutputMessageParam``)."""

RESPONSES_ITEM_KEYS: dict[str, frozenset[str]] = {
    "function_call": frozenset(
        {"type", "call_id", "name", "arguments", "id", "status", "namespace", "caller", "async"}
    ),
    "function_call_output": frozenset(
        {"type", "call_id", "output", "id", "status", "caller", "name", "namespace"}
    ),
    "custom_tool_call": frozenset(
        {"type", "call_id", "name", "input", "id", "caller", "namespace", "async"}
    ),
    "custom_tool_call_output": frozenset({"type", "call_id", "output", "id", "caller"}),
    "reasoning": frozenset({"type", "id", "summary", "content", "encrypted_content", "status"}),
    "compaction": frozenset({"type", "encrypted_content", "id"}),
}
"""Item type (other than ``message``) -> its keys (checked against the SDK in the tests)."""

_CACHE = "prompt_cache_breakpoint"
RESPONSES_PART_KEYS: dict[str, frozenset[str]] = {
    "input_text": frozenset({"type", "text", _CACHE}),
    "input_image": frozenset({"type", "image_url", "file_id", "detail", _CACHE}),
    "input_file": frozenset(
        {"type", "file_data", "file_id", "file_url", "filename", "detail", _CACHE}
    ),
    "output_text": frozenset({"type", "text", "annotations", "logprobs"}),
    "refusal": frozenset({"type", "refusal"}),
}
"""Content part type -> its keys (message content, and the parts of a tool output)."""

_REASONING_ENTRY_KEYS = frozenset({"type", "text"})


def _only(value: dict[str, Any], keys: frozenset[str]) -> dict[str, Any]:
    return {key: item for key, item in value.items() if key in keys and item is not None}


def _wire_parts(
    parts: list[Any], allowed: frozenset[str], path: str, where: str, repairs: list[Repair]
) -> list[Message]:
    shaped = []
    for position, part in enumerate(parts):
        kind = part.get("type") if isinstance(part, dict) else None
        if not _one_of(kind, allowed):
            repairs.append(
                Repair(f"{path}[{position}]", f"dropped: a {kind!r} part cannot be in {where}")
            )
            continue
        assert isinstance(part, dict)
        shaped.append(_only(part, RESPONSES_PART_KEYS[str(kind)]))
    return shaped


def responses_item(item: Any, path: str, repairs: list[Repair]) -> Message | None:
    """``item`` as the Responses API takes it (a new dict), or None when it is dropped.

    The item keeps the keys its type (a message: its role) defines, each part of its content or
    output those of its type, each reasoning summary and content entry ``type`` and ``text``;
    keys whose value is None are left out. An item of another type, and a part of a type its
    message or output does not take, is dropped; a content or output list emptied that way gets
    :data:`~windowkeeper.formats._wire.EMPTY_MESSAGE_NOTICE` instead. Each change is added to ``repairs``.
    """
    if not isinstance(item, dict):
        repairs.append(Repair(path, "dropped: not an input item"))
        return None
    kind = item.get("type")
    if kind is None and "type" not in item and "role" in item:
        kind = "message"
    if kind == "message":
        role = item.get("role")
        keys = RESPONSES_MESSAGE_KEYS.get(role) if isinstance(role, str) else None
        if keys is None:
            repairs.append(Repair(path, f"dropped: a message with role {role!r}"))
            return None
        shaped = _only(item, keys)
        content = shaped.get("content")
        if isinstance(content, list):
            allowed = ASSISTANT_PARTS if role == "assistant" else USER_PARTS
            parts = _wire_parts(content, allowed, f"{path}.content", _in_a(role), repairs)
            if content and not parts:
                repairs.append(Repair(f"{path}.content", "empty: replaced by a notice"))
                notice = "output_text" if role == "assistant" else "input_text"
                parts = [{"type": notice, "text": EMPTY_MESSAGE_NOTICE}]
            shaped["content"] = parts
        return shaped
    if _one_of(kind, HOSTED_TYPES):
        return dict(item)  # a hosted tool's item: the provider's own state, sent as it came
    keys = RESPONSES_ITEM_KEYS.get(kind) if isinstance(kind, str) else None
    if keys is None:
        repairs.append(Repair(path, f"dropped: item type {kind!r} is not supported"))
        return None
    shaped = _only(item, keys)
    output = shaped.get("output")
    if kind in OUTPUT_TYPES and isinstance(output, list):
        parts = _wire_parts(output, USER_PARTS, f"{path}.output", "a tool output", repairs)
        if output and not parts:
            repairs.append(Repair(f"{path}.output", "empty: replaced by a notice"))
            shaped["output"] = EMPTY_MESSAGE_NOTICE
        else:
            shaped["output"] = parts
    if kind == "reasoning":
        for key in ("summary", "content"):
            entries = shaped.get(key)
            if isinstance(entries, list):
                shaped[key] = [
                    _only(entry, _REASONING_ENTRY_KEYS) if isinstance(entry, dict) else entry
                    for entry in entries
                ]
    return shaped


def responses_wire(
    items: Sequence[MessageInput], name: str = "input"
) -> tuple[list[Message], list[Repair]]:
    """``items`` in the Responses API's input shape (see :func:`responses_item`), and the repairs."""
    repairs: list[Repair] = []
    shaped = []
    for index, item in enumerate(items):
        kept = responses_item(item, f"{name}[{index}]", repairs)
        if kept is not None:
            shaped.append(kept)
    sent, dropped = without_trailing_reasoning(shaped, name)
    return sent, [*repairs, *dropped]


def without_trailing_reasoning(
    items: list[Message], name: str = "input"
) -> tuple[list[Message], tuple[Repair, ...]]:
    """``items`` without the reasoning items at their end, which the API refuses (nothing
    follows them to say what they were produced with), and a repair for each; ``items`` itself
    when there is none."""
    end = len(items)
    while end and items[end - 1].get("type") == "reasoning":
        end -= 1
    if end == len(items):
        return items, ()
    dropped = tuple(
        Repair(f"{name}[{index}]", "dropped: a reasoning item with nothing after it")
        for index in range(end, len(items))
    )
    return items[:end], dropped
