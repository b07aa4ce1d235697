"""The typed surface: mypy accepts the SDK TypedDicts callers pass and refuses what is wrong.

One ``mypy --strict`` run checks tests/typing/ (which must be clean) and a snippet of obvious
type errors (each of which must be reported), so that no public signature can silently degrade
to ``Any``. The typed caller's client-free functions are also run, so what it passes is real.
"""

from __future__ import annotations

import re
import textwrap
import uuid
from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api")

from .typing import caller  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CALLER = ROOT / "tests" / "typing"

# Each line marked "# error" must be reported by mypy, and no other line.
WRONG = textwrap.dedent(
    """
    from windowkeeper import ContextManager, ContextSession, usage_from_sdk, validate_messages
    from windowkeeper.formats import from_anthropic, to_anthropic

    session = ContextSession(context_window=100_000)
    session.append({"role": "user", "content": "a plain dict is fine"})
    session.append(1)  # error
    session.extend(["not a message"])  # error
    session.sync([None])  # error
    session.record_usage("1200 tokens")  # error
    session.record_usage(1200)  # error
    session.prepare(system=42)  # error
    session.prepare(system=["not a block"])  # error
    manager = ContextManager()
    manager.get_truncated_messages([1], None)  # error
    manager.get_new_context_messages_and_metadata(  # error
        "history", usage=None, timestamp=0, context_window=100_000
    )
    usage_from_sdk(object())  # error
    validate_messages("not a list")  # error
    from_anthropic([1])  # error
    to_anthropic(["user: hi"])  # error
    """
)


@pytest.fixture(scope="module")
def mypy_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[int]]:
    """Lines with an error per checked file, from one ``mypy --strict`` run over both."""
    # A module name of its own each run: mypy's cache replays the errors of a module it saw
    # unchanged under the path it had then, which a new temporary folder no longer is.
    snippet = tmp_path_factory.mktemp("typing") / f"wrong_calls_{uuid.uuid4().hex}.py"
    snippet.write_text(WRONG, encoding="utf-8")
    stdout, stderr, status = mypy_api.run(
        [
            "--strict",
            "--no-error-summary",
            "--show-absolute-path",
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            str(CALLER),
            str(snippet),
        ]
    )
    assert status in (0, 1), f"mypy could not run:\n{stdout}{stderr}"
    found: dict[str, set[int]] = {"caller": set(), "snippet": set()}
    other: list[str] = []
    for line in stdout.splitlines():
        match = re.match(r"(.+?):(\d+): error:", line)
        if match is None:
            continue
        path = Path(match[1]).resolve()
        if path == snippet.resolve():
            found["snippet"].add(int(match[2]))
        elif CALLER in path.parents:
            found["caller"].add(int(match[2]))
            other.append(line)
        else:
            other.append(line)
    assert not other, "\n".join(other)
    return found


def test_the_typed_caller_passes_mypy_strict(mypy_report: dict[str, set[int]]) -> None:
    """tests/typing/ (SDK TypedDicts into every public entry point) type-checks cleanly."""
    assert mypy_report["caller"] == set()


def test_wrong_arguments_are_type_errors(mypy_report: dict[str, set[int]]) -> None:
    """Every obviously wrong argument is reported, and the plain-dict call is not."""
    marked = {number for number, line in enumerate(WRONG.splitlines(), 1) if "# error" in line}
    assert mypy_report["snippet"] == marked


@pytest.mark.parametrize(
    "call",
    [
        caller.anthropic_session,
        caller.openai_session,
        caller.responses_session,
        caller.manager_calls,
        caller.checks_and_formats,
    ],
    ids=lambda call: call.__name__,
)
def test_the_typed_caller_runs(call: object) -> None:
    """What the typed caller passes is accepted at run time too (no client needed)."""
    assert callable(call)
    assert call() is not None
