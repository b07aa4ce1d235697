"""The checks of what a session is given: the window, counts, the system prompt, tools, steps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._errors import ConfigurationError, MalformedMessageError
from ..core._window import ContextWindowInfo, context_window_info
from .steps import Step, default_steps

if TYPE_CHECKING:
    from ..storage import SessionStore
    from ._compaction import Compaction
    from .steps import SummarizeTurns

__all__ = [
    "backend_of",
    "check_steps",
    "check_system",
    "check_tools",
    "count_argument",
    "share",
    "shrink_steps",
    "window_of",
]


def window_of(context_window: Any, model: Any) -> ContextWindowInfo:
    """The window a session is given (tokens, a ContextWindowInfo, or looked up by model)."""
    if model is not None and not isinstance(model, str):
        raise ConfigurationError(f"model must be a model id string, got {type(model).__name__}")
    if isinstance(context_window, ContextWindowInfo):
        return context_window
    if context_window is None:
        if model is None:
            return context_window_info(None)
        from ._models import model_window  # noqa: PLC0415 - the model table waits for a model

        return model_window(model)
    if isinstance(context_window, str):
        raise ConfigurationError(
            f"context_window must be a number of tokens, got the string {context_window!r}"
            " (to look a model up, pass model=...)"
        )
    if isinstance(context_window, bool) or not isinstance(context_window, int):
        raise ConfigurationError(
            f"context_window must be an int or a ContextWindowInfo, got {type(context_window).__name__}"
        )
    if context_window <= 0:
        raise ConfigurationError(
            f"context_window must be a positive number of tokens, got {context_window}"
        )
    return context_window_info(context_window)


def count_argument(name: str, value: Any) -> int:
    """``value`` if it is a non-negative int; else a ConfigurationError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigurationError(f"{name} must be a non-negative int, got {value!r}")
    return value


def share(name: str, value: Any) -> float:
    """``value`` if it is a number in (0, 1]; else a ConfigurationError naming ``name``."""
    if isinstance(value, bool) or not (isinstance(value, int | float) and 0 < value <= 1):
        raise ConfigurationError(f"{name} must be in (0, 1], got {value!r}")
    return float(value)


def check_system(system: Any) -> Any:
    """``system`` checked: None, a string, or a sequence of text blocks (given back as a list)."""
    if system is None or isinstance(system, str):
        return system
    if isinstance(system, Sequence) and not isinstance(system, bytes):
        for position, block in enumerate(system):
            if not isinstance(block, dict) or block.get("type") != "text":
                raise MalformedMessageError(f"system[{position}]", "expected a text block")
            if not isinstance(block.get("text"), str):
                raise MalformedMessageError(f"system[{position}].text", "expected a string")
        return system if isinstance(system, list) else list(system)
    raise MalformedMessageError(
        "system", f"expected a string or a list of text blocks, got {type(system).__name__}"
    )


def check_tools(tools: Any) -> Sequence[Mapping[str, Any]] | None:
    """``tools`` checked: None or a list of tool definition dicts."""
    if tools is not None and (
        isinstance(tools, str | bytes | Mapping)
        or not isinstance(tools, Sequence)
        or not all(isinstance(tool, Mapping) for tool in tools)
    ):
        raise ConfigurationError("tools must be a list of tool definition dicts")
    return tools


def check_steps(steps: Any) -> list[Step]:
    """``steps`` checked: a list of objects with a name, ``repeats`` and ``apply(draft)``."""
    if isinstance(steps, str | bytes | Mapping) or not isinstance(steps, Sequence):
        raise ConfigurationError(f"steps must be a list of steps, got {type(steps).__name__}")
    for position, step in enumerate(steps):
        if not isinstance(step, Step) or not isinstance(step.name, str):
            raise ConfigurationError(
                f"steps[{position}] must be a step (name, repeats, apply(draft)),"
                f" got {type(step).__name__}"
            )
    return list(steps)


def shrink_steps(
    steps: Sequence[Step] | None,
    summarize: Any,
    *,
    mask_keep_recent: int | None,
    keep_recent_tokens: int | None,
    in_band_at: float | None,
    timeout: float | None,
) -> tuple[list[Step], Compaction | None]:
    """The steps a session runs and its compaction, from the constructor's arguments.

    ``summarize=`` is sugar for a :class:`SummarizeTurns` step in the default list; with
    ``steps=`` that step (at most one) is found in the list instead. Arguments that would play
    no part are refused rather than ignored.
    """
    if keep_recent_tokens is not None:
        count_argument("keep_recent_tokens", keep_recent_tokens)
    if steps is not None:
        # the imports marked PLC0415 here: compaction is loaded by the sessions that may compact
        from .steps import SummarizeTurns  # noqa: PLC0415

        if summarize is not False:
            raise ConfigurationError(
                "give steps or summarize, not both (summarize= is sugar for a SummarizeTurns step)"
            )
        if mask_keep_recent != 2:
            raise ConfigurationError(
                "mask_keep_recent plays no part with steps=: put MaskOldOutputs(keep_recent) in them"
            )
        if keep_recent_tokens is not None:
            raise ConfigurationError(
                "keep_recent_tokens plays no part with steps=: give it to SummarizeTurns"
            )
        checked = check_steps(steps)
        found = [step for step in checked if isinstance(step, SummarizeTurns)]
        if len(found) > 1:
            raise ConfigurationError("steps hold more than one SummarizeTurns step")
        step = found[0] if found else None
    else:
        step = _summarize_step(summarize, keep_recent_tokens, timeout)
        checked = default_steps(mask_keep_recent, summarize=step)
    if step is None:
        if keep_recent_tokens is not None:
            raise ConfigurationError("keep_recent_tokens plays no part without summarize=")
        if in_band_at is not None:
            raise ConfigurationError("in_band_at plays no part without summarize='in-band'")
        return checked, None
    if in_band_at is not None and not step.in_band:
        raise ConfigurationError("in_band_at plays no part without summarize='in-band'")
    at = share("in_band_at", in_band_at) if in_band_at is not None else 0.8
    from ._compaction import Compaction  # noqa: PLC0415

    return checked, Compaction(step, in_band_at=at)


def _summarize_step(
    summarize: Any, keep_recent_tokens: int | None, timeout: float | None
) -> SummarizeTurns | None:
    if summarize is False or summarize is None:
        return None
    from .steps import SummarizeTurns  # noqa: PLC0415 - see shrink_steps

    if summarize is True:
        return SummarizeTurns(None, keep_recent_tokens=keep_recent_tokens)
    if summarize == "in-band":
        return SummarizeTurns(None, keep_recent_tokens=keep_recent_tokens, in_band=True)
    if not callable(summarize):
        raise ConfigurationError(
            "summarize must be True, False, 'in-band' or a summarizer callable,"
            f" got {type(summarize).__name__}"
        )
    return SummarizeTurns(summarize, keep_recent_tokens=keep_recent_tokens, timeout=timeout)


def backend_of(task_dir: Any, store: Any) -> SessionStore | None:
    """The storage backend a session is given: a task folder, a store, or neither."""
    if task_dir is not None and store is not None:
        raise ConfigurationError("give task_dir or store, not both")
    if task_dir is None and store is None:
        return None
    from ..storage import SessionStore, TaskFolderStore  # noqa: PLC0415 - a stored session's

    backend = TaskFolderStore(task_dir) if task_dir is not None else store
    if not isinstance(backend, SessionStore):
        raise ConfigurationError(
            f"store must be a SessionStore (load, commit, close), got {type(store).__name__}"
        )
    return backend
