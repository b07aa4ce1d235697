"""Task folders of Cline's forks (Roo Code, Kilo Code): their usage as they mean it, and
requests placed by time where the UI messages record no ``conversationHistoryIndex``.

The records follow the structure of real Kilo Code task folders of January 2026: every
``api_req_started`` names ``apiProtocol`` and ``usageMissing``, and none names an index.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from windowkeeper import TaskFolderError, TokenUsage
from windowkeeper.cli import cli
from windowkeeper.cline import (
    API_HISTORY_FILE,
    TASK_METADATA_FILE,
    UI_MESSAGES_FILE,
    ApiRequest,
    load_task,
)

from .test_cline import write_folder


def _history(turns: int, *, size: int = 4000) -> list[dict[str, Any]]:
    """A task of ``turns`` requests: user then assistant, 100 ms apart, ts from 1,000."""
    history: list[dict[str, Any]] = []
    for turn in range(turns):
        text = f"<task>\nstep {turn}\n</task>" if turn == 0 else f"result {turn} " + "x" * size
        history.append({"role": "user", "content": [{"type": "text", "text": text}]})
        history.append({"role": "assistant", "content": [{"type": "text", "text": f"ok {turn}"}]})
    for position, message in enumerate(history):
        message["ts"] = 1000 + 100 * position
    return history


def _started(ts: int, index: int | None = None, **info: Any) -> dict[str, Any]:
    message: dict[str, Any] = {
        "ts": ts,
        "type": "say",
        "say": "api_req_started",
        "text": json.dumps({"apiProtocol": "openai", "usageMissing": False, **info}),
    }
    if index is not None:
        message["conversationHistoryIndex"] = index
    return message


def _usage(tokens_in: int, tokens_out: int = 100, reads: int = 0) -> dict[str, int]:
    return {"tokensIn": tokens_in, "tokensOut": tokens_out, "cacheWrites": 0, "cacheReads": reads}


def _folder(tmp_path: Path, history: list[dict[str, Any]], ui: list[dict[str, Any]]) -> Path:
    return write_folder(tmp_path, {API_HISTORY_FILE: history, UI_MESSAGES_FILE: ui})


class TestForkUsage:
    def test_openai_protocol_counts_the_cached_input_once(self, tmp_path: Path) -> None:
        """``tokensIn`` already holds the cache reads: the size is ``tokensIn + tokensOut``."""
        ui = [_started(1001, **_usage(25_250, 900, reads=24_061))]
        (request,) = load_task(_folder(tmp_path, _history(1), ui)).requests
        assert request.usage == TokenUsage(tokens_in=1189, tokens_out=900, cache_reads=24_061)
        assert request.usage.total == 25_250 + 900

    def test_anthropic_protocol_and_cline_are_read_as_the_original_reads_them(
        self, tmp_path: Path
    ) -> None:
        ui = [
            _started(1001, apiProtocol="anthropic", **_usage(1189, 900, reads=24_061)),
            {**_started(1201, **_usage(1189, 900, reads=24_061))},
        ]
        ui[1]["text"] = json.dumps(_usage(1189, 900, reads=24_061))  # Cline: no protocol
        requests = load_task(_folder(tmp_path, _history(2), ui)).requests
        assert [request.usage for request in requests] == [
            TokenUsage(tokens_in=1189, tokens_out=900, cache_reads=24_061)
        ] * 2

    def test_usage_missing_is_no_measurement(self, tmp_path: Path) -> None:
        ui = [_started(1001, usageMissing=True, **_usage(0, 0))]
        (request,) = load_task(_folder(tmp_path, _history(1), ui)).requests
        assert request.usage is None


class TestPlacedByTime:
    def test_each_request_sends_the_history_before_its_answer(self, tmp_path: Path) -> None:
        """Answers at 1,100, 1,300 and 1,500: a retry answered once shares its index; a request
        after the last answer (it failed) stays unplaced."""
        ui = [
            _started(1001, **_usage(10)),
            _started(1201, **_usage(20)),
            _started(1250, **_usage(21)),  # the retry of the request before
            _started(1401, **_usage(30)),
            _started(1601, **_usage(40)),
        ]
        requests = load_task(_folder(tmp_path, _history(3), ui)).requests
        assert [request.conversation_history_index for request in requests] == [
            -1,
            1,
            1,
            3,
            None,
        ]
        assert requests[0] == ApiRequest(
            TokenUsage(tokens_in=10, tokens_out=100), 1001, -1, ui_index=0
        )

    def test_a_folder_that_records_an_index_is_read_as_recorded(self, tmp_path: Path) -> None:
        ui = [_started(1001, -1, **_usage(10)), _started(1201, **_usage(20))]
        requests = load_task(_folder(tmp_path, _history(2), ui)).requests
        assert [request.conversation_history_index for request in requests] == [-1, None]

    def test_messages_without_times_place_nothing(self, tmp_path: Path) -> None:
        history = _history(2)
        for message in history:
            del message["ts"]
        ui = [_started(1001, **_usage(10)), _started(1201, **_usage(20))]
        requests = load_task(_folder(tmp_path, history, ui)).requests
        assert [request.conversation_history_index for request in requests] == [None, None]

    def test_a_replay_decides_as_with_the_indexes_recorded(self, tmp_path: Path) -> None:
        """Placed by time, the recorded usage drives the same truncations as recorded indexes
        (and not those of the estimate: the recorded sizes are larger)."""
        history = _history(12)
        sizes = [2000 + 2500 * turn for turn in range(12)]
        by_time = [_started(1001 + 200 * turn, **_usage(size)) for turn, size in enumerate(sizes)]
        indexed = [
            _started(1001 + 200 * turn, 2 * turn - 1, **_usage(size))
            for turn, size in enumerate(sizes)
        ]
        outputs = {}
        for name, ui, usage in (
            ("time", by_time, "recorded"),
            ("index", indexed, "recorded"),
            ("estimate", by_time, "estimated"),
        ):
            folder = _folder(tmp_path / name, history, ui)
            argv = ["replay", str(folder), "--window", "16000", "--json", "--usage", usage]
            result = CliRunner().invoke(cli, argv, catch_exceptions=False)
            assert result.exit_code == 0, result.output
            outputs[name] = [
                (request["index"], request["deleted_range"], request["truncated"])
                for request in json.loads(result.output)["requests"]
            ]
        assert outputs["time"] == outputs["index"]
        assert any(truncated for _, _, truncated in outputs["time"])
        assert outputs["time"] != outputs["estimate"]


class TestCondensedMessages:
    """Roo Code and Kilo Code tag what they condense instead of deleting it: the reader says so."""

    def _inspect(self, folder: Path) -> str:
        result = CliRunner().invoke(cli, ["inspect", str(folder)], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.output

    def test_a_summary_names_the_messages_it_stands_for(self, tmp_path: Path) -> None:
        history = _history(5)
        for index in (1, 2, 3, 4, 7):
            history[index]["condenseParent"] = "c-1"
        history[8].update(isSummary=True, condenseId="c-1")
        history[6]["truncationParent"] = "t-1"
        history.insert(9, {"role": "assistant", "content": "[hidden]", "ts": 1850})
        history[9].update(isTruncationMarker=True, truncationId="t-1")
        output = self._inspect(_folder(tmp_path, history, []))
        assert (
            "warning       history[1..4, 7]: condensed into the summary at history[8] by Roo Code"
            " or Kilo Code, which sent that in their place; they are read here as the folder"
            " holds them"
        ) in output
        assert "history[6]: hidden by the marker at history[9]" in output

    def test_tags_without_their_summary_say_nothing(self, tmp_path: Path) -> None:
        """A summary since rewound: the fork sends the tagged messages again."""
        history = _history(3)
        history[1]["condenseParent"] = "gone"
        assert "warning" not in self._inspect(_folder(tmp_path, history, []))


class TestOlderCondense:
    """Roo Code's condense before non-destructive tags deleted what it summarized."""

    def _condensed(self) -> list[dict[str, Any]]:
        """The task, then the summary written at 2,000 in place of turns gone, then a turn."""
        history = _history(2)
        summary = {"role": "assistant", "content": "Summary of the work.", "ts": 2000}
        history[1:3] = [summary, {"role": "user", "content": "go on", "ts": 2100}]
        history[1]["isSummary"] = True
        history[3]["ts"] = 2200
        return history

    def test_requests_that_sent_deleted_messages_are_not_placed(self, tmp_path: Path) -> None:
        ui = [_started(1001, **_usage(90_000)), _started(1500, **_usage(95_000))]
        ui.append(_started(2150, **_usage(3_000)))
        requests = load_task(_folder(tmp_path, self._condensed(), ui)).requests
        assert [request.conversation_history_index for request in requests] == [None, None, 1]

    def test_the_summary_is_named(self, tmp_path: Path) -> None:
        result = CliRunner().invoke(cli, ["inspect", str(_folder(tmp_path, self._condensed(), []))])
        assert (
            "history[1]: a summary Roo Code or Kilo Code wrote in place of the messages before"
            " it, which it deleted: the requests that sent them cannot be replayed"
        ) in result.output

    def test_a_request_that_never_reported_is_no_measurement(self, tmp_path: Path) -> None:
        """A fork's api_req_started holding only its request (cancelled, failed): no usage; a
        Cline one reads as the original reads it, missing counts 0."""
        fork = {"ts": 1001, "type": "say", "say": "api_req_started"}
        fork["text"] = json.dumps({"request": "...", "apiProtocol": "openai"})
        cline = {**fork, "text": json.dumps({"request": "..."}), "ts": 1201}
        requests = load_task(_folder(tmp_path, _history(2), [fork, cline])).requests
        assert [request.usage for request in requests] == [None, TokenUsage()]


def test_a_bad_token_field_is_named_as_such(tmp_path: Path) -> None:
    """Not a JSON complaint: the text is JSON, its field is not a number."""
    ui = [{"ts": 1001, "type": "say", "say": "api_req_started", "text": '{"tokensIn": "abc"}'}]
    with pytest.raises(TaskFolderError) as raised:
        load_task(_folder(tmp_path, _history(1), ui))
    assert "not JSON" not in str(raised.value)
    assert "api_req_started field 'tokensIn' is not a number" in str(raised.value)


def test_a_cline_folder_without_indexes_is_not_placed(tmp_path: Path) -> None:
    """Only a fork's folder (its requests name apiProtocol) is placed by time."""
    ui = [_started(1001, **_usage(10))]
    ui[0]["text"] = json.dumps(_usage(10))
    (request,) = load_task(_folder(tmp_path, _history(1), ui)).requests
    assert request.conversation_history_index is None


class TestWhichAgent:
    """``inspect`` names the agent that wrote a folder of Cline's shape from what it left."""

    @pytest.mark.parametrize(
        ("ui", "metadata", "agent"),
        [
            ([_started(1001, **_usage(10))], None, "Roo Code (or a fork of it)"),
            (
                [{"ts": 900, "type": "say", "say": "text", "metadata": {"kiloCode": {}}}],
                None,
                "Kilo Code",
            ),
            (
                [],
                {"files_in_context": [{"path": "a", "roo_read_date": 1}]},
                "Roo Code (or a fork of it)",
            ),
            ([], {"files_in_context": [{"path": "a", "cline_read_date": 1}]}, "Cline"),
            ([{"ts": 1001, "type": "say", "say": "api_req_started", "text": "{}"}], None, "Cline"),
        ],
    )
    def test_the_marks_each_agent_leaves(
        self, tmp_path: Path, ui: list[dict[str, Any]], metadata: Any, agent: str
    ) -> None:
        files: dict[str, Any] = {API_HISTORY_FILE: _history(1), UI_MESSAGES_FILE: ui}
        if metadata is not None:
            files[TASK_METADATA_FILE] = metadata
        folder = write_folder(tmp_path, files)
        assert load_task(folder).agent == agent
        shown = CliRunner().invoke(cli, ["inspect", str(folder)])
        assert shown.exit_code == 0, shown.output
        assert f"agent         {agent}" in shown.output
