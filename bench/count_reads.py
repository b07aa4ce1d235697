"""How many file reads the 443-message Cline trace holds, and how many the original would replace.

Run with ``.venv/bin/python bench/count_reads.py [path/to/api_conversation_history.json]``.
A read is counted by its ``[read_file for '...'] Result:`` header, wherever it sits in a user text
block (parallel tool calls put several results in one message), and by its ``read_file`` tool_use
block. Duplicates are what the original's detector finds over the whole history (scan from
message 2 with an empty store): every copy of a file but the latest, counting write/replace
results and file mentions as copies too. The detector reads tool headers only in block 0 of a
user message, so results of parallel calls after the first are invisible to it. Numbers go into the docs,
never into test assertions.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from _traces import GCP_TRACE
from windowkeeper import ClineReadDetector, EditType, OverwriteStore
from windowkeeper.cline._task import load_task

READ_HEADER = re.compile(r"\[read_file for '([^']+)'\] Result:")


def _user_texts(history: Sequence[dict[str, Any]]) -> Iterator[str]:
    """Every text block of the user messages, including those inside tool_results."""
    for message in history:
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") == "text":
                yield block.get("text") or ""
            elif block.get("type") == "tool_result" and isinstance(block.get("content"), list):
                for inner in block["content"]:
                    if isinstance(inner, dict) and inner.get("type") == "text":
                        yield inner.get("text") or ""


def count_reads(history: Sequence[dict[str, Any]]) -> dict[str, int]:
    """The read counts of one history (see the module docstring)."""
    headers = Counter(path for text in _user_texts(history) for path in READ_HEADER.findall(text))
    tool_uses = sum(
        1
        for message in history
        if message.get("role") == "assistant" and isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "tool_use" and block.get("name") == "read_file"
    )
    scan = ClineReadDetector().scan(history, 2, OverwriteStore())
    seen = Counter(s.edit_type for sightings in scan.reads.values() for s in sightings)
    replaced = Counter(s.edit_type for sightings in scan.reads.values() for s in sightings[:-1])
    return {
        "messages": len(history),
        "read results (headers)": sum(headers.values()),
        "files read": len(headers),
        "files read more than once": sum(1 for count in headers.values() if count > 1),
        "read_file tool_use blocks": tool_uses,
        "read results the detector sees (block 0 only)": seen[EditType.READ_FILE_TOOL],
        "duplicates found by the original's detector": scan.duplicates(),
        "  of which read_file results": replaced[EditType.READ_FILE_TOOL],
        "  of which write/replace results": replaced[EditType.ALTER_FILE_TOOL],
        "  of which file mentions": replaced[EditType.FILE_MENTION],
    }


def main(argv: Sequence[str]) -> int:
    path = Path(argv[1]) if len(argv) > 1 else GCP_TRACE
    if not path.exists():
        print(f"trace not found: {path}", file=sys.stderr)
        return 1
    counts = count_reads(load_task(path).history)
    print(f"trace: {path}")
    width = max(map(len, counts))
    for name, value in counts.items():
        print(f"{name:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
