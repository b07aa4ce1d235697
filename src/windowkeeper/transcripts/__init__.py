"""Readers of the transcripts other agents write, each to the Anthropic shape windowkeeper uses.

One module per agent (Claude Code, Codex, Gemini CLI, OpenHands, Roo, SWE-agent);
``_detect`` tells them apart from a file's first records.
"""

from __future__ import annotations

from ._common import RecordedRequest, Transcript, Unknown

__all__ = ["RecordedRequest", "Transcript", "Unknown"]
