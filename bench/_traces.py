"""Where benchmarks find their input: the real traces beside the checkout, or generated ones."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("WINDOWKEEPER_SHARED") or ROOT.parent / "shared")
CORPUS = SHARED / "corpus" / "raw"
GCP_TRACE = CORPUS / "cline-native-gcp-refactor-redacted" / "api_conversation_history.json"


def load_gcp_trace() -> list[dict[str, Any]] | None:
    """The 443-message Cline trace, or None when the corpus is not beside the checkout."""
    if not GCP_TRACE.is_file():
        return None
    return json.loads(GCP_TRACE.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def recorded_usage(message: dict[str, Any]) -> tuple[int, int] | None:
    """(prompt, completion) tokens an assistant message of that trace recorded, if any."""
    metrics = message.get("metrics")
    tokens = metrics.get("tokens") if isinstance(metrics, dict) else None
    if not isinstance(tokens, dict):
        return None
    return int(tokens.get("prompt") or 0), int(tokens.get("completion") or 0)
