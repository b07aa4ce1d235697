"""A 40-message agent conversation kept inside a small window by windowkeeper.

Run with ``make demo``. The conversation is generated here: a coding agent reads and edits a few
files, some of them several times, while its requests grow towards the limit.
"""

from __future__ import annotations

from typing import Any

from windowkeeper import ContextManager, TokenUsage, context_window_info

FILES = [
    "app.py",
    "models.py",
    "views.py",
    "app.py",
    "urls.py",
    "forms.py",
    "serializers.py",
    "tests/test_app.py",
    "settings.py",
    "admin.py",
    "app.py",
    "signals.py",
    "tasks.py",
    "utils.py",
    "middleware.py",
    "cache.py",
    "models.py",
    "pagination.py",
    "api.py",
    "README.md",
]


def file_body(path: str, version: int) -> str:
    lines = [f"# {path}, version {version}"]
    lines += [f"def handler_{n}(request):\n    return respond({n}, request)" for n in range(110)]
    return "\n".join(lines)


def conversation() -> list[dict[str, Any]]:
    """Task, then 19 rounds of assistant tool call and user tool result (40 messages)."""
    messages: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "<task>\nAdd pagination to the API.\n</task>"}],
        },
    ]
    for turn in range(1, 20):
        path = FILES[turn]
        call_id = f"toolu_{turn:03d}"
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Step {turn}: reading {path}."},
                    {
                        "type": "tool_use",
                        "id": call_id,
                        "name": "read_file",
                        "input": {"path": path},
                    },
                ],
            }
        )
        result = f"[read_file for '{path}'] Result:\n{file_body(path, turn // 3)}"
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": call_id,
                        "content": [{"type": "text", "text": result}],
                    },
                ],
            }
        )
    messages.append(
        {"role": "assistant", "content": [{"type": "text", "text": "Pagination is in place."}]}
    )
    return messages


def describe(message: dict[str, Any]) -> str:
    content = message["content"]
    blocks = [content] if isinstance(content, str) else content
    parts = []
    for block in blocks:
        if isinstance(block, str):
            parts.append(block[:50])
        elif block["type"] == "text":
            parts.append(block["text"].splitlines()[0][:50])
        elif block["type"] == "tool_use":
            parts.append(f"tool_use {block['name']}({block['input'].get('path', '')})")
        elif block["type"] == "tool_result":
            inner = block["content"]
            text = inner if isinstance(inner, str) else inner[0]["text"]
            parts.append(
                f"tool_result: {text.splitlines()[0][:45]}{' ...' if len(text) > 200 else ''}"
            )
    return f"{message['role']:<9} " + " | ".join(parts)


def main() -> None:
    history = conversation()
    window = context_window_info(32_768)
    manager = ContextManager()
    deleted_range = None
    print(f"windowkeeper demo: {len(history)} messages, window {window.context_window:,} tokens,")
    print(f"truncation when the previous request reached {window.max_allowed_size:,} tokens\n")
    usage = None
    for length in range(3, len(history), 2):
        prefix = history[:length]
        stored = len(manager.store)
        result = manager.get_new_context_messages_and_metadata(
            prefix,
            usage=usage,
            timestamp=1_000 + length,
            context_window=window.context_window,
            deleted_range=deleted_range,
        )
        sent_chars = sum(len(str(m["content"])) for m in result.truncated_history)
        tokens = sent_chars // 3
        if len(manager.store) > stored and not result.updated_deleted_range:
            print(
                f"request with {length:2d} messages: older copies of re-read files replaced by a notice"
            )
        if result.updated_deleted_range:
            print(
                f"request with {length:2d} messages: previous request used {usage.total:,} tokens -> hide {result.deleted_range}"
            )
        deleted_range = result.deleted_range
        usage = TokenUsage(tokens_in=tokens, tokens_out=200)
    final = manager.get_truncated_messages(history[:-1], deleted_range)
    print(
        f"\nhidden range: {deleted_range}; what the last request sends ({len(final)} of {len(history) - 1} messages):"
    )
    for message in final:
        print("  " + describe(message))


if __name__ == "__main__":
    main()
