"""The documentation's Python code blocks pass ``mypy --strict``, as a user's code would.

Every ``python`` block of README.md and docs/*.md is written to a module of its own and all are
checked by one mypy run (its cache in the temporary folder). A block that continues another
("``SYSTEM`` and ``run_tool`` as above") gets the top-level definitions it names from that
block; a block that leaves parts to the reader ("your loop") gets typed stand-ins for them,
listed here, so that what the reader fills in is all that is not checked.
"""

from __future__ import annotations

import ast
import re
import tempfile
from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api")

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
ANTHROPIC_LOOP = "client = anthropic.Anthropic()"

# marker of a block -> (marker of the block it continues, the names it takes from it)
CONTINUES = {
    "client = openai.OpenAI()": (ANTHROPIC_LOOP, ("SYSTEM", "run_tool")),
    'summarize="in-band"': (
        ANTHROPIC_LOOP,
        ("ContextSession", "MODEL", "SYSTEM", "TOOLS", "run_tool", "client"),
    ),
}

# marker of a block -> the typed stand-ins for what the text leaves to the reader
STAND_INS = {
    "for turn in agent_loop():": """
from collections.abc import Iterator

import anthropic
from anthropic.types import MessageParam

MODEL = "claude-sonnet-4-5"
client = anthropic.Anthropic()
history: list[MessageParam] = []
previous_request_ms = 0


def agent_loop() -> Iterator[int]:
    yield from ()
""",
}


def python_blocks() -> list[tuple[str, int, str]]:
    """(document, line of the opening fence, code) of every python block of the docs."""
    found = []
    for document in DOCS:
        text = document.read_text(encoding="utf-8")
        for match in re.finditer(r"^```python\n(.*?)^```", text, re.DOTALL | re.MULTILINE):
            line = text.count("\n", 0, match.start()) + 1
            found.append((document.relative_to(ROOT).as_posix(), line, match[1]))
    return found


def definitions(code: str, names: tuple[str, ...]) -> str:
    """The imports of ``code`` and its top-level statements that define one of ``names``."""
    kept = [node for node in ast.parse(code).body if _imports_or_defines(node, names)]
    lines = code.splitlines()
    return "\n".join(
        "\n".join(
            lines[node.lineno - 1 - len(getattr(node, "decorator_list", ())) : node.end_lineno]
        )
        for node in kept
    )


def _imports_or_defines(node: ast.stmt, names: tuple[str, ...]) -> bool:
    if isinstance(node, ast.Import | ast.ImportFrom):
        return True
    if isinstance(node, ast.FunctionDef | ast.ClassDef):
        return node.name in names
    targets = (
        node.targets
        if isinstance(node, ast.Assign)
        else [node.target]
        if isinstance(node, ast.AnnAssign)
        else []
    )
    return any(isinstance(target, ast.Name) and target.id in names for target in targets)


def modules() -> dict[str, str]:
    """The module name and source of every block, with what it continues or stands on."""
    blocks = python_blocks()
    out: dict[str, str] = {}
    for document, line, code in blocks:
        prelude = ""
        for marker, (source_marker, names) in CONTINUES.items():
            if marker in code:
                (source,) = [c for _, _, c in blocks if source_marker in c]
                prelude = definitions(source, names)
        for marker, stand_ins in STAND_INS.items():
            if marker in code:
                prelude = stand_ins
        name = re.sub(r"\W", "_", f"{document}_{line}".removesuffix(".md"))
        out[name] = f"# {document}, line {line}\n{prelude}\n\n# -- the block --\n{code}"
    return out


def test_every_block_is_known() -> None:
    """The markers above find their blocks: a reworded block is not silently left unchecked."""
    codes = [code for _, _, code in python_blocks()]
    for marker in [*CONTINUES, *STAND_INS, *(source for source, _ in CONTINUES.values())]:
        assert sum(marker in code for code in codes) == 1, marker
    assert len(codes) >= 9


def test_the_docs_pass_mypy_strict(tmp_path: Path) -> None:
    """One ``mypy --strict`` run over every block: no error anywhere."""
    sources = modules()
    for name, source in sources.items():
        (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
    # the cache lives in the temporary folder, shared by runs (cold, the frameworks take a while)
    cache = Path(tempfile.gettempdir()) / "windowkeeper-docs-mypy-cache"
    stdout, stderr, status = mypy_api.run(
        [
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(cache),
            *sorted(str(path) for path in tmp_path.glob("*.py")),
        ]
    )
    assert status == 0, f"mypy --strict on the docs' code blocks:\n{stdout}{stderr}"
