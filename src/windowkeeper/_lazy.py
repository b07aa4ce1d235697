"""Names a package loads from one of its modules on first use (PEP 562 ``__getattr__``)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection

__all__ = ["lazy_names"]


def lazy_names(
    package: str, module: str, names: Collection[str], listed: Collection[str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` that import ``names`` from ``module`` (a
    submodule name like ``"_task"``) the first time one is asked for, then keep it.

    ``listed`` is the package's ``__all__``, for ``dir()``. Any other name is an AttributeError,
    as for a module without ``__getattr__``.
    """
    wanted = frozenset(names)

    def __getattr__(name: str) -> object:  # noqa: N807 - the module hook's own name
        if name not in wanted:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        loaded = __import__(f"{package}.{module}", fromlist=[name])
        value = getattr(loaded, name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:  # noqa: N807
        return sorted({*vars(sys.modules[package]), *listed})

    return __getattr__, __dir__
