"""What start-up loads: ``import windowkeeper`` and ``windowkeeper --help``, each in a fresh interpreter.

These tests state the structure that keeps start-up fast, never a time (bench/bench_import.py
measures that): ``import windowkeeper`` loads the errors and the version only, every other public
name is imported on first use; the library imports no tool, no click and no module it needs only
later; the model table is read on the first lookup; ``--help`` builds the command table without
the library or the tools.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

import windowkeeper
from windowkeeper.cli import cli
from windowkeeper.tools._replay import PolicyName, UsageSource
from windowkeeper.tools._trace import TraceFormat

# A child started with coverage's subprocess patch would load coverage (and sqlite3 with it).
_COVERAGE_VARIABLES = ("COVERAGE_PROCESS_START", "COVERAGE_PROCESS_CONFIG")


def run_child(code: str) -> Any:
    """Run ``code`` in a fresh interpreter and return the JSON it prints on its last line."""
    env = {key: value for key, value in os.environ.items() if key not in _COVERAGE_VARIABLES}
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout.splitlines()[-1])


IMPORT = """
    import json, sys
    import windowkeeper
    print(json.dumps(sorted(sys.modules)))
"""

HELP = """
    import contextlib, io, json, sys
    from windowkeeper.cli import main
    sys.argv = ["windowkeeper", "--help"]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        main()
    print(json.dumps(sorted(sys.modules)))
"""


@pytest.fixture(scope="module")
def imported() -> set[str]:
    """The modules loaded by ``import windowkeeper``."""
    return set(run_child(IMPORT))


@pytest.fixture(scope="module")
def helped() -> set[str]:
    """The modules loaded by ``windowkeeper --help``."""
    return set(run_child(HELP))


def under(modules: set[str], *packages: str) -> list[str]:
    """The ``modules`` that are one of ``packages`` or inside one."""
    return sorted(m for m in modules if any(m == p or m.startswith(f"{p}.") for p in packages))


LIBRARY = """
    import json, sys
    from windowkeeper import ContextSession
    print(json.dumps(sorted(sys.modules)))
"""


@pytest.fixture(scope="module")
def library() -> set[str]:
    """The modules loaded by ``from windowkeeper import ContextSession``: the library at work."""
    return set(run_child(LIBRARY))


class TestLazyNames:
    """``import windowkeeper`` loads two small modules; each public name loads its own on use."""

    def test_the_import_loads_the_errors_and_the_version(self, imported: set[str]) -> None:
        """Of windowkeeper's modules, the bare import loads the package, its errors and version."""
        assert under(imported, "windowkeeper") == [
            "windowkeeper",
            "windowkeeper._errors",
            "windowkeeper._version",
        ]

    def test_the_import_loads_no_heavy_stdlib_module(self) -> None:
        """dataclasses (with inspect and ast), json, re, enum, pathlib and typing wait for a name
        that uses them."""
        # Printed without json, which would load re and enum itself.
        show = "print('[' + ','.join(f'\"{name}\"' for name in sorted(sys.modules)) + ']')"
        bare = set(run_child(f"import sys\n{show}"))
        loaded = set(run_child(f"import sys\nimport windowkeeper\n{show}"))
        heavy = {"dataclasses", "inspect", "ast", "json", "re", "enum", "pathlib", "typing"}
        assert heavy & (loaded - bare) == set()

    def test_a_name_is_loaded_once_and_kept(self) -> None:
        """The first access imports the name's module; the value is then an attribute like any."""
        loaded = run_child(
            """
            import json, sys
            import windowkeeper
            before = "windowkeeper.core._usage" in sys.modules
            first = windowkeeper.TokenUsage
            kept = "TokenUsage" in vars(windowkeeper)
            from windowkeeper.core._usage import TokenUsage
            print(json.dumps([before, kept, first is TokenUsage]))
            """
        )
        assert loaded == [False, True, True]

    def test_a_subpackage_is_an_attribute_as_before(self) -> None:
        """``windowkeeper.storage`` works without importing it first, as when the import loaded it."""
        found = run_child(
            """
            import json
            import windowkeeper
            print(json.dumps([windowkeeper.storage.__name__, windowkeeper.session.__name__]))
            """
        )
        assert found == ["windowkeeper.storage", "windowkeeper.session"]

    def test_an_unknown_name_is_an_attribute_error(self) -> None:
        """A name the package does not have raises AttributeError, as for any module."""
        with pytest.raises(AttributeError, match="no attribute 'Nope'"):
            _ = windowkeeper.Nope  # type: ignore[attr-defined]


class TestImport:
    """The library at work loads what it needs, nothing more."""

    def test_no_layer_above_the_library(self, library: set[str]) -> None:
        """The tools, the transcripts, the adapters and the command stay unloaded."""
        layers = ("tools", "transcripts", "adapters", "cli")
        assert under(library, *(f"windowkeeper.{layer}" for layer in layers)) == []

    def test_no_click(self, library: set[str]) -> None:
        """click is the command's: the library never loads it."""
        assert under(library, "click") == []

    @pytest.mark.parametrize(
        "module",
        [
            "importlib.resources",  # the model table's, on the first lookup
            "uuid",  # a commit id's, on the first commit
            "secrets",
            "decimal",
            "statistics",
            "typing_extensions",
            "windowkeeper.storage.postgres",  # the optional extra
            "asyncio",  # aprepare's, when a summary must be awaited
            "hashlib",  # the calibrated counter's, on the first digest
            "shlex",  # a shell command's, when one is read
            "pathlib",  # a task folder's
            "windowkeeper.storage",  # a stored session's (task_dir= or store=)
            "windowkeeper.session._persistence",
            "windowkeeper.cline._task",  # the task-folder reader
            "windowkeeper.formats.openai",  # the converters, for their formats
            "windowkeeper.formats.responses",
            "windowkeeper.session._openai_history",
            "windowkeeper.rules._anthropic",
            "windowkeeper.session._compaction",  # a compacting session's
            "windowkeeper.session._ledger",
            "windowkeeper.session._summary",
            "windowkeeper.session.steps._summarize",
            "windowkeeper.session._models",  # the model table's module, for a model= lookup
            "dataclasses",  # with inspect, ast, dis and tokenize: records are made by _record
            "inspect",
            "ast",
        ],
    )
    def test_modules_needed_only_later(self, library: set[str], module: str) -> None:
        """A module that only some calls need is imported by those calls."""
        assert module not in library

    def test_each_lazy_package_names_its_modules_names(self) -> None:
        """The names that cline, formats and steps load on first use are those modules' own."""
        from windowkeeper import cline, formats
        from windowkeeper.cline import _task
        from windowkeeper.formats import openai
        from windowkeeper.session import steps
        from windowkeeper.session.steps import _summarize

        assert cline.__all__ == _task.__all__
        assert all(getattr(cline, name) is getattr(_task, name) for name in cline.__all__)
        assert set(formats.__all__) <= set(openai.__all__)
        assert all(getattr(formats, name) is getattr(openai, name) for name in formats.__all__)
        lazy = ("REFOLD", "SummarizeTurns", "fold_point", "is_async_summarizer")
        assert all(getattr(steps, name) is getattr(_summarize, name) for name in lazy)
        assert steps.SummaryNeeded is _summarize.SummaryNeeded

    def test_a_lazy_package_refuses_an_unknown_name(self) -> None:
        """A name none of them has is an AttributeError, as for any module."""
        from windowkeeper import cline, formats
        from windowkeeper.session import steps

        for package in (cline, formats, steps):
            with pytest.raises(AttributeError, match="no attribute 'Nope'"):
                _ = package.Nope

    def test_the_usage_limit_is_the_task_readers(self) -> None:
        """The largest usage a session takes, written out in the session, is the reader's limit."""
        from windowkeeper.cline._task import MAX_TOKEN_COUNT
        from windowkeeper.session._admission import MAX_USAGE_TOKENS

        assert MAX_USAGE_TOKENS == MAX_TOKEN_COUNT

    def test_no_sqlite3(self, library: set[str]) -> None:
        """sqlite3 is loaded by the first SQLiteStore, not by the import."""
        assert "sqlite3" not in library

    def test_the_model_table_is_read_on_the_first_lookup(self) -> None:
        """models.json is neither opened nor parsed by the import; the first lookup reads it once."""
        opened = run_child(
            """
            import json, sys
            opened = []
            sys.addaudithook(
                lambda event, args: opened.append(str(args[0]))
                if event == "open" and str(args[0]).endswith("models.json") else None
            )
            import windowkeeper
            from windowkeeper import ContextSession
            from windowkeeper.session import _models
            before = (len(opened), _models._builtin.cache_info().currsize)
            windowkeeper.lookup_model("claude-sonnet-4-5")
            windowkeeper.model_window("gpt-5")
            after = (len(opened), _models._builtin.cache_info().currsize)
            print(json.dumps([before, after]))
            """
        )
        assert opened == [[0, 0], [1, 1]]

    def test_the_model_table_is_read_without_importlib_resources(self) -> None:
        """The first lookup reads the table beside the package: importlib.resources (with
        zipfile) would cost more than the table, and is kept for a zipped package."""
        loaded = run_child(
            """
            import json, sys
            import windowkeeper
            windowkeeper.lookup_model("claude-sonnet-4-5")
            print(json.dumps(["importlib.resources" in sys.modules, "zipfile" in sys.modules]))
            """
        )
        assert loaded == [False, False]

    def test_patterns_compile_on_first_use(self) -> None:
        """The modules that promise it compile no pattern while windowkeeper is imported."""
        compiled = run_child(
            """
            import json, re, sys
            callers = []
            compile_ = re.compile
            def counting(pattern, flags=0):
                callers.append(sys._getframe(1).f_globals.get("__name__"))
                return compile_(pattern, flags)
            re.compile = counting
            from windowkeeper import ContextSession
            print(json.dumps(callers))
            """
        )
        lazy = {
            "windowkeeper.core._cline_text",
            "windowkeeper.core._file_reads",
            "windowkeeper.core._javascript",
            "windowkeeper.session._models",
            "windowkeeper.session._shell_reads",
        }
        assert lazy.isdisjoint(compiled)


FIRST_PREPARE = """
    import json, sys
    from windowkeeper import ContextSession
    imported = set(sys.modules)
    session = ContextSession(context_window=200_000)
    session.extend([
        {"role": "user", "content": "Add pagination to the API."},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.py"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x = 1"}]},
    ])
    session.prepare(system="You are a coding agent.", max_output_tokens=8_192)
    print(json.dumps(sorted(set(sys.modules) - imported)))
"""


@pytest.fixture(scope="module")
def added() -> list[str]:
    """The modules the session's constructor and first ``prepare()`` load."""
    return list(run_child(FIRST_PREPARE))


class TestFirstPrepare:
    """The first request of a small history, in memory, loads nothing the import left out: the
    import's cost was removed, not moved to the first ``prepare()``."""

    def test_no_compaction_without_summarize(self, added: list[str]) -> None:
        """A session without summarize= loads neither the summary step, the ledger nor the
        summary prompt (the constructor used to import them to check the steps)."""
        compaction = (
            "windowkeeper.session.steps._summarize",
            "windowkeeper.session._ledger",
            "windowkeeper.session._summary",
            "windowkeeper.session._compaction",
            "windowkeeper.core._condense",
        )
        assert under(set(added), *compaction) == []

    def test_no_dataclasses(self, added: list[str]) -> None:
        """dataclasses and inspect stay unloaded through the first request."""
        assert under(set(added), "dataclasses", "inspect", "ast") == []

    def test_nothing_is_added(self, added: list[str]) -> None:
        """Every module the first request needs was loaded by the import."""
        assert added == []


class TestHelp:
    """``windowkeeper --help`` builds the command table: click and the command module only."""

    def test_no_tool_is_imported(self, helped: set[str]) -> None:
        """No tool, transcript reader or adapter is loaded to list the commands."""
        found = under(
            helped, "windowkeeper.tools", "windowkeeper.transcripts", "windowkeeper.adapters"
        )
        assert found == []

    def test_nothing_beyond_the_library_but_the_command(
        self, imported: set[str], helped: set[str]
    ) -> None:
        """Of windowkeeper's modules, --help adds the cli package to what the import loads."""
        added = under(helped - imported, "windowkeeper")
        assert added == [
            "windowkeeper.cli",
            "windowkeeper.cli._format",
            "windowkeeper.cli._main",
            "windowkeeper.cli._options",
        ]

    def test_the_window_limit_is_the_task_readers(self) -> None:
        """--window's upper bound, written out in the command, is the task reader's limit."""
        from windowkeeper.cli._options import MAX_WINDOW
        from windowkeeper.cline import MAX_TOKEN_COUNT

        assert MAX_WINDOW == MAX_TOKEN_COUNT


class TestLateChoices:
    """The choices the command reads from the tools' enums when first needed."""

    def options(self, command: str) -> dict[str, Any]:
        return {param.name: param.type for param in cli.commands[command].params}

    def test_formats(self) -> None:
        """--format offers every trace format."""
        choices = self.options("inspect")["trace_format"].choices
        assert list(choices) == [kind.value for kind in TraceFormat]

    def test_policies_and_usage(self) -> None:
        """--policy offers every policy and --usage every usage source."""
        options = self.options("replay")
        assert list(options["policies"].choices) == [name.value for name in PolicyName]
        assert list(options["usage"].choices) == [source.value for source in UsageSource]
        assert list(self.options("view")["policy"].choices) == [name.value for name in PolicyName]

    def test_the_default_policy_is_the_original(self) -> None:
        """--policy defaults to cline, the original's decisions."""
        policy = next(p for p in cli.commands["view"].params if p.name == "policy")
        assert policy.default == PolicyName.CLINE.value


def test_the_package_is_importable_here() -> None:
    """The children import the same windowkeeper as this process."""
    where = run_child("import json, windowkeeper; print(json.dumps(windowkeeper.__file__))")
    assert where == windowkeeper.__file__
