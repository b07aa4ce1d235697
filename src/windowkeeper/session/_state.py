"""The session's decisions as one frozen value, and the one codec that persists it.

Everything a :class:`~windowkeeper.ContextSession` decides about a history (the hidden range, the
usage it acts on, the clips, a fold and the counters that keep compaction from thrashing) is a
:class:`SessionState`. A commit writes it, a load reads it, a checkpoint holds it and a rollback
restores it, all through :func:`state_to_json` and :func:`state_from_json`: a new field is added
in one place. Values are frozen, so a request that fails leaves the session's value untouched.
"""

from __future__ import annotations

from typing import Any

from .._errors import TaskFolderError
from .._record import field, record, replace
from ..core._truncation import DeletedRange
from ..core._usage import TokenUsage
from ._clipping import Clip

__all__ = [
    "STATE_VERSION",
    "CompactionState",
    "Fold",
    "SessionState",
    "cut_state",
    "state_from_json",
    "state_to_json",
]

STATE_VERSION = 2  # 1: windowkeeper 0.1 (compaction keys only once a fold existed)
_MAX_INT = 10**15  # larger values are no count or clock a session writes


@record(frozen=True, slots=True)
class Fold:
    """Turns up to ``end`` (inclusive) replaced by ``text``, sent right after messages 0-1.

    ``summary`` is the model's summary the text carries (None: ledger only), kept as data so a
    later fold can reuse it without parsing the text back. An empty ``text`` is a fold whose
    continuation gave way (it could not fit): the turns stay hidden and nothing is sent for them.
    """

    end: int
    text: str
    summary: str | None = None

    @property
    def continuation(self) -> str | None:
        """The text sent after messages 0-1, or None when it gave way."""
        return self.text or None


@record(frozen=True, slots=True)
class CompactionState:
    """What compaction decided: the fold, its counters, an in-band ask and the replies it took.

    ``folded_at`` is the request (counted by :attr:`SessionState.requests`) that made the last
    fold, None before the first; ``paused_at`` the history length when summarizing paused after
    folds that freed little (None: not paused); ``pending`` an in-band ask, as (fold point,
    history length when asked); ``excluded`` the history indices of summary replies, never sent
    again; ``declined`` the in-band asks in a row answered by something other than a summary.
    """

    fold: Fold | None = None
    folds: int = 0
    poor_folds: int = 0
    folded_at: int | None = None
    paused_at: int | None = None
    pending: tuple[int, int] | None = None
    excluded: tuple[int, ...] = ()
    declined: int = 0


@record(frozen=True, slots=True)
class SessionState:
    """The session's decisions about its history (see the module docstring).

    ``generation`` grows whenever the hidden range grows, so usage reported for an older
    request (``usage_generation`` below it) is known to be stale; ``last_timestamp`` keeps the
    session's clock strictly increasing; ``requests`` counts the requests prepared.
    """

    deleted_range: DeletedRange | None = None
    generation: int = 0
    last_timestamp: int = 0
    usage: TokenUsage | None = None
    usage_timestamp: int = 0
    usage_generation: int = -1
    clips: tuple[Clip, ...] = ()
    requests: int = 0
    compaction: CompactionState = field(default_factory=CompactionState)

    def hiding(self, deleted_range: DeletedRange | None) -> SessionState:
        """This state with ``deleted_range`` hidden: usage reported before it becomes stale."""
        return replace(self, deleted_range=deleted_range, generation=self.generation + 1)

    def with_compaction(self, **changes: Any) -> SessionState:
        """This state with the compaction fields ``changes`` changed."""
        return replace(self, compaction=replace(self.compaction, **changes))


def cut_state(state: SessionState, kept: int) -> SessionState:
    """``state`` for the history cut to its first ``kept`` messages: decisions past it dropped.

    The hidden range loses its part past the cut (it must leave the last message visible, and
    its end keeps its parity, so a range of whole turns stays one), a
    fold that reached past it goes (its text describes turns that are gone), the usage is
    dropped (it described a longer request) and the generation moves on.
    """
    deleted = state.deleted_range
    if deleted is not None and deleted[1] >= kept - 1:
        # the end keeps its parity: a range of whole pairs stays one (no call left unanswered)
        end = kept - 2 - (deleted[1] - kept) % 2
        deleted = (deleted[0], end) if end >= deleted[0] else None
    compaction = state.compaction
    fold = compaction.fold
    if fold is not None and (deleted is None or fold.end > deleted[1]):
        fold = None
    pending = compaction.pending
    if pending is not None and pending[1] >= kept:
        pending = None
    return replace(
        state,
        deleted_range=deleted,
        generation=state.generation + 1,
        usage=None,
        clips=tuple(clip for clip in state.clips if clip.message_index < kept),
        compaction=replace(
            compaction,
            fold=fold,
            pending=pending,
            excluded=tuple(index for index in compaction.excluded if index < kept),
        ),
    )


# -- the codec ---------------------------------------------------------------------------


def state_to_json(state: SessionState, history_length: int) -> dict[str, Any]:
    """``state`` as the backends keep it (a JSON object), for a history of that length."""
    usage = state.usage
    compaction = state.compaction
    fold = compaction.fold
    return {
        "version": STATE_VERSION,
        "history_length": history_length,
        "deleted_range": list(state.deleted_range) if state.deleted_range else None,
        "generation": state.generation,
        "last_timestamp": state.last_timestamp,
        "usage": None
        if usage is None
        else [usage.tokens_in, usage.tokens_out, usage.cache_writes, usage.cache_reads],
        "usage_timestamp": state.usage_timestamp,
        "usage_generation": state.usage_generation,
        "clips": [[c.message_index, c.block_index, c.kept] for c in state.clips],
        "requests": state.requests,
        "compaction": {
            "fold": None
            if fold is None
            else {"end": fold.end, "text": fold.text, "summary": fold.summary},
            "folds": compaction.folds,
            "poor_folds": compaction.poor_folds,
            "folded_at": compaction.folded_at,
            "paused_at": compaction.paused_at,
            "pending": list(compaction.pending) if compaction.pending is not None else None,
            "excluded": list(compaction.excluded),
            "declined": compaction.declined,
        },
    }


def state_from_json(value: Any, where: str, history_length: int) -> SessionState:
    """The state ``value`` (this version or windowkeeper 0.1's), checked against a history of
    ``history_length`` messages; :class:`TaskFolderError` naming ``where`` when it is unreadable."""
    try:
        return _read(value, history_length)
    except ValueError as error:
        raise TaskFolderError(f"{where}: unreadable session state: {error}") from None


def _read(value: Any, history_length: int) -> SessionState:
    if not isinstance(value, dict):
        raise ValueError(f"expected an object, got {type(value).__name__}")
    version = value.get("version", 1)
    if version not in (1, STATE_VERSION):
        raise ValueError(f"version {version!r} is not one this release reads (1 or 2)")
    usage = value.get("usage")
    if usage is not None and (not isinstance(usage, list) or len(usage) != 4):
        raise ValueError("usage must be null or four counts")
    deleted_range = _range(value.get("deleted_range"), history_length)
    clips = []
    for position, clip in enumerate(_list(value.get("clips", []), "clips")):
        if not isinstance(clip, list) or len(clip) != 3:
            raise ValueError(f"clips[{position}] must be three integers")
        index, block, kept = (_int(v, f"clips[{position}]") for v in clip)
        if index < history_length:  # a clip of a message that is gone applies to nothing
            clips.append(Clip(index, block, kept))
    if version == 1:
        compaction = _compaction_v1(value, deleted_range)
        requests = _int(value.get("requests", 0), "requests")
    else:
        compaction = _compaction(value.get("compaction"), deleted_range)
        requests = _int(value.get("requests"), "requests")
    return SessionState(
        deleted_range=deleted_range,
        generation=_int(value.get("generation"), "generation"),
        last_timestamp=_int(value.get("last_timestamp"), "last_timestamp"),
        usage=TokenUsage(*(_int(v, "usage") for v in usage)) if usage else None,
        usage_timestamp=_int(value.get("usage_timestamp"), "usage_timestamp"),
        usage_generation=_int(value.get("usage_generation"), "usage_generation", minimum=-1),
        clips=tuple(clips),
        requests=requests,
        compaction=compaction,
    )


def _range(value: Any, history_length: int) -> DeletedRange | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != 2:
        raise ValueError("deleted_range must be null or two indices")
    deleted_range = (
        _int(value[0], "deleted_range[0]"),
        _int(value[1], "deleted_range[1]", minimum=-1),  # (2, -1) is the empty range the core makes
    )
    if deleted_range[1] >= history_length:
        raise ValueError(
            f"deleted_range {list(deleted_range)} reaches past the history's"
            f" {history_length} messages"
        )
    if deleted_range[1] == history_length - 1:  # every request would leave the newest out
        raise ValueError(
            f"deleted_range {list(deleted_range)} would hide the last message of the history's"
            f" {history_length}"
        )
    return deleted_range


def _compaction(value: Any, deleted_range: DeletedRange | None) -> CompactionState:
    if not isinstance(value, dict):
        raise ValueError(f"compaction must be an object, got {type(value).__name__}")
    raw = value.get("fold")
    fold = None
    if raw is not None:
        if not isinstance(raw, dict):
            raise ValueError("compaction.fold must be null or an object")
        summary = raw.get("summary")
        if not isinstance(raw.get("text"), str) or not (
            summary is None or isinstance(summary, str)
        ):
            raise ValueError("compaction.fold must carry a text and a summary (a string or null)")
        fold = Fold(_fold_end(raw.get("end"), deleted_range), raw["text"], summary)
    return CompactionState(
        fold=fold,
        folds=_int(value.get("folds"), "compaction.folds"),
        poor_folds=_int(value.get("poor_folds"), "compaction.poor_folds"),
        folded_at=_optional_int(value.get("folded_at"), "compaction.folded_at"),
        paused_at=_optional_int(value.get("paused_at"), "compaction.paused_at"),
        pending=_pending(value.get("pending")),
        excluded=tuple(
            _int(index, "compaction.excluded")
            for index in _list(value.get("excluded"), "compaction.excluded")
        ),
        declined=_int(value.get("declined", 0), "compaction.declined"),
    )


def _compaction_v1(value: dict[str, Any], deleted_range: DeletedRange | None) -> CompactionState:
    """Windowkeeper 0.1's compaction keys: present only once a fold or an ask existed."""
    raw = value.get("folded")
    fold = None
    if raw is not None:
        if not isinstance(raw, list) or len(raw) != 2 or not isinstance(raw[1], str):
            raise ValueError("folded must be null or a range end inside deleted_range and a text")
        from ._summary import summary_of  # noqa: PLC0415 - the one reader of 0.1's continuations

        fold = Fold(_fold_end(raw[0], deleted_range), raw[1], summary_of(raw[1]))
    folded_at = _int(value.get("folded_at", -1), "folded_at", minimum=-1)
    return CompactionState(
        fold=fold,
        folds=_int(value.get("folds", 0), "folds"),
        poor_folds=_int(value.get("poor_folds", 0), "poor_folds"),
        folded_at=None if folded_at < 0 else folded_at,
        pending=_pending(value.get("pending")),
        excluded=tuple(
            _int(index, "excluded") for index in _list(value.get("excluded", []), "excluded")
        ),
    )


def _fold_end(value: Any, deleted_range: DeletedRange | None) -> int:
    end = _int(value, "the fold's end")
    if deleted_range is None or end > deleted_range[1]:
        raise ValueError("folded must be null or a range end inside deleted_range and a text")
    return end


def _list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"{what}: expected a list, got {type(value).__name__}")
    return value


def _pending(value: Any) -> tuple[int, int] | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != 2:
        raise ValueError("pending must be null or two integers")
    return (_int(value[0], "pending[0]"), _int(value[1], "pending[1]"))


def _optional_int(value: Any, what: str) -> int | None:
    return None if value is None else _int(value, what)


def _int(value: Any, what: str, *, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value < _MAX_INT:
        raise ValueError(f"{what} must be an integer >= {minimum}, got {value!r:.40}")
    return value
