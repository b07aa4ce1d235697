"""``make mutants``' mutator (mutation/run.py): each mutant changes one thing, in place.

The mutation score is only as good as its mutants: a splice that moved lines would point
survivors at the wrong place, and one that changed more than its node would judge another
program. These rows pin the splice on a small source.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parent.parent / "mutation" / "run.py"
_SPEC = importlib.util.spec_from_file_location("mutation_run", _PATH)
assert _SPEC is not None
assert _SPEC.loader is not None
run = importlib.util.module_from_spec(_SPEC)
sys.modules["mutation_run"] = run
_SPEC.loader.exec_module(run)

SOURCE = '''def f(a, b):
    """Doc, never mutated: 1 < 2."""
    if a < b and not a:  # a comment kept
        return a + 1
    return True
'''


def _all(source: str) -> list[tuple[str, str]]:
    """Each mutant of ``source`` as (operator, mutated line)."""
    found = []
    for index in range(len(run._places(ast.parse(source)))):
        tree = ast.parse(source)
        node = run._places(tree)[index]
        what = run._change(node)
        if what is None:
            continue
        mutated = run._spliced(source, node, tree)
        assert mutated.count("\n") == source.count("\n")  # lines stay where they were
        assert mutated.splitlines()[1] == source.splitlines()[1]  # the docstring untouched
        found.append((what, mutated.splitlines()[node.lineno - 1]))
    return found


def test_each_operator_and_constant_is_one_mutant_spliced_into_its_line() -> None:
    assert _all(SOURCE) == [
        ("And -> Or", "    if a < b or not a:  # a comment kept"),
        ("Lt -> LtE", "    if a <= b and not a:  # a comment kept"),
        ("not dropped", "    if a < b and +a:  # a comment kept"),
        ("Add -> Sub", "        return a - 1"),
        ("1 -> 2", "        return a + 2"),
        ("True -> False", "    return False"),
    ]


def test_an_equivalent_entry_needs_four_fields_and_a_reason(tmp_path: Path) -> None:
    listed = tmp_path / "equivalent.txt"
    listed.write_text(
        "# comment\nsession/_x.py | Lt -> LtE | if a <= b: | the bound is never met\n"
    )
    [entry] = run.read_equivalents(listed)
    assert (entry.module, entry.what, entry.mutated) == ("session/_x.py", "Lt -> LtE", "if a <= b:")
    listed.write_text("session/_x.py | Lt -> LtE | if a <= b: | \n")
    with pytest.raises(
        SystemExit, match=re.escape("want 'module | operator | mutated line | reason'")
    ):
        run.read_equivalents(listed)
