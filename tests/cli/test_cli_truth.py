"""``check`` and ``view`` tell the truth: over the window is a failure, a session folder is read
as the session keeps it, and every action is shown with its reason and the tokens it freed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from windowkeeper import ContextSession, Message, TokenUsage
from windowkeeper.cli import cli

from ..traces import conversation, write_json


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(arg) for arg in args], catch_exceptions=True)


def oversized(tmp_path: Path) -> Path:
    """A history whose newest tool result alone is about 2.5 times a 16,000-token window."""
    history: list[Message] = conversation(3)[:-1]
    call = {"type": "tool_use", "id": "toolu_big", "name": "read_file", "input": {"path": "x"}}
    history.append({"role": "assistant", "content": [call]})
    result = {"type": "tool_result", "tool_use_id": "toolu_big", "content": "x = 1\n" * 20_000}
    history.append({"role": "user", "content": [result]})
    return write_json(tmp_path / "big.json", history)


class TestOverTheWindow:
    @pytest.mark.parametrize("policy", ["cline", "cline-condense"])
    @pytest.mark.parametrize("command", ["check", "view"])
    def test_every_policy_that_sends_it_exits_1_with_the_numbers(
        self, tmp_path: Path, policy: str, command: str
    ) -> None:
        """A request over the window is never ok, whatever policy sends it."""
        result = run(command, oversized(tmp_path), "--window", "16000", "--policy", policy)
        assert result.exit_code == 1, result.output
        text = result.output + (result.stderr if result.stderr_bytes else "")
        assert "16,000" in text
        assert "tokens" in text
        assert not text.startswith("ok")

    def test_the_session_clips_it_to_fit(self, tmp_path: Path) -> None:
        """The windowkeeper policy sends a request that fits: ok, with the clip it made."""
        result = run("check", oversized(tmp_path), "--window", "16000", "--policy", "windowkeeper")
        assert result.exit_code == 0, result.output
        assert "clip-on-arrival: a new tool result larger than its share" in result.output

    def test_check_json_reports_it(self, tmp_path: Path) -> None:
        result = run("check", oversized(tmp_path), "--window", "16000", "--json")
        assert result.exit_code == 1
        report = json.loads(result.output)
        assert report["ok"] is False
        assert report["request"]["over_window"] is True
        assert report["request"]["context_window"] == 16_000
        assert report["request"]["estimated_tokens"] > 16_000

    def test_a_request_that_fits_is_ok(self, tmp_path: Path) -> None:
        path = write_json(tmp_path / "small.json", conversation(3))
        result = run("check", path)
        assert result.exit_code == 0, result.output
        assert result.output.startswith("ok:")


def session_folder(tmp_path: Path) -> Path:
    """A folder a ContextSession with a 20,000-token window kept, after turns that shrank."""
    folder = tmp_path / "task"
    session = ContextSession(20_000, task_dir=folder)
    session.append({"role": "user", "content": "Read every part."})
    for turn in range(12):
        prepared = session.prepare(max_output_tokens=500)
        size = sum(len(json.dumps(m)) for m in prepared.messages) // 4
        session.record_usage(TokenUsage(tokens_in=size, tokens_out=20))
        call = {"type": "tool_use", "id": f"c{turn}", "name": "read", "input": {"n": turn}}
        session.append({"role": "assistant", "content": [call]})
        result = {"type": "tool_result", "tool_use_id": f"c{turn}", "content": "z" * 6_000}
        session.append({"role": "user", "content": [result]})
    call = {"type": "tool_use", "id": "last", "name": "read", "input": {"n": 99}}
    session.append({"role": "assistant", "content": [call]})
    result = {"type": "tool_result", "tool_use_id": "last", "content": "w" * 40_000}
    session.append({"role": "user", "content": [result]})  # not prepared yet: too large
    session.close()
    return folder


class TestSessionFolder:
    def test_view_uses_the_sessions_window_and_state(self, tmp_path: Path) -> None:
        """The header shows the session's own window, range and actions, not the 128k default."""
        result = run("view", session_folder(tmp_path))
        assert result.exit_code == 0, result.output
        header = result.output.splitlines()[0]
        assert "window 20,000 tokens" in header
        assert "stored session" in header
        assert "actions:" in result.output

    def test_default_check_reads_the_session(self, tmp_path: Path) -> None:
        result = run("check", session_folder(tmp_path))
        assert result.exit_code == 0, result.output
        assert "stored session" in result.output

    def test_actions_in_json_have_reasons_and_freed_tokens(self, tmp_path: Path) -> None:
        result = run("view", session_folder(tmp_path), "--json")
        assert result.exit_code == 0, result.output
        summary = json.loads(result.output)
        assert summary["context_window"] == 20_000
        assert summary["actions"], summary
        for action in summary["actions"]:
            assert action["reason"]
            assert action["step"]
        measured = [a for a in summary["actions"] if a["freed_tokens"] is not None]
        assert all(a["freed_tokens"] >= 0 for a in measured)


class TestFirstErrors:
    def test_help_lists_every_input_format(self) -> None:
        from windowkeeper.tools._trace import TraceFormat

        text = " ".join(run("--help").output.split())
        for kind in TraceFormat:
            assert kind.value in text.replace("gemini- cli", "gemini-cli"), kind

    def test_replay_help_explains_the_policies_and_the_default(self) -> None:
        text = " ".join(run("replay", "--help").output.split())
        assert "default: cline only" in text
        assert "cline-condense: the original with auto" in text

    def test_without_click_the_command_prints_the_install_line(self) -> None:
        import subprocess
        import sys

        code = (
            "import importlib.util as u\n"
            "real = u.find_spec\n"
            "u.find_spec = lambda name, *a: None if name == 'click' else real(name, *a)\n"
            "from windowkeeper.cli import main\n"
            "main()\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=False
        )
        assert done.returncode == 1
        assert "Traceback" not in done.stderr
        assert "pip install 'windowkeeper[cli]'" in done.stderr

    def test_plot_without_matplotlib_fails_before_the_replay(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        import importlib.util

        from windowkeeper.tools import _replay

        real = importlib.util.find_spec
        monkeypatch.setattr(
            importlib.util,
            "find_spec",
            lambda name, *a: None if name == "matplotlib" else real(name, *a),
        )
        replayed: list[object] = []
        monkeypatch.setattr(_replay, "replay", lambda *a, **k: replayed.append(a))
        path = write_json(tmp_path / "small.json", conversation(3))
        result = run("replay", path, "--window", "16000", "--plot", tmp_path / "p.png")
        assert result.exit_code == 1
        assert "matplotlib" in result.output + (result.stderr if result.stderr_bytes else "")
        assert replayed == []
