"""The public surface: what ``windowkeeper`` exports, guarded so that drift fails a test."""

from __future__ import annotations

import importlib
import inspect

import windowkeeper

EXPECTED = {
    "MessageInput",
    "MessageLike",
    "SystemPrompt",
    "UsageInput",
    "SQLiteStore",
    "SessionStore",
    "StorageError",
    "Synced",
    "TaskFolderStore",
    "StepError",
    "TraceError",
    "usage_from_sdk",
    "model_window",
    "lookup_model",
    "UnknownModelWarning",
    "TokenCounter",
    "Prepared",
    "ModelTableError",
    "ModelInfo",
    "ContextSession",
    "Checkpoint",
    "CalibratedEstimator",
    "ClineReadDetector",
    "Compaction",
    "ContextManager",
    "ConcurrentUpdateError",
    "ConfigurationError",
    "ContextOverflowError",
    "ContextResult",
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
    "OverwriteStore",
    "ReadDetector",
    "TaskFolderError",
    "TokenUsage",
    "Update",
    "Violation",
    "WindowkeeperError",
    "__version__",
    "compact_conversation_for_context_window",
    "context_window_info",
    "ensure_tool_results_follow_tool_use",
    "validate_messages",
}

# Names SPEC.md promises at the top level; they must stay whatever else changes.
SPEC_NAMES = {
    "ContextManager",
    "ContextResult",
    "ContextWindowInfo",
    "Compaction",
    "FileReadOptimization",
    "InvalidUsageError",
    "Keep",
    "TokenUsage",
    "compact_conversation_for_context_window",
    "context_window_info",
    "ensure_tool_results_follow_tool_use",
}


class TestAll:
    """``windowkeeper.__all__``."""

    def test_all_is_sorted(self) -> None:
        """The names are listed in sorted order, without repeats."""
        assert windowkeeper.__all__ == sorted(set(windowkeeper.__all__))

    def test_every_name_is_importable(self) -> None:
        """Each listed name can be imported from the package."""
        module = importlib.import_module("windowkeeper")
        missing = [name for name in windowkeeper.__all__ if not hasattr(module, name)]
        assert missing == []

    def test_all_is_the_expected_surface(self) -> None:
        """The exported names are exactly the reviewed set: adding or dropping one fails here."""
        assert set(windowkeeper.__all__) == EXPECTED

    def test_spec_names_are_exported(self) -> None:
        """Every name SPEC.md documents at the top level is exported."""
        assert set(windowkeeper.__all__) >= SPEC_NAMES

    def test_public_classes_say_they_live_in_the_package(self) -> None:
        """Exported classes and functions come from windowkeeper's own modules (type aliases of
        the typing module aside: ``MessageInput`` is ``Mapping[str, Any]``)."""
        for name in windowkeeper.__all__:
            value = getattr(windowkeeper, name)
            if isinstance(value, type) or inspect.isfunction(value):
                assert value.__module__.startswith("windowkeeper"), name

    def test_version_is_a_string(self) -> None:
        """``__version__`` is a dotted version string."""
        assert isinstance(windowkeeper.__version__, str)
        assert windowkeeper.__version__.count(".") >= 1

    def test_errors_share_one_root(self) -> None:
        """Every exported exception derives from WindowkeeperError."""
        errors = [
            getattr(windowkeeper, name)
            for name in windowkeeper.__all__
            if isinstance(getattr(windowkeeper, name), type)
            and issubclass(getattr(windowkeeper, name), BaseException)
        ]
        assert len(errors) >= 6
        assert all(issubclass(error, windowkeeper.WindowkeeperError) for error in errors)
