"""A small mutation run over ``src/windowkeeper/session``: ``make mutants``.

Each mutant is one change of one operator or constant (``<`` for ``<=``, ``==`` for ``!=``,
``and`` for ``or``, a number plus one, ``True`` for ``False``, a ``not`` dropped), made in the
source file, tested with the session's tests (stopping at the first failure) and undone. A
mutant that no test kills is printed with its place, to be judged: a missing test, or an
equivalent mutant (one that cannot change behaviour). The score is killed / (killed + survived).

Options: ``--paths`` (files or folders under src/), ``--sample N`` (a random sample of N
mutants, ``--seed`` for which), ``--tests`` (the pytest arguments), ``--timeout`` per mutant.
"""

from __future__ import annotations

import argparse
import ast
import random
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SWAPS: dict[type[ast.AST], type[ast.AST]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.And: ast.Or,
    ast.Or: ast.And,
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
}


@dataclass(frozen=True)
class Mutant:
    path: Path
    line: int
    column: int
    what: str
    source: str  # the mutated file


class _Collector(ast.NodeVisitor):
    """Every place one mutation can be made, as (node, description, apply) in source order."""

    def __init__(self) -> None:
        self.places: list[tuple[ast.AST, str]] = []

    def generic_visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.Expr) and isinstance(getattr(node, "value", None), ast.Constant):
            return  # docstrings
        if isinstance(node, ast.Compare | ast.BoolOp | ast.BinOp | ast.UnaryOp) or (
            isinstance(node, ast.Constant)
            and (
                isinstance(node.value, bool) or (isinstance(node.value, int) and node.value < 10**6)
            )
        ):
            self.places.append((node, type(node).__name__))
        super().generic_visit(node)


def _mutate(tree: ast.Module, index: int) -> str | None:
    """The description of mutation ``index`` applied to ``tree`` (in place), or None."""
    collector = _Collector()
    collector.visit(tree)
    node, _ = collector.places[index]
    if isinstance(node, ast.Compare) and type(node.ops[0]) in SWAPS:
        old = type(node.ops[0]).__name__
        node.ops[0] = SWAPS[type(node.ops[0])]()
        return f"{old} -> {type(node.ops[0]).__name__}"
    if isinstance(node, ast.BoolOp) and type(node.op) in SWAPS:
        old = type(node.op).__name__
        node.op = SWAPS[type(node.op)]()
        return f"{old} -> {type(node.op).__name__}"
    if isinstance(node, ast.BinOp) and type(node.op) in SWAPS:
        old = type(node.op).__name__
        node.op = SWAPS[type(node.op)]()
        return f"{old} -> {type(node.op).__name__}"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        node.op = ast.UAdd()  # `+x` keeps the operand: the `not` is gone
        return "not dropped"
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        node.value = not node.value
        return f"{not node.value} -> {node.value}"
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        node.value += 1
        return f"{node.value - 1} -> {node.value}"
    return None


def mutants(paths: list[Path]) -> list[Mutant]:
    """Every mutant of every ``.py`` file under ``paths``."""
    found: list[Mutant] = []
    files = sorted(p for path in paths for p in ([path] if path.is_file() else path.rglob("*.py")))
    for path in files:
        text = path.read_text()
        count = len(_places(text))
        for index in range(count):
            tree = ast.parse(text)
            what = _mutate(tree, index)
            if what is None:
                continue
            node = _places_of(tree)[index]
            source = ast.unparse(tree)
            found.append(
                Mutant(
                    path, getattr(node, "lineno", 0), getattr(node, "col_offset", 0), what, source
                )
            )
    return found


def _places(text: str) -> list[ast.AST]:
    return _places_of(ast.parse(text))


def _places_of(tree: ast.Module) -> list[ast.AST]:
    collector = _Collector()
    collector.visit(tree)
    return [node for node, _ in collector.places]


def run(mutant: Mutant, tests: list[str], timeout: float) -> bool:
    """Whether the tests kill ``mutant`` (fail, or time out)."""
    original = mutant.path.read_text()
    mutant.path.write_text(mutant.source)
    try:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-x",
                "-q",
                "-p",
                "no:cacheprovider",
                "-p",
                "no:randomly",
                *tests,
            ],
            cwd=ROOT,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        return result.returncode != 0
    except subprocess.TimeoutExpired:
        return True
    finally:
        mutant.path.write_text(original)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paths", nargs="*", default=["src/windowkeeper/session"])
    parser.add_argument("--sample", type=int, default=0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--tests", nargs="*", default=["tests/session", "tests/test_readme_loops.py"]
    )
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args(argv)
    every = mutants([ROOT / p for p in args.paths])
    chosen = (
        random.Random(args.seed).sample(every, args.sample)
        if 0 < args.sample < len(every)
        else every
    )
    print(f"{len(every)} mutants, running {len(chosen)}", flush=True)
    killed = survived = 0
    started = time.monotonic()
    for number, mutant in enumerate(chosen, 1):
        dead = run(mutant, args.tests, args.timeout)
        killed += dead
        survived += not dead
        where = f"{mutant.path.relative_to(ROOT)}:{mutant.line}:{mutant.column}"
        print(
            f"[{number}/{len(chosen)}] {'killed  ' if dead else 'SURVIVED'} {where} {mutant.what}",
            flush=True,
        )
    total = killed + survived
    print(
        f"score {killed}/{total} = {killed / total:.0%} in {time.monotonic() - started:.0f} s"
        if total
        else "no mutants"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
