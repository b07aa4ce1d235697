"""The exceptions windowkeeper raises, all rooted at :class:`WindowkeeperError`.

::

    WindowkeeperError
    ├── MalformedMessageError (+ ValueError)   a message or block of the wrong shape, with its path
    ├── InvalidUsageError (+ ValueError)        token usage that cannot be read
    ├── InvalidRangeError (+ ValueError)        a deleted range that is not two integers
    ├── TaskFolderError (+ ValueError)          a task-folder file that cannot be read, with file and JSON path
    ├── ConfigurationError (+ ValueError, TypeError)  an argument of the wrong type or value, named
    ├── ContextOverflowError                    nothing can make the request fit the window
    ├── StepError (+ RuntimeError)             a shrink step that changed nothing or never stopped (a bug)
    ├── CorruptStoreError (+ ValueError)        context_history.json not in the original's layout (overwrites)
    ├── ModelTableError (+ ValueError)          a model table entry that cannot be read (models)
    ├── TraceError (+ ValueError)               an input the command cannot read as a trace (trace)
    ├── PlotUnavailableError (+ ImportError)    --plot without matplotlib installed (tools)
    ├── StorageError (+ OSError)                a backend could not read or write; nothing half-written (storage)
    ├── ConcurrentUpdateError                   another writer committed to the task first (storage)
    ├── UnknownModelWarning (+ UserWarning)     a model id no table knows: 128 000 tokens assumed (models)
    └── DistrustedUsageWarning (+ UserWarning)  reported usage far from the estimate: ignored (usage trust)

The builtin mixed in lets callers catch the error they already expect (``ValueError``) as
well as ours.
"""

from __future__ import annotations


class WindowkeeperError(Exception):
    """Root of every error windowkeeper raises on purpose."""


class MalformedMessageError(WindowkeeperError, ValueError):
    """A message or content block is not of a shape the provider APIs define.

    ``path`` names the offending value, e.g. ``history[7].content[2]``.
    """

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class InvalidUsageError(WindowkeeperError, ValueError):
    """Token usage (Cline's ``api_req_started`` JSON or an SDK usage object) cannot be read."""


class InvalidRangeError(WindowkeeperError, ValueError):
    """A deleted range is not ``None`` or a pair of integers."""


class TaskFolderError(WindowkeeperError, ValueError):
    """A file of a task folder cannot be read; the message names the file and the JSON path."""


class ConfigurationError(WindowkeeperError, ValueError, TypeError):
    """An argument windowkeeper was given has the wrong type or value; the message names it.

    Both builtins are mixed in: callers may catch the ``TypeError`` or ``ValueError`` they expect.
    """


class ContextOverflowError(WindowkeeperError):
    """Even the smallest valid request is larger than the model's window."""

    def __init__(self, message: str, *, estimated_tokens: int, limit: float) -> None:
        super().__init__(message)
        self.estimated_tokens = estimated_tokens
        self.limit = limit


class TraceError(WindowkeeperError, ValueError):
    """An input file is not a trace windowkeeper can read; the message names the file."""


class StepError(WindowkeeperError, RuntimeError):
    """A shrink step broke its contract: an action that changed nothing, or no end to its rounds.

    It is a bug in that step, reported instead of looping forever.
    """
