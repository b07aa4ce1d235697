"""Gemini CLI recordings as current versions write them: whole-history rewrites, the context
messages a resume builds again, and the user content recorded again after a steering hint.

The records follow the structure of real 2026 recordings (JSON Lines sessions opened by a
``$set.messages`` line, a steering hint sent with a tool's response, a response masked later).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from windowkeeper import validate_messages
from windowkeeper.transcripts import Unknown
from windowkeeper.transcripts.gemini_cli import parse_gemini_cli

_META = {"sessionId": "s-1", "projectHash": "ab12", "startTime": "2026-07-05T12:27:04.992Z"}


def _jsonl(*records: dict[str, Any]) -> str:
    return "\n".join(json.dumps(record) for record in records) + "\n"


def _user(message_id: str, text: str) -> dict[str, Any]:
    return {"id": message_id, "type": "user", "content": [{"text": text}]}


def _gemini(message_id: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"id": message_id, "type": "gemini", "content": text, **extra}


def _texts(messages: tuple[dict[str, Any], ...]) -> list[tuple[str, str]]:
    return [
        (message["role"], block.get("text") or block.get("content") or block.get("name"))
        for message in messages
        for block in message["content"]
    ]


class TestHistoryRewrites:
    """A ``$set`` whose ``messages`` is a list: the history starts over from it."""

    def test_rewrite_replaces_what_came_before(self) -> None:
        text = _jsonl(
            _META,
            _user("u1", "Fix the parser."),
            _gemini("g1", "Looking at it."),
            {
                "$set": {
                    "messages": [
                        _user("c1", "Summary of the work so far: the parser fails on tabs."),
                        _gemini("c2", "Understood, continuing."),
                    ],
                    "lastUpdated": "2026-07-05T13:00:00.000Z",
                }
            },
            _user("u2", "Now add a test."),
            _gemini("g2", "Added."),
        )
        transcript = parse_gemini_cli(text, name="rec.jsonl")
        assert _texts(transcript.messages) == [
            ("user", "Summary of the work so far: the parser fails on tabs."),
            ("assistant", "Understood, continuing."),
            ("user", "Now add a test."),
            ("assistant", "Added."),
        ]
        assert validate_messages(list(transcript.messages)) == []

    def test_a_later_record_replaces_a_rewritten_message_by_id(self) -> None:
        text = _jsonl(
            _META,
            {"$set": {"messages": [_user("u1", "Fix it."), _gemini("g1", "Draft")]}},
            _gemini("g1", "Final answer"),
        )
        assert _texts(parse_gemini_cli(text).messages) == [
            ("user", "Fix it."),
            ("assistant", "Final answer"),
        ]

    def test_a_metadata_update_without_messages_keeps_them(self) -> None:
        text = _jsonl(
            _META,
            _user("u1", "Fix it."),
            {"$set": {"lastUpdated": "2026-07-05T13:00:00.000Z", "summary": "Fixing"}},
            _gemini("g1", "Done."),
        )
        assert _texts(parse_gemini_cli(text).messages) == [
            ("user", "Fix it."),
            ("assistant", "Done."),
        ]

    def test_a_metadata_line_with_messages_adds_them(self) -> None:
        """A whole legacy record written on one line is read, and later lines go on from it."""
        text = _jsonl(
            {**_META, "messages": [_user("u1", "Fix it."), _gemini("g1", "On it.")]},
            _user("u2", "Thanks."),
        )
        assert [role for role, _ in _texts(parse_gemini_cli(text).messages)] == [
            "user",
            "assistant",
            "user",
        ]

    def test_a_listed_message_without_an_id_is_reported(self) -> None:
        text = _jsonl(_META, {"$set": {"messages": [{"type": "user"}, _user("u1", "Hi")]}})
        transcript = parse_gemini_cli(text, name="rec.jsonl")
        assert _texts(transcript.messages) == [("user", "Hi")]
        assert transcript.unknown == (
            Unknown("rec.jsonl:2: $set.messages[0]", "record without an id"),
        )


class TestContextMessages:
    """The session and hook context Gemini CLI builds again on resume are not user words."""

    def test_context_messages_are_left_out(self) -> None:
        text = _jsonl(
            _META,
            _user("c", "<session_context>\nthe date, the folders\n</session_context>"),
            _user("h", "<hook_context>lint passed</hook_context>"),
            _user("u1", "Fix the parser."),
            _gemini("g1", "Done."),
        )
        assert _texts(parse_gemini_cli(text).messages) == [
            ("user", "Fix the parser."),
            ("assistant", "Done."),
        ]

    def test_a_rewrite_that_holds_context_keeps_only_the_conversation(self) -> None:
        rewrite = [_user("c", "<session_context>\nx"), _user("u", "Fix it."), _gemini("g", "Ok.")]
        text = _jsonl(_META, _user("old", "stale"), {"$set": {"messages": rewrite}})
        assert _texts(parse_gemini_cli(text).messages) == [
            ("user", "Fix it."),
            ("assistant", "Ok."),
        ]

    def test_records_upstream_ignores_are_not_fatal(self) -> None:
        """A ``$set.messages`` that is not a list and a ``$rewindTo`` that is not an id."""
        text = _jsonl(_META, _user("u", "Fix it."), {"$set": {"messages": {}}}, {"$rewindTo": None})
        transcript = parse_gemini_cli(text, name="rec.jsonl")
        assert _texts(transcript.messages) == [("user", "Fix it.")]
        assert transcript.unknown == (Unknown("rec.jsonl:4", "record without an id"),)


_STEERING = "User steering update:\n<user_input>\nuse pytest\n</user_input>"


def _response(output: str) -> dict[str, Any]:
    return {"functionResponse": {"id": "run_1", "name": "run", "response": {"output": output}}}


class TestSteeringHints:
    """A hint sent with a tool's response is recorded in the call's result and again after it."""

    def _recording(self, recorded: str, repeated: str) -> str:
        call = {
            "id": "run_1",
            "name": "run",
            "args": {"command": "make"},
            "result": [{"text": _STEERING}, _response(recorded)],
            "status": "success",
        }
        return _jsonl(
            _META,
            _user("u1", "Build it."),
            _gemini("g1", "Building.", toolCalls=[call]),
            {"id": "u2", "type": "user", "content": [{"text": _STEERING}, _response(repeated)]},
            _gemini("g2", "Switching to pytest."),
        )

    def test_the_hint_and_the_response_are_read_once(self) -> None:
        transcript = parse_gemini_cli(self._recording("ok", "ok"))
        assert _texts(transcript.messages) == [
            ("user", "Build it."),
            ("assistant", "Building."),
            ("assistant", "run"),
            ("user", "ok"),
            ("user", _STEERING),
            ("assistant", "Switching to pytest."),
        ]
        assert validate_messages(list(transcript.messages)) == []

    def test_a_response_masked_since_is_still_the_same_response(self) -> None:
        """The call's result was masked after it was recorded; the copy after it was not."""
        masked = "<tool_output_masked>\nok\n... [TRUNCATED] ..."
        transcript = parse_gemini_cli(self._recording(masked, "ok, the whole output"))
        results = [
            block["content"]
            for message in transcript.messages
            for block in message["content"]
            if block["type"] == "tool_result"
        ]
        assert results == [masked]
        assert validate_messages(list(transcript.messages)) == []

    def test_new_user_words_after_the_results_are_kept(self) -> None:
        records = [json.loads(line) for line in self._recording("ok", "ok").splitlines()]
        records[3]["content"].append({"text": "Also lint."})
        transcript = parse_gemini_cli(_jsonl(*records))
        assert ("user", "Also lint.") in _texts(transcript.messages)
        assert [text for _, text in _texts(transcript.messages)].count(_STEERING) == 1

    def test_typed_words_equal_to_a_result_are_kept(self) -> None:
        """Only a copy (it repeats a response just read) loses what was read: a user typing
        text a tool also returned is not a copy."""
        call = {"id": "ask_1", "name": "ask", "args": {}, "result": [{"text": "yes"}]}
        text = _jsonl(
            _META,
            _user("u1", "Go."),
            _gemini("g1", "Asking.", toolCalls=[call]),
            _user("u2", "yes"),
        )
        assert _texts(parse_gemini_cli(text).messages)[-2:] == [("user", "yes"), ("user", "yes")]

    def test_a_response_to_another_call_is_kept(self) -> None:
        other = {"functionResponse": {"id": "run_2", "name": "run", "response": {"output": "b"}}}
        records = [json.loads(line) for line in self._recording("ok", "ok").splitlines()]
        records[3]["content"].append(other)
        results = [
            block["tool_use_id"]
            for message in parse_gemini_cli(_jsonl(*records)).messages
            for block in message["content"]
            if block["type"] == "tool_result"
        ]
        assert results == ["run_1", "run_2"]


def _tokens(prompt: int, output: int = 10) -> dict[str, int]:
    return {"input": prompt, "output": output, "cached": 0, "thoughts": 0, "tool": 0}


def _info(message_id: str, text: str) -> dict[str, Any]:
    return {"id": message_id, "type": "info", "content": text}


class TestTurnsRecordedInTwo:
    """Two ``gemini`` records in a row are one turn when Gemini CLI wrote them for one: the
    calls of a turn cancelled while they ran, a retry after a malformed function call. The
    records follow real February-March 2026 sessions."""

    def test_calls_of_a_cancelled_turn_join_it(self) -> None:
        call = {
            "id": "ask_1",
            "name": "ask_user",
            "args": {"question": "Go?"},
            "status": "cancelled",
            "result": [
                {
                    "functionResponse": {
                        "id": "ask_1",
                        "name": "ask_user",
                        "response": {"error": "cancelled"},
                    }
                }
            ],
        }
        transcript = parse_gemini_cli(
            _jsonl(
                _META,
                _user("u1", "Set it up."),
                _gemini("g1", "Asking first.", tokens=_tokens(900)),
                _info("i1", "The request was stopped."),
                _gemini("g2", "", toolCalls=[call]),
                _user("u2", "Go on without asking."),
            )
        )
        roles = [m["role"] for m in transcript.messages]
        assert roles == ["user", "assistant", "user"]
        assert [b["type"] for b in transcript.messages[1]["content"]] == ["text", "tool_use"]
        assert [b["type"] for b in transcript.messages[2]["content"]] == ["tool_result", "text"]
        assert validate_messages(list(transcript.messages)) == []
        assert len(transcript.requests) == 1

    def test_a_retried_attempt_leaves_its_usage_only(self) -> None:
        call = {"id": "ask_2", "name": "ask_user", "args": {}, "status": "success", "result": "yes"}
        transcript = parse_gemini_cli(
            _jsonl(
                _META,
                _user("u1", "When is it called?"),
                _info("i1", "A call in the answer could not be parsed."),
                _gemini("g1", "First attempt.", tokens=_tokens(6700)),
                _gemini("g2", "It is called by hand.", tokens=_tokens(6700, 40), toolCalls=[call]),
            )
        )
        assert _texts(transcript.messages)[:2] == [
            ("user", "When is it called?"),
            ("assistant", "It is called by hand."),
        ]
        assert validate_messages(list(transcript.messages)) == []
        first, second = transcript.requests
        assert (first.message_index, first.usage.total) == (None, 6710)
        assert second.message_index == 1

    def test_a_question_mark_the_model_answered_is_kept(self) -> None:
        """A prompt Gemini CLI leaves out on resume ("?", a command) stays when the model
        answered it and nothing else stands before the answer; else it goes, as before."""
        answered = parse_gemini_cli(
            _jsonl(
                _META,
                _user("u1", "?"),
                _info("i1", "Switched model"),
                _gemini("g1", "Hi!", tokens=_tokens(9630)),
            )
        )
        assert _texts(answered.messages) == [("user", "?"), ("assistant", "Hi!")]
        unanswered = parse_gemini_cli(
            _jsonl(
                _META,
                _user("u1", "Fix it."),
                _gemini("g1", "Done.", tokens=_tokens(50)),
                _user("u2", "/stats"),
                _user("u3", "Thanks."),
            )
        )
        assert _texts(unanswered.messages) == [
            ("user", "Fix it."),
            ("assistant", "Done."),
            ("user", "Thanks."),
        ]

    @pytest.mark.parametrize(
        "between",
        [
            [_info("i1", "Something failed.")],  # no retry: the second prompt was larger
            [_user("u2", "/stats")],  # a command, never sent: no user turn
        ],
    )
    def test_two_turns_stay_two(self, between: list[dict[str, Any]]) -> None:
        transcript = parse_gemini_cli(
            _jsonl(
                _META,
                _user("u1", "Go."),
                _gemini("g1", "One.", tokens=_tokens(100)),
                *between,
                _gemini("g2", "Two.", tokens=_tokens(140)),
            )
        )
        assert [text for _, text in _texts(transcript.messages)] == ["Go.", "One.", "Two."]

    def test_turns_of_zero_tokens_are_no_retry(self) -> None:
        """A proxy that reports zeros tells nothing: both turns stay."""
        zeros = {"input": 0, "output": 0, "cached": 0, "thoughts": 0, "tool": 0}
        transcript = parse_gemini_cli(
            _jsonl(
                _META,
                _user("u1", "Go."),
                _gemini("g1", "One.", tokens=zeros),
                _gemini("g2", "Two.", tokens=zeros),
            )
        )
        assert [text for _, text in _texts(transcript.messages)] == ["Go.", "One.", "Two."]

    def test_a_question_before_a_retry_is_not_kept(self) -> None:
        """The retry replaces the attempt: the "?" between them stands before no answer."""
        retried = parse_gemini_cli(
            _jsonl(
                _META,
                _user("u1", "Q?"),
                _gemini("g1", "attempt", tokens=_tokens(6700)),
                _user("u2", "?"),
                _gemini("g2", "answer", tokens=_tokens(6700)),
            )
        )
        assert _texts(retried.messages) == [("user", "Q?"), ("assistant", "answer")]
