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
    # Named by the README, the docs or the annotations of public signatures (issue 21).
    "AsyncSummarizer",
    "Clip",
    "DeletedRange",
    "Message",
    "NativeReadDetector",
    "PlotUnavailableError",
    "PostgresStore",
    "ReadScan",
    "Repair",
    "Summarizer",
    "SummaryRequest",
    "TaskDir",
    "ThinkingPolicy",
    "UnreadableFileError",
    "UsageLike",
    "Ledger",
    "Sighting",
    "JSONValue",  # arbitrary JSON in public signatures (issue 21)
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

    def test_lazy_names_are_their_modules_objects(self) -> None:
        """A name loaded on first use is the very object its module defines."""
        for name, module in windowkeeper._LAZY.items():
            defined = importlib.import_module(module, "windowkeeper")
            assert getattr(windowkeeper, name) is getattr(defined, name), name

    def test_lazy_and_eager_names_are_the_surface(self) -> None:
        """Each exported name is either an error or the version, loaded with the package, or
        listed for loading on first use; never both."""
        from windowkeeper import _errors

        eager = {name for name in windowkeeper.__all__ if hasattr(_errors, name)} | {"__version__"}
        assert eager.isdisjoint(windowkeeper._LAZY)
        assert eager | set(windowkeeper._LAZY) == set(windowkeeper.__all__)

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


ERRORS = {
    "ConcurrentUpdateError": ("windowkeeper.storage", "windowkeeper.storage._protocol"),
    "CorruptStoreError": ("windowkeeper.core._overwrites",),
    "ModelTableError": ("windowkeeper.session._models",),
    "PlotUnavailableError": ("windowkeeper.tools._plot",),
    "StorageError": ("windowkeeper.storage", "windowkeeper.storage._protocol"),
    "UnknownModelWarning": ("windowkeeper.session._models",),
}


def test_the_readers_return_a_public_type() -> None:
    """What every transcript reader returns, and the types it holds, are importable from the
    transcripts package."""
    from windowkeeper import transcripts
    from windowkeeper.transcripts import claude_code

    assert {"RecordedRequest", "Transcript", "Unknown"} <= set(transcripts.__all__)
    assert transcripts.Transcript.__annotations__["unknown"] == "tuple[Unknown, ...]"
    assert claude_code.read_claude_code.__annotations__["return"] == "Transcript"


class TestErrors:
    """Every error is defined in ``windowkeeper._errors``; the old import paths still work."""

    def test_every_error_class_is_defined_in_one_module(self) -> None:
        """No module of the package but ``_errors`` defines a public exception class."""
        import pkgutil

        found = []
        for info in pkgutil.walk_packages(windowkeeper.__path__, "windowkeeper."):
            if info.name.startswith(("windowkeeper.adapters.", "windowkeeper.cli")) or (
                info.name.endswith("__main__")
            ):
                continue  # the adapters import their frameworks, the cli click; __main__ runs
            module = importlib.import_module(info.name)
            for name, value in vars(module).items():
                if (
                    isinstance(value, type)
                    and issubclass(value, windowkeeper.WindowkeeperError)
                    and value.__module__ != "windowkeeper._errors"
                ):
                    found.append(f"{info.name}.{name}")
        assert found == []

    def test_old_import_paths_give_the_same_class(self) -> None:
        """Code that imported an error from the module that used to define it still gets it."""
        for name, modules in ERRORS.items():
            for module in modules:
                assert getattr(importlib.import_module(module), name) is getattr(
                    windowkeeper, name
                ), (module, name)

    def test_one_name_for_a_file_that_cannot_be_read(self) -> None:
        """The three older names of "cannot read this file" are the one class, under its name."""
        unreadable = windowkeeper.UnreadableFileError
        assert windowkeeper.TaskFolderError is unreadable
        assert windowkeeper.TraceError is unreadable
        assert windowkeeper.CorruptStoreError is unreadable
        assert unreadable.__name__ == "UnreadableFileError"
        assert issubclass(unreadable, ValueError)


class TestToolsSurface:
    """``windowkeeper.tools`` exports the report and nothing else."""

    def test_tools_all_is_the_report(self) -> None:
        """The report's function, its text form and its price model are the tools' surface."""
        tools = importlib.import_module("windowkeeper.tools")
        assert tools.__all__ == ["PriceModel", "price_model", "report", "report_html"]
        assert all(callable(getattr(tools, name)) for name in tools.__all__)


class TestRulesSurface:
    """``windowkeeper.rules`` exports the validator, its violation and the rule names."""

    def test_rules_all_is_the_validator_and_the_rule_names(self) -> None:
        """Besides the validator and its violation, the surface is the twelve rule names, each
        spelled as the value it holds (``TOOL_USE_UNANSWERED`` is ``"tool-use-unanswered"``)."""
        rules = importlib.import_module("windowkeeper.rules")
        assert rules.__all__ == sorted(set(rules.__all__))
        names = set(rules.__all__) - {"Violation", "validate_messages"}
        assert len(names) == 12
        for name in names:
            assert getattr(rules, name) == name.lower().replace("_", "-"), name

    def test_a_violation_names_its_rule_by_the_exported_constant(self) -> None:
        """What callers filter on is what the validator reports, for a few broken requests."""
        from windowkeeper import rules

        cases = [
            ([{"role": "assistant", "content": "x"}], rules.FIRST_NOT_USER),
            ([{"role": "user", "content": ""}], rules.EMPTY_CONTENT),
            (
                [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
                rules.SAME_ROLE_TWICE,
            ),
            (
                [
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x"}],
                    }
                ],
                rules.TOOL_RESULT_UNKNOWN,
            ),
        ]
        for messages, rule in cases:
            assert [violation.rule for violation in rules.validate_messages(messages)] == [rule]
