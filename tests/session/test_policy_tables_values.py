"""Every public value the session hands out is a frozen, slotted dataclass.

States, checkpoints, requests, actions and ledgers are values: a caller keeps many of them (a
checkpoint a turn, a request log), compares them and stores them. Slots keep each one without a
per-instance dict, and with frozen=True nothing can be attached or changed afterwards, not even
through ``object.__setattr__``.
"""

from __future__ import annotations

import dataclasses
import importlib

import pytest

from windowkeeper import ContextSession
from windowkeeper.session import Fold, SessionState


def _frozen_dataclasses() -> list[type]:
    """The frozen dataclasses among the public names of the package, the session and its steps."""
    found: set[type] = set()
    for module in ("windowkeeper", "windowkeeper.session", "windowkeeper.session.steps"):
        names = importlib.import_module(module)
        for name in names.__all__:
            value = getattr(names, name)
            frozen = getattr(getattr(value, "__dataclass_params__", None), "frozen", False)
            if isinstance(value, type) and dataclasses.is_dataclass(value) and frozen:
                found.add(value)
    return sorted(found, key=lambda cls: cls.__qualname__)


_FROZEN = _frozen_dataclasses()


def test_the_session_values_are_among_them() -> None:
    names = {cls.__name__ for cls in _FROZEN}
    assert {"SessionState", "CompactionState", "Fold", "Checkpoint", "Prepared", "Synced"} <= names
    assert {"Action", "Ledger", "SummaryRequest", "Clip", "TokenUsage"} <= names


@pytest.mark.parametrize("cls", _FROZEN, ids=lambda cls: cls.__name__)
def test_a_public_value_has_no_instance_dict(cls: type) -> None:
    assert "__slots__" in vars(cls)
    assert cls.__dictoffset__ == 0


def test_nothing_can_be_attached_to_a_state() -> None:
    for value in (SessionState(), Fold(3, "text", None)):
        with pytest.raises((AttributeError, TypeError)):
            object.__setattr__(value, "note", "kept")
        with pytest.raises(TypeError):
            vars(value)


def test_a_fresh_session_has_decided_nothing() -> None:
    """Every field of a new session's state, by name: no range, no usage, no fold, no ask."""
    state = ContextSession(10_000, clock=lambda: 5_000).state
    assert dataclasses.asdict(state) == {
        "deleted_range": None,
        "generation": 0,
        "last_timestamp": 0,
        "usage": None,
        "usage_timestamp": 0,
        "usage_generation": -1,
        "clips": (),
        "requests": 0,
        "compaction": {
            "fold": None,
            "folds": 0,
            "poor_folds": 0,
            "folded_at": None,
            "paused_at": None,
            "pending": None,
            "excluded": (),
            "declined": 0,
        },
    }
    assert state == SessionState()
