"""The package's layers, enforced on its imports (an AST walk over every module under src/).

Each subpackage is a layer and may import only the layers below it. The faithful core imports
nothing of ours but the errors and no I/O or clock from the standard library; ``import windowkeeper``
never loads the tools, the transcripts, the adapters or the CLI; only the CLI imports click or prints.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "windowkeeper"

# What each layer may import from the package (itself included).
BELOW: dict[str, set[str]] = {
    "_errors": set(),
    "_version": set(),
    "_lazy": set(),  # the packages' PEP 562 loader, below every layer
    "_record": set(),  # the record classes' maker (a dataclass without its start-up), likewise
    "core": {"_errors", "_lazy"},
    "rules": {"_errors", "_lazy", "core"},
    "formats": {"_errors", "_lazy", "core", "rules"},
    "storage": {"_errors", "_lazy", "core"},
    "cline": {"_errors", "_lazy", "core", "rules", "storage"},
    "session": {"_errors", "_lazy", "core", "rules", "formats", "storage", "cline"},
    "adapters": {"_errors", "_lazy", "core", "rules", "formats", "storage", "cline", "session"},
    "transcripts": {"_errors", "_lazy", "core", "rules", "formats", "storage", "cline", "session"},
    "tools": {
        "_errors",
        "_lazy",
        "core",
        "rules",
        "formats",
        "storage",
        "cline",
        "session",
        "transcripts",
    },
    "cli": {
        "_errors",
        "_lazy",
        "core",
        "rules",
        "formats",
        "storage",
        "cline",
        "session",
        "transcripts",
    }
    | {"tools"},
    # the package's face: everything SPEC.md promises, nothing of the tooling
    "__init__": {"_errors", "_lazy", "core", "rules", "formats", "storage", "cline", "session"},
    "__main__": {"cli"},
}
NO_IO = {"os", "pathlib", "io", "time", "datetime", "sqlite3", "socket", "shutil", "tempfile"}


def _modules() -> list[tuple[str, Path]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        found.append((parts[0], path))
    return found


def _imports(path: Path, root: Path = PACKAGE.parent) -> list[tuple[int, str]]:
    """Every module ``path`` imports, absolute, with its line (relative imports resolved)."""
    package = path.relative_to(root).with_suffix("").parts[:-1]  # the same for an __init__.py
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join((*base, node.module) if node.module else base)
                if not node.module:
                    found.extend((node.lineno, f"{module}.{alias.name}") for alias in node.names)
                    continue
            else:
                module = node.module or ""
            found.append((node.lineno, module))
    return found


def _layer_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "windowkeeper":
        return None
    return parts[1] if len(parts) > 1 else "__init__"


MODULES = _modules()


def test_every_module_has_a_layer() -> None:
    """A new top-level module must be placed in a layer before it can land."""
    assert MODULES
    assert {layer for layer, _ in MODULES} <= set(BELOW)


@pytest.mark.parametrize(
    ("layer", "path"), MODULES, ids=[str(p.relative_to(PACKAGE)) for _, p in MODULES]
)
def test_imports_only_the_layers_below(layer: str, path: Path) -> None:
    wrong = _violations(layer, path)
    assert not wrong, f"{path.relative_to(PACKAGE)} ({layer}) imports above its layer: {wrong}"


@pytest.mark.parametrize("path", [p for layer, p in MODULES if layer in {"core", "rules"}], ids=str)
def test_the_core_does_no_io(path: Path) -> None:
    stdlib = {module.split(".")[0] for _, module in _imports(path)}
    assert not stdlib & NO_IO, f"{path.name} imports {sorted(stdlib & NO_IO)}"


@pytest.mark.parametrize(
    ("layer", "path"), MODULES, ids=[str(p.relative_to(PACKAGE)) for _, p in MODULES]
)
def test_only_the_cli_uses_click_or_prints(layer: str, path: Path) -> None:
    if layer in {"cli", "__main__"}:
        return
    tree = ast.parse(path.read_text("utf-8"))
    clicks = [m for _, m in _imports(path) if m.split(".")[0] == "click"]
    prints = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "print"
    ]
    assert not clicks, f"{path.name} imports {clicks}"
    assert not prints, f"{path.name} calls print() at lines {prints}"


def test_importing_the_package_loads_no_tooling() -> None:
    """``import windowkeeper`` loads neither the tools, the transcripts, the adapters nor the CLI."""
    code = (
        "import sys, windowkeeper\n"
        "print(sorted(m for m in sys.modules if m.startswith('windowkeeper.')))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    for layer in ("tools", "transcripts", "adapters", "cli"):
        assert f"'windowkeeper.{layer}'" not in loaded, loaded
        assert f"'windowkeeper.{layer}." not in loaded, loaded
    assert (
        "click"
        not in subprocess.run(
            [sys.executable, "-c", "import sys, windowkeeper; print(list(sys.modules))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )


def _violations(layer: str, path: Path, root: Path = PACKAGE.parent) -> list[str]:
    allowed = BELOW[layer] | {layer}
    wrong = []
    for line, module in _imports(path, root):
        target = _layer_of(module)
        if target in {"_errors", "_version", "_record"}:
            continue
        if target == "__init__" and layer != "__main__":
            wrong.append(f"line {line}: imports the package itself")
        elif target is not None and target not in allowed:
            wrong.append(f"line {line}: {module} ({target})")
    return wrong


def test_the_walk_sees_a_violation(tmp_path: Path) -> None:
    """The checker itself: relative imports are resolved, and an upward one is caught."""
    core = tmp_path / "windowkeeper" / "core"
    core.mkdir(parents=True)
    probe = core / "_probe.py"
    probe.write_text(
        "from ._messages import Message\nfrom ..session._session import ContextSession\n"
    )
    assert _imports(probe, tmp_path) == [
        (1, "windowkeeper.core._messages"),
        (2, "windowkeeper.session._session"),
    ]
    assert _violations("core", probe, tmp_path) == [
        "line 2: windowkeeper.session._session (session)"
    ]
    (core / "__init__.py").write_text("from . import _probe\nfrom .. import cli\n")
    assert _violations("core", core / "__init__.py", tmp_path) == ["line 2: windowkeeper.cli (cli)"]
