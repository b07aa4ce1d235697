"""The keys of the notes that carry Responses-only data on Anthropic dicts (see formats.responses).

Their own module, so that what reads them (the token counter) needs no converter.
"""

from __future__ import annotations

__all__ = [
    "AFTER_NOTE",
    "ARGUMENTS_NOTE",
    "BEFORE_NOTE",
    "CUSTOM_NOTE",
    "ITEM_ID_NOTE",
    "MESSAGE_NOTE",
    "NOTE_KEYS",
    "STRING_NOTE",
]

BEFORE_NOTE = "responses_before"
AFTER_NOTE = "responses_after"
MESSAGE_NOTE = "responses_message"
STRING_NOTE = "responses_string"
ITEM_ID_NOTE = "responses_item_id"
ARGUMENTS_NOTE = "responses_arguments"
CUSTOM_NOTE = "responses_custom"
NOTE_KEYS = frozenset(
    {
        BEFORE_NOTE,
        AFTER_NOTE,
        MESSAGE_NOTE,
        STRING_NOTE,
        ITEM_ID_NOTE,
        ARGUMENTS_NOTE,
        CUSTOM_NOTE,
    }
)
"""The keys under which Responses-only data rides on Anthropic messages and blocks."""
