"""Cline task folders: loading, the previous request, the recorded range, and errors that name their place."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import OverwriteStore, TaskFolderError, TokenUsage, WindowkeeperError
from windowkeeper.cline import (
    API_HISTORY_FILE,
    TASK_METADATA_FILE,
    UI_MESSAGES_FILE,
    ApiRequest,
    ClineTask,
    load_task,
    previous_api_request,
)

HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": [{"type": "text", "text": "<task>\nfix it\n</task>"}], "ts": 100},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}}],
        "ts": 110,
        "metrics": {"tokens": {"prompt": 1000, "completion": 50, "cached": 200}},
    },
    {
        "role": "user",
        "content": [{"type": "text", "text": "[read_file for 'a'] Result:\nA"}],
        "ts": 120,
    },
    {
        "role": "assistant",
        "content": [{"type": "text", "text": "done"}],
        "ts": 130,
        "metrics": {"tokens": {"prompt": 1500, "completion": 70, "cached": 1200}},
    },
]


def api_req(ts: int, index: int, **tokens: Any) -> dict[str, Any]:
    """A UI ``api_req_started`` message as Cline writes it."""
    text = json.dumps({"request": "...", **tokens, "cost": 0.01})
    return {
        "ts": ts,
        "type": "say",
        "say": "api_req_started",
        "text": text,
        "conversationHistoryIndex": index,
    }


UI: list[dict[str, Any]] = [
    {"ts": 99, "type": "say", "say": "text", "text": "fix it", "conversationHistoryIndex": -1},
    api_req(101, -1, tokensIn=1000, tokensOut=50, cacheWrites=200, cacheReads=0),
    {"ts": 111, "type": "say", "say": "tool", "text": "{}", "conversationHistoryIndex": 1},
    api_req(115, 1, tokensIn=1500, tokensOut=70, cacheWrites=1000, cacheReads=200),
    {"ts": 131, "type": "say", "say": "completion_result", "text": "done"},
]


def write_folder(folder: Path, files: dict[str, Any]) -> Path:
    """Write a task folder: values are JSON-dumped, strings and bytes written as they are, None skipped."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, value in files.items():
        path = folder / name
        if value is None:
            continue
        if isinstance(value, bytes):
            path.write_bytes(value)
        elif isinstance(value, str):
            path.write_text(value, encoding="utf-8")
        else:
            path.write_text(json.dumps(value, separators=(",", ":")), encoding="utf-8")
    return folder


@pytest.fixture
def full_task(tmp_path: Path) -> Path:
    """A task folder with all four files."""
    return write_folder(
        tmp_path / "task",
        {
            API_HISTORY_FILE: HISTORY,
            UI_MESSAGES_FILE: UI,
            "context_history.json": '[[1,[0,[[0,[[115,"text",["notice"],[]]]]]]]]',
            TASK_METADATA_FILE: {"files_in_context": [], "model_usage": []},
        },
    )


class TestLoad:
    """load_task reads every file of a task folder into a frozen ClineTask."""

    def test_reads_all_four_files(self, full_task: Path) -> None:
        """History, UI messages, metadata and the overwrite store are all loaded."""
        task = load_task(full_task)
        assert task.path == full_task
        assert list(task.history) == HISTORY
        assert task.ui_messages is not None
        assert list(task.ui_messages) == UI
        assert task.metadata == {"files_in_context": [], "model_usage": []}
        assert task.context_history is not None
        assert task.context_history.to_json() == '[[1,[0,[[0,[[115,"text",["notice"],[]]]]]]]]'
        assert not task.history_only

    def test_optional_files_may_be_missing(self, tmp_path: Path) -> None:
        """Only the history is required; the other files read as None."""
        task = load_task(write_folder(tmp_path, {API_HISTORY_FILE: HISTORY}))
        assert task.ui_messages is None
        assert task.metadata is None
        assert task.context_history is None
        assert task.history_only

    def test_a_file_inside_the_folder_names_the_folder(self, full_task: Path) -> None:
        """Given the history file itself, the folder around it is loaded."""
        assert load_task(full_task / API_HISTORY_FILE).path == full_task

    def test_the_task_is_frozen(self, full_task: Path) -> None:
        """A ClineTask cannot be reassigned."""
        task = load_task(full_task)
        with pytest.raises(AttributeError):
            task.history = ()  # type: ignore[misc]

    def test_files_are_left_untouched(self, full_task: Path) -> None:
        """Loading only reads."""
        before = {path.name: path.read_bytes() for path in full_task.iterdir()}
        load_task(full_task)
        assert {path.name: path.read_bytes() for path in full_task.iterdir()} == before

    def test_repr_is_short(self, full_task: Path) -> None:
        """A task's repr summarises it instead of printing every message."""
        assert repr(load_task(full_task)) == (
            f"ClineTask(path={str(full_task)!r}, messages=4, ui_messages=5, requests=2,"
            " deleted_range=None)"
        )

    def test_building_directly_checks_the_same_way(self, tmp_path: Path) -> None:
        """A ClineTask built in memory is checked as a loaded one is."""
        task = ClineTask(tmp_path, tuple(HISTORY), tuple(UI))
        assert len(task.requests) == 2
        with pytest.raises(TaskFolderError, match=r"ui_messages\.json\[0\]: expected an object"):
            ClineTask(tmp_path, tuple(HISTORY), ("not a message",))  # type: ignore[arg-type]


class TestRequests:
    """Every request, in order, with its usage, ts and conversationHistoryIndex."""

    def test_requests_from_ui_messages(self, full_task: Path) -> None:
        """Each api_req_started gives one request; its usage is read as the original reads it."""
        task = load_task(full_task)
        assert task.requests == (
            ApiRequest(TokenUsage(1000, 50, 200, 0), 101, -1, ui_index=1),
            ApiRequest(TokenUsage(1500, 70, 1000, 200), 115, 1, ui_index=3),
        )

    def test_missing_and_null_token_fields_count_zero(self, tmp_path: Path) -> None:
        """As in the original, absent or null counts are 0."""
        ui = [api_req(5, -1, tokensIn=10, tokensOut=None)]
        task = load_task(write_folder(tmp_path, {API_HISTORY_FILE: HISTORY, UI_MESSAGES_FILE: ui}))
        assert task.requests[0].usage == TokenUsage(tokens_in=10)

    def test_empty_text_records_no_usage(self, tmp_path: Path) -> None:
        """An api_req_started without text is a request about which nothing is known."""
        ui = [{"ts": 5, "type": "say", "say": "api_req_started", "text": ""}]
        task = load_task(write_folder(tmp_path, {API_HISTORY_FILE: HISTORY, UI_MESSAGES_FILE: ui}))
        assert task.requests == (ApiRequest(None, 5, None, ui_index=0),)  # Cline: not placed

    def test_history_only_usage_comes_from_metrics(self, tmp_path: Path) -> None:
        """Without UI messages, each assistant message's metrics.tokens is its request's usage.

        prompt, completion and cached add up to the total the original compares; the ts is the
        one of the user message the request sent; the index follows Cline's convention.
        """
        task = load_task(write_folder(tmp_path, {API_HISTORY_FILE: HISTORY}))
        assert task.requests == (
            ApiRequest(TokenUsage(1000, 50, 0, 200), 100, -1, history_index=1),
            ApiRequest(TokenUsage(1500, 70, 0, 1200), 120, 1, history_index=3),
        )
        assert task.requests[1].usage is not None
        assert task.requests[1].usage.total == 2770

    def test_history_only_without_metrics_or_ts(self, tmp_path: Path) -> None:
        """An assistant message without metrics records no usage; no ts reads as None."""
        history = [
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": "ok"},
        ]
        task = load_task(write_folder(tmp_path, {API_HISTORY_FILE: history}))
        assert task.requests == (ApiRequest(None, None, -1, history_index=1),)


class TestPreviousRequest:
    """The previous request is the last UI message whose say is api_req_started (reference 8.1)."""

    def test_the_last_api_req_started(self, full_task: Path) -> None:
        """Later UI messages of other kinds are passed over."""
        previous = load_task(full_task).previous_request()
        assert previous is not None
        assert previous.ui_index == 3
        assert previous.ts == 115
        assert previous.usage == TokenUsage(1500, 70, 1000, 200)

    def test_none_before_the_first_request(self, tmp_path: Path) -> None:
        """A task that has made no request has no previous request."""
        ui = [UI[0]]
        task = load_task(write_folder(tmp_path, {API_HISTORY_FILE: HISTORY, UI_MESSAGES_FILE: ui}))
        assert task.previous_request() is None

    def test_for_a_replayed_turn(self, full_task: Path) -> None:
        """previous_request(n) is the request before the one that sent history[:n]."""
        task = load_task(full_task)
        assert task.previous_request(1) is None  # the first request has none before it
        first = task.previous_request(3)
        assert first is not None
        assert first.ui_index == 1
        last = task.previous_request(5)
        assert last is not None
        assert last.ui_index == 3

    def test_for_a_replayed_turn_of_a_history_only_folder(self, tmp_path: Path) -> None:
        """The same placement works with usage from the history's metrics."""
        task = load_task(write_folder(tmp_path, {API_HISTORY_FILE: HISTORY}))
        assert task.previous_request(1) is None
        first = task.previous_request(3)
        assert first is not None
        assert first.history_index == 1
        assert task.previous_request() == task.requests[-1]

    def test_on_ui_messages_in_memory(self) -> None:
        """previous_api_request works on a plain list of UI messages."""
        previous = previous_api_request(UI)
        assert previous == ApiRequest(TokenUsage(1500, 70, 1000, 200), 115, 1, ui_index=3)
        assert previous_api_request(UI[:1]) is None

    def test_on_ui_messages_in_memory_names_the_place(self) -> None:
        """Unreadable usage in memory is reported with the JSON path too."""
        ui = [{"ts": 1, "say": "api_req_started", "text": "{oops"}]
        with pytest.raises(TaskFolderError, match=r"ui_messages\.json\[0\]\.text: "):
            previous_api_request(ui)


class TestDeletedRange:
    """The range recorded in the UI messages is that of the latest message having one."""

    def test_latest_message_having_one(self, tmp_path: Path) -> None:
        """Later messages without a range (or with null) do not clear it."""
        ui = [
            {**UI[0], "conversationHistoryDeletedRange": [2, 3]},
            {**UI[1], "conversationHistoryDeletedRange": [2, 5]},
            {**UI[2], "conversationHistoryDeletedRange": None},
            UI[3],
        ]
        task = load_task(write_folder(tmp_path, {API_HISTORY_FILE: HISTORY, UI_MESSAGES_FILE: ui}))
        assert task.deleted_range == (2, 5)

    def test_none_recorded(self, full_task: Path) -> None:
        """No UI message with a range: nothing is hidden."""
        assert load_task(full_task).deleted_range is None

    def test_none_in_a_history_only_folder(self, tmp_path: Path) -> None:
        """The range lives in the UI messages, so a history-only folder has none."""
        assert load_task(write_folder(tmp_path, {API_HISTORY_FILE: HISTORY})).deleted_range is None


def _bad_ui(position: int, **changes: Any) -> list[dict[str, Any]]:
    ui = [dict(message) for message in UI]
    ui[position].update(changes)
    return ui


def _bad_history(position: int, **changes: Any) -> list[dict[str, Any]]:
    history = [dict(message) for message in HISTORY]
    history[position].update(changes)
    return history


class TestErrors:
    """A file that cannot be used raises TaskFolderError naming the file and the JSON path."""

    @pytest.mark.parametrize(
        ("files", "where"),
        [
            pytest.param({API_HISTORY_FILE: None}, "api_conversation_history.json: missing", id="no-history"),
            pytest.param({API_HISTORY_FILE: "[{"}, "api_conversation_history.json: not JSON", id="history-not-json"),
            pytest.param({API_HISTORY_FILE: b"\xff[]"}, "api_conversation_history.json: not JSON", id="history-not-utf8"),
            pytest.param({API_HISTORY_FILE: {"role": "user"}}, "api_conversation_history.json: expected a list", id="history-not-list"),
            pytest.param({API_HISTORY_FILE: _bad_history(2, role="system")}, "api_conversation_history.json[2].role: ", id="role"),
            pytest.param({API_HISTORY_FILE: _bad_history(1, content=[{"type": "text"}, "x"])}, "api_conversation_history.json[1].content[1]: ", id="block"),
            pytest.param({API_HISTORY_FILE: _bad_history(0, ts="noon")}, "api_conversation_history.json[0].ts: ", id="history-ts"),
            pytest.param({API_HISTORY_FILE: _bad_history(3, metrics={"tokens": {"prompt": "many"}})}, "api_conversation_history.json[3].metrics.tokens.prompt: ", id="metrics"),
            pytest.param({API_HISTORY_FILE: _bad_history(1, metrics=[])}, "api_conversation_history.json[1].metrics: ", id="metrics-not-object"),
            pytest.param({API_HISTORY_FILE: "[NaN]"}, "api_conversation_history.json: not JSON", id="nan"),
            pytest.param({UI_MESSAGES_FILE: "nope"}, "ui_messages.json: not JSON", id="ui-not-json"),
            pytest.param({UI_MESSAGES_FILE: {}}, "ui_messages.json: expected a list", id="ui-not-list"),
            pytest.param({UI_MESSAGES_FILE: [*UI, 7]}, "ui_messages.json[5]: expected an object", id="ui-entry"),
            pytest.param({UI_MESSAGES_FILE: _bad_ui(3, text="{not json")}, "ui_messages.json[3].text: ", id="ui-text-json"),
            pytest.param({UI_MESSAGES_FILE: _bad_ui(3, text='{"tokensIn":"12"}')}, "ui_messages.json[3].text: ", id="ui-text-field"),
            pytest.param({UI_MESSAGES_FILE: _bad_ui(3, text="[1]")}, "ui_messages.json[3].text: ", id="ui-text-array"),
            pytest.param({UI_MESSAGES_FILE: _bad_ui(0, text=12)}, "ui_messages.json[0].text: ", id="ui-text-type"),
            pytest.param({UI_MESSAGES_FILE: _bad_ui(2, ts=None)}, "ui_messages.json[2].ts: ", id="ui-ts"),
            pytest.param({UI_MESSAGES_FILE: _bad_ui(2, conversationHistoryIndex="1")}, "ui_messages.json[2].conversationHistoryIndex: ", id="ui-index"),
            pytest.param({UI_MESSAGES_FILE: _bad_ui(4, conversationHistoryDeletedRange=[2])}, "ui_messages.json[4].conversationHistoryDeletedRange: ", id="range-short"),
            pytest.param({UI_MESSAGES_FILE: _bad_ui(4, conversationHistoryDeletedRange=[2, "9"])}, "ui_messages.json[4].conversationHistoryDeletedRange[1]: ", id="range-value"),
            pytest.param({TASK_METADATA_FILE: []}, "task_metadata.json: expected an object", id="metadata"),
            pytest.param({"context_history.json": "[[1]]"}, "context_history.json[0]: ", id="store-shape"),
            pytest.param({"context_history.json": "{"}, "context_history.json: not JSON", id="store-not-json"),
        ],
    )  # fmt: skip
    def test_names_file_and_path(self, tmp_path: Path, files: dict[str, Any], where: str) -> None:
        """The message starts with the file's path and the JSON path of the bad value."""
        folder = write_folder(tmp_path / "task", {API_HISTORY_FILE: HISTORY, **files})
        with pytest.raises(TaskFolderError) as raised:
            load_task(folder)
        assert str(raised.value).startswith(str(folder / where))

    def test_is_a_value_error_and_ours(self, tmp_path: Path) -> None:
        """Callers may catch ValueError or WindowkeeperError."""
        with pytest.raises(ValueError, match="missing") as raised:
            load_task(tmp_path)
        assert isinstance(raised.value, WindowkeeperError)

    def test_an_empty_store_is_not_an_error(self, tmp_path: Path) -> None:
        """``[]`` is what the original writes for an empty store."""
        folder = write_folder(tmp_path, {API_HISTORY_FILE: HISTORY, "context_history.json": "[]"})
        assert load_task(folder).context_history == OverwriteStore()
