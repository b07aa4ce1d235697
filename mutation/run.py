"""A mutation run over ``src/windowkeeper/session``: ``make mutants`` (never part of ``make test``).

Each mutant is one change of one operator or constant (``<`` for ``<=``, ``==`` for ``!=``,
``and`` for ``or``, ``+`` for ``-``, a number plus one, ``True`` for ``False``, a ``not``
dropped), spliced into a private copy of the package (the checkout is never written) and tested
with the tests that exercise its module (``mutation/tests.toml``: a small first run, the rest
only if the mutant survives it), each run stopping at its first failure, with a time limit. A
pytest fork server (``mutation/worker.py``) pays the test doubles' imports once.

A mutant no test kills is listed with its place, operator and mutated line, to be judged: a
missing test, or an equivalent mutant (one no input can tell from the original), which goes into
``mutation/equivalent.txt`` with a one-line reason and leaves the denominator. The score is
killed / (sampled - equivalent).

First, every test file any chosen mutant uses runs once on the unmutated copy: a red baseline
would make every mutant look killed, so it stops the run; its time sets the per-mutant limit
(three times it, at least a minute).

Options: ``--paths`` (files or folders under src/windowkeeper; default ``session``),
``--sample N`` with ``--seed S`` (a seeded random sample of N mutants; all without it),
``--only MODULE:LINE ...`` (the mutants of chosen lines, e.g. ``session/_request.py:192``; with
``--sample``, those of the sample: re-run a sample's survivors),
``--what OPERATOR`` (only that operator, e.g. ``"Lt -> LtE"``), ``--tests FILE ...`` (those
tests in one run instead of the map: does a new test kill a mutant?), ``--list`` (print the
chosen mutants and their mutated lines, run nothing), ``--timeout``
(seconds per mutant), ``--no-baseline``.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "windowkeeper"
HERE = Path(__file__).resolve().parent
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
    module: str  # relative to src/windowkeeper, e.g. "session/_clipping.py"
    index: int  # which of the file's mutable places (see _places)
    line: int
    column: int
    what: str  # the operator, e.g. "Lt -> LtE"
    original: str  # the source line, stripped

    @property
    def place(self) -> str:
        return f"{self.module}:{self.line}"

    def source(self) -> str:
        """The whole mutated file (built only for the mutants that run)."""
        text = (PACKAGE / self.module).read_text()
        tree = ast.parse(text)
        node = _places(tree)[self.index]
        _change(node)
        return _spliced(text, node, tree)

    def mutated(self) -> str:
        """The mutated line as it will run (the whole expression when it spans lines)."""
        source = self.source()
        text = (PACKAGE / self.module).read_text()
        if source.count("\n") == text.count("\n"):
            return source.splitlines()[self.line - 1].strip()
        tree = ast.parse(text)
        node = _places(tree)[self.index]
        _change(node)
        return ast.unparse(node)


def _places(tree: ast.Module) -> list[ast.AST]:
    """Every node one mutation can change, in a fixed (walk) order; docstrings left out."""
    found: list[ast.AST] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            return  # docstrings and bare constants
        if (
            isinstance(node, ast.Compare | ast.BoolOp | ast.BinOp)
            or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not))
            or (
                isinstance(node, ast.Constant)
                and type(node.value) in (bool, int)
                and (type(node.value) is bool or node.value < 10**6)
            )
        ):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _change(node: ast.AST) -> str | None:
    """Mutate ``node`` in place; the operator's description, or None when it has no mutation."""
    if isinstance(node, ast.Compare) and type(node.ops[0]) in SWAPS:
        old = type(node.ops[0]).__name__
        node.ops[0] = SWAPS[type(node.ops[0])]()
        return f"{old} -> {type(node.ops[0]).__name__}"
    if isinstance(node, ast.BoolOp | ast.BinOp) and type(node.op) in SWAPS:
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


def _spliced(text: str, node: ast.AST, tree: ast.Module) -> str:
    """The file with only ``node``'s own text replaced, so line numbers and the rest stay as
    written; the whole tree unparsed when splicing would not give the same program."""
    lines = text.splitlines(keepends=True)
    start, end = node.lineno, node.end_lineno  # type: ignore[attr-defined]
    if start == end:
        row = lines[start - 1].encode()
        left = row[: node.col_offset].decode()  # type: ignore[attr-defined]
        right = row[node.end_col_offset :].decode()  # type: ignore[attr-defined]
        candidate = "".join([*lines[: start - 1], left + ast.unparse(node) + right, *lines[start:]])
        try:
            if ast.dump(ast.parse(candidate)) == ast.dump(tree):
                return candidate
        except SyntaxError:
            pass
    return ast.unparse(tree)


def mutants_of(path: Path) -> Iterator[Mutant]:
    """Every mutant of one file, in source order (described, not yet built)."""
    text = path.read_text()
    module = path.relative_to(PACKAGE).as_posix()
    lines = text.splitlines()
    for index, node in enumerate(_places(ast.parse(text))):
        what = _change(copy.deepcopy(node))
        if what is not None:
            line = node.lineno  # type: ignore[attr-defined]
            column = node.col_offset  # type: ignore[attr-defined]
            yield Mutant(module, index, line, column, what, lines[line - 1].strip())


def all_mutants(paths: list[Path]) -> list[Mutant]:
    files = sorted(
        {p for path in paths for p in ([path] if path.is_file() else path.rglob("*.py"))}
    )
    return [mutant for path in files for mutant in mutants_of(path)]


@dataclass(frozen=True)
class Equivalent:
    module: str
    what: str
    mutated: str  # the mutated line, stripped: it tells apart two mutants of one line
    reason: str


def read_equivalents(path: Path) -> list[Equivalent]:
    """``mutation/equivalent.txt``: one mutant a line, ``module | operator | mutated line | reason``."""
    found = []
    for number, row in enumerate(path.read_text().splitlines(), 1):
        if not row.strip() or row.startswith("#"):
            continue
        fields = [field.strip() for field in row.split(" | ")]
        if len(fields) != 4 or not fields[3]:
            raise SystemExit(f"{path}:{number}: want 'module | operator | mutated line | reason'")
        found.append(Equivalent(*fields))
    return found


def is_equivalent(mutant: Mutant, equivalents: list[Equivalent]) -> Equivalent | None:
    """Matched by module, operator and mutated line (not number, which moves as the file grows)."""
    candidates = [e for e in equivalents if (e.module, e.what) == (mutant.module, mutant.what)]
    if not candidates:
        return None
    mutated = mutant.mutated()
    return next((entry for entry in candidates if entry.mutated == mutated), None)


def stale(equivalents: list[Equivalent], every: list[Mutant]) -> list[Equivalent]:
    """Entries of ``equivalent.txt`` for files among ``every`` that match none of its mutants
    (the code moved on): they would otherwise hide nothing, silently."""
    modules = {m.module for m in every}
    return [
        entry
        for entry in equivalents
        if entry.module in modules
        and not any(
            (m.module, m.what) == (entry.module, entry.what) and m.mutated() == entry.mutated
            for m in every
        )
    ]


def stages(module: str, table: dict[str, Any], root: Path = ROOT) -> list[list[str]]:
    """The test files for ``module``, in two runs: its own list (``[modules]``) with the
    ``first`` tier, then the rest of ``default`` only if those pass. Most mutants die in the
    first run, which collects a few files instead of every one (collection is most of a run's
    time); each file once, globs expanded, ``exclude`` left out."""
    seen: set[str] = set(table.get("exclude", []))
    runs: list[list[str]] = []
    for patterns in ([*table["modules"].get(module, []), *table["first"]], table["default"]):
        run: list[str] = []
        for pattern in patterns:
            matches = sorted(root.glob(pattern)) if any(c in pattern for c in "*?[") else None
            for name in (
                [p.relative_to(root).as_posix() for p in matches]
                if matches is not None
                else [pattern]
            ):
                if name not in seen:
                    seen.add(name)
                    run.append(name)
        if run:
            runs.append(run)
    return runs


class Sandbox:
    """A private copy of the package and of the tests, frozen when the run starts (editing the
    checkout meanwhile changes nothing the run judges), with the package's copy on
    ``PYTHONPATH`` ahead of the editable checkout, and a pytest fork server
    (``mutation/worker.py``) that runs the tests against it."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="windowkeeper-mutants-"))
        ignore = shutil.ignore_patterns("__pycache__")
        shutil.copytree(PACKAGE, self.folder / "windowkeeper", ignore=ignore)
        self.checkout = self.folder / "checkout"
        shutil.copytree(ROOT / "tests", self.checkout / "tests", ignore=ignore)
        shutil.copy2(ROOT / "pyproject.toml", self.checkout / "pyproject.toml")
        paths = [str(self.folder), str(self.checkout), os.environ.get("PYTHONPATH", "")]
        self.env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, paths)),
            "PYTHONPYCACHEPREFIX": str(self.folder / "pycache"),
            "HYPOTHESIS_STORAGE_DIRECTORY": str(self.folder / "hypothesis"),
            # the tests find ../shared from their checkout: point them at the real one
            "WINDOWKEEPER_SHARED": os.environ.get(
                "WINDOWKEEPER_SHARED", str(ROOT.parent / "shared")
            ),
        }
        probe = subprocess.run(
            [sys.executable, "-c", "import windowkeeper; print(windowkeeper.__file__)"],
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
        )
        if not probe.stdout.startswith(str(self.folder)):
            raise SystemExit(f"the copy is not the package imported: {probe.stdout.strip()}")
        self.worker = subprocess.Popen(
            [sys.executable, str(HERE / "worker.py")],
            cwd=self.checkout,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own process group: close() ends the test run with it
        )
        self._answer()

    def _answer(self) -> dict[str, object]:
        assert self.worker.stdout is not None
        answer: dict[str, object] = json.loads(self.worker.stdout.readline() or "{}")
        if "error" in answer or not answer:
            raise SystemExit(f"the pytest worker failed: {answer}")
        return answer

    def _write(self, module: str, text: str) -> None:
        target = self.folder / "windowkeeper" / module
        target.write_text(text)
        # A cached .pyc is checked by mtime and size; a same-size mutant in the same second
        # would run stale byte code, so the cache of the file changed goes every time.
        cache = Path(self.env["PYTHONPYCACHEPREFIX"], *target.parent.parts[1:])
        (cache / f"{target.stem}.{sys.implementation.cache_tag}.pyc").unlink(missing_ok=True)

    def tests_pass(
        self, runs: list[list[str]], timeout: float, mutant: Mutant | None = None
    ) -> bool:
        """Whether every run of tests passes with ``mutant`` in place (False also on a time-out)."""
        if mutant is not None:
            self._write(mutant.module, mutant.source())
        try:
            return all(self._passes(tests, timeout) for tests in runs)
        finally:
            if mutant is not None:
                self._write(mutant.module, (PACKAGE / mutant.module).read_text())

    def _passes(self, tests: list[str], timeout: float) -> bool:
        arguments = [
                "-x", "-q", "-o", "addopts=--strict-markers", "-p", "no:cacheprovider",
                "-p", "no:randomly", "-p", "no:xdist",
                # the worker imported the doubles' SDKs (and their pytest plugins) already
                "-W", "ignore::pytest.PytestAssertRewriteWarning", *tests,
            ]  # fmt: skip
        assert self.worker.stdin is not None
        self.worker.stdin.write(json.dumps([arguments, timeout]) + "\n")
        self.worker.stdin.flush()
        return self._answer()["code"] == 0

    def close(self) -> None:
        """End the worker and the test run it may be waiting for, then remove the copy."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.worker.pid, signal.SIGKILL)
        self.worker.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paths", nargs="*", default=["session"])
    parser.add_argument("--sample", type=int, default=0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--what", default="", help='only this operator, e.g. "Lt -> LtE"')
    parser.add_argument("--tests", nargs="*", default=[], help="these tests instead of the map")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--timeout", type=float, default=0)
    parser.add_argument("--no-baseline", action="store_true")
    args = parser.parse_args(argv)
    table = tomllib.loads((HERE / "tests.toml").read_text())
    equivalents = read_equivalents(HERE / "equivalent.txt")
    every = all_mutants([PACKAGE / p for p in args.paths])
    for entry in stale(equivalents, every):
        print(
            f"equivalent.txt: no such mutant any more, remove or update: {entry.module} {entry.mutated}"
        )
    chosen = every
    if 0 < args.sample < len(chosen):  # the sample first: --only then picks among it
        chosen = random.Random(args.seed).sample(chosen, args.sample)
        chosen.sort(key=lambda m: (m.module, m.line, m.column, m.what))
    chosen = [
        m
        for m in chosen
        if (not args.only or m.place in args.only) and (not args.what or m.what == args.what)
    ]
    if args.tests:  # one run of the tests given, for every module
        table = {"first": args.tests, "default": [], "modules": {}}
    print(f"{len(every)} mutants, running {len(chosen)} (seed {args.seed})", flush=True)
    if args.list:
        for mutant in chosen:
            print(f"{mutant.place} {mutant.what}: {mutant.original}  =>  {mutant.mutated()}")
        return 0
    # A terminated run still restores nothing in the checkout (it is never written) and
    # removes its copy: SIGTERM unwinds like Ctrl-C.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sandbox = Sandbox()
    try:
        return _run(sandbox, chosen, table, equivalents, args)
    finally:
        sandbox.close()


def _run(
    sandbox: Sandbox,
    chosen: list[Mutant],
    table: dict[str, Any],
    equivalents: list[Equivalent],
    args: argparse.Namespace,
) -> int:
    # One baseline over every test file any mutant uses; its time bounds each mutant's run.
    union = sorted(
        {test for m in chosen for run in stages(m.module, table, sandbox.checkout) for test in run}
    )
    limit = args.timeout or 600.0
    if not args.no_baseline and union:
        started = time.monotonic()
        if not sandbox.tests_pass([union], 3_600):
            print(f"baseline fails, nothing is judged: pytest {' '.join(union)}")
            return 2
        spent = time.monotonic() - started
        print(f"baseline green in {spent:.0f} s ({len(union)} test files)", flush=True)
        limit = args.timeout or max(60.0, 3 * spent)
    killed: list[Mutant] = []
    survived: list[Mutant] = []
    skipped: list[tuple[Mutant, Equivalent]] = []
    started = time.monotonic()
    for number, mutant in enumerate(chosen, 1):
        entry = is_equivalent(mutant, equivalents)
        clock = time.monotonic()
        if entry is not None:
            skipped.append((mutant, entry))
            verdict = "equivalent"
        elif sandbox.tests_pass(stages(mutant.module, table, sandbox.checkout), limit, mutant):
            survived.append(mutant)
            verdict = "SURVIVED"
        else:
            killed.append(mutant)
            verdict = "killed"
        print(
            f"[{number}/{len(chosen)}] {verdict:10} {mutant.place} {mutant.what}"
            f" ({time.monotonic() - clock:.1f} s)",
            flush=True,
        )
    judged = len(killed) + len(survived)
    print(f"\nequivalent (listed in mutation/equivalent.txt, not counted): {len(skipped)}")
    for mutant, entry in skipped:
        print(f"  {mutant.place} {mutant.what}: {entry.reason}")
    print(f"survivors: {len(survived)}")
    for mutant in survived:
        print(f"  {mutant.place} {mutant.what}\n      {mutant.original}\n   => {mutant.mutated()}")
    elapsed = time.monotonic() - started
    print(
        f"score {len(killed)}/{judged} = {len(killed) / judged:.1%}"
        f" (killed / (sampled - equivalent): {len(chosen)} sampled, {len(skipped)} equivalent)"
        f" in {elapsed:.0f} s"
        if judged
        else "no mutants judged"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
