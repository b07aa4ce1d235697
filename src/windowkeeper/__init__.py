"""windowkeeper: keep a long-running LLM agent's conversation inside its model's context window.

A faithful, then improved, port of the Cline coding agent's context manager. Messages are plain
dicts in the Anthropic Messages shape; nothing windowkeeper is given is ever modified.
"""

from __future__ import annotations

from ._errors import (
    ConfigurationError,
    ContextOverflowError,
    InvalidRangeError,
    InvalidUsageError,
    MalformedMessageError,
    TaskFolderError,
    WindowkeeperError,
)
from .compaction import Compaction, compact_conversation_for_context_window
from .file_reads import ClineReadDetector, ReadDetector
from .manager import ContextManager, ContextResult, FileReadOptimization
from .models import ModelInfo, ModelTableError, UnknownModelWarning, lookup_model, model_window
from .overwrites import CorruptStoreError, EditType, OverwriteStore, Update
from .pairing import Violation, ensure_tool_results_follow_tool_use, validate_messages
from .sdk import usage_from_sdk
from .session import Checkpoint, ContextSession, Prepared, Synced
from .storage import (
    ConcurrentUpdateError,
    LoadReport,
    LoadStatus,
    SessionStore,
    SQLiteStore,
    StorageError,
    TaskFolderStore,
)
from .tokens import CalibratedEstimator, TokenCounter
from .trace import TraceError
from .truncation import Keep
from .usage import TokenUsage
from .window import ContextWindowInfo, context_window_info

__version__ = "0.1.0"

__all__ = [
    "CalibratedEstimator",
    "Checkpoint",
    "ClineReadDetector",
    "Compaction",
    "ConcurrentUpdateError",
    "ConfigurationError",
    "ContextManager",
    "ContextOverflowError",
    "ContextResult",
    "ContextSession",
    "ContextWindowInfo",
    "CorruptStoreError",
    "EditType",
    "FileReadOptimization",
    "InvalidRangeError",
    "InvalidUsageError",
    "Keep",
    "LoadReport",
    "LoadStatus",
    "MalformedMessageError",
    "ModelInfo",
    "ModelTableError",
    "OverwriteStore",
    "Prepared",
    "ReadDetector",
    "SQLiteStore",
    "SessionStore",
    "StorageError",
    "Synced",
    "TaskFolderError",
    "TaskFolderStore",
    "TokenCounter",
    "TokenUsage",
    "TraceError",
    "UnknownModelWarning",
    "Update",
    "Violation",
    "WindowkeeperError",
    "__version__",
    "compact_conversation_for_context_window",
    "context_window_info",
    "ensure_tool_results_follow_tool_use",
    "lookup_model",
    "model_window",
    "usage_from_sdk",
    "validate_messages",
]
