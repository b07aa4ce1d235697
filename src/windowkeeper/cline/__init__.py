"""Cline interop: the task-folder reader and the names of the files the original writes.

:class:`~windowkeeper.ContextManager` composes the core with the persistence the original does
(``context_history.json`` beside the task); the task-folder reader gives the history, the recorded
requests and their usage. The task-folder names are public here, as SPEC.md promises.

The reader is loaded on the first use of one of its names (PEP 562 ``__getattr__``), so that a
session, which needs only the manager, does not pay for it.
"""

from __future__ import annotations

from .._lazy import lazy_names

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._task import (
        API_HISTORY_FILE,
        MAX_JSON_DEPTH,
        MAX_SAFE_INTEGER,
        MAX_TOKEN_COUNT,
        TASK_METADATA_FILE,
        UI_MESSAGES_FILE,
        ApiRequest,
        ClineTask,
        check_block_fields,
        check_depth,
        load_task,
        previous_api_request,
        special_file_kind,
    )

__all__ = [
    "API_HISTORY_FILE",
    "MAX_JSON_DEPTH",
    "MAX_SAFE_INTEGER",
    "MAX_TOKEN_COUNT",
    "TASK_METADATA_FILE",
    "UI_MESSAGES_FILE",
    "ApiRequest",
    "ClineTask",
    "check_block_fields",
    "check_depth",
    "load_task",
    "previous_api_request",
    "special_file_kind",
]

__getattr__, __dir__ = lazy_names(__name__, "_task", __all__, __all__)
