"""The text Cline writes around file contents, as both duplicate-read detectors parse it.

Three forms carry a file's contents in a user message:

- a tool header at the start of a text, ``[read_file for 'src/app.py'] Result:``, followed by the
  contents (in the same text, or in the next block in Cline's older layout); the edit tools
  (``write_to_file``, ``replace_in_file``) answer with the same header;
- in an edit's result, the file as saved: ``<final_file_content path="...">...</final_file_content>``;
- a mention of a file in the user's own text: ``<file_content path="...">...</file_content>``.

The patterns are compiled on first use, so importing windowkeeper compiles none of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from typing import NamedTuple

__all__ = [
    "EDIT_TOOLS",
    "READ_TOOL",
    "Header",
    "final_content",
    "mention_notice",
    "mentions",
    "parse_header",
]

READ_TOOL = "read_file"
"""The tool whose header announces a file's contents."""

EDIT_TOOLS = frozenset({"replace_in_file", "write_to_file"})
"""The edit tools, whose results may end with the saved file in ``<final_file_content>``."""

# JavaScript's \s (WhiteSpace and LineTerminator). Python's differs on U+001C-U+001F, U+0085 and
# U+FEFF, so the class is spelled out.
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


class Header(NamedTuple):
    """A tool header: the tool's name, the path in quotes, and the whole header text."""

    tool: str
    path: str
    text: str


@cache
def _header() -> re.Pattern[str]:
    return re.compile(rf"\[([^{_JS_SPACE}]+) for '([^']+)'\] Result:")


@cache
def _final_content() -> re.Pattern[str]:
    return re.compile(r'(<final_file_content path="[^"]*">)[\s\S]*?(</final_file_content>)')


@cache
def _mention() -> re.Pattern[str]:
    return re.compile(r'<file_content path="([^"]*)">([\s\S]*?)</file_content>')


def parse_header(text: str) -> Header | None:
    """The tool header ``text`` starts with, or None."""
    match = _header().match(text)
    if match is None:
        return None
    return Header(match.group(1), match.group(2), match.group(0))


def final_content(text: str) -> re.Match[str] | None:
    """The first ``<final_file_content>`` element in ``text``: group 1 its opening tag, 2 its closing."""
    return _final_content().search(text)


def mentions(text: str) -> Iterator[re.Match[str]]:
    """Every ``<file_content>`` element in ``text``, in order: group 1 the path, 2 the contents."""
    return _mention().finditer(text)


def mention_notice(path: str, notice: str) -> str:
    """The element that replaces a mention of ``path``: ``notice`` in place of the contents."""
    return f'<file_content path="{path}">{notice}</file_content>'
