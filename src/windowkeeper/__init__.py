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
    StepError,
    TaskFolderError,
    TraceError,
    WindowkeeperError,
)
from ._version import __version__
from .cline._compaction import Compaction, compact_conversation_for_context_window
from .cline._manager import ContextManager, ContextResult, FileReadOptimization
from .core._file_reads import ClineReadDetector, ReadDetector
from .core._messages import MessageInput, SystemPrompt
from .core._overwrites import CorruptStoreError, EditType, OverwriteStore, Update
from .core._pairing import ensure_tool_results_follow_tool_use
from .core._truncation import Keep
from .core._usage import TokenUsage
from .core._window import ContextWindowInfo, context_window_info
from .rules._anthropic import Violation, validate_messages
from .session._models import (
    ModelInfo,
    ModelTableError,
    UnknownModelWarning,
    lookup_model,
    model_window,
)
from .session._sdk import MessageLike, UsageInput, usage_from_sdk
from .session._session import Checkpoint, ContextSession, Prepared, Synced
from .session._tokens import CalibratedEstimator, TokenCounter
from .session._usage_trust import DistrustedUsageWarning
from .storage import (
    ConcurrentUpdateError,
    LoadReport,
    LoadStatus,
    SessionStore,
    SQLiteStore,
    StorageError,
    TaskFolderStore,
)

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
    "DistrustedUsageWarning",
    "EditType",
    "FileReadOptimization",
    "InvalidRangeError",
    "InvalidUsageError",
    "Keep",
    "LoadReport",
    "LoadStatus",
    "MalformedMessageError",
    "MessageInput",
    "MessageLike",
    "ModelInfo",
    "ModelTableError",
    "OverwriteStore",
    "Prepared",
    "ReadDetector",
    "SQLiteStore",
    "SessionStore",
    "StepError",
    "StorageError",
    "Synced",
    "SystemPrompt",
    "TaskFolderError",
    "TaskFolderStore",
    "TokenCounter",
    "TokenUsage",
    "TraceError",
    "UnknownModelWarning",
    "Update",
    "UsageInput",
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
