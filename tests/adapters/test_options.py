"""Adapter options are checked when the adapter is made, naming the adapter and the option."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import pytest

from windowkeeper import ConfigurationError

ADAPTERS = [
    ("langchain", "WindowkeeperMiddleware"),
    ("pydantic_ai", "WindowkeeperCapability"),
    ("openai_agents", "WindowkeeperInputFilter"),
]


def adapter(module: str, name: str) -> Callable[..., Any]:
    try:
        loaded = importlib.import_module(f"windowkeeper.adapters.{module}")
    except ImportError:  # pragma: no cover - the framework is not installed
        pytest.skip(f"{module} not installed")
    made: Callable[..., Any] = getattr(loaded, name)
    return made


def make(module: str, name: str, **options: Any) -> Any:
    factory = adapter(module, name)
    if module == "pydantic_ai":  # a dataclass: session options are one field
        window = options.pop("context_window", None)
        return factory(window, session_options=options)
    return factory(**options)


@pytest.mark.parametrize(("module", "name"), ADAPTERS)
class TestAtConstruction:
    def test_a_window_given_as_text_is_refused(self, module: str, name: str) -> None:
        with pytest.raises(ConfigurationError, match=rf"^{name}: context_window .*'16k'"):
            make(module, name, context_window="16k")

    def test_a_misspelt_option_is_named(self, module: str, name: str) -> None:
        with pytest.raises(ConfigurationError, match=rf"^{name}: unknown .*mask_keep_recnt"):
            make(module, name, context_window=16_000, mask_keep_recnt=3)

    def test_a_bad_value_is_named(self, module: str, name: str) -> None:
        with pytest.raises(ConfigurationError, match=rf"^{name}: max_result_share"):
            make(module, name, context_window=16_000, max_result_share=3)

    def test_good_options_are_taken(self, module: str, name: str) -> None:
        make(module, name, context_window=16_000, mask_keep_recent=3, shrink_target=0.5)
