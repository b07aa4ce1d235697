"""The ``cline-condense`` replay policy: the original's auto-condense path, with scripted summaries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from windowkeeper import validate_messages
from windowkeeper.cline import load_task
from windowkeeper.core._condense import SUMMARY_INSTRUCTION, SUMMARY_SECTIONS, SUMMARY_TOOL
from windowkeeper.core._notices import CONTINUE_NOTICE
from windowkeeper.tools._replay import (
    ClineCondensePolicy,
    CondenseStep,
    PolicyName,
    Replay,
    Replayer,
    Ruler,
    Sent,
    replay,
    request_points,
)
from windowkeeper.tools._scripted_summary import DEFAULT_SUMMARY_CHARS, scripted_summary

from ..traces import TASK, conversation

Message = dict[str, Any]
WINDOW = 64_000
PATHS = tuple(f"src/module_{n}.py" for n in range(40))  # no file read twice: nothing to dedupe
TRACE = "cline-native-gcp-refactor-redacted"


def history(turns: int = 60) -> list[Message]:
    """A generated coding session that outgrows a 64k window several times."""
    return conversation(turns, chars=9_000, paths=PATHS)


def run(
    messages: list[Message], policy: ClineCondensePolicy | str = "cline-condense", **kwargs: Any
) -> tuple[Replay, list[Sent]]:
    """Replay with estimated usage; also return every request sent, follow-ups included."""
    replayer = Replayer(
        messages, window=kwargs.pop("window", WINDOW), policy=policy, usage="estimated"
    )
    sent: list[Sent] = []
    for length in request_points(messages):
        first, _ = replayer.request(length)
        while first is not None:
            sent.append(first)
            first = first.follow_up
    return replayer.result(), sent


def keeps_the_task(first: Message, task: Message) -> bool:
    """Message 0 as sent: the task itself, or the task with its text replaced by the notice."""
    if first == task:
        return True
    content = first.get("content")
    return (
        isinstance(content, list)
        and content[0] == {"type": "text", "text": CONTINUE_NOTICE}
        and content[1:] == task["content"][1:]
    )


class TestPolicy:
    """Over a generated conversation."""

    def test_condenses_instead_of_truncating(self) -> None:
        """Summaries happen, every request is valid and within the window, message 0 always leads."""
        messages = history()
        result, sent = run(messages)
        assert result.policy == PolicyName.CLINE_CONDENSE.value == "cline-condense"
        assert result.summary.condensations >= 2
        # The ask replaces the ordinary request; the continuation is one more.
        assert len(result.requests) == len(request_points(messages)) + result.summary.condensations
        assert result.summary.overflows == 0
        for request in sent:
            assert validate_messages(request.messages) == []
            assert keeps_the_task(request.messages[0], messages[0])

    def test_summary_then_continuation(self) -> None:
        """Each ask is followed, at the same index, by its continuation with the range grown."""
        result, sent = run(history())
        records = result.requests
        asks = [n for n, record in enumerate(records) if record.condense is CondenseStep.SUMMARIZE]
        assert asks
        assert result.condense_requests == tuple(records[n] for n in asks)
        for n in asks:
            ask, continuation = records[n], records[n + 1]
            assert continuation.condense is CondenseStep.CONTINUATION
            assert continuation.index == ask.index
            assert not ask.truncated
            assert continuation.truncated
            assert continuation.deleted_range is not None
            assert continuation.estimated_tokens < ask.estimated_tokens / 2
            # The ask is the whole conversation, with the instruction at the end.
            last = sent[n].messages[-1]["content"][-1]
            assert last == {"type": "text", "text": SUMMARY_INSTRUCTION}
            # The continuation is the first pair and the summary's result.
            assert len(sent[n + 1].messages) == 3
        ordinary = [r for r in records if r.condense is None]
        assert all(not r.truncated for r in ordinary)  # only summaries hide anything

    def test_own_history(self) -> None:
        """The policy's history holds each ask, call and result; the recorded one is untouched."""
        messages = history()
        before = [dict(m) for m in messages]
        policy = ClineCondensePolicy(WINDOW)
        result, _ = run(messages, policy)
        assert messages == before
        calls = [
            m for m in policy.history if any(b.get("name") == SUMMARY_TOOL for b in m["content"])
        ]
        assert len(calls) == result.summary.condensations
        assert len(policy.history) == len(messages) - 1 + 2 * result.summary.condensations

    def test_native_results_lose_the_summary(self) -> None:
        """With tool_result blocks the summary is an orphan and dropped, as in the original (B8)."""
        messages = history()
        _, native = run(messages)
        _, text = run(messages, ClineCondensePolicy(WINDOW, native_results=False))
        continuations = [s for s in native if s.condense is CondenseStep.CONTINUATION]
        kept = [s for s in text if s.condense is CondenseStep.CONTINUATION]
        assert continuations
        assert kept
        assert all("1. Primary Request" not in str(s.messages) for s in continuations)
        assert all("1. Primary Request" in str(s.messages[-1]) for s in kept)
        for request in text:
            assert validate_messages(request.messages) == []

    def test_xml_calls(self) -> None:
        """A history without tool_use blocks gets the call as Cline's XML text."""
        messages: list[Message] = [{"role": "user", "content": [{"type": "text", "text": TASK}]}]
        for turn in range(40):
            messages.append(
                {"role": "assistant", "content": [{"type": "text", "text": f"step {turn}"}]}
            )
            body = f"[read_file for 'f{turn}.py'] Result:\n" + "x = 1\n" * 1_500
            messages.append({"role": "user", "content": [{"type": "text", "text": body}]})
        policy = ClineCondensePolicy(WINDOW)
        result, sent = run(messages, policy)
        assert result.summary.condensations >= 1
        call = next(m for m in policy.history if f"<{SUMMARY_TOOL}>" in str(m["content"]))
        assert call["role"] == "assistant"
        assert all(validate_messages(s.messages) == [] for s in sent)

    def test_not_next_gen_is_plain_cline(self) -> None:
        """A model without auto-condense gets the original's truncation, request for request."""
        messages = history()
        condensed, _ = run(messages, ClineCondensePolicy(WINDOW, model_id="gpt-4o"))
        cline, _ = run(messages, "cline")
        assert condensed.summary.condensations == 0
        assert [r.to_json() for r in condensed.requests] == [r.to_json() for r in cline.requests]

    def test_json(self) -> None:
        """``condense`` marks the summaries' records; the other policies' JSON is as documented."""
        result, _ = run(history())
        data = result.to_json()
        marked = [r for r in data["requests"] if "condense" in r]
        assert {r["condense"] for r in marked} == {"summarize", "continuation"}
        assert data["summary"]["condensations"] == len(marked) // 2
        cline, _ = run(history(), "cline")
        cline_json = cline.to_json()
        assert all("condense" not in r for r in cline_json["requests"])
        assert "condensations" not in cline_json["summary"]

    def test_reproducible(self) -> None:
        """Two replays give the same records."""
        first, _ = run(history())
        second, _ = run(history())
        assert first.to_json() == second.to_json()

    def test_context_error_retry(self) -> None:
        """A request over the window is handled as a context-window error: a quarter more hidden."""
        messages = history(12)
        huge = "[read_file for 'big.py'] Result:\n" + "y = 2\n" * 50_000  # about 100k tokens
        messages[-3] = {"role": "user", "content": [{"type": "text", "text": huge}]}
        result, _ = run(messages, window=128_000)
        assert any(r.truncated and r.condense is None for r in result.requests)
        assert result.summary.overflows == 0


class TestScriptedSummary:
    """The deterministic stand-in for the model's summary."""

    def test_shape(self) -> None:
        """The nine sections in order, about 1,500 tokens, built from what it folds."""
        messages = history(10)
        summary = scripted_summary(messages)
        assert len(summary) == DEFAULT_SUMMARY_CHARS
        positions = [summary.index(f"{n}. {title}:") for n, title in enumerate(SUMMARY_SECTIONS, 1)]
        assert positions == sorted(positions)
        assert "Refactor the storage layer." in summary
        assert "read_file (called 10 times)" in summary
        assert "src/module_0.py" in summary
        assert 1_200 <= Ruler().count([{"role": "user", "content": summary}]) <= 2_500

    def test_deterministic_and_sized(self) -> None:
        """The same messages give the same text; the length is what was asked."""
        messages = history(5)
        assert scripted_summary(messages) == scripted_summary(list(messages))
        assert len(scripted_summary(messages, target_chars=2_000)) == 2_000
        assert scripted_summary(messages[:1]).startswith("1. Primary Request and Intent:")

    def test_user_words(self) -> None:
        """Later user instructions are quoted; the agent's additions and the summary request are not."""
        messages = history(3)
        messages[-2] = {
            "role": "user",
            "content": [
                {"type": "text", "text": "Also rename the module."},
                {"type": "text", "text": "<environment_details>\nsecret\n</environment_details>"},
                {"type": "text", "text": SUMMARY_INSTRUCTION},
            ],
        }
        summary = scripted_summary(messages)
        assert '"Also rename the module."' in summary
        assert "secret" not in summary
        assert "Stop the current work" not in summary


@pytest.fixture
def trace_folder(corpus: Path) -> Path:
    folder = corpus / TRACE
    if not folder.is_dir():
        pytest.skip(f"{TRACE} not in the corpus")
    return folder


@pytest.mark.parametrize("window", [64_000, 128_000, 200_000])
def test_real_trace(trace_folder: Path, window: int) -> None:
    """The 443-message trace: valid requests, within the window, compaction, the task kept.

    At 64k one recorded search result alone is about 75k tokens: the requests that carry it
    cannot fit (the original's own truncation cannot fit them either), and only those overflow.
    """
    task = load_task(trace_folder)
    messages = list(task.history)
    assert len(messages) == 443
    replayer = Replayer(
        messages, window=window, policy="cline-condense", usage="estimated", requests=task.requests
    )
    sent: list[Sent] = []
    for length in request_points(messages):
        first, _ = replayer.request(length)
        while first is not None:
            sent.append(first)
            first = first.follow_up
    result = replayer.result()
    assert result.summary.condensations > 0
    ruler = Ruler()
    for request, record in zip(sent, result.requests, strict=True):
        assert validate_messages(request.messages) == [], record.index
        assert keeps_the_task(request.messages[0], messages[0]), record.index
        if record.overflow:
            assert window == 64_000
            largest = max(ruler.count([m]) for m in request.messages)
            assert largest > window - result.window.max_allowed_size
    if window > 64_000:
        assert result.summary.overflows == 0
    baseline = replay(
        messages, window=window, policy="cline", usage="estimated", requests=task.requests
    )
    assert result.summary.overflows <= baseline.summary.overflows
