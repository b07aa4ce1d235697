"""Claude Code's ``queued_command`` attachments: what the user typed while the agent worked.

Claude Code 2.1.x writes a prompt typed during a turn as an ``attachment`` record (type
``queued_command``, ``commandMode`` ``"prompt"``) on the chain, after the tool results it
arrived with, and the next response answers it (in a real session the user narrowed the task
this way and the model's next reply took it up). It is the user's words: read as user
text where it was written, it reaches the request and the ledger's latest instruction; other
attachments (hook output, reminders) stay reported as unknown.
"""

from __future__ import annotations

import json
from typing import Any

from windowkeeper import ContextSession, validate_messages
from windowkeeper.transcripts import Unknown
from windowkeeper.transcripts.claude_code import parse_claude_code

from .claude_lines import line, results

_CALL = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "cp -r a b"}}


def _attachment(uuid: str, parent: str, attachment: dict[str, Any]) -> str:
    return json.dumps(
        {"parentUuid": parent, "isSidechain": False, "type": "attachment", "uuid": uuid}
        | {"attachment": attachment}
    )


def _session(*attachments: str, answer_parent: str = "q-1") -> str:
    lines = [
        line("user", "u-1", None, "Sync the config files."),
        line("assistant", "a-1", "u-1", [_CALL], "1"),
        line("user", "u-2", "a-1", results(("toolu_1", "copied 40 files"))),
        *attachments,
        line("assistant", "a-2", answer_parent, [{"type": "text", "text": "Only a few, then."}]),
    ]
    return "\n".join(lines) + "\n"


def _queued(prompt: Any, **extra: Any) -> str:
    return _attachment("q-1", "u-2", {"type": "queued_command", "prompt": prompt, **extra})


def test_a_queued_prompt_follows_the_results_it_came_with() -> None:
    """Blocks or a string: the user's words after the tool result, in one user message."""
    blocks = [{"type": "text", "text": "Only sync the important ones."}]
    for prompt in (blocks, "Only sync the important ones."):
        transcript = parse_claude_code(_session(_queued(prompt, commandMode="prompt")))
        after = transcript.messages[2]
        assert after["role"] == "user"
        assert [block["type"] for block in after["content"]] == ["tool_result", "text"]
        assert after["content"][1]["text"] == "Only sync the important ones."
        assert transcript.unknown == ()
        assert validate_messages(list(transcript.messages)) == []


def test_a_background_task_notification_is_read_too() -> None:
    """Claude Code 2.1.23x queues a background task's end notice (``commandMode``
    ``"task-notification"``) and hands it to the model, which then reads the output file it
    names: it is user text after the results, as a typed prompt is."""
    notice = (
        "<task-notification>\n<task-id>b1</task-id>\n<output-file>/tmp/b1.out</output-file>"
        "\n<status>completed</status>\n</task-notification>"
    )
    transcript = parse_claude_code(_session(_queued(notice, commandMode="task-notification")))
    assert transcript.messages[2]["content"][1] == {"type": "text", "text": notice}
    assert transcript.unknown == ()


def test_the_queued_prompt_reaches_the_request() -> None:
    """A session fed the transcript sends the words to the model."""
    transcript = parse_claude_code(_session(_queued("Only sync the important ones.")))
    session = ContextSession(20_000)
    session.extend(transcript.messages[:3])
    sent = json.dumps(session.prepare().messages, ensure_ascii=False)
    assert "Only sync the important ones." in sent


def test_other_attachments_stay_unknown() -> None:
    """A hook's output on the chain is left out and reported; the chain goes through it."""
    hook = _attachment("h-1", "u-2", {"type": "hook_success", "content": "ok"})
    other_mode = _attachment(
        "q-2", "h-1", {"type": "queued_command", "prompt": "ls", "commandMode": "bash"}
    )
    transcript = parse_claude_code(_session(hook, other_mode, answer_parent="q-2"), name="s")
    assert transcript.unknown == (Unknown("s:4", "attachment"), Unknown("s:5", "attachment"))
    assert transcript.messages[0]["content"] == "Sync the config files."
    assert [m["role"] for m in transcript.messages] == ["user", "assistant", "user", "assistant"]


def test_a_prompt_of_another_shape_stays_unknown() -> None:
    """A prompt the reader has not seen the shape of is reported, never fatal."""
    for prompt in (["hello"], [{"type": "text"}], [{"text": "hi"}], {"text": "hi"}):
        transcript = parse_claude_code(_session(_queued(prompt)), name="s")
        assert transcript.unknown == (Unknown("s:4", "attachment"),)
        assert validate_messages(list(transcript.messages)) == []
