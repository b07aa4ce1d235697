"""The exceptions windowkeeper raises, all defined here and rooted at :class:`WindowkeeperError`.

::

    WindowkeeperError
    ├── MalformedMessageError (+ ValueError)   a message or block of the wrong shape, with its path
    ├── InvalidUsageError (+ ValueError)        token usage that cannot be read
    ├── InvalidRangeError (+ ValueError)        a deleted range that is not two integers
    ├── UnreadableFileError (+ ValueError)      a file (or stored text) that cannot be read as what it
    │                                           should be: a task folder's file, a trace, a
    │                                           context_history.json; names the file and JSON path
    ├── ConfigurationError (+ ValueError, TypeError)  an argument of the wrong type or value, named
    ├── ContextOverflowError                    nothing can make the request fit the window
    ├── StepError (+ RuntimeError)             a shrink step that changed nothing or never stopped (a bug)
    ├── ModelTableError (+ ValueError)          a model table entry that cannot be read (models)
    ├── PlotUnavailableError (+ ImportError)    --plot without matplotlib installed (tools)
    ├── StorageError (+ OSError)                a backend could not read or write; nothing half-written (storage)
    ├── ConcurrentUpdateError                   another writer committed to the task first (storage)
    ├── UnknownModelWarning (+ UserWarning)     a model id no table knows: 128 000 tokens assumed (models)
    └── DistrustedUsageWarning (+ UserWarning)  reported usage far from the estimate: ignored (usage trust)

``TaskFolderError``, ``TraceError`` and ``CorruptStoreError`` are older names of
:class:`UnreadableFileError`, kept so that code catching them works unchanged. The modules that
raise an error re-export it from here under its old import path.

The builtin mixed in lets callers catch the error they already expect (``ValueError``) as
well as ours. Nothing is imported here, so that ``import windowkeeper`` stays cheap.
"""


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


class UnreadableFileError(WindowkeeperError, ValueError):
    """A file, or a stored text, cannot be read as what it should be; the message names the file
    and, within it, the JSON path (``history.json[3].content``).

    One concept under three older names: a task folder's file (``TaskFolderError``), an input
    the command cannot read as a trace (``TraceError``) and a ``context_history.json`` text not in
    the original's layout (``CorruptStoreError``).
    """


TaskFolderError = UnreadableFileError
"""Older name of :class:`UnreadableFileError` (a task folder's file)."""
TraceError = UnreadableFileError
"""Older name of :class:`UnreadableFileError` (an input that is not a trace)."""
CorruptStoreError = UnreadableFileError
"""Older name of :class:`UnreadableFileError` (a ``context_history.json`` text)."""


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


class StepError(WindowkeeperError, RuntimeError):
    """A shrink step broke its contract: an action that changed nothing, or no end to its rounds.

    It is a bug in that step, reported instead of looping forever.
    """


class ModelTableError(WindowkeeperError, ValueError):
    """A model table entry or an override that cannot be used.

    ``source`` names the file (or ``"overrides"``), ``entry`` the entry in it, e.g.
    ``models[3] ('acme-1')``; the message reads ``<source>: <entry>: <problem>``.
    """

    def __init__(self, source: str, entry: str, problem: str) -> None:
        super().__init__(f"{source}: {entry}: {problem}")
        self.source = source
        self.entry = entry
        self.problem = problem


class DistrustedUsageWarning(WindowkeeperError, UserWarning):  # noqa: N818 - a warning, not an error
    """Reported usage far from the estimate of what was sent: ignored, with its likely cause."""


class UnknownModelWarning(WindowkeeperError, UserWarning):  # noqa: N818 - a warning, not an error
    """:func:`~windowkeeper.model_window` was given a model id no table knows; 128 000 tokens are
    assumed."""


class PlotUnavailableError(WindowkeeperError, ImportError):
    """Matplotlib is not installed."""


class StorageError(WindowkeeperError, OSError):
    """A backend could not read or write what a session persists; nothing half-written stays."""


class ConcurrentUpdateError(WindowkeeperError):
    """Another writer committed to the task since this session read it; nothing was written.

    ``task`` names the task (a folder or a task id), ``expected`` the version this session built
    on and ``found`` the version the backend holds. Reload (``ContextSession.reload()``) or reopen
    the task to continue from its state: until then the store, and the session that got this
    error, refuse every further commit.

    ``extended`` is True when the only change is that another program (Cline) appended messages
    to the history file and left the messages this writer knew as they were: a session then
    takes them in and applies its change after them.
    """

    def __init__(
        self, task: str, expected: int, found: int, *, detail: str = "", extended: bool = False
    ) -> None:
        what = detail or f"another writer committed (version {found}) since this session read"
        if not detail:
            what += f" version {expected}"
        super().__init__(f"{task}: {what}; nothing was written (reload the task to continue)")
        self.task = task
        self.expected = expected
        self.found = found
        self.extended = extended
