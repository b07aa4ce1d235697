"""The ``windowkeeper`` command: every command on small fixtures, then on the real traces."""

from __future__ import annotations

import io
import itertools
import json
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from windowkeeper import TraceError
from windowkeeper.cli import cli
from windowkeeper.cli._main import ProgressBar
from windowkeeper.core._notices import DUPLICATE_READ_NOTICE

from ..conftest import CORPUS
from ..traces import (
    api_req_started,
    cline_folder,
    conversation,
    openai_messages,
    swe_agent_trajectory,
    write_json,
)

GCP_TRACE = "cline-native-gcp-refactor-redacted"
CLINE_TRACES = (
    sorted(path.parent.name for path in CORPUS.glob("*/api_conversation_history.json"))
    if CORPUS.is_dir()
    else ["(no corpus)"]
)


def run(*args: str | Path) -> Result:
    """Invoke the command as the console script would; strings are split on spaces, paths are not."""
    argv = [part for arg in args for part in ([str(arg)] if isinstance(arg, Path) else arg.split())]
    return CliRunner().invoke(cli, argv, catch_exceptions=True)


# -- the documented replay schema ------------------------------------------------------------

RECORD_TYPES: dict[str, Any] = {
    "index": int,
    "deleted_range": (list, type(None)),
    "truncated": bool,
    "replaced_reads": int,
    "estimated_tokens": int,
    "reported_tokens": (int, type(None)),
    "overflow": bool,
}
SUMMARY_KEYS = ("requests", "truncations", "overflows", "estimated_tokens_sent", "replaced_reads")
TOP_KEYS = ("policy", "window", "requests", "summary")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_replay_schema(value: Any) -> list[str]:
    """Every way ``value`` departs from the replay JSON schema of the README (empty when none)."""
    problems: list[str] = []
    if not isinstance(value, dict) or list(value) != list(TOP_KEYS):
        return [f"top level: expected keys {', '.join(TOP_KEYS)}, got {value!r:.80}"]
    if not isinstance(value["policy"], str) or not value["policy"]:
        problems.append(f"policy: not a name: {value['policy']!r}")
    window = value["window"]
    if (
        not isinstance(window, dict)
        or set(window) != {"context_window", "limit"}
        or not _is_int(window["context_window"])
        or isinstance(window["limit"], bool)
        or not isinstance(window["limit"], int | float)
    ):
        problems.append(f"window: expected context_window and limit numbers, got {window!r:.80}")
    requests, summary = value["requests"], value["summary"]
    if not isinstance(requests, list):
        return ["requests: not a list"]
    for position, item in enumerate(requests):
        where = f"requests[{position}]"
        if not isinstance(item, dict) or set(item) != set(RECORD_TYPES):
            problems.append(f"{where}: keys {sorted(item) if isinstance(item, dict) else item}")
            continue
        for key, kind in RECORD_TYPES.items():
            field = item[key]
            if kind is int and not _is_int(field):
                problems.append(f"{where}.{key}: not an int: {field!r}")
            elif kind is bool and not isinstance(field, bool):
                problems.append(f"{where}.{key}: not a bool: {field!r}")
            elif isinstance(kind, tuple) and not isinstance(field, kind):
                problems.append(f"{where}.{key}: wrong type: {field!r}")
        dr = item["deleted_range"]
        if dr is not None and (len(dr) != 2 or not all(map(_is_int, dr))):
            problems.append(f"{where}.deleted_range: not [start, end]: {dr!r}")
        if item["reported_tokens"] is not None and isinstance(item["reported_tokens"], bool):
            problems.append(f"{where}.reported_tokens: a bool")
    if not isinstance(summary, dict) or set(summary) != set(SUMMARY_KEYS):
        problems.append(f"summary: keys {summary!r:.80}")
    elif not all(_is_int(summary[key]) for key in SUMMARY_KEYS):
        problems.append(f"summary: values not all ints: {summary!r}")
    elif isinstance(requests, list) and all(isinstance(r, dict) for r in requests):
        expected = {
            "requests": len(requests),
            "truncations": sum(bool(r.get("truncated")) for r in requests),
            "overflows": sum(bool(r.get("overflow")) for r in requests),
            "estimated_tokens_sent": sum(r.get("estimated_tokens", 0) for r in requests),
            "replaced_reads": sum(r.get("replaced_reads", 0) for r in requests),
        }
        if summary != expected:
            problems.append(f"summary: {summary} is not the total of the requests {expected}")
    return problems


def replay_objects(result: Result) -> list[dict[str, Any]]:
    """The JSON objects ``replay --json`` printed, one per line, each checked against the schema."""
    objects = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    for value in objects:
        assert check_replay_schema(value) == []
    return objects


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) of a PNG file; fails unless it starts like one."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


class TestSchemaChecker:
    """The checker the corpus tests rely on rejects what departs from the schema."""

    def test_rejects_departures(self) -> None:
        """A missing key, a wrong type and a summary that does not add up are all reported."""
        good = {
            "policy": "cline",
            "window": {"context_window": 64_000, "limit": 37_000},
            "requests": [
                {
                    "index": 1,
                    "deleted_range": None,
                    "truncated": False,
                    "replaced_reads": 0,
                    "estimated_tokens": 10,
                    "reported_tokens": None,
                    "overflow": False,
                }
            ],
            "summary": dict.fromkeys(SUMMARY_KEYS, 0)
            | {"requests": 1, "estimated_tokens_sent": 10},
        }
        assert check_replay_schema(good) == []
        bad_type = json.loads(json.dumps(good))
        bad_type["requests"][0]["truncated"] = 0
        missing = json.loads(json.dumps(good))
        del missing["requests"][0]["overflow"]
        wrong_total = json.loads(json.dumps(good))
        wrong_total["summary"]["requests"] = 2
        no_policy = json.loads(json.dumps(good))
        del no_policy["policy"]
        bad_window = json.loads(json.dumps(good))
        bad_window["window"] = 64_000
        for value in (bad_type, missing, wrong_total, no_policy, bad_window, {"requests": []}):
            assert check_replay_schema(value) != []


# -- fixtures the tests write ----------------------------------------------------------------


@pytest.fixture
def task(tmp_path: Path) -> Path:
    """A Cline task folder: 20 turns, recorded usage crossing the 64k limit, a stored range."""
    history = conversation(20, chars=6_000, prompt_step=2_500)
    ui = [api_req_started(1_000 + n, n - 2, 2_500 * (n + 1) // 2) for n in range(1, 41, 2)]
    ui[-1]["conversationHistoryDeletedRange"] = [2, 9]
    store = json.dumps([[1, [0, [[0, [[1_020, "text", ["note"], []]]]]]]])
    return cline_folder(tmp_path / "task", history, ui_messages=ui, context_history=store)


@pytest.fixture
def messages_file(tmp_path: Path) -> Path:
    """A JSON file of Anthropic-shaped messages with repeated reads, no recorded usage."""
    return write_json(tmp_path / "messages.json", conversation(24, chars=9_000))


@pytest.fixture
def openai_file(tmp_path: Path) -> Path:
    """A JSON file of OpenAI-shaped messages."""
    return write_json(tmp_path / "openai.json", openai_messages())


@pytest.fixture
def traj_file(tmp_path: Path) -> Path:
    """A SWE-agent trajectory."""
    return write_json(tmp_path / "run.traj", swe_agent_trajectory())


class TestInspect:
    """``windowkeeper inspect``."""

    def test_text(self, task: Path) -> None:
        """Messages, tool calls, reads, usage, the stored range and overwrites, violations."""
        result = run("inspect", task)
        assert result.exit_code == 0, result.output
        out = result.stdout
        assert "messages      42: 21 user, 21 assistant" in out
        assert "tool calls    20: read_file 20" in out
        assert "read more than once: src/a.py x7" in out
        assert "deleted range 2-9; 1 overwrite entries" in out
        assert "violations    none" in out

    def test_json(self, task: Path) -> None:
        """One JSON object with the counts."""
        result = run("inspect", task, "--json")
        assert result.exit_code == 0, result.output
        value = json.loads(result.stdout)
        assert value["format"] == "cline"
        assert value["messages"] == {"total": 42, "user": 21, "assistant": 21}
        assert value["deleted_range"] == [2, 9]
        assert value["requests"]["count"] == 20
        assert value["overwrites"] == {"entries": 1, "updates": {"undefined": 1}}

    @pytest.mark.parametrize("fixture", ["messages_file", "openai_file", "traj_file"])
    def test_other_formats(self, fixture: str, request: pytest.FixtureRequest) -> None:
        """Message files in both shapes and SWE-agent trajectories are read."""
        path = request.getfixturevalue(fixture)
        result = run("inspect", path, "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["format"] in {"anthropic", "openai", "swe-agent"}


class TestCheck:
    """``windowkeeper check``."""

    def test_clean(self, task: Path) -> None:
        """A valid next request exits 0 with one line."""
        result = run("check", task)
        assert result.exit_code == 0, result.output
        assert result.stdout.startswith("ok: the next request")

    def test_violations(self, tmp_path: Path) -> None:
        """One line per violation and exit 1."""
        bad = [
            {"role": "user", "content": "one"},
            {"role": "user", "content": "two"},
            {"role": "assistant", "content": ""},
        ]
        result = run("check", write_json(tmp_path / "bad.json", bad))
        assert result.exit_code == 1
        lines = result.stdout.splitlines()
        assert lines == [
            "messages[1]: same-role-twice: two user messages in a row",
            "messages[2].content: empty-content: empty string content",
        ]

    def test_stored_history(self, tmp_path: Path) -> None:
        """``--stored`` checks the history itself: Cline's text-block results leave calls unanswered."""
        history = conversation(2)
        for index in (2, 4):  # results as text blocks, as Cline's native-tool histories store them
            text = history[index]["content"][0]["content"][0]["text"]
            history[index] = {"role": "user", "content": [{"type": "text", "text": text}]}
        folder = cline_folder(tmp_path / "task", history)
        assert run("check", folder).exit_code == 0  # the next request is repaired
        result = run("check", folder, "--stored")
        assert result.exit_code == 1
        assert len(result.stdout.splitlines()) == 2
        assert all("tool-use-unanswered" in line for line in result.stdout.splitlines())


class TestView:
    """``windowkeeper view``."""

    def test_text(self, task: Path) -> None:
        """A header, then every message sent with its place in the history."""
        result = run("view", task, "--window", "64000")
        assert result.exit_code == 0, result.output
        out = result.stdout
        assert out.startswith("next request (cline policy, window 64,000 tokens, limit 37,000)")
        assert "hidden: 2-9" in out
        assert "--- [2] user (history[10]) ---" in out

    def test_anthropic_and_openai(self, messages_file: Path) -> None:
        """The JSON bodies of the request in either provider's shape."""
        anthropic = run("view", messages_file, "--window", "64000", "--as", "anthropic")
        assert anthropic.exit_code == 0, anthropic.output
        body = json.loads(anthropic.stdout)
        assert body["messages"][0]["role"] == "user"
        assert DUPLICATE_READ_NOTICE in anthropic.stdout or len(body["messages"]) < 49
        openai = run("view", messages_file, "--window", "64000", "--as", "openai")
        assert openai.exit_code == 0, openai.output
        roles = {message["role"] for message in json.loads(openai.stdout)["messages"]}
        assert roles == {"user", "assistant", "tool"}

    def test_windowkeeper_policy(self, openai_file: Path) -> None:
        """The session's request; the OpenAI system prompt is sent first."""
        result = run("view", openai_file, "--policy", "windowkeeper", "--as", "openai")
        assert result.exit_code == 0, result.output
        first = json.loads(result.stdout)["messages"][0]
        assert first == {"role": "system", "content": "You are a careful coding agent."}


class TestReplay:
    """``windowkeeper replay``."""

    def test_json_follows_the_schema(self, task: Path) -> None:
        """One object per policy, one per line, each exactly the documented schema."""
        result = run("replay", task, "--window 64000 --policy cline --policy windowkeeper --json")
        assert result.exit_code == 0, result.output
        cline, windowkeeper = replay_objects(result)
        assert cline["summary"]["requests"] == windowkeeper["summary"]["requests"] == 21
        assert (cline["policy"], windowkeeper["policy"]) == ("cline", "windowkeeper")
        assert cline["window"] == {"context_window": 64_000, "limit": 37_000}
        assert result.stderr == ""  # no progress bar when stderr is not a terminal

    def test_recorded_usage_decides(self, task: Path) -> None:
        """With recorded usage, truncation follows a request recorded at or over the limit."""
        result = run("replay", task, "--window", "64000", "--usage", "recorded", "--json")
        (value,) = replay_objects(result)
        records = value["requests"]
        for previous, record in itertools.pairwise(records):
            if record["truncated"]:
                assert previous["reported_tokens"] >= 37_000

    def test_text_report(self, messages_file: Path) -> None:
        """An intro, the summary table and where each policy truncated."""
        result = run("replay", messages_file, "--window 64000 --policy cline --policy windowkeeper")
        assert result.exit_code == 0, result.output
        lines = result.stdout.splitlines()
        assert lines[0].startswith("messages.json: 50 messages, 25 requests;")
        assert lines[0].endswith("decisions from estimated usage")
        assert lines[2].split() == [
            "policy",
            "requests",
            "truncations",
            "overflows",
            "replaced",
            "reads",
            "tokens",
            "sent",
            "largest",
            "request",
        ]
        assert lines[3].startswith("cline ")
        assert lines[4].startswith("windowkeeper ")
        assert "truncated at" in result.stdout

    def test_plot(self, messages_file: Path, tmp_path: Path) -> None:
        """``--plot`` writes a PNG of sensible size."""
        target = tmp_path / "replay.png"
        options = "--window 64000 --policy cline --policy windowkeeper --plot"
        result = run("replay", messages_file, options, target)
        assert result.exit_code == 0, result.output
        width, height = png_size(target)
        assert 600 <= width <= 2_000
        assert 300 <= height <= 1_200
        assert 10_000 < target.stat().st_size < 1_000_000
        assert f"wrote {target}" in result.stdout

    def test_missing_matplotlib(
        self, messages_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without the plot extra, one line says how to install it, and the exit status is 1."""
        monkeypatch.setitem(sys.modules, "matplotlib", None)
        result = run("replay", messages_file, "--window", "64000", "--plot", tmp_path / "x.png")
        assert result.exit_code == 1
        assert result.stderr.strip().splitlines() == [
            "Error: plotting needs matplotlib: pip install 'windowkeeper[plot]'"
        ]
        assert not (tmp_path / "x.png").exists()


class TestErrors:
    """Usage errors exit 2, bad input exits 1 with one line, ``--debug`` shows the traceback."""

    def test_usage_errors_exit_2(self, task: Path) -> None:
        """A missing window, an unknown policy, a missing path."""
        assert run("replay", task).exit_code == 2
        assert run("replay", task, "--window", "1000", "--policy", "nope").exit_code == 2
        assert run("inspect", "/no/such/path").exit_code == 2
        assert run("nope").exit_code == 2

    def test_bad_input_is_one_line(self, tmp_path: Path) -> None:
        """A file that is not a trace: one line on stderr naming it, exit 1."""
        path = tmp_path / "broken.json"
        path.write_text("{broken", encoding="utf-8")
        for command in (["inspect"], ["check"], ["view"], ["replay", "--window", "1000"]):
            result = run(command[0], path, *command[1:])
            assert result.exit_code == 1, command
            assert result.stdout == ""
            (line,) = result.stderr.splitlines()
            assert line.startswith("Error: ")
            assert str(path) in line

    def test_debug_shows_the_traceback(self, tmp_path: Path) -> None:
        """With ``--debug`` the error propagates with its traceback."""
        path = tmp_path / "broken.json"
        path.write_text("{broken", encoding="utf-8")
        result = run("inspect", path, "--debug")
        assert result.exit_code == 1
        assert isinstance(result.exception, TraceError)

    def test_forced_format(self, messages_file: Path) -> None:
        """``--format`` overrides detection; an impossible one is bad input."""
        assert run("inspect", messages_file, "--format", "anthropic").exit_code == 0
        result = run("inspect", messages_file, "--format", "swe-agent")
        assert result.exit_code == 1
        assert run("inspect", messages_file, "--format", "yaml").exit_code == 2


class TestProgressBar:
    """The progress bar: on a terminal only, and only once the replay has taken a second."""

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    def test_waits_a_second_then_draws_and_erases(self) -> None:
        """Nothing before the delay; a bar after it; a clean line at the end."""
        now = [0.0]
        stream = self.Terminal()
        bar = ProgressBar(4, stream, clock=lambda: now[0], width=4)
        bar.step()
        assert stream.getvalue() == ""
        now[0] = 1.5
        bar.step()
        assert stream.getvalue() == "\r[##..] 2/4 requests"
        bar.close()
        assert stream.getvalue().endswith("\r")

    def test_silent_off_a_terminal(self) -> None:
        """A pipe or file gets nothing, however long the replay."""
        stream = io.StringIO()
        bar = ProgressBar(2, stream, clock=iter([0.0, 5.0, 9.0]).__next__)
        bar.step()
        bar.step()
        bar.close()
        assert stream.getvalue() == ""


class TestDemo:
    """``windowkeeper demo``."""

    def test_summary_and_plot(self, tmp_path: Path) -> None:
        """The table for both policies and the plot."""
        target = tmp_path / "demo.png"
        result = run("demo", "--plot", target)
        assert result.exit_code == 0, result.output
        lines = result.stdout.splitlines()
        assert lines[0].startswith("windowkeeper demo: a generated coding-agent session")
        intro = lines.index(next(line for line in lines if line.startswith("demo conversation:")))
        assert lines[intro].startswith("demo conversation: 60 messages, 30 requests;")
        table = lines[intro + 2 : intro + 5]
        assert [line.split()[0] for line in table] == ["policy", "cline", "windowkeeper"]
        assert png_size(target)[0] >= 600

    def test_default_file_and_no_plot(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The plot goes to windowkeeper-demo.png; ``--no-plot`` skips it."""
        monkeypatch.chdir(tmp_path)
        assert run("demo", "--no-plot").exit_code == 0
        assert not (tmp_path / "windowkeeper-demo.png").exists()
        assert run("demo").exit_code == 0
        assert (tmp_path / "windowkeeper-demo.png").is_file()


def test_python_m_windowkeeper() -> None:
    """``python -m windowkeeper`` is the same command."""
    done = subprocess.run(
        [sys.executable, "-m", "windowkeeper", "--help"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0
    for command in ("inspect", "check", "view", "replay", "demo"):
        assert command in done.stdout


# -- the real traces -------------------------------------------------------------------------


@pytest.mark.parametrize("name", CLINE_TRACES)
class TestCorpus:
    """Every command on every real Cline trace (skipped when ../shared/corpus/raw is absent)."""

    def test_every_command_exits_0(self, corpus: Path, name: str) -> None:
        """inspect, check, view in each shape, replay under both policies."""
        folder = corpus / name
        for args in (
            ["inspect", folder],
            ["check", folder],
            ["check", folder, "--policy", "windowkeeper"],
            ["view", folder],
            ["view", folder, "--as", "anthropic"],
            ["view", folder, "--as", "openai", "--policy", "windowkeeper"],
        ):
            result = run(*args)
            assert result.exit_code == 0, (args, result.output)
        inspected = run("inspect", folder, "--json")
        assert inspected.exit_code == 0
        assert json.loads(inspected.stdout)["format"] == "cline"

    def test_replay_json_validates(self, corpus: Path, name: str) -> None:
        """Both policies under both usage sources give schema-valid JSON."""
        for usage in ("recorded", "estimated"):
            options = "--window 128000 --policy cline --policy windowkeeper --json --usage"
            result = run("replay", corpus / name, options, usage)
            assert result.exit_code == 0, result.output
            objects = replay_objects(result)
            assert len(objects) == 2
            assert objects[1]["summary"]["overflows"] == 0  # the pre-flight


# The requests (history length at the request) after the nine requests of the 443-message trace
# whose recorded usage (metrics.tokens prompt + completion + cached) reached 98,000 tokens: the
# assistant messages 79, 131, 191, 243, 283, 303, 305, 307 and 309 recorded 99,281, 98,901,
# 99,137, 104,404, 99,068, 178,068, 146,362, 131,910 and 124,127 tokens.
GCP_TRUNCATIONS = [81, 133, 193, 245, 285, 305, 307, 309, 311]


def recorded_total(message: dict[str, Any]) -> int:
    """What Cline recorded for the request an assistant message answered: prompt + completion + cached."""
    tokens = (message.get("metrics") or {}).get("tokens") or {}
    return sum(tokens.get(key) or 0 for key in ("prompt", "completion", "cached"))


def test_gcp_trace_truncates_where_recorded_usage_reached_the_limit(corpus: Path) -> None:
    """Replayed with recorded usage at 128k, the trace truncates exactly after 98,000-token requests."""
    folder = corpus / GCP_TRACE
    result = run("replay", folder, "--policy cline --usage recorded --window 128000 --json")
    assert result.exit_code == 0, result.output
    (value,) = replay_objects(result)
    truncated = [record["index"] for record in value["requests"] if record["truncated"]]
    assert truncated == GCP_TRUNCATIONS
    # Computed independently from the file: the request after each assistant message whose
    # recorded total reached the limit.
    history = json.loads((folder / "api_conversation_history.json").read_text(encoding="utf-8"))
    reached = [
        index + 2
        for index, message in enumerate(history)
        if message["role"] == "assistant" and recorded_total(message) >= 98_000
    ]
    assert truncated == reached
    by_index = {record["index"]: record for record in value["requests"]}
    for index in truncated:
        assert by_index[index - 2]["reported_tokens"] >= 98_000
