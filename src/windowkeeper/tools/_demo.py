"""The demo conversation: a generated coding-agent session that outgrows a small window.

:func:`demo_conversation` builds, deterministically and in code (no data file, no randomness),
the history of a coding agent adding pagination to a small inventory service, in the shape Cline
stores with native tool calls: each assistant turn says a sentence and calls one tool; each tool
result is a ``tool_result`` whose text starts with Cline's ``[tool for 'target'] Result:``
header. The agent reads the same files several times, edits them (Cline echoes the whole file
after an edit), runs the tests, and once dumps a verbose test log far larger than the others.
At :data:`DEMO_WINDOW` tokens this history must be truncated at least twice, which
``windowkeeper demo`` shows under both policies.
"""

from __future__ import annotations

from ..core._messages import Message

__all__ = ["DEMO_TASK", "DEMO_WINDOW", "demo_conversation"]

DEMO_WINDOW = 32_000
"""The context window of the demo, in tokens (requests are kept under 25,600)."""

DEMO_TASK = (
    "Add pagination to the GET /items endpoint of the inventory service: `limit` and `offset`"
    " query parameters, a `next` link in the response, and tests. Keep the existing tests green."
)

_VERBS = ("load", "save", "find", "check", "build", "parse", "render", "count", "merge", "sort")
_NOUNS = ("item", "stock", "order", "price", "supplier", "warehouse", "batch", "label", "page")

# Files of the service: path -> (number of functions, a seed that varies the code).
_FILES: dict[str, tuple[int, int]] = {
    "src/inventory/api.py": (34, 1),
    "src/inventory/models.py": (26, 2),
    "src/inventory/db.py": (20, 3),
    "src/inventory/pagination.py": (9, 4),
    "tests/test_api.py": (24, 5),
    "tests/test_pagination.py": (12, 6),
    "docs/api.md": (0, 7),
}

# The session, one tool call per assistant turn: (what the assistant says, tool, target).
_STEPS: tuple[tuple[str, str, str], ...] = (
    ("Let me look at the layout of the project first.", "list_files", "."),
    ("The endpoint lives in the API module; reading it.", "read_file", "src/inventory/api.py"),
    ("Items come from the models; reading those.", "read_file", "src/inventory/models.py"),
    ("And the queries behind them.", "read_file", "src/inventory/db.py"),
    ("Is there any paging code already?", "search_files", "limit|offset"),
    ("Reading the existing API tests.", "read_file", "tests/test_api.py"),
    ("Running the suite to see where it stands.", "execute_command", "pytest -q"),
    ("Adding limit and offset to list_items.", "replace_in_file", "src/inventory/api.py"),
    ("Running the tests again.", "execute_command", "pytest -q"),
    ("The model needs a stable sort key; checking it.", "read_file", "src/inventory/models.py"),
    ("Adding the sort key to Item.", "replace_in_file", "src/inventory/models.py"),
    ("Re-reading the endpoint after the change.", "read_file", "src/inventory/api.py"),
    ("Running the tests.", "execute_command", "pytest -q"),
    ("Moving the paging logic to its own module.", "write_to_file", "src/inventory/pagination.py"),
    ("Writing tests for the new module.", "write_to_file", "tests/test_pagination.py"),
    ("Running only the new tests.", "execute_command", "pytest -q tests/test_pagination.py"),
    ("The query needs LIMIT and OFFSET; reading db.py again.", "read_file", "src/inventory/db.py"),
    ("Passing limit and offset to the query.", "replace_in_file", "src/inventory/db.py"),
    ("Two failures are unclear; running verbosely.", "execute_command", "pytest -vv --tb=long"),
    ("The next link is built wrongly; reading the API again.", "read_file", "src/inventory/api.py"),
    ("Fixing the next link.", "replace_in_file", "src/inventory/api.py"),
    ("Running the tests.", "execute_command", "pytest -q"),
    ("Reading the API documentation.", "read_file", "docs/api.md"),
    ("Documenting the new parameters.", "replace_in_file", "docs/api.md"),
    ("Checking the models once more for the count query.", "read_file", "src/inventory/models.py"),
    ("Reviewing the whole change.", "execute_command", "git diff --stat && git diff"),
    ("Reading the pagination tests before the last run.", "read_file", "tests/test_pagination.py"),
    ("Final test run.", "execute_command", "pytest -q"),
    ("Re-reading the endpoint one last time.", "read_file", "src/inventory/api.py"),
)

_FINAL_ANSWER = (
    "GET /items now takes `limit` (default 50, at most 500) and `offset`, returns a `next` link"
    " when more items follow, and the paging logic lives in `src/inventory/pagination.py` with"
    " its own tests. The whole suite passes."
)


def demo_conversation() -> list[Message]:
    """The demo history: the task, then one tool call and its result per step, then the answer."""
    versions = dict.fromkeys(_FILES, 0)
    history: list[Message] = [
        {"role": "user", "content": [{"type": "text", "text": f"<task>\n{DEMO_TASK}\n</task>"}]}
    ]
    for number, (say, tool, target) in enumerate(_STEPS, 1):
        call_id = f"toolu_demo_{number:02d}"
        key = (
            "command"
            if tool == "execute_command"
            else "regex"
            if tool == "search_files"
            else "path"
        )
        history.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": say},
                    {"type": "tool_use", "id": call_id, "name": tool, "input": {key: target}},
                ],
            }
        )
        if tool in ("replace_in_file", "write_to_file"):
            versions[target] += 1
        output = _tool_output(tool, target, versions, number)
        history.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": call_id,
                        "content": [
                            {"type": "text", "text": f"[{tool} for '{target}'] Result:\n{output}"}
                        ],
                    }
                ],
            }
        )
    history.append({"role": "assistant", "content": [{"type": "text", "text": _FINAL_ANSWER}]})
    return history


def _tool_output(tool: str, target: str, versions: dict[str, int], step: int) -> str:
    if tool == "read_file":
        return _file_text(target, versions[target])
    if tool in ("replace_in_file", "write_to_file"):
        return (
            f"The content was successfully saved to {target}.\n\n"
            f'<final_file_content path="{target}">\n{_file_text(target, versions[target])}\n'
            "</final_file_content>\n\nIMPORTANT: this is the file's final state; use it as the"
            " reference for any further edits."
        )
    if tool == "list_files":
        return "\n".join(sorted(_FILES)) + "\nREADME.md\npyproject.toml\nsetup.cfg"
    if tool == "search_files":
        return "\n".join(
            f"{path}\n│----\n│{_line(path, row)}\n│----" for path in _FILES for row in range(3)
        )
    return _test_log(target, step)


def _file_text(path: str, version: int) -> str:
    """A deterministic source file; every version differs a little from the one before."""
    count, seed = _FILES[path]
    if path.endswith(".md"):
        paragraphs = [f"# Inventory API (revision {version})"]
        for index in range(18 + 4 * version):
            verb, noun = _name(seed, index)
            paragraphs.append(
                f"## {verb.title()} {noun}s\n\n`GET /{noun}s/{{id}}/{verb}` returns the {noun}"
                f" after it is {verb}ed; errors are reported as JSON with a `detail` field and"
                f" the status codes 400, 404 or 409, as for every other endpoint."
            )
        return "\n\n".join(paragraphs)
    lines = [f'"""{path}: part of the inventory service (revision {version})."""', ""]
    lines += ["from __future__ import annotations", "", "import logging", ""]
    for index in range(count + 2 * version):
        verb, noun = _name(seed, index)
        lines += [
            f"def {verb}_{noun}_{index}(session, {noun}_id: int, *, limit: int = 50) -> dict:",
            f'    """{verb.title()} {noun} {noun}_id, at most limit rows (rev {version})."""',
            f"    rows = session.query('{noun}s').where(id={noun}_id).limit(limit).all()",
            f"    logging.getLogger(__name__).debug('{verb} %s: %d rows', {noun}_id, len(rows))",
            f"    return {{'{noun}': rows[0] if rows else None, 'count': len(rows)}}",
            "",
        ]
    return "\n".join(lines)


def _name(seed: int, index: int) -> tuple[str, str]:
    return _VERBS[(seed * 7 + index * 3) % len(_VERBS)], _NOUNS[(seed + index * 5) % len(_NOUNS)]


def _line(path: str, row: int) -> str:
    verb, noun = _name(_FILES[path][1], row)
    return f"def {verb}_{noun}_{row}(session, {noun}_id: int, *, limit: int = 50) -> dict:"


def _test_log(command: str, step: int) -> str:
    """Test output; the verbose run prints every test with a long traceback for the failures."""
    verbose = "-vv" in command
    if command.startswith("git diff"):
        return "\n".join(
            f"diff --git a/{path} b/{path}\n@@ -{row * 7},7 +{row * 7},9 @@\n+{_line(path, row)}"
            for path in _FILES
            for row in range(6)
        )
    tests = [
        f"tests/test_{name}.py::test_{verb}_{noun}"
        for name in ("api", "pagination")
        for verb, noun in (_name(step, index) for index in range(40 if verbose else 12))
    ]
    failing = 0 if step >= 27 else max(1, 6 - step // 4)
    report: list[str] = []
    for position, test in enumerate(tests):
        failed = position % 9 == 0 and position // 9 < failing
        if verbose:
            report.append(f"{test} {'FAILED' if failed else 'PASSED'}")
            if failed or position % 3 == 0:
                report += _traceback(test, position)
        elif failed:
            report.append(f"FAILED {test} - AssertionError: expected 'next' in the response")
    passed = len(tests) - failing
    report.append(f"{failing} failed, {passed} passed in {0.31 + step / 100:.2f}s")
    return "\n".join(report)


def _traceback(test: str, position: int) -> list[str]:
    frames: list[str] = [f"_____ {test} _____", ""]
    for depth in range(7):
        verb, noun = _name(position, depth)
        frames += [
            f"src/inventory/api.py:{40 + depth * 11}: in {verb}_{noun}_{depth}",
            f"    rows = session.query('{noun}s').where(id={noun}_id).limit(limit).all()",
            f"src/inventory/db.py:{12 + depth * 5}: in query",
            f"    return self._execute(sql, params)  # params={{'limit': 50, 'offset': {depth * 50}}}",
        ]
    frames += ["E   AssertionError: expected 'next' in the response", ""]
    return frames
