"""Cline interop: the original's ContextManager and its task folders.

:class:`~windowkeeper.ContextManager` composes the core with the persistence the original does
(``context_history.json`` beside the task); the task-folder reader gives the history, the recorded
requests and their usage. The task-folder names are public here, as SPEC.md promises.
"""

from __future__ import annotations

from ._task import *  # noqa: F403  (the public names are _task's own __all__)
from ._task import __all__ as __all__
