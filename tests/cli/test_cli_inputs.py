"""Inputs the command must refuse in one line (exit 1), never with a traceback or a hang.

Odd tool ids, token counts no JavaScript program could have written, a system prompt that is not
text, JSON nested too deeply, and paths that are neither a regular file nor a folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from windowkeeper import TaskFolderError, TraceError
from windowkeeper.cli import cli
from windowkeeper.cli._format import format_count
from windowkeeper.cline import (
    API_HISTORY_FILE,
    MAX_JSON_DEPTH,
    MAX_TOKEN_COUNT,
    UI_MESSAGES_FILE,
    load_task,
)
from windowkeeper.tools._trace import load_trace

from ..traces import api_req_started, cline_folder, conversation, write_json

COMMANDS = (
    ["inspect"],
    ["inspect", "--json"],
    ["check"],
    ["check", "--policy", "windowkeeper"],
    ["view"],
    ["view", "--as", "anthropic"],
    ["view", "--policy", "windowkeeper", "--as", "openai"],
    ["replay", "--window", "1000", "--policy", "cline", "--policy", "windowkeeper"],
)


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(arg) for arg in args], catch_exceptions=True)


def assert_one_line_error(path: Path, *needles: str) -> None:
    """Every command refuses ``path``: exit 1, nothing on stdout, one line naming it and ``needles``."""
    for command in COMMANDS:
        result = run(command[0], path, *command[1:])
        assert result.exit_code == 1, (command, result.output, result.exception)
        assert isinstance(result.exception, SystemExit), (command, result.exception)
        assert result.stdout == "", command
        (line,) = result.stderr.splitlines()
        assert line.startswith("Error: "), (command, line)
        assert str(path) in line, (command, line)
        for needle in needles:
            assert needle in line, (command, line)


def tool_turn(call_id: Any = "a", result_id: Any = "a", name: Any = "n") -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "t"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": call_id, "name": name, "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": result_id, "content": "r"}],
        },
    ]


class TestToolIds:
    """Ids that are not strings are refused where they sit (they broke inspect, check and view)."""

    @pytest.mark.parametrize(
        ("history", "where"),
        [
            (tool_turn(result_id={"a": 1}), "messages[2].content[0].tool_use_id"),
            (tool_turn(call_id=["a"]), "messages[1].content[0].id"),
            (tool_turn(call_id=5, result_id=5), "messages[1].content[0].id"),
            (tool_turn(name={"x": 1}), "messages[1].content[0].name"),
        ],
    )
    def test_message_files(self, tmp_path: Path, history: Any, where: str) -> None:
        """The path in the error is the place in the file, not in some request."""
        path = write_json(tmp_path / "ids.json", history)
        assert_one_line_error(path, where, "expected a string")

    def test_task_folders(self, tmp_path: Path) -> None:
        """The same check for a Cline task folder's history, naming the file."""
        folder = cline_folder(tmp_path / "task", tool_turn(result_id=[1]))
        with pytest.raises(TaskFolderError) as raised:
            load_task(folder)
        assert str(raised.value).startswith(
            f"{folder / API_HISTORY_FILE}[2].content[0].tool_use_id: expected a string"
        )
        assert_one_line_error(folder, "tool_use_id")

    def test_ids_inside_tool_results_and_text_fields(self, tmp_path: Path) -> None:
        """Text that is not a string, also inside a tool_result's content, is named."""
        history = tool_turn()
        history[2]["content"][0]["content"] = [{"type": "text", "text": ["x"]}]
        path = write_json(tmp_path / "text.json", history)
        assert_one_line_error(path, "messages[2].content[0].content[0].text")

    def test_missing_ids_are_still_accepted(self, tmp_path: Path) -> None:
        """As by the original: a tool_use without an id loads (the validator reports it)."""
        history = tool_turn(call_id=None)
        del history[1]["content"][0]["id"]
        path = write_json(tmp_path / "noid.json", history)
        assert run("inspect", path).exit_code == 0


class TestHugeNumbers:
    """Counts beyond JavaScript's safe integers cannot come from Cline: refused where they sit."""

    def test_metrics_tokens(self, tmp_path: Path) -> None:
        """A 400-digit prompt count in a message file."""
        history = [
            {"role": "user", "content": "t"},
            {"role": "assistant", "content": "a", "metrics": {"tokens": {"prompt": 1, "x": 0}}},
        ]
        text = json.dumps(history).replace('"prompt": 1', '"prompt": ' + "9" * 400)
        path = tmp_path / "huge.json"
        path.write_text(text, encoding="utf-8")
        assert_one_line_error(path, "messages[1].metrics.tokens.prompt", "400-digit")

    def test_a_huge_float_too(self, tmp_path: Path) -> None:
        """1e300 is an integer-valued JSON number, and as unusable."""
        history = [
            {"role": "user", "content": "t"},
            {"role": "assistant", "content": "a", "metrics": {"tokens": {"completion": 1e300}}},
        ]
        path = write_json(tmp_path / "huge.json", history)
        assert_one_line_error(path, "messages[1].metrics.tokens.completion")

    def test_ui_messages_usage(self, tmp_path: Path) -> None:
        """A huge tokensIn in an api_req_started names the UI message."""
        history = conversation(1)
        entry = api_req_started(1_000, -1, 1)
        entry["text"] = entry["text"].replace('"tokensIn": 1', '"tokensIn": ' + "9" * 30)
        folder = cline_folder(tmp_path / "task", history, ui_messages=[entry])
        with pytest.raises(TaskFolderError, match=r"ui_messages\.json\[0\]\.text: .*tokensIn"):
            load_task(folder)
        assert_one_line_error(folder, UI_MESSAGES_FILE)

    def test_the_largest_safe_count_still_works(self, tmp_path: Path) -> None:
        """MAX_TOKEN_COUNT tokens is a (silly) count the commands handle."""
        history = [
            {"role": "user", "content": "t"},
            {
                "role": "assistant",
                "content": "a",
                "metrics": {"tokens": {"prompt": MAX_TOKEN_COUNT}},
            },
            {"role": "user", "content": "more"},
        ]
        path = write_json(tmp_path / "big.json", history)
        for command in COMMANDS:
            result = run(command[0], path, *command[1:])
            assert result.exit_code == 0, (command, result.output, result.exception)

    def test_format_count_of_huge_integers(self) -> None:
        """Integers are formatted as integers, whatever their size (no float conversion)."""
        assert format_count(10**400) == f"{10**400:,}"
        assert format_count(2_500) == "2,500"
        assert format_count(2.5) == "2.5"

    def test_a_huge_window_is_a_usage_error(self, tmp_path: Path) -> None:
        """--window beyond any model is refused by the option (exit 2), not by a traceback."""
        path = write_json(tmp_path / "h.json", conversation(1))
        for command in ("check", "view"):
            result = run(command, path, "--window", "9" * 400)
            assert result.exit_code == 2, result.output
        assert run("replay", path, "--window", "9" * 400).exit_code == 2


class TestSystem:
    """A system prompt must be text: a string or a list of text blocks."""

    @pytest.mark.parametrize(
        ("system", "where"),
        [
            (5, "system: expected a string or a list of text blocks, got int"),
            ({"text": "x"}, "system: expected a string or a list of text blocks, got dict"),
            (["x"], "system[0]: expected a block dict"),
            ([{"type": "text", "text": 5}], "system[0].text: expected a string"),
        ],
    )
    def test_refused_at_load(self, tmp_path: Path, system: Any, where: str) -> None:
        """inspect too (it used to pass), naming the file."""
        path = write_json(tmp_path / "s.json", {"messages": conversation(1), "system": system})
        with pytest.raises(TraceError, match="system"):
            load_trace(path)
        assert_one_line_error(path, where)

    def test_text_systems_load(self, tmp_path: Path) -> None:
        """A string and a list of text blocks are both fine."""
        for system in ("be brief", [{"type": "text", "text": "be brief"}]):
            path = write_json(tmp_path / "s.json", {"messages": conversation(1), "system": system})
            assert load_trace(path).system == system
            assert run("view", path).exit_code == 0


def nested(depth: int) -> str:
    """A history whose one tool input nests ``depth`` objects deep (the file a few levels more)."""
    deep = '{"a":' * depth + "1" + "}" * depth
    turn = json.dumps(tool_turn())
    return turn.replace('"input": {}', '"input": {"v": ' + deep + "}")


class TestDeepNesting:
    """JSON nested too deeply to walk: one line naming the file, from every command."""

    @pytest.mark.parametrize("depth", [MAX_JSON_DEPTH - 3, 979, 1_000, 100_000])
    def test_message_files(self, tmp_path: Path, depth: int) -> None:
        """Deeper than the limit: refused, whether or not Python's parser could read it."""
        path = tmp_path / "deep.json"
        path.write_text(nested(depth), encoding="utf-8")
        with pytest.raises(TraceError, match="nested too deeply"):
            load_trace(path)
        assert_one_line_error(path, "nested too deeply")

    def test_a_bare_deep_array(self, tmp_path: Path) -> None:
        """The repro's file: 1,000 nested arrays."""
        path = tmp_path / "deep.json"
        path.write_text("[" * 1_000 + "]" * 1_000, encoding="utf-8")
        assert_one_line_error(path, "nested too deeply")

    @pytest.mark.parametrize("name", [API_HISTORY_FILE, UI_MESSAGES_FILE, "task_metadata.json"])
    def test_task_folder_files(self, tmp_path: Path, name: str) -> None:
        """Each file of a task folder is named when it is too deep."""
        folder = cline_folder(tmp_path / "task", conversation(1))
        (folder / name).write_text("[" * 1_000 + "]" * 1_000, encoding="utf-8")
        with pytest.raises(TaskFolderError, match="nested too deeply") as raised:
            load_task(folder)
        assert str(raised.value).startswith(str(folder / name))
        assert_one_line_error(folder, name, "nested too deeply")

    def test_just_under_the_limit_works(self, tmp_path: Path) -> None:
        """A file nested as deeply as allowed goes through every command."""
        path = tmp_path / "deep.json"
        # The message nests 4 levels above the chain: itself, its content, the block, the input.
        path.write_text(nested(MAX_JSON_DEPTH - 4), encoding="utf-8")
        load_trace(path)
        for command in COMMANDS:
            result = run(command[0], path, *command[1:])
            assert result.exit_code == 0, (command, result.output, result.exception)


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter; a run that blocks fails the test instead of hanging it."""
    try:
        return subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=False
        )
    except subprocess.TimeoutExpired:
        pytest.fail("blocked: still running after 30 s")


LOAD = """
import sys
from windowkeeper import WindowkeeperError
from windowkeeper.{module} import {function}
try:
    {function}(sys.argv[1] if len(sys.argv) > 1 else {path!r})
except WindowkeeperError as error:
    print(type(error).__name__, error)
"""


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
class TestSpecialFiles:
    """A path that is neither a regular file nor a folder is refused without being opened.

    Each check runs in a subprocess: before the fix, reading the FIFO blocked forever.
    """

    def test_a_fifo_path(self, tmp_path: Path) -> None:
        """The command exits 1 at once, naming the path and what it is."""
        fifo = tmp_path / "trace.json"
        os.mkfifo(fifo)
        done = run_python(LOAD.format(module="tools._trace", function="load_trace", path=str(fifo)))
        assert (
            done.stdout.strip()
            == f"UnreadableFileError {fifo}: not a regular file or a folder (a FIFO)"
        )
        cli_run = run_python(
            "import sys; sys.argv = ['windowkeeper', 'inspect', "
            f"{str(fifo)!r}]; from windowkeeper.cli._main import main; main()"
        )
        assert cli_run.returncode == 1
        assert cli_run.stderr.splitlines() == [
            f"Error: {fifo}: not a regular file or a folder (a FIFO)"
        ]

    @pytest.mark.parametrize("name", [API_HISTORY_FILE, UI_MESSAGES_FILE, "context_history.json"])
    def test_a_fifo_in_a_task_folder(self, tmp_path: Path, name: str) -> None:
        """A FIFO in place of one of the folder's files is named, not read."""
        folder = cline_folder(tmp_path / "task", conversation(1))
        (folder / name).unlink(missing_ok=True)
        os.mkfifo(folder / name)
        done = run_python(LOAD.format(module="cline", function="load_task", path=str(folder)))
        assert done.stdout.strip() == (
            f"UnreadableFileError {folder / name}: not a regular file (a FIFO)"
        )

    def test_a_fifo_named_like_the_history(self, tmp_path: Path) -> None:
        """Given as a file inside a task folder, a FIFO is refused too."""
        fifo = tmp_path / API_HISTORY_FILE
        os.mkfifo(fifo)
        done = run_python(LOAD.format(module="tools._trace", function="load_trace", path=str(fifo)))
        assert (
            done.stdout.strip()
            == f"UnreadableFileError {fifo}: not a regular file or a folder (a FIFO)"
        )


class TestRefusedByTheSession:
    """The session checks more than the original (a tool_use needs an id): its refusal names the file."""

    def test_a_tool_use_without_an_id(self, tmp_path: Path) -> None:
        """The cline policy takes it, as the original does; the windowkeeper policy refuses it."""
        history = tool_turn()
        del history[1]["content"][0]["id"]
        history.append({"role": "assistant", "content": "done"})
        path = write_json(tmp_path / "noid.json", history)
        assert run("view", path).exit_code == 0
        for command in (
            ["check", "--policy", "windowkeeper"],
            ["view", "--policy", "windowkeeper"],
            ["replay", "--window", "9000", "--policy", "windowkeeper"],
        ):
            result = run(command[0], path, *command[1:])
            assert result.exit_code == 1, (command, result.output)
            (line,) = result.stderr.splitlines()
            assert line.startswith(f"Error: {path}: history[1].content[0].id: "), line


class TestUnknownJsonLines:
    """A JSON Lines file no reader recognizes is refused as such, not as broken JSON."""

    def test_records_of_another_tool(self, tmp_path: Path) -> None:
        """Its first line's keys are named, and --format is suggested."""
        path = tmp_path / "export.jsonl"
        lines = [
            {"v": 1, "kind": "prompt", "text": "Sort the list.", "at": "2026-01-01T00:00:00Z"},
            {"v": 1, "kind": "reply", "text": "Sorted."},
        ]
        path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
        with pytest.raises(TraceError) as caught:
            load_trace(path)
        assert str(caught.value) == (
            f"{path}: JSON Lines of no known transcript format (line 1 has the keys at, kind,"
            " text, v); give --format to read it as one"
        )

    @pytest.mark.parametrize(
        "text",
        [
            '{"a": 1}\n{"b": 2',  # the second line is cut
            "[1]\n[2]\n",  # lines of arrays
            '{"a": 1} {"b": 2}',  # one line
        ],
    )
    def test_other_broken_files_stay_not_json(self, tmp_path: Path, text: str) -> None:
        """A file that is not two JSON objects on their own lines is still "not JSON"."""
        path = tmp_path / "broken.json"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(TraceError, match=r"broken\.json: not JSON: "):
            load_trace(path)
