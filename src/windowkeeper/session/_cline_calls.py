"""Tool calls written as XML in an assistant's text, as Cline and Roo Code do without native tools.

A call is an element named after the tool holding one element per parameter::

    <write_to_file>
    <path>src/app.py</path>
    <content>...</content>
    </write_to_file>

Roo's newer multi-file form puts files under ``<args><file><path>...</path>...</file></args>``.
:func:`xml_tool_calls` gives ``(tool, input)`` for each call of the tools whose calls say
what changes (files, commands, the todo list), with the parameters as strings; the first
occurrence of a parameter wins, so text inside a file's content cannot replace its path.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache

__all__ = ["XML_TOOLS", "xml_tool_calls"]

XML_TOOLS = (
    "write_to_file",
    "replace_in_file",
    "apply_diff",
    "insert_content",
    "search_and_replace",
    "apply_patch",
    "execute_command",
    "update_todo_list",
    "read_file",
    "attempt_completion",
)
"""The XML tools read: the ones whose parameters name files, commands or the todo list."""


@cache
def _call() -> re.Pattern[str]:
    names = "|".join(XML_TOOLS)
    return re.compile(rf"<({names})>(.*?)</\1>", re.DOTALL)


@cache
def _parameter() -> re.Pattern[str]:
    return re.compile(r"<([A-Za-z_][A-Za-z0-9_]*)>\n?(.*?)\n?</\1>", re.DOTALL)


@cache
def _path() -> re.Pattern[str]:
    return re.compile(r"<path>\s*(.*?)\s*</path>", re.DOTALL)


def xml_tool_calls(text: str) -> Iterator[tuple[str, dict[str, str]]]:
    """``(tool, parameters)`` of each XML tool call in ``text`` (see the module docstring)."""
    if "</" not in text:
        return
    for call in _call().finditer(text):
        name, body = call.group(1), call.group(2)
        if "<args>" in body:
            for path in _path().findall(body):
                yield name, {"path": path}
            continue
        parameters: dict[str, str] = {}
        for parameter in _parameter().finditer(body):
            parameters.setdefault(parameter.group(1), parameter.group(2))
        yield name, parameters
