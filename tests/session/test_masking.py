"""Observation masking: old outputs, old tool inputs and old environment details give way."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper import ContextManager, OverwriteStore, validate_messages
from windowkeeper.session._masking import MaskScan, mask_old_context, placeholder_for

from ..strategies import conversations

ENV = "<environment_details>\n# Visible Files\n" + "src/app.py\n" * 30 + "</environment_details>"


def turn(n: int, output: str) -> list[dict[str, Any]]:
    return [
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": f"t{n}",
                    "name": "write_to_file",
                    "input": {"path": f"f{n}.py", "content": "x = 1\n" * 100},
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": f"t{n}", "content": output},
                {"type": "text", "text": ENV},
            ],
        },
    ]


def conversation(turns: int) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "go"},
    ]
    for n in range(turns):
        history += turn(n, f"output {n}\n" + "y" * 2_000)
    return history


def sent(history: list[dict[str, Any]], store: OverwriteStore) -> list[dict[str, Any]]:
    manager = ContextManager()
    manager.store = store
    return manager.get_truncated_messages(history, None)


class TestMasking:
    def test_all_but_the_recent_outputs_are_masked(self) -> None:
        """Old tool_results keep their id and say which tool ran and how much was removed."""
        history = conversation(5)
        before = json.dumps(history)
        store = OverwriteStore()
        changed = mask_old_context(history, 2, store, 1_000, keep_recent=2)
        assert json.dumps(history) == before
        assert changed == {3, 4, 5, 6, 7, 8, 10}  # message 10: only its environment details
        messages = sent(history, store)
        results = [
            m["content"][0]
            for m in messages
            if m["role"] == "user" and isinstance(m["content"], list)
        ]
        assert [r["tool_use_id"] for r in results] == ["t0", "t1", "t2", "t3", "t4"]
        assert results[0]["content"] == placeholder_for("write_to_file", 2_009)
        assert results[-1]["content"].startswith("output 4")
        assert validate_messages(messages) == []

    def test_old_tool_inputs_lose_their_long_values(self) -> None:
        """A masked tool_use keeps its id, name and short inputs; long values become a note."""
        history = conversation(4)
        store = OverwriteStore()
        mask_old_context(history, 2, store, 1_000, keep_recent=1)
        first = sent(history, store)[3]["content"][0]
        assert first["id"] == "t0"
        assert first["input"]["path"] == "f0.py"
        assert (
            first["input"]["content"] == "[windowkeeper: 600 characters removed to save context.]"
        )
        last = sent(history, store)[9]["content"][0]
        assert last["input"]["content"] == "x = 1\n" * 100

    def test_only_the_newest_environment_details_stay(self) -> None:
        """Environment details describe the present: older copies are masked."""
        history = conversation(3)
        store = OverwriteStore()
        mask_old_context(history, 2, store, 1_000, keep_recent=10)
        environments = [
            m["content"][1]["text"]
            for m in sent(history, store)
            if m["role"] == "user" and isinstance(m["content"], list)
        ]
        assert environments[-1] == ENV
        assert all(
            text.startswith("[windowkeeper: older environment") for text in environments[:-1]
        )

    def test_masking_twice_changes_nothing_more(self) -> None:
        """Blocks already masked are left alone."""
        history = conversation(4)
        store = OverwriteStore()
        mask_old_context(history, 2, store, 1_000, keep_recent=2)
        assert mask_old_context(history, 2, store, 2_000, keep_recent=2) == set()

    def test_short_outputs_are_not_masked(self) -> None:
        """An output shorter than its placeholder stays as it is."""
        history = conversation(0)
        history += turn(0, "ok") + turn(1, "ok")
        store = OverwriteStore()
        mask_old_context(history, 2, store, 1_000, keep_recent=0)
        assert all(store.latest(i, 0) is None for i in (4, 6))

    def test_the_store_keeps_the_original_layout(self) -> None:
        """Masks are stored in context_history.json's layout, with kinds the original ignores."""
        history = conversation(3)
        store = OverwriteStore()
        mask_old_context(history, 2, store, 1_000, keep_recent=1)
        kinds = {
            update[1]
            for _, (_, blocks) in json.loads(store.to_json())
            for _, updates in blocks
            for update in updates
        }
        assert kinds == {"content", "input"}
        assert OverwriteStore.from_json(store.to_json()) == store


PATCH = (
    "*** Begin Patch\n*** Update File: src/billing/invoice.py\n"
    + "+    total += line.amount\n" * 40
    + "*** Add File: src/billing/tax.py\n+RATE = 0.2\n*** End Patch"
)
DIFF = "--- a/app/db.py\n+++ b/app/db.py\n@@ -1,40 +1,40 @@\n" + "-old line\n+new line\n" * 30


class TestMaskedPatches:
    def masked_input(self, tool_input: dict[str, Any]) -> Any:
        history: list[dict[str, Any]] = [
            {"role": "user", "content": "task"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "p", "name": "apply_patch", "input": tool_input}
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "p"}]},
            *turn(1, "ok"),
        ]
        store = OverwriteStore()
        mask_old_context(history, 1, store, 1_000, keep_recent=1)
        return sent(history, store)[1]["content"][0]["input"]

    def test_a_patch_keeps_the_names_of_its_files(self) -> None:
        """A masked patch text (Codex "input", OpenCode "patchText") keeps its file headers."""
        for key in ("input", "patchText"):
            masked = self.masked_input({key: PATCH})
            assert masked == {
                key: "*** Update File: src/billing/invoice.py\n*** Add File: src/billing/tax.py\n"
                "[windowkeeper: 1,082 characters removed to save context.]"
            }

    def test_a_unified_diff_keeps_its_plus_line(self) -> None:
        """A masked unified diff keeps the ``+++`` line that names the file."""
        masked = self.masked_input({"patch": DIFF})
        assert masked["patch"].startswith("+++ b/app/db.py\n[windowkeeper: ")

    def test_other_long_values_become_a_note(self) -> None:
        """A long value that is no patch is replaced whole, as before."""
        masked = self.masked_input({"content": "x = 1\n" * 100})
        assert masked == {"content": "[windowkeeper: 600 characters removed to save context.]"}


def _edited(message: dict[str, Any], text: str) -> dict[str, Any]:
    """A new message in place of ``message``: its blocks with ``text`` added to each text."""
    content = message["content"]
    if isinstance(content, str):
        return {**message, "content": content + text}
    return {
        **message,
        "content": [
            {**block, "text": block["text"] + text} if block.get("type") == "text" else block
            for block in content
        ]
        + [{"type": "text", "text": ENV}],
    }


class TestMaskScan:
    """What a scan remembers between shrinks never changes what masking does."""

    @settings(max_examples=60, deadline=None)
    @given(
        conversations(min_size=3, max_size=16),
        st.lists(
            st.tuples(st.sampled_from(("grow", "edit", "hide")), st.integers(0, 99)),
            max_size=6,
        ),
        st.integers(0, 3),
    )
    def test_a_remembered_scan_masks_as_a_fresh_one(
        self, history: list[dict[str, Any]], changes: list[tuple[str, int]], keep: int
    ) -> None:
        """Over a history that grows, has messages replaced and turns hidden, masking with one
        scan kept across the calls records exactly what masking without it records."""
        scan = MaskScan()
        remembered, fresh = OverwriteStore(), OverwriteStore()
        start = 2
        for step, (change, at) in enumerate([("grow", 0), *changes]):
            if change == "grow":
                history = [*history, *turn(len(history) + at, "out " * (at + 10))]
            elif change == "edit":
                position = 2 + at % max(len(history) - 2, 1)
                if position < len(history):
                    history = [*history]
                    history[position] = _edited(history[position], f" edit {at}")
            else:
                start = min(start + at % 4, len(history))
            now = 1_000 + step
            with_scan = mask_old_context(history, start, remembered, now, keep, scan=scan)
            without = mask_old_context(history, start, fresh, now, keep)
            assert with_scan == without
            assert remembered.to_json() == fresh.to_json()
