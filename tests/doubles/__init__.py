"""Strict local doubles of the Anthropic Messages and OpenAI Chat Completions APIs.

Point the real SDKs at them to test that what windowkeeper sends would be accepted::

    from tests.doubles import AnthropicDouble, CODING_TOOLS

    with AnthropicDouble(window=20_000) as api, api.client() as client:
        reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=1_000, ...)
    api.assert_no_rejections()

``api.client()`` is ``anthropic.Anthropic(base_url=api.url, api_key="test", max_retries=0)``
with strict response parsing (``api.async_client()`` the async one; the same for
``OpenAIDouble`` with ``openai``). A request the provider would refuse gets a 400 in the
provider's error format (the SDK's ``BadRequestError``) and is kept in ``api.rejections`` with
its reasons; ``api.check(body)`` lists the problems of a body without HTTP. The doubles import
nothing from windowkeeper: they judge it by the providers' rules (see each module's docstring).

Fixtures: ``make_anthropic_double`` / ``make_openai_double`` (factories taking the doubles'
keyword arguments; every double made is closed after the test) and ``anthropic_double`` /
``openai_double`` (window 200,000, the ``CodingAgent`` script). Import them into a test module
(``from tests.doubles import make_anthropic_double  # noqa: F401``, and ``# noqa: F811`` on the
test's parameter), or register this package once as a plugin, ``pytest_plugins =
["tests.doubles"]`` in ``tests/conftest.py``, to have them everywhere without imports.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ._server import (
    BYTES_PER_TOKEN,
    IMAGE_TOKENS,
    ApiDouble,
    CodingAgent,
    Exchange,
    Problem,
    Reply,
    Script,
    TokenCount,
    ToolCall,
)
from .anthropic_api import CODING_TOOLS, AnthropicDouble
from .openai_api import CODING_TOOLS as OPENAI_CODING_TOOLS
from .openai_api import OpenAIDouble

__all__ = [
    "BYTES_PER_TOKEN",
    "CODING_TOOLS",
    "IMAGE_TOKENS",
    "OPENAI_CODING_TOOLS",
    "AnthropicDouble",
    "ApiDouble",
    "CodingAgent",
    "Exchange",
    "OpenAIDouble",
    "Problem",
    "Reply",
    "Script",
    "TokenCount",
    "ToolCall",
    "anthropic_double",
    "make_anthropic_double",
    "make_openai_double",
    "openai_double",
]


def _factory(cls: Callable[..., ApiDouble]) -> Iterator[Callable[..., Any]]:
    made: list[ApiDouble] = []

    def make(**options: Any) -> Any:
        double = cls(**options)
        double.start()
        made.append(double)
        return double

    try:
        yield make
    finally:
        for double in made:
            double.close()


@pytest.fixture
def make_anthropic_double() -> Iterator[Callable[..., AnthropicDouble]]:
    """``make(window=..., script=..., ...)`` -> a running ``AnthropicDouble``."""
    yield from _factory(AnthropicDouble)


@pytest.fixture
def make_openai_double() -> Iterator[Callable[..., OpenAIDouble]]:
    """``make(window=..., script=..., ...)`` -> a running ``OpenAIDouble``."""
    yield from _factory(OpenAIDouble)


@pytest.fixture
def anthropic_double() -> Iterator[AnthropicDouble]:
    """A running ``AnthropicDouble`` with a 200,000-token window and the ``CodingAgent``."""
    with AnthropicDouble(window=200_000) as double:
        yield double


@pytest.fixture
def openai_double() -> Iterator[OpenAIDouble]:
    """A running ``OpenAIDouble`` with a 200,000-token window and the ``CodingAgent``."""
    with OpenAIDouble(window=200_000) as double:
        yield double
