"""An earlier report inflated against a later one must not teach the estimator a cheap ratio.

The estimator calibrates from the delta between two reports of requests where one extends the
other. When the earlier one was reported denser than the later (a denser tokenizer on part of
the content, a report that counted something once), the delta makes the added text look cheap;
learnt at face value, one such delta moved the ratio from 3 to over 7 bytes per token, and the
next request, estimated at 26,528 tokens, was 39,780 by the provider's count, over a window of
40,000 (the session state machine's stored example). One delta now moves the ratio at most
``1 / _MAX_CHEAPER`` of the way towards fewer tokens; the dense side is not bounded.
"""

from __future__ import annotations

import copy
from typing import Any

from windowkeeper import ContextSession
from windowkeeper.session._tokens import CalibratedEstimator

from ..builders import user
from ..doubles import OpenAIDouble
from ..machine_strategies import OPENAI_TOOLS, SYSTEMS, big_text
from .test_tokens import conversation, replay_with_ratio

WINDOW = 40_000
SYSTEM = SYSTEMS["15 KB"]


def calls(*ids: str) -> dict[str, Any]:
    """An answer reading one file per id."""
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": "read_file", "arguments": f'{{"path": "src/{call_id}.py"}}'},
            }
            for call_id in ids
        ],
    }


def result(call_id: str, kb: int, seed: int) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": big_text(kb, seed)}


def size(messages: list[dict[str, Any]]) -> int:
    return sum(len(str(message["content"])) for message in messages)


class TestEstimator:
    def test_an_inflated_earlier_report_does_not_make_the_added_text_cheap(self) -> None:
        """Reported at 1.3 times 3.5 bytes per token, then at 3.5 exactly: the ratio stays near
        3 (the delta alone says 7.6, and was learnt as 5.4), and the next estimate is above the
        truth."""
        messages = conversation(3)  # 5 messages: 4 KB from the user, 1 KB answers
        estimator = CalibratedEstimator()
        estimator.observe(messages[:3], reported_input_tokens=round(1.3 * size(messages[:3]) / 3.5))
        estimator.observe(messages, reported_input_tokens=round(size(messages) / 3.5))
        assert 3.0 <= estimator.chars_per_token < 3.8
        grown = [*messages, user(big_text(64, 1))]
        assert estimator.count(grown) >= size(grown) / 3.5

    def test_a_cheaper_tokenizer_is_still_learnt_over_a_few_observations(self) -> None:
        """The bound slows the move towards fewer tokens per byte; it does not stop it."""
        estimator = CalibratedEstimator()
        replay_with_ratio(estimator, conversation(21)[:39], bytes_per_token=5.0)
        assert 4.6 < estimator.chars_per_token <= 5.0

    def test_a_denser_report_is_learnt_at_once(self) -> None:
        """The dense side is not bounded: one delta at 1.5 bytes per token moves the ratio there."""
        messages = conversation(3)
        estimator = CalibratedEstimator()
        estimator.observe(messages[:3], reported_input_tokens=round(size(messages[:3]) / 1.5))
        estimator.observe(messages, reported_input_tokens=round(size(messages) / 1.5))
        assert estimator.chars_per_token < 1.8


class TestSession:
    def test_a_report_denser_than_the_next_does_not_send_over_the_window(
        self, tmp_path: Any
    ) -> None:
        """1.3 times the double's count, then its count exactly: the next request still fits."""
        api = OpenAIDouble(window=WINDOW)
        session = ContextSession(
            context_window=WINDOW,
            task_dir=tmp_path,
            format="openai",
            clock=lambda: 0,
            counter=CalibratedEstimator(),
        )
        session.append({"role": "user", "content": "Add pagination to the API."})
        steps = [  # (the turn appended, how much denser the provider's report is)
            ([calls("a"), result("a", 12, 1)], 1.3),
            ([calls("b"), result("b", 12, 2)], 1.0),
            ([calls("c", "d", "e", "f"), *(result(n, 23, i) for i, n in enumerate("cdef"))], None),
        ]
        for turn, denser in steps:
            session.extend(turn)
            prepared = session.prepare(system=SYSTEM, tools=OPENAI_TOOLS, max_output_tokens=512)
            body = {
                "model": "gpt-4o",
                "messages": [{"role": "system", "content": SYSTEM}, *prepared.messages],
                "tools": OPENAI_TOOLS,
                "max_completion_tokens": 512,
            }
            assert api.check(copy.deepcopy(body)) == [], (
                f"estimated {prepared.estimated_tokens:,}, the double counts"
                f" {api.input_tokens(body):,}"
            )
            if denser is not None:
                tokens = int(api.input_tokens(body) * denser)
                session.record_usage(
                    {"prompt_tokens": tokens, "completion_tokens": 50, "total_tokens": tokens + 50}
                )
