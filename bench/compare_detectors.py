"""The original's duplicate-read detector against windowkeeper's, on the real Cline traces.

For each trace: copies found, copies replaced, and characters saved (UTF-16 units of what is
sent with no range, before and after replacing every duplicate once). Run with
``.venv/bin/python bench/compare_detectors.py``.
"""

from __future__ import annotations

import json
import sys

from _traces import CORPUS
from windowkeeper import ClineReadDetector, ContextManager
from windowkeeper.core._messages import utf16_len
from windowkeeper.session._native_reads import NativeReadDetector
from windowkeeper.session._native_results import ResultPlacer

TRACES = [
    "cline-native-gcp-refactor-redacted",
    "cline-native-unity-task1",
    "cline-native-unity-task2",
]


def sent_chars(messages: list[dict]) -> int:
    return utf16_len(json.dumps(messages, ensure_ascii=False))


def main() -> int:
    if not CORPUS.is_dir():
        print("no corpus beside the checkout; nothing to do")
        return 0
    print(
        f"{'trace':<38} {'detector':<22} {'copies':>7} {'replaced':>9} {'chars sent':>11} {'saved':>9}"
    )
    for name in TRACES:
        history = json.loads((CORPUS / name / "api_conversation_history.json").read_text("utf-8"))
        for label, detector, placed in (
            ("original (cline)", ClineReadDetector(), False),
            ("windowkeeper", NativeReadDetector(), True),
        ):
            view = ResultPlacer().place(history) if placed else history
            manager = ContextManager(detector=detector)
            before = sent_chars(manager.get_truncated_messages(view, None))
            scan = detector.scan(view, 2, manager.store)
            copies = sum(len(found) for found in scan.reads.values())
            manager.apply_context_optimizations(view, 2, 1)
            after = sent_chars(manager.get_truncated_messages(view, None))
            print(
                f"{name:<38} {label:<22} {copies:>7} {scan.duplicates():>9} {before:>11,} {before - after:>9,}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
