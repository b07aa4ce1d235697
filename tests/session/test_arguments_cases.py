"""What a ContextSession refuses and accepts, argument by argument, at each bound: the window,
counts, shares, the system prompt and tools of ``prepare``, steps, ``summarize`` and storage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from windowkeeper import ConfigurationError, ContextSession, MalformedMessageError
from windowkeeper.session.steps import HideOldTurns, SummarizeTurns, default_steps

from ..builders import T, U

WINDOW = 100_000


class _Named:
    """A step in all but its name, which is not a string."""

    name = 5
    repeats = False

    def apply(self, draft: Any) -> Any:
        return None


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"model": 5}, "model must be a model id string, got int"),
        (
            {"context_window": True},
            "context_window must be an int or a ContextWindowInfo, got bool",
        ),
        (
            {"context_window": 2.5},
            "context_window must be an int or a ContextWindowInfo, got float",
        ),
        ({"context_window": 0}, "context_window must be a positive number of tokens, got 0"),
        ({"max_output_tokens": -1}, "max_output_tokens must be a non-negative int, got -1"),
        ({"max_output_tokens": True}, "max_output_tokens must be a non-negative int, got True"),
        ({"max_output_tokens": "3"}, "max_output_tokens must be a non-negative int, got '3'"),
        ({"shrink_target": 0}, r"shrink_target must be in \(0, 1\], got 0"),
        ({"shrink_target": 1.5}, r"shrink_target must be in \(0, 1\], got 1.5"),
        ({"shrink_target": True}, r"shrink_target must be in \(0, 1\], got True"),
        ({"shrink_target": "0.5"}, r"shrink_target must be in \(0, 1\], got '0.5'"),
        ({"steps": "abc"}, "steps must be a list of steps, got str"),
        ({"steps": {}}, "steps must be a list of steps, got dict"),
        ({"steps": [object()]}, r"steps\[0\] must be a step .* got object"),
        ({"steps": [_Named()]}, r"steps\[0\] must be a step .* got _Named"),
        ({"steps": [], "summarize": True}, "give steps or summarize, not both"),
        ({"steps": [], "mask_keep_recent": 3}, "mask_keep_recent plays no part with steps="),
        (
            {"steps": [SummarizeTurns(None), SummarizeTurns(None)]},
            "steps hold more than one SummarizeTurns step",
        ),
        ({"summarize": True, "in_band_at": 0.9}, "in_band_at plays no part without"),
        ({"summarize": lambda request: "s", "in_band_at": 0.9}, "in_band_at plays no part"),
        ({"summarize": "yes"}, "summarize must be True, False, 'in-band' or a summarizer"),
        ({"store": object()}, "store must be a SessionStore"),
    ],
)
def test_refused(arguments: dict[str, Any], error: str) -> None:
    """Each bad argument is refused with a ConfigurationError naming it and what it got."""
    arguments = {"context_window": WINDOW, **arguments}
    with pytest.raises(ConfigurationError, match=error):
        ContextSession(**arguments)


@pytest.mark.parametrize(
    "arguments",
    [
        {"context_window": 1},  # the smallest window
        {"max_output_tokens": 0},
        {"shrink_target": 1},  # the top of (0, 1]
        {"max_result_share": 1.0},
        {"mask_keep_recent": 0},
        {"steps": default_steps()},
        {"steps": [HideOldTurns(), SummarizeTurns(None)]},  # one summarize step
        {"summarize": True, "keep_recent_tokens": 100},
        {"summarize": "in-band", "in_band_at": 0.9},
        {"summarize": lambda request: "s"},
    ],
)
def test_accepted(arguments: dict[str, Any]) -> None:
    """The values at each bound, and the combinations that play together, are taken."""
    arguments = {"context_window": WINDOW, **arguments}
    ContextSession(**arguments).extend([U("task")])


def test_a_model_id_picks_the_window() -> None:
    """A model id string is looked up."""
    session = ContextSession(model="claude-sonnet-4-5")
    assert session.window.context_window == 200_000


def test_a_task_folder_is_a_store(tmp_path: Path) -> None:
    """A task folder alone is taken, and what is appended is there when it is opened again."""
    ContextSession(WINDOW, task_dir=tmp_path).extend([U("task")])
    assert ContextSession(WINDOW, task_dir=tmp_path).history == [U("task")]


@pytest.mark.parametrize(
    ("system", "error"),
    [
        (5, "system: expected a string or a list of text blocks, got int"),
        (b"x", "system: expected a string or a list of text blocks, got bytes"),
        (["x"], r"system\[0\]: expected a text block"),
        ([{"type": "image"}], r"system\[0\]: expected a text block"),
        ([{"type": "text", "text": 5}], r"system\[0\]\.text: expected a string"),
    ],
)
def test_a_bad_system_prompt(system: Any, error: str) -> None:
    """A system prompt that is not a string or a list of text blocks, naming the bad block."""
    session = ContextSession(WINDOW)
    session.extend([U("task")])
    with pytest.raises(MalformedMessageError, match=error):
        session.prepare(system=system)


@pytest.mark.parametrize("tools", ["abc", {"name": "f"}, 5, [{"name": "f"}, "g"]])
def test_bad_tools(tools: Any) -> None:
    """Tools must be a list of definition dicts: not a string, a dict, a number, nor a list
    holding anything else."""
    session = ContextSession(WINDOW)
    session.extend([U("task")])
    with pytest.raises(ConfigurationError, match="tools must be a list of tool definition dicts"):
        session.prepare(tools=tools)


def test_a_good_system_prompt_and_tools() -> None:
    """A list of text blocks and a list of tool dicts are taken."""
    session = ContextSession(WINDOW)
    session.extend([U("task")])
    prepared = session.prepare(system=[T("You code.")], tools=[{"name": "f", "input_schema": {}}])
    assert prepared.messages == [U("task")]
