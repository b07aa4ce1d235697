"""The original's summarizing paths: which models, at what size, and the range moves (reference §5.3, §8.1-8.3, §8.5, §9)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from windowkeeper import ContextManager, Keep, TokenUsage, context_window_info
from windowkeeper.core._condense import (
    CONDENSE_RESULT,
    SUMMARY_INSTRUCTION,
    SUMMARY_RESULT_HEADER,
    SUMMARY_SECTIONS,
    SUMMARY_TOOL,
    bumped_range,
    condense_keep,
    condense_range,
    continuation_text,
    is_claude_4_plus_model_family,
    is_next_gen_model_family,
    subagent_compact_threshold,
    summary_call,
    summary_range,
    summary_result,
    summary_would_fold_a_summary,
    task_compact_threshold,
    with_summary_request,
)
from windowkeeper.core._notices import CONTINUE_NOTICE, RESULT_MISSING, TRUNCATION_NOTICE
from windowkeeper.core._usage import should_compact

Message = dict[str, Any]


def create_messages(n: int) -> list[Message]:
    """The reference's ``createMessages(n)``: the task, then assistant and user in turn."""
    messages: list[Message] = [{"role": "user", "content": "Initial task message"}]
    for i in range(1, n):
        messages.append({"role": "assistant" if i % 2 else "user", "content": f"Message {i}"})
    return messages


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(tool_id: str, name: str = "read_file") -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": {}}


def tool_result(tool_id: str, content: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": content}


NEXT_GEN = [
    # Claude 4+ (model-utils cases 55, 56) and the version reader's edges
    "claude-sonnet-4-5-20250929",
    "claude-opus-4-1-20250805",
    "claude-haiku-4-5-20251001",
    "claude-4-sonnet",
    "sonnet",
    "opus",
    "  Sonnet\n",
    "\ufeffopus",  # JavaScript's trim() removes a BOM
    "anthropic/claude-sonnet-4.5",
    "claude-4.1-sonnet",  # ".1" is not read, the 4 is
    "claude_sonnet_4_5",
    "claude 4 opus",
    "us.anthropic.claude-sonnet-4-20250514-v1:0",
    "claude-opus-4@20250514",
    # the other families
    "gemini-2.5-pro",
    "google/gemini-2.5-flash",
    "grok-4",
    "x-ai/grok-4-fast",
    "gpt-5",
    "gpt-5.1",
    "gpt-5.2-codex",
    "openai/gpt-5",
    "gpt5",
    "oca/gpt5",
    "GPT-5",
    "OCA/GPT5",
    "gpt-oss-120b",
    "openai/gpt-oss-120b",
    "gpt_oss_120b",
    "OPENAI/GPT_OSS_120B",
    "minimax-m2",
    "MiniMax/MiniMax-M2.1",
    "gemini3-pro",
    "gemini-3-pro-preview",
    "moonshotai/kimi-k2",
    "kimi-k2-thinking",
    "moonshotai/kimi-k3",
    "kimi-k3",
    "deepseek-v3.2",
    "deepseek/deepseek-v3.2-exp",
    "deepseek-chat",
    "deepseek-reasoner",
    "poolside/laguna-m.1",
    "laguna-enterprise",
    "LAGUNA",
]

NOT_NEXT_GEN = [
    "claude-3-sonnet",
    "claude-3.5-sonnet",
    "claude-3-opus",
    "claude-3-7-sonnet-20250219",
    "claude-3-haiku-20240307",
    "claude-2-sonnet-4",  # the first separator-digit match counts: 2
    "claude-sonnet-10",  # one digit is read: 1
    "claude-sonnet4",  # no separator before the digit
    "haiku",  # an alias, but no version
    "sonnet\x1c",  # JavaScript's trim() keeps U+001C: no longer the alias
    "gpt-4",
    "gpt-4o",
    "gemini-pro",
    "gemini-2.0-flash",
    "llama-3",
    "grok-3",
    "kimi-k1.5",
    "deepseek-v3.2-speciale",
    "deepseek-v3.1",
    "deepseek-coder",
    "",
]


class TestNextGenModelFamily:
    """``isNextGenModelFamily`` (§9, model-utils cases 55-69)."""

    @pytest.mark.parametrize("model_id", NEXT_GEN)
    def test_next_gen(self, model_id: str) -> None:
        """These ids get auto-condense."""
        assert is_next_gen_model_family(model_id)

    @pytest.mark.parametrize("model_id", NOT_NEXT_GEN)
    def test_not_next_gen(self, model_id: str) -> None:
        """These do not."""
        assert not is_next_gen_model_family(model_id)

    def test_claude_family_alone(self) -> None:
        """The Claude check knows nothing of the other families (cases 55-58)."""
        assert is_claude_4_plus_model_family("claude-haiku-4-5-20251001")
        assert not is_claude_4_plus_model_family("gpt-5")
        assert not is_claude_4_plus_model_family("claude-3.5-sonnet")


class TestThresholds:
    """The sizes at which the task asks for a summary (§5.3, §8.1) and a sub-agent compacts (§8.5)."""

    @pytest.mark.parametrize(
        ("window", "task", "subagent"),
        [
            (64_000, 37_000, 37_000),  # floor(48 000) is above the limit
            (128_000, 98_000, 96_000),
            (200_000, 160_000, 150_000),
            (32_768, 26_214.4, 24_576),
            (100_001, 80_000.8, 75_000),  # floor(75 000.75)
            (400_000, 360_000, 300_000),
            (1_000_000, 960_000, 750_000),
        ],
    )
    def test_values(self, window: int, task: float, subagent: float) -> None:
        """Task: the limit itself; sub-agent: min(floor(window x 0.75), limit)."""
        info = context_window_info(window)
        assert task_compact_threshold(info) == pytest.approx(task)
        assert subagent_compact_threshold(info) == pytest.approx(subagent)

    def test_subagent_without_auto_condense(self) -> None:
        """Auto-condense off, or a model that is not next-gen: the limit."""
        info = context_window_info(200_000)
        assert subagent_compact_threshold(info, auto_condense=False) == 160_000
        assert subagent_compact_threshold(info, model_id="gpt-4o") == 160_000
        assert subagent_compact_threshold(info, model_id="claude-sonnet-4-5") == 150_000

    @pytest.mark.parametrize("window", [64_000, 128_000, 200_000, 32_768, 100_001])
    def test_agrees_with_should_compact(self, window: int) -> None:
        """The sub-agent threshold is ``shouldCompactContextWindow`` at 0.75, the task's at none."""
        info = context_window_info(window)
        for threshold, percentage in (
            (subagent_compact_threshold(info), 0.75),
            (task_compact_threshold(info), None),
        ):
            edge = int(threshold) if float(threshold).is_integer() else int(threshold) + 1
            assert should_compact(TokenUsage(tokens_in=edge), info, percentage)
            assert not should_compact(TokenUsage(tokens_in=edge - 1), info, percentage)


class TestSummaryRequest:
    """The request for a summary, appended to the new user message (§8.1)."""

    def test_appended_as_last_block(self) -> None:
        """A copy with the instruction as the last text block; the message is unchanged."""
        message: Message = {"role": "user", "content": [tool_result("t1", "ok"), text("env")]}
        before = copy.deepcopy(message)
        asked = with_summary_request(message)
        assert asked["content"][:2] == message["content"]
        assert asked["content"][2] == text(SUMMARY_INSTRUCTION)
        assert message == before

    def test_string_content(self) -> None:
        """String content becomes a text block first; extra keys are kept."""
        asked = with_summary_request({"role": "user", "content": "go on", "ts": 5})
        assert asked == {
            "role": "user",
            "content": [text("go on"), text(SUMMARY_INSTRUCTION)],
            "ts": 5,
        }

    def test_instruction_asks_for_the_sections(self) -> None:
        """Every section the original asks for, numbered in its order, and the tool to answer with."""
        positions = [
            SUMMARY_INSTRUCTION.index(f"{number}. {title}:")
            for number, title in enumerate(SUMMARY_SECTIONS, 1)
        ]
        assert positions == sorted(positions)
        assert len(SUMMARY_SECTIONS) == 9
        assert SUMMARY_SECTIONS[-1] == "Required Files"
        assert SUMMARY_TOOL in SUMMARY_INSTRUCTION
        assert "user's own words" in SUMMARY_INSTRUCTION

    def test_no_summary_of_a_summary(self) -> None:
        """None when at most two messages follow the range (before the user message is appended)."""
        history = create_messages(8)
        assert not summary_would_fold_a_summary(history, None)
        assert summary_would_fold_a_summary(history, (2, 5))  # 6, 7 follow
        assert summary_would_fold_a_summary(history, (2, 6))
        assert not summary_would_fold_a_summary(history, (2, 4))  # 5, 6, 7 follow


class TestSummaryRanges:
    """The handler's keep "none" and the +2 bump on the next request (§8.2, Appendix B8)."""

    def test_native_flow_b8(self) -> None:
        """Recorded by running the original: the summary result is dropped as an orphan."""
        history: list[Message] = [
            {"role": "user", "content": [text("task")]},
            {"role": "assistant", "content": [text("a1"), tool_use("t1")]},
            {"role": "user", "content": [tool_result("t1", "r1"), text("env")]},
            {"role": "assistant", "content": [tool_use("t2")]},
            {"role": "user", "content": [tool_result("t2", "r2"), text("SUMMARIZE INSTRUCTIONS")]},
        ]
        deleted = summary_range(history, None)
        assert deleted == (2, 3)
        history.append({"role": "assistant", "content": [tool_use("t3", SUMMARY_TOOL)]})
        deleted = bumped_range(history, deleted)
        assert deleted == (2, 5)
        summary = [text("[summarize_task] Result:\nCONTINUATION SUMMARY")]
        history.append({"role": "user", "content": [tool_result("t3", summary), text("env6")]})
        sent = ContextManager().get_truncated_messages(history, deleted)
        assert sent == [
            history[0],
            history[1],
            {"role": "user", "content": [tool_result("t1", RESULT_MISSING), text("env6")]},
        ]

    def test_keep_none_keeps_the_asking_message(self) -> None:
        """Everything after the pair up to the message before the asking one is hidden."""
        history = create_messages(11)  # ends with a user message, index 10
        assert summary_range(history, None) == (2, 9)
        assert summary_range(history, (2, 5)) == (2, 9)

    def test_bump(self) -> None:
        """+2 when the end stays within the history; otherwise unchanged, and None stays None."""
        history = create_messages(12)  # the asking user message 10, the call 11
        assert bumped_range(history, (2, 9)) == (2, 11)
        assert bumped_range(history, (2, 10)) == (2, 10)
        assert bumped_range(history, None) is None
        assert bumped_range(create_messages(4), (2, 1)) == (2, 3)

    def test_call_and_result_shapes(self) -> None:
        """Native: tool_use and tool_result; otherwise Cline's XML call and text results."""
        call = summary_call("S", "toolu_x")
        assert call == {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_x",
                    "name": SUMMARY_TOOL,
                    "input": {"context": "S"},
                }
            ],
        }
        xml = summary_call("S", "toolu_x", native=False)["content"][0]["text"]
        assert xml.startswith(f"<{SUMMARY_TOOL}>")
        assert "<context>\nS\n</context>" in xml
        result = summary_result("S", "toolu_x")["content"]
        assert result == [
            tool_result("toolu_x", [text(f"{SUMMARY_RESULT_HEADER}\n{continuation_text('S')}")])
        ]
        assert summary_result("S", "toolu_x", native=False)["content"] == [
            text(SUMMARY_RESULT_HEADER),
            text(continuation_text("S")),
        ]
        assert "\nS\n" in continuation_text("S")


class TestSmolCondense:
    """``/smol``: keep "lastTwo" after an assistant message, else "none" (§8.3)."""

    def test_keep(self) -> None:
        """The keep follows the last message's role."""
        assert condense_keep(create_messages(10)) is Keep.LAST_TWO  # index 9 is an assistant
        assert condense_keep(create_messages(11)) is Keep.NONE
        assert condense_keep([]) is Keep.NONE

    def test_ranges(self) -> None:
        """The ranges getNextTruncationRange gives for those keeps (Appendix B1)."""
        assert condense_range(create_messages(10), None) == (2, 7)
        assert condense_range(create_messages(11), None) == (2, 9)
        assert condense_range(create_messages(20), (2, 9)) == (2, 17)

    def test_with_the_notices(self) -> None:
        """Accepted: range set, notice on message 1, task text replaced; the result asks what next."""
        history: list[Message] = [
            {"role": "user", "content": [text("the task"), text("details")]},
            {"role": "assistant", "content": [text("first answer")]},
        ]
        history += [
            {"role": "user" if i % 2 else "assistant", "content": [text(f"m{i}")]}
            for i in range(1, 9)
        ]
        manager = ContextManager()
        deleted = condense_range(history, None)
        assert deleted == (2, 7)
        manager.trigger_apply_standard_context_truncation_notice_change(1, None, history)
        sent = manager.get_truncated_messages(history, deleted)
        assert sent[0]["content"] == [text(CONTINUE_NOTICE), text("details")]
        assert sent[1]["content"] == [text(TRUNCATION_NOTICE)]
        assert sent[2:] == history[8:]
        assert "what to work on next" in CONDENSE_RESULT
