"""The keys a conversion between formats does not translate: they travel as they are.

Shared by the Chat Completions and Responses converters, which carry every unknown key of a
message, part or call onto the dict it becomes (and back).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from .._errors import MalformedMessageError
from ..core._messages import Message

__all__ = ["extras"]


def extras(
    source: Message, known: Collection[str], path: str, reserved: Collection[str]
) -> dict[str, Any]:
    """The keys of ``source`` not in ``known``; one in ``reserved`` (the other format's) raises."""
    found = {key: value for key, value in source.items() if key not in known}
    for key in found:
        if key in reserved:
            raise MalformedMessageError(
                f"{path}.{key}", "collides with a key the other format uses; it cannot travel"
            )
    return found
