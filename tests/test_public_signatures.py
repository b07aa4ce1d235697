"""No bare ``Any`` in a public signature where a type is known.

Every function, method and property named in a public module's ``__all__`` is read with
:func:`inspect.signature`; an annotation that is ``Any`` itself, a union holding ``Any``, or a
sequence of ``Any`` (``Sequence[Any]``, ``list[Any]``, ...) fails unless it is listed in
:data:`ALLOWED` with the reason no precise type exists. ``Any`` inside a documented shape
(``Message = dict[str, Any]``, tool definitions as ``Mapping[str, Any]``) is that shape's own;
arbitrary JSON is :data:`windowkeeper.JSONValue`.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from collections.abc import Callable, Iterator
from types import ModuleType

import pytest

import windowkeeper

ALLOWED: dict[str, str] = {
    "windowkeeper.PostgresStore.__init__(connection)": (
        "a DB-API connection of the optional psycopg extra, not importable where types are checked"
    ),
    "windowkeeper.adapters.langchain.WindowkeeperMiddleware.__init__(**session_options)": (
        "ContextSession's own keyword arguments, passed on and checked there"
    ),
    "windowkeeper.adapters.openai_agents.WindowkeeperInputFilter.__init__(**session_options)": (
        "ContextSession's own keyword arguments, passed on and checked there"
    ),
    "windowkeeper.session.SessionState.with_compaction(**changes)": (
        "CompactionState's fields by name, each of its own type, checked by dataclasses.replace"
    ),
}
"""Signatures that keep a bare ``Any``, each with the reason."""

# Optional extras whose modules import their framework: skipped where it is not installed.
_OPTIONAL = ("windowkeeper.adapters.", "windowkeeper.storage.postgres", "windowkeeper.tools.")
_SEQUENCES = {"Sequence", "list", "tuple", "set", "frozenset", "Iterable", "Iterator", "Collection"}


def _public_modules() -> Iterator[ModuleType]:
    yield windowkeeper
    for info in pkgutil.walk_packages(windowkeeper.__path__, "windowkeeper."):
        if any(part.startswith("_") for part in info.name.split(".")[1:]):
            continue
        try:
            yield importlib.import_module(info.name)
        except ImportError:  # pragma: no cover - an optional extra missing here
            if not info.name.startswith(_OPTIONAL):
                raise


def _bare_any(annotation: str) -> bool:
    """Whether ``annotation`` (a string, as ``from __future__ import annotations`` keeps it) is
    ``Any``, a union holding it, or a sequence of it."""

    def bare(node: ast.expr, depth: int) -> bool:
        if isinstance(node, ast.Name | ast.Attribute):
            return (node.id if isinstance(node, ast.Name) else node.attr) == "Any"
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return bare(node.left, depth) or bare(node.right, depth)
        if isinstance(node, ast.Subscript) and depth == 0:
            base = node.value
            name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", "")
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if name in {"Optional", "Union"}:
                return any(bare(item, depth) for item in items)
            if name in _SEQUENCES:
                return any(bare(item, 1) for item in items)
        return False

    return bare(ast.parse(annotation, mode="eval").body, 0)


def _callables() -> Iterator[tuple[str, Callable[..., object]]]:
    seen: set[int] = set()
    for module in _public_modules():
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if id(value) in seen:
                continue
            seen.add(id(value))
            where = f"{module.__name__}.{name}"
            if inspect.isclass(value):
                for attribute, member in vars(value).items():
                    if attribute.startswith("_") and attribute != "__init__":
                        continue
                    function = getattr(member, "fget", None) or getattr(member, "__func__", member)
                    if inspect.isfunction(function):
                        yield f"{where}.{attribute}", function
            elif inspect.isfunction(value):
                yield where, value


def _bare_anys() -> list[str]:
    found = []
    for where, function in _callables():
        signature = inspect.signature(function)
        for parameter in signature.parameters.values():
            annotation = parameter.annotation
            if isinstance(annotation, str) and _bare_any(annotation):
                star = {parameter.VAR_POSITIONAL: "*", parameter.VAR_KEYWORD: "**"}
                found.append(f"{where}({star.get(parameter.kind, '')}{parameter.name})")
        returned = signature.return_annotation
        if isinstance(returned, str) and _bare_any(returned):
            found.append(f"{where}(return)")
    return found


def test_no_bare_any_outside_the_allow_list() -> None:
    """Each public parameter and return has its type; the few exceptions say why."""
    assert [where for where in _bare_anys() if where not in ALLOWED] == []


def test_every_allowed_entry_is_still_needed() -> None:
    """An entry of the allow-list whose signature got a type is dropped from the list."""
    assert sorted(set(ALLOWED) - set(_bare_anys())) == []


@pytest.mark.parametrize(
    ("annotation", "bare"),
    [
        ("Any", True),
        ("str | Any", True),
        ("Optional[Any]", True),
        ("Sequence[Any]", True),
        ("typing.Any", True),
        ("dict[str, Any]", False),
        ("Mapping[str, Any]", False),
        ("Sequence[Mapping[str, Any]]", False),
        ("Message", False),
        ("JSONValue", False),
    ],
)
def test_what_counts_as_bare(annotation: str, bare: bool) -> None:
    """``Any`` as the type, in a union or as a sequence's element; not inside a shape."""
    assert _bare_any(annotation) is bare
