"""The ledger a fold hands the summarizer, pinned field by field for small histories.

Each history is the task, a few turns of interest, then seven reads of 5,000 characters; the
session (window 10,000, 1,000 tokens kept verbatim) folds everything but the newest read, so
the turns of interest are always in what it folds. A row is those turns and the exact field of
:class:`~windowkeeper.Ledger` the summarizer gets.
"""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper import ContextSession, Ledger, SummaryRequest

from .policy_tables import TASK, call, result, session, turn


def _folded(history: list[dict[str, Any]], **options: Any) -> tuple[Ledger, ContextSession]:
    asked: list[SummaryRequest] = []

    def summarizer(request: SummaryRequest) -> str:
        asked.append(request)
        return "SUMMARY: the parser is half done."

    keeper = session(
        summarize=summarizer, keep_recent_tokens=1_000, mask_keep_recent=None, **options
    )
    keeper.extend([TASK, *history])
    for number in range(7):
        keeper.extend(turn(number, 5_000))
    keeper.prepare()
    [request] = asked
    return request.ledger, keeper


def _tool(name: str, **arguments: Any) -> list[dict[str, Any]]:
    """One call of ``name`` (id t40) and its result, "ok"."""
    return [call(40, name, **arguments), result(40, "ok")]


class TestTodos:
    @pytest.mark.parametrize(
        ("history", "todos"),
        [
            (
                _tool(
                    "TodoWrite",
                    todos=[
                        {"content": "Parse", "status": "completed"},
                        {"content": "Test  it", "status": "in_progress"},  # spaces joined
                        {"content": "Ship", "status": "pending"},
                    ],
                ),
                "- [x] Parse\n- [-] Test it\n- [ ] Ship",
            ),
            (_tool("TodoWrite", todos=["  a ", 3]), "- a\n- 3"),  # bare items, stripped
            (
                # no text key: the item as JSON, its own characters kept; an unknown status shown
                _tool("TodoWrite", todos=[{"id": "é", "status": "weird"}]),
                '- [weird] {"id": "é", "status": "weird"}',
            ),
            (_tool("update_plan", plan=[{"step": "Port", "status": "done"}]), "- [x] Port"),
            (_tool("TodoWrite", todos=[]), "(empty list)"),
            (_tool("TodoWrite", todos={"étape": "une"}), '{"étape": "une"}'),  # as JSON
            (_tool("Read", file_path="x.py", task_progress="  - [ ] port  "), "- [ ] port"),
        ],
    )
    def test_the_latest_list_is_rendered_one_item_a_line(
        self, history: list[dict[str, Any]], todos: str
    ) -> None:
        ledger, _ = _folded(history)
        assert ledger.todos == todos

    @pytest.mark.parametrize(
        ("length", "kept"),
        [
            (3_999, "- [ ] " + "t" * 3_993),
            (4_000, "- [ ] " + "t" * 3_994),  # the limit: kept whole
            (4_001, "- [ ] " + "t" * 3_993 + "…"),  # one more: cut to 4,000 with the ellipsis
        ],
    )
    def test_a_list_is_kept_up_to_four_thousand_characters(self, length: int, kept: str) -> None:
        progress = "- [ ] " + "t" * (length - 6)
        ledger, _ = _folded(_tool("Read", file_path="x.py", task_progress=progress))
        assert ledger.todos == kept


class TestFoldCount:
    def test_a_fold_with_the_summarizer_counts_one(self) -> None:
        _, keeper = _folded([])
        assert keeper.state.compaction.folds == 1

    def test_an_in_band_fold_counts_one(self) -> None:
        keeper = session(summarize="in-band", keep_recent_tokens=1_000, mask_keep_recent=None)
        keeper.append(TASK)
        for number in range(6):
            keeper.extend(turn(number, 5_000))
        assert keeper.prepare().summary_requested
        assert keeper.state.compaction.folds == 0
        keeper.append({"role": "assistant", "content": "SUMMARY: m5.py is next."})
        keeper.prepare()
        compaction = keeper.state.compaction
        assert (compaction.folds, compaction.declined, compaction.pending) == (1, 0, None)


_PATCH = "*** Begin Patch\n*** Update File: it's.py\n@@\n-a\n+b\n*** End Patch"


class TestShellCalls:
    """Codex's ``shell`` tool: an argv; ``["apply_patch", PATCH]`` edits the patch's files."""

    @pytest.mark.parametrize(
        ("command", "edited", "commands"),
        [
            (["ls"], (), ("ls",)),  # one word
            (["A=1"], (), ("A=1",)),  # an assignment alone
            (["A=1", "tee", "out.txt"], ("out.txt",), ("A=1 tee out.txt",)),
            (["bash", "-lc", "make test"], (), ("make test",)),  # the script bash runs
            # the patch is read from the argv: its path is kept as written, quote and all (read
            # back from the shell-quoted line it came out as it'"'"'s.py, a second, bogus edit)
            (
                ["apply_patch", _PATCH],
                ("it's.py",),
                (f"apply_patch '{_PATCH}'".replace("it's", "it'\"'\"'s"),),
            ),
            (["cat", "*** Update File: x.py"], (), ("cat '*** Update File: x.py'",)),
        ],
    )
    def test_what_a_command_edits_and_runs(
        self, command: list[str], edited: tuple[str, ...], commands: tuple[str, ...]
    ) -> None:
        ledger, _ = _folded(_tool("shell", command=command))
        assert (ledger.files_edited, ledger.commands) == (edited, commands)


def _continuation(history: list[dict[str, Any]]) -> str:
    """The text the fold sends after messages 0-1 (see the module docstring)."""
    keeper = session(
        summarize=lambda request: "SUMMARY", keep_recent_tokens=1_000, mask_keep_recent=None
    )
    keeper.extend([TASK, *history])
    for number in range(7):
        keeper.extend(turn(number, 5_000))
    text: str = keeper.prepare().messages[2]["content"][-1]["text"]
    return text


def test_the_continuation_lists_the_latest_twenty_commands() -> None:
    history: list[dict[str, Any]] = []
    for number in range(22):
        history += [
            call(100 + number, "shell", command=["bash", "-lc", f"make t{number}"]),
            result(100 + number, "ok"),
        ]
    shown = "".join(f"- `make t{number}`\n" for number in range(2, 22))
    assert f"Commands run (oldest first, 2 earlier not shown):\n{shown}Last" in _continuation(
        history
    )


@pytest.mark.parametrize(
    ("said", "instructions"),
    [
        (
            "Listing:\n```\nls\n```",
            (),
        ),  # a fenced command: the harness runs it, the reply is its output
        ("Listing:\n```bash\nls\n```", ()),
        ("Listing:```\nls\n```", ("a.py b.py",)),  # the fence does not open a line: no command
        ("ls\n```", ("a.py b.py",)),  # a closing fence alone
    ],
)
def test_the_reply_to_a_fenced_command_is_not_the_users_words(
    said: str, instructions: tuple[str, ...]
) -> None:
    history = [{"role": "assistant", "content": said}, {"role": "user", "content": "a.py b.py"}]
    ledger, _ = _folded(history)
    assert ledger.instructions == instructions


_HUNK = "@@ -1 +1 @@\n-a\n+b\n"


@pytest.mark.parametrize(
    ("patch", "edited"),
    [
        (f'--- "a/x y.py"\n+++ "b/x y.py"\n{_HUNK}', ("x y.py",)),  # quoted: the quotes go
        (f"--- a/x.py\t2024-01-01\n+++ b/x.py\t2024-01-01\n{_HUNK}", ("x.py",)),  # a timestamp
        (f'--- "\n+++ "\n{_HUNK}', ('"',)),  # a lone quote is no quoted path: kept as written
        (f"--- /dev/null\n+++ b/new.py\n{_HUNK}", ("new.py",)),
    ],
)
def test_a_unified_diff_edits_the_files_its_headers_name(
    patch: str, edited: tuple[str, ...]
) -> None:
    ledger, _ = _folded(_tool("shell", command=["apply_patch", patch]))
    assert ledger.files_edited == edited


@pytest.mark.parametrize(
    ("command", "read"),
    [
        ('cat "a.py"', "a.py"),
        ('cat "a\\".py"', 'a".py'),  # an escaped quote inside the quotes
        ('cat "a\\\\"', "a\\"),  # an escaped backslash, then the closing quote
        ('cat "a.py\\"', None),  # the last quote is escaped: the string never closes
    ],
)
def test_a_double_quoted_operand_is_read_as_the_shell_reads_it(
    command: str, read: str | None
) -> None:
    ledger, _ = _folded(_tool("Bash", command=command))
    reads = ledger.files_read
    assert reads == ((read,) if read else ()) + tuple(f"m{number}.py" for number in range(6))
