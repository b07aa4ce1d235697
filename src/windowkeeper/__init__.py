"""windowkeeper: keep a long-running LLM agent's conversation inside its model's context window.

A faithful, then improved, port of the Cline coding agent's context manager. Messages are plain
dicts in the Anthropic Messages shape; nothing windowkeeper is given is ever modified.

The errors and ``__version__`` are loaded with the package; every other name is imported from its
module on first use (PEP 562 ``__getattr__``), so ``import windowkeeper`` costs almost nothing and
``from windowkeeper import ContextManager`` loads only what the manager needs.
"""

from ._errors import (
    ConcurrentUpdateError,
    ConfigurationError,
    ContextOverflowError,
    CorruptStoreError,
    DistrustedUsageWarning,
    InvalidRangeError,
    InvalidUsageError,
    MalformedMessageError,
    ModelTableError,
    PlotUnavailableError,
    StepError,
    StorageError,
    TaskFolderError,
    TraceError,
    UnknownModelWarning,
    UnreadableFileError,
    WindowkeeperError,
)
from ._version import __version__

# typing (with re and enum) and importlib would cost more than the rest of the import: type
# checkers read the block below, and a name is loaded with the __import__ builtin.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .cline._compaction import Compaction, compact_conversation_for_context_window
    from .cline._manager import ContextManager, ContextResult, FileReadOptimization, TaskDir
    from .core._file_reads import ClineReadDetector, ReadDetector, ReadScan, Sighting
    from .core._messages import JSONValue, Message, MessageInput, SystemPrompt
    from .core._overwrites import EditType, OverwriteStore, Update
    from .core._pairing import ensure_tool_results_follow_tool_use
    from .core._truncation import DeletedRange, Keep
    from .core._usage import TokenUsage, UsageLike
    from .core._window import ContextWindowInfo, context_window_info
    from .formats._wire import Repair
    from .rules._anthropic import Violation, validate_messages
    from .session._clipping import Clip
    from .session._ledger import Ledger
    from .session._models import ModelInfo, lookup_model, model_window
    from .session._native_reads import NativeReadDetector
    from .session._sdk import MessageLike, UsageInput, usage_from_sdk
    from .session._session import Checkpoint, ContextSession, Prepared, Synced
    from .session._summary import AsyncSummarizer, Summarizer, SummaryRequest
    from .session._tokens import CalibratedEstimator, ThinkingPolicy, TokenCounter
    from .storage import LoadReport, LoadStatus, SessionStore, SQLiteStore, TaskFolderStore
    from .storage.postgres import PostgresStore

_SUBPACKAGES = frozenset(
    {
        "adapters",
        "cli",
        "cline",
        "core",
        "formats",
        "rules",
        "session",
        "storage",
        "tools",
        "transcripts",
    }
)

# Where each lazily loaded name lives (the imports above, for type checkers and readers).
_LAZY: dict[str, str] = {
    "Compaction": ".cline._compaction",
    "compact_conversation_for_context_window": ".cline._compaction",
    "ContextManager": ".cline._manager",
    "ContextResult": ".cline._manager",
    "FileReadOptimization": ".cline._manager",
    "TaskDir": ".cline._manager",
    "ClineReadDetector": ".core._file_reads",
    "ReadDetector": ".core._file_reads",
    "ReadScan": ".core._file_reads",
    "Sighting": ".core._file_reads",
    "JSONValue": ".core._messages",
    "Message": ".core._messages",
    "MessageInput": ".core._messages",
    "SystemPrompt": ".core._messages",
    "EditType": ".core._overwrites",
    "OverwriteStore": ".core._overwrites",
    "Update": ".core._overwrites",
    "ensure_tool_results_follow_tool_use": ".core._pairing",
    "DeletedRange": ".core._truncation",
    "Keep": ".core._truncation",
    "TokenUsage": ".core._usage",
    "UsageLike": ".core._usage",
    "ContextWindowInfo": ".core._window",
    "context_window_info": ".core._window",
    "Repair": ".formats._wire",
    "Violation": ".rules._anthropic",
    "validate_messages": ".rules._anthropic",
    "Clip": ".session._clipping",
    "Ledger": ".session._ledger",
    "ModelInfo": ".session._models",
    "lookup_model": ".session._models",
    "model_window": ".session._models",
    "NativeReadDetector": ".session._native_reads",
    "MessageLike": ".session._sdk",
    "UsageInput": ".session._sdk",
    "usage_from_sdk": ".session._sdk",
    "Checkpoint": ".session._session",
    "ContextSession": ".session._session",
    "Prepared": ".session._session",
    "Synced": ".session._session",
    "AsyncSummarizer": ".session._summary",
    "Summarizer": ".session._summary",
    "SummaryRequest": ".session._summary",
    "CalibratedEstimator": ".session._tokens",
    "ThinkingPolicy": ".session._tokens",
    "TokenCounter": ".session._tokens",
    "LoadReport": ".storage",
    "LoadStatus": ".storage",
    "SQLiteStore": ".storage",
    "SessionStore": ".storage",
    "TaskFolderStore": ".storage",
    "PostgresStore": ".storage.postgres",
}

__all__ = [
    "AsyncSummarizer",
    "CalibratedEstimator",
    "Checkpoint",
    "ClineReadDetector",
    "Clip",
    "Compaction",
    "ConcurrentUpdateError",
    "ConfigurationError",
    "ContextManager",
    "ContextOverflowError",
    "ContextResult",
    "ContextSession",
    "ContextWindowInfo",
    "CorruptStoreError",
    "DeletedRange",
    "DistrustedUsageWarning",
    "EditType",
    "FileReadOptimization",
    "InvalidRangeError",
    "InvalidUsageError",
    "JSONValue",
    "Keep",
    "Ledger",
    "LoadReport",
    "LoadStatus",
    "MalformedMessageError",
    "Message",
    "MessageInput",
    "MessageLike",
    "ModelInfo",
    "ModelTableError",
    "NativeReadDetector",
    "OverwriteStore",
    "PlotUnavailableError",
    "PostgresStore",
    "Prepared",
    "ReadDetector",
    "ReadScan",
    "Repair",
    "SQLiteStore",
    "SessionStore",
    "Sighting",
    "StepError",
    "StorageError",
    "Summarizer",
    "SummaryRequest",
    "Synced",
    "SystemPrompt",
    "TaskDir",
    "TaskFolderError",
    "TaskFolderStore",
    "ThinkingPolicy",
    "TokenCounter",
    "TokenUsage",
    "TraceError",
    "UnknownModelWarning",
    "UnreadableFileError",
    "Update",
    "UsageInput",
    "UsageLike",
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


def __getattr__(name: str) -> object:
    """Import a public name from its module the first time it is asked for, then keep it."""
    module = _LAZY.get(name)
    if module is None and name in _SUBPACKAGES:
        # ``windowkeeper.storage`` without importing it first, as when the import loaded it.
        __import__(f"{__name__}.{name}")
        return globals()[name]
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(__import__(module[1:], globals(), None, (name,), 1), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
