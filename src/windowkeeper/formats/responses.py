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

from ..rules._responses import validate_responses
from ._responses_back import from_anthropic
from ._responses_in import to_anthropic
from ._responses_notes import NOTE_KEYS
from ._responses_wire import (
    RESPONSES_ITEM_KEYS,
    RESPONSES_MESSAGE_KEYS,
    RESPONSES_PART_KEYS,
    responses_item,
    responses_wire,
    without_trailing_reasoning,
)
from .openai import AnthropicConversation

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
