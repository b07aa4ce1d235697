"""ContextSession in real agent loops: it always returns, loses nothing, and sends only valid bodies.

Each test pins one bug found by running the README's loop as a new user would (issue "Real agent
loops"); the reproductions are in ``../shared/repros/``.
"""

from __future__ import annotations

import copy
import json
import math
import pickle
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper import (
    ConfigurationError,
    ContextOverflowError,
    ContextSession,
    InvalidRangeError,
    InvalidUsageError,
    MalformedMessageError,
    TaskFolderError,
    TokenUsage,
    WindowkeeperError,
    validate_messages,
)
from windowkeeper.rules._anthropic import DUPLICATE_TOOL_USE_ID

from ..conftest import examples
from .test_session import Clock

TASK = {"role": "user", "content": "Add pagination to the API."}
SYSTEM = "You are a careful coding agent working in a Flask repository. " * 20
TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]


def file_text(kb: int) -> str:
    line = "def handler(session, item_id: int):\n    return jsonify(session.query(Item).all())\n"
    return (line * (kb * 1024 // len(line) + 1))[: kb * 1024]


def read(tool_id: str, kb: int, path: str = "routes.py") -> list[dict[str, Any]]:
    return [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"Let me read {path}."},
                {"type": "tool_use", "id": tool_id, "name": "read_file", "input": {"path": path}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": file_text(kb)}],
        },
    ]


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


class TestPrepareAlwaysReturns:
    def test_two_user_messages_in_a_row_do_not_loop(self) -> None:
        """The repro of hang_minimal.py: the range would alternate between (2, 3) and (2, 4)."""
        session = ContextSession(context_window=20_000)
        session.extend([TASK, *read("toolu_1", 30), *read("toolu_2", 40), TASK])
        first = session.prepare(system=SYSTEM, tools=TOOLS, max_output_tokens=8192)
        session.record_usage({"input_tokens": 4000, "output_tokens": 30})
        session.extend(read("toolu_3", 40))
        second = session.prepare(system=SYSTEM, tools=TOOLS, max_output_tokens=8192)
        for prepared in (first, second):
            assert prepared.estimated_tokens <= prepared.max_allowed_size
            assert validate_messages(prepared.messages) == []

    def test_the_range_only_grows_within_one_prepare(self) -> None:
        """Every range set while preparing ends later than the one before it."""
        session = ContextSession(context_window=20_000)
        session.extend([TASK, *read("a", 30), TASK, *read("b", 30), TASK, *read("c", 30)])
        prepared = session.prepare(system=SYSTEM, max_output_tokens=8192)
        seen = [action.deleted_range for action in prepared.actions if action.deleted_range]
        assert len(seen) >= 2
        ends = [end for _, end in seen]
        assert ends == sorted(set(ends))


class TestNothingIsLost:
    def test_every_append_is_on_disk_when_it_returns(self, tmp_path: Path) -> None:
        """The final answer, appended after the last prepare, survives a reopen."""
        session = ContextSession(context_window=200_000, task_dir=tmp_path)
        session.append(TASK)
        session.prepare()
        session.append(assistant("FINAL ANSWER: pagination added."))
        again = ContextSession(context_window=200_000, task_dir=tmp_path)
        assert again.history == session.history
        assert again.history[-1]["content"][0]["text"].startswith("FINAL ANSWER")

    def test_a_tool_use_whose_tools_ran_survives(self, tmp_path: Path) -> None:
        """An assistant tool_use appended (and its tools run) is not lost when the process dies."""
        session = ContextSession(context_window=200_000, task_dir=tmp_path)
        session.extend([TASK, read("t1", 1)[0]])
        again = ContextSession(context_window=200_000, task_dir=tmp_path)
        assert [m["role"] for m in again.history] == ["user", "assistant"]

    def test_extend_takes_a_generator(self) -> None:
        """A generator is read once, and every message it gives is kept."""
        session = ContextSession(context_window=10_000)
        session.extend(m for m in [TASK, assistant("ok"), {"role": "user", "content": "go"}])
        assert len(session.history) == 3

    def test_extend_takes_a_generator_in_openai_format(self) -> None:
        session = ContextSession(context_window=10_000, format="openai")
        session.extend(iter([{"role": "user", "content": "task"}]))
        assert len(session.history) == 1

    def test_extend_is_all_or_nothing(self, tmp_path: Path) -> None:
        """A bad message anywhere in the batch keeps every message of it out, on disk too."""
        session = ContextSession(context_window=10_000, task_dir=tmp_path)
        session.append(TASK)
        with pytest.raises(MalformedMessageError, match=r"history\[2\]\.content"):
            session.extend([assistant("ok"), {"role": "user", "content": 5}])
        assert len(session.history) == 1
        assert len(ContextSession(context_window=10_000, task_dir=tmp_path).history) == 1


class TestWireShape:
    def test_storage_only_fields_never_reach_the_request(self) -> None:
        """Cline's ts, metrics, modelInfo, call_id, reasoning_details and summary stay home."""
        session = ContextSession(context_window=200_000)
        session.extend(
            [
                {"role": "user", "content": [{"type": "text", "text": "task"}], "ts": 1},
                {
                    "role": "assistant",
                    "ts": 2,
                    "metrics": {"tokens": {"prompt": 1}},
                    "modelInfo": {"modelId": "x"},
                    "content": [
                        {
                            "type": "thinking",
                            "thinking": "hmm",
                            "signature": "sig",
                            "summary": [],
                        },
                        {
                            "type": "text",
                            "text": "Reading.",
                            "call_id": "c",
                            "reasoning_details": [],
                        },
                        {
                            "type": "tool_use",
                            "id": "t1",
                            "name": "read_file",
                            "input": {"path": "a"},
                            "call_id": "c",
                        },
                    ],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}],
                },
            ]
        )
        sent = session.prepare().messages
        assert all(set(message) == {"role", "content"} for message in sent)
        assert sent[1]["content"] == [
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}},
        ]
        assert session.history[1]["ts"] == 2  # the history keeps them

    def test_unknown_blocks_are_dropped_and_reported(self) -> None:
        """A block type the API does not define is left out, and Prepared.repairs says where."""
        session = ContextSession(context_window=200_000)
        session.extend([TASK, {"role": "assistant", "content": [{"type": "reasoning", "x": 1}]}])
        session.append({"role": "user", "content": "go on"})
        prepared = session.prepare()
        assert validate_messages(prepared.messages) == []
        assert [str(r) for r in prepared.repairs] == [
            "messages[1].content[0]: dropped: block type 'reasoning' is not part of the Messages API",
            "messages[1].content: empty: replaced by a notice",
        ]

    def test_openai_requests_carry_no_thinking_parts(self) -> None:
        """Chat Completions takes no thinking part: it is dropped, with a repair."""
        session = ContextSession(context_window=200_000, format="openai")
        session.extend(
            [
                {"role": "user", "content": "task"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "hmm", "signature": "s"},
                        {"type": "text", "text": "done"},
                    ],
                    "annotations": [],
                },
                {"role": "user", "content": "thanks"},
            ]
        )
        prepared = session.prepare()
        assert prepared.messages[1] == {
            "role": "assistant",
            "content": [{"type": "text", "text": "done"}],
        }
        assert any("thinking" in str(repair) for repair in prepared.repairs)

    def test_the_caller_owns_what_it_gets(self, tmp_path: Path) -> None:
        """cache_control set on a sent block touches neither the history nor the next request."""
        session = ContextSession(context_window=200_000, task_dir=tmp_path)
        session.append({"role": "user", "content": [{"type": "text", "text": "task"}]})
        for turn in range(6):
            prepared = session.prepare()
            prepared.messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
            session.extend(
                [
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "tool_use", "id": f"t{turn}", "name": "x", "input": {}}
                        ],
                    },
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": f"t{turn}",
                                "content": f"r{turn}",
                            }
                        ],
                    },
                ]
            )
        assert "cache_control" not in json.dumps(session.prepare().messages)
        assert "cache_control" not in (tmp_path / "api_conversation_history.json").read_text()

    def test_an_edit_anywhere_in_what_was_sent_is_noticed(self) -> None:
        """Changing an early message of the last request does not leak into the next one."""
        session = ContextSession(context_window=200_000)
        session.extend([TASK, *read("t1", 1), *read("t2", 1)])
        first = session.prepare().messages
        first[1]["content"][0]["cache_control"] = {"type": "ephemeral"}
        del first[2]["content"][0]["content"]
        second = session.prepare().messages
        assert "cache_control" not in json.dumps(second)
        assert second[2]["content"][0]["content"] == file_text(1)
        assert copy.deepcopy(second) == second
        assert type(copy.deepcopy(second)[0]) is dict
        assert type(pickle.loads(pickle.dumps(second))[1]["content"]) is list

    def test_only_the_changed_copy_is_made_again(self) -> None:
        """The copies handed out are reused while unchanged; a changed one is replaced by a
        fresh copy, the others stay the same objects (one copy kept per message sent)."""
        session = ContextSession(context_window=200_000)
        session.extend([TASK, *read("t1", 1), *read("t2", 1)])
        first = session.prepare().messages
        first[3]["content"][0]["cache_control"] = {"type": "ephemeral"}
        second = session.prepare().messages
        assert second[3] is not first[3]
        assert "cache_control" not in second[3]["content"][0]
        assert all(second[i] is first[i] for i in range(len(first)) if i != 3)

    @settings(max_examples=examples(30, deep=300), deadline=None)
    @given(st.data())
    def test_a_mutated_request_leaves_the_next_one_as_if_untouched(self, data: Any) -> None:
        """Whatever the caller does to the messages it got (set, delete or add keys, blocks or
        messages, anywhere), the next request is the one a session never handed out anything
        would send: the copies reused between requests are the caller's, never shared back."""
        session = ContextSession(context_window=200_000)
        untouched = ContextSession(context_window=200_000)
        history = [TASK, *read("t1", 1), *read("t2", 1, "models.py"), *read("t3", 1)]
        session.extend(history)
        untouched.extend(history)
        for turn in range(3):
            sent = session.prepare().messages
            expected = untouched.prepare().messages
            assert sent == expected
            for _ in range(data.draw(st.integers(1, 4), label="mutations")):
                message = data.draw(st.sampled_from(sent), label="message")
                content = message["content"]
                if isinstance(content, str) or not content:
                    message["content"] = [{"type": "text", "text": "changed"}]
                    continue
                block = data.draw(st.sampled_from(content), label="block")
                action = data.draw(st.sampled_from(["set", "delete", "append", "inner", "list"]))
                if action == "set":
                    block["cache_control"] = {"type": "ephemeral"}
                elif action == "delete" and block:
                    block.pop(next(iter(block)))
                elif action == "append":
                    content.append({"type": "text", "text": "added"})
                elif action == "inner" and isinstance(block.get("content"), list):
                    block["content"].clear()
                else:
                    sent.append({"role": "user", "content": "extra"})
            more = read(f"n{turn}", 1, f"m{turn}.py")
            session.extend(more)
            untouched.extend(more)
        assert session.prepare().messages == untouched.prepare().messages


class TestValidRequests:
    def test_empty_contents_are_repaired_and_counted(self) -> None:
        """An empty list, "" mid-history and an empty text block each become a valid message."""
        session = ContextSession(context_window=200_000)
        session.extend(
            [
                TASK,
                {"role": "assistant", "content": ""},
                {"role": "user", "content": []},
                {"role": "assistant", "content": [{"type": "text", "text": ""}]},
                {"role": "user", "content": "go"},
            ]
        )
        prepared = session.prepare()
        assert validate_messages(prepared.messages) == []
        assert len(prepared.repairs) == 4

    def test_two_assistant_messages_before_the_task_are_refused(self) -> None:
        """A greeting may open the conversation; a second assistant message would push the task
        out of the kept pair, so it is refused and nothing is kept."""
        session = ContextSession(context_window=10_000)
        with pytest.raises(MalformedMessageError, match=r"history\[1\]\.role: .*greeting"):
            session.extend([assistant("hi"), assistant("anything?")])
        assert session.history == []
        session.append(assistant("hi"))
        with pytest.raises(MalformedMessageError, match=r"history\[1\]\.role: .*greeting"):
            session.append(assistant("anything?"))
        assert session.history == [assistant("hi")]

    def test_an_empty_session_has_nothing_to_send(self) -> None:
        with pytest.raises(MalformedMessageError, match="append the task first"):
            ContextSession(context_window=10_000).prepare()

    def test_duplicate_tool_use_ids_are_renamed(self) -> None:
        """A reused id gets a new one in its tool_use and in the result that answers it."""
        session = ContextSession(context_window=200_000)
        session.extend([TASK, *read("call_0", 1), *read("call_0", 1, "b.py")])
        prepared = session.prepare()
        assert validate_messages(prepared.messages) == []
        assert prepared.messages[3]["content"][1]["id"] == "call_0_2"
        assert prepared.messages[4]["content"][0]["tool_use_id"] == "call_0_2"
        assert [str(r) for r in prepared.repairs] == [
            "history[3].content[1].id: a tool_use id used before: sent as 'call_0_2'"
        ]
        assert session.history[3]["content"][1]["id"] == "call_0"

    def test_the_validator_flags_duplicate_ids(self) -> None:
        use = {"type": "tool_use", "id": "x", "name": "run", "input": {}}
        messages = [TASK, {"role": "assistant", "content": [use, use]}]
        assert DUPLICATE_TOOL_USE_ID in {v.rule for v in validate_messages(messages)}

    def test_orphan_results_become_text(self) -> None:
        """A tool_result after a text-only answer is sent as text, its content kept."""
        session = ContextSession(context_window=200_000)
        session.extend(
            [
                TASK,
                assistant("ok"),
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "z", "content": "r"}],
                },
            ]
        )
        prepared = session.prepare()
        assert validate_messages(prepared.messages) == []
        assert prepared.messages[2]["content"][1] == {"type": "text", "text": "r"}

    @pytest.mark.parametrize(
        "value",
        [5, "text", [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": ["x"]}]}]],
    )
    def test_the_validator_never_raises(self, value: Any) -> None:
        assert validate_messages(value)


class TestClipping:
    def test_a_result_followed_by_user_text_is_clipped_to_fit(self) -> None:
        """The newest turn is every user message after the last answer, not only the last one."""
        session = ContextSession(context_window=20_000, max_result_share=None)
        session.extend([TASK, *read("t1", 44), {"role": "user", "content": "and then?"}])
        prepared = session.prepare()
        assert prepared.clipped
        assert prepared.estimated_tokens <= prepared.max_allowed_size


class TestSdkObjects:
    def test_an_anthropic_reply_is_appended_as_a_message(self) -> None:
        anthropic = pytest.importorskip("anthropic")
        reply = anthropic.types.Message(
            id="msg_1",
            type="message",
            role="assistant",
            model="claude-sonnet-4-5",
            content=[
                anthropic.types.TextBlock(type="text", text="Reading."),
                anthropic.types.ToolUseBlock(type="tool_use", id="t1", name="read_file", input={}),
            ],
            stop_reason="tool_use",
            stop_sequence=None,
            usage=anthropic.types.Usage(input_tokens=1, output_tokens=2),
        )
        session = ContextSession(context_window=200_000)
        session.extend([TASK, reply])
        assert session.history[1] == {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "t1", "name": "read_file", "input": {}},
            ],
        }

    def test_an_openai_message_is_appended_without_response_only_fields(self) -> None:
        openai = pytest.importorskip("openai")
        completion = openai.types.chat.ChatCompletion.model_validate(
            {
                "id": "c",
                "object": "chat.completion",
                "created": 1,
                "model": "gpt-4o",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": "done", "annotations": []},
                    }
                ],
            }
        )
        session = ContextSession(context_window=200_000, format="openai")
        session.extend([{"role": "user", "content": "task"}, completion.choices[0].message])
        session.append(completion)
        assert session.history[1:] == [{"role": "assistant", "content": "done"}] * 2


class TestConfiguration:
    @pytest.mark.parametrize(
        ("arguments", "match"),
        [
            ({"context_window": 0}, "positive"),
            ({"context_window": -5}, "positive"),
            ({"context_window": "claude-sonnet-4-5"}, "model="),
            ({"context_window": 1.5}, "int"),
            ({"model": 7}, "model id"),
            ({"max_output_tokens": -1}, "max_output_tokens"),
            ({"shrink_target": 0}, "shrink_target"),
            ({"format": "xml"}, "format"),
        ],
    )
    def test_bad_arguments_are_named_at_construction(
        self, arguments: dict[str, Any], match: str
    ) -> None:
        with pytest.raises(ConfigurationError, match=match) as caught:
            ContextSession(**arguments)
        assert isinstance(caught.value, WindowkeeperError)
        assert isinstance(caught.value, TypeError | ValueError)

    def test_a_model_id_passed_positionally(self) -> None:
        with pytest.raises(ConfigurationError, match="model="):
            ContextSession("gpt-4o")  # type: ignore[arg-type]


class TestPoisonRefusedAtAppend:
    @pytest.mark.parametrize(
        ("value", "match"),
        [
            (math.nan, "not a JSON number"),
            (math.inf, "not a JSON number"),
            ({1, 2}, "set is not a JSON value"),
            (10**5000, "too long"),
            ("bytes: \udcff", "not UTF-8"),
            ({1: "a"}, "JSON keys are strings"),
        ],
        ids=["nan", "inf", "set", "huge-int", "lone-surrogate", "int-key"],
    )
    def test_values_json_cannot_carry(self, value: Any, match: str) -> None:
        session = ContextSession(context_window=10_000)
        session.append(TASK)
        use = {"type": "tool_use", "id": "t", "name": "calc", "input": {"x": value}}
        with pytest.raises(MalformedMessageError, match=match) as caught:
            session.append({"role": "assistant", "content": [use]})
        assert caught.value.path.startswith("history[1].content[0].input")
        assert len(session.history) == 1

    def test_deep_nesting(self) -> None:
        value: Any = "leaf"
        for _ in range(1_000):
            value = [value]
        session = ContextSession(context_window=10_000)
        with pytest.raises(MalformedMessageError, match="levels deep"):
            session.append({"role": "user", "content": [{"type": "text", "text": "t", "x": value}]})

    def test_a_text_that_is_not_a_string(self) -> None:
        session = ContextSession(context_window=10_000)
        with pytest.raises(MalformedMessageError, match=r"history\[0\]\.content\[0\]\.text"):
            session.append({"role": "user", "content": [{"type": "text", "text": 12345}]})

    def test_invalid_usage_is_refused_before_it_is_kept(self, tmp_path: Path) -> None:
        """A bad TokenUsage changes nothing: later prepares work, the folder reopens."""
        session = ContextSession(context_window=10_000, task_dir=tmp_path)
        session.append(TASK)
        session.prepare()
        for bad in ("x", math.nan, -1, True):
            with pytest.raises(InvalidUsageError):
                session.record_usage(TokenUsage(tokens_in=bad))  # type: ignore[arg-type]
        session.prepare()
        ContextSession(context_window=10_000, task_dir=tmp_path).prepare()

    def test_a_range_past_the_end_is_refused(self) -> None:
        session = ContextSession(context_window=10_000)
        session.extend([TASK, assistant("a"), {"role": "user", "content": "b"}])
        with pytest.raises(InvalidRangeError, match="past the history"):
            session.deleted_range = (2, 3)


STATE_BASE = {
    "version": 1,
    "history_length": 3,
    "deleted_range": None,
    "generation": 0,
    "last_timestamp": 0,
    "usage": None,
    "usage_timestamp": 0,
    "usage_generation": 0,
    "clips": [],
}


class TestStateFile:
    def _folder(self, tmp_path: Path, state: str) -> Path:
        history = [TASK, assistant("a"), {"role": "user", "content": "NEWEST"}]
        (tmp_path / "api_conversation_history.json").write_text(json.dumps(history))
        (tmp_path / "windowkeeper_session.json").write_text(state)
        return tmp_path

    @pytest.mark.parametrize(
        ("state", "match"),
        [
            (
                json.dumps(STATE_BASE).replace('"last_timestamp": 0', '"last_timestamp": Infinity'),
                "not JSON",
            ),
            ("[1, 2, 3]", "expected an object"),
            (json.dumps({**STATE_BASE, "deleted_range": [2, 99]}), "past the history"),
            (json.dumps({**STATE_BASE, "generation": 10**400}), "generation"),
            (json.dumps({**STATE_BASE, "usage": [1, 2]}), "usage"),
        ],
    )
    def test_a_corrupt_state_file_is_named(self, tmp_path: Path, state: str, match: str) -> None:
        with pytest.raises(TaskFolderError, match=match):
            ContextSession(context_window=10_000, task_dir=self._folder(tmp_path, state))

    def test_a_nan_in_the_history_file_is_refused(self, tmp_path: Path) -> None:
        (tmp_path / "api_conversation_history.json").write_text(
            '[{"role": "user", "content": [{"type": "text", "text": "t", "x": NaN}]}]'
        )
        with pytest.raises(TaskFolderError, match="NaN is not JSON"):
            ContextSession(context_window=10_000, task_dir=tmp_path)


class TestSmaller:
    def test_replaced_reads_counts_usage_driven_replacements(self) -> None:
        """Duplicate reads replaced by the original's usage-driven decision are counted too."""
        session = ContextSession(context_window=64_000, clock=Clock())
        session.extend([TASK, *read("t1", 20), *read("t2", 20), *read("t3", 20)])
        session.prepare()
        session.record_usage({"input_tokens": 40_000, "output_tokens": 10})
        session.append(assistant("done"))
        session.append({"role": "user", "content": "again"})
        prepared = session.prepare()
        assert prepared.replaced_reads == 2

    def test_masking_keeps_the_newest_turn_whole(self) -> None:
        """Results the model has not seen yet are never masked (masking_newest_turn.py)."""
        session = ContextSession(context_window=20_000)
        session.append({"role": "user", "content": "Task: fix the tests."})
        for i in range(6):
            session.extend(
                [
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "tool_use", "id": f"t{i}", "name": "run", "input": {}}
                        ],
                    },
                    {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": f"t{i}", "content": "y" * 3000}
                        ],
                    },
                ]
            )
            session.prepare()
        session.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": f"p{j}", "name": "read", "input": {}}
                    for j in range(3)
                ],
            }
        )
        session.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"p{j}",
                        "content": f"file {j} " + "x" * 5000,
                    }
                    for j in range(3)
                ],
            }
        )
        prepared = session.prepare(max_output_tokens=8000)
        assert prepared.preflight_acted
        for block in prepared.messages[-1]["content"]:
            assert block["content"].startswith("file ")

    def test_rollback_then_the_same_calls_give_the_same_request(self) -> None:
        """The usage recorded before the checkpoint drives the same decision again."""
        session = ContextSession(context_window=32_000)
        session.append(TASK)
        for i in range(10):
            session.extend(
                [assistant(f"a{i} " + "w" * 2000), {"role": "user", "content": "w" * 2000}]
            )
        session.prepare()
        session.record_usage({"input_tokens": 30_000, "output_tokens": 500})
        checkpoint = session.checkpoint()
        more = [assistant("next"), {"role": "user", "content": "again"}]
        session.extend(more)
        first = session.prepare()
        session.rollback(checkpoint)
        session.extend(more)
        second = session.prepare()
        assert first.messages == second.messages
        assert first.deleted_range == second.deleted_range

    def test_an_overflow_leaves_the_session_as_it_was(self, tmp_path: Path) -> None:
        """No range, edit or clip of a failed prepare stays, in memory or on disk."""
        session = ContextSession(context_window=20_000, task_dir=tmp_path)
        session.append(TASK)
        for i in range(10):
            session.extend(
                [assistant(f"a{i} " + "w" * 2000), {"role": "user", "content": "w" * 2000}]
            )
        session.prepare()
        store = session.manager.context_history_json()
        with pytest.raises(ContextOverflowError):
            session.prepare(system="S" * 60_000)
        assert session.deleted_range is None
        assert session.manager.context_history_json() == store
        reopened = ContextSession(context_window=20_000, task_dir=tmp_path)
        assert reopened.deleted_range is None
        assert reopened.manager.context_history_json() == store

    def test_a_non_string_system_is_refused(self) -> None:
        session = ContextSession(context_window=10_000)
        session.append(TASK)
        with pytest.raises(MalformedMessageError, match="system"):
            session.prepare(system=5)

    def test_no_warning_for_a_known_model(self) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            ContextSession(model="claude-sonnet-4-5")


class TestSync:
    def test_a_growing_list_appends_its_suffix(self) -> None:
        session = ContextSession(context_window=200_000)
        conversation = [TASK, assistant("a"), {"role": "user", "content": "b"}]
        assert session.sync(conversation[:1]).appended == 1
        synced = session.sync(json.loads(json.dumps(conversation)))  # equal values, new objects
        assert (synced.kept, synced.appended, synced.dropped) == (1, 2, 0)
        assert session.history == conversation

    def test_an_edit_cuts_back_to_the_common_prefix(self, tmp_path: Path) -> None:
        """Edits, clips and usage past the cut go with it; the rest stays; nothing is mixed."""
        session = ContextSession(context_window=20_000, task_dir=tmp_path)
        conversation = [TASK, *read("t1", 30), *read("t2", 30), *read("t3", 30)]
        session.sync(conversation)
        session.prepare(max_output_tokens=2_000)
        edited = [
            *conversation[:3],
            assistant("a different turn"),
            {"role": "user", "content": "go"},
        ]
        synced = session.sync(edited)
        assert (synced.kept, synced.appended, synced.dropped) == (3, 2, 4)
        assert session.history == edited
        assert all(clip.message_index < 3 for clip in session.prepare().clipped)
        assert ContextSession(context_window=20_000, task_dir=tmp_path).history == edited

    def test_a_trimmed_list_is_a_cut(self) -> None:
        session = ContextSession(context_window=200_000)
        session.sync([TASK, assistant("a"), {"role": "user", "content": "b"}])
        synced = session.sync([TASK, assistant("a")])
        assert (synced.kept, synced.dropped) == (2, 1)

    def test_another_task_starts_over(self) -> None:
        session = ContextSession(context_window=200_000)
        session.sync([TASK, assistant("a")])
        synced = session.sync([{"role": "user", "content": "another task"}])
        assert synced.restarted
        assert session.history == [{"role": "user", "content": "another task"}]


class TestResponsesFormat:
    def test_items_in_items_out(self, tmp_path: Path) -> None:
        """format="responses": Responses input items in, valid items out, persisted, resumed."""
        from windowkeeper.formats.responses import validate_responses

        session = ContextSession(context_window=20_000, format="responses", task_dir=tmp_path)
        session.append({"role": "developer", "content": "Be careful."})
        session.append({"role": "user", "content": "Fix the bug."})
        for turn in range(12):
            session.extend(
                [
                    {"type": "reasoning", "id": f"rs_{turn}", "summary": []},
                    {
                        "type": "function_call",
                        "call_id": f"call_{turn}",
                        "name": "read_file",
                        "arguments": json.dumps({"path": f"f{turn}.py"}),
                    },
                    {
                        "type": "function_call_output",
                        "call_id": f"call_{turn}",
                        "output": file_text(12),
                    },
                ]
            )
            prepared = session.prepare(max_output_tokens=2_000)
            assert validate_responses(prepared.messages) == []
            assert prepared.estimated_tokens <= prepared.max_allowed_size
        assert prepared.deleted_range is not None  # the window forced hiding turns
        assert (
            ContextSession(context_window=20_000, format="responses", task_dir=tmp_path).history
            == session.history
        )
