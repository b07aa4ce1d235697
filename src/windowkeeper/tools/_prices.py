"""What a request costs: a price model per million tokens, by name or written out.

A report bills each request as a prompt cache bills it: the leading messages it shares with the
previous request are read from the cache, the rest of its input is written to it (Cline marks
the newest user messages as cache breakpoints), and its answer is output. :class:`PriceModel`
holds the four prices; :data:`PRICE_MODELS` names a few published list prices (USD per million
tokens, five-minute cache writes), and :func:`price_model` reads either a name or the written-out
form ``input=3,output=15,cache-read=0.3,cache-write=3.75``. A price left out of the written-out
form is the input price: a provider without prompt caching bills every input token alike.

Nothing here prints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._errors import ConfigurationError

__all__ = ["PRICE_MODELS", "PriceModel", "price_model"]


@dataclass(frozen=True, slots=True)
class PriceModel:
    """Prices per million tokens: uncached input, output, cache reads and cache writes.

    The default, ``"relative"``, is in units of the input price with the ratios Anthropic
    publishes (output 5x, cache reads 0.1x, five-minute cache writes 1.25x).
    """

    name: str = "relative"
    input: float = 1.0
    output: float = 5.0
    cache_read: float = 0.1
    cache_write: float = 1.25

    def __post_init__(self) -> None:
        for field in ("input", "output", "cache_read", "cache_write"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigurationError(f"price {field}: {value!r} is not a number")
            if not math.isfinite(value) or value < 0:
                raise ConfigurationError(f"price {field}: {value!r} is not a finite price >= 0")

    def cost(self, *, cache_read: int, cache_write: int, output: int) -> float:
        """What these token counts cost."""
        billed = (
            self.cache_read * cache_read + self.cache_write * cache_write + self.output * output
        )
        return billed / 1_000_000

    def describe(self) -> str:
        """One line for the report: the name and the four prices."""
        return (
            f"{self.name}: per million tokens, input {self.input:g}, output {self.output:g},"
            f" cache read {self.cache_read:g}, cache write {self.cache_write:g}"
        )


PRICE_MODELS: dict[str, PriceModel] = {
    model.name: model
    for model in (
        PriceModel(),
        # Anthropic's list prices in USD (five-minute cache writes).
        PriceModel("claude-sonnet-4", 3.0, 15.0, 0.30, 3.75),
        PriceModel("claude-opus-4.5", 5.0, 25.0, 0.50, 6.25),
        PriceModel("claude-haiku-4.5", 1.0, 5.0, 0.10, 1.25),
    )
}
"""Price models by name (``--price NAME``)."""

_KEYS = {
    "input": "input",
    "output": "output",
    "cache-read": "cache_read",
    "cache-write": "cache_write",
}


def price_model(text: str) -> PriceModel:
    """A model of :data:`PRICE_MODELS` by name, or the prices written out as ``key=value,...``.

    Keys are ``input`` and ``output`` (both needed), ``cache-read`` and ``cache-write``
    (default: the input price). Raises :class:`~windowkeeper.ConfigurationError` naming what is
    wrong: an unknown name or key, a key given twice, a value that is not a price.
    """
    text = text.strip()
    if "=" not in text:
        if text in PRICE_MODELS:
            return PRICE_MODELS[text]
        known = ", ".join(sorted(PRICE_MODELS))
        raise ConfigurationError(
            f"unknown price model {text!r}: use one of {known}, or write the prices out as"
            " input=N,output=N[,cache-read=N,cache-write=N] (per million tokens)"
        )
    found: dict[str, float] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in _KEYS:
            raise ConfigurationError(
                f"price {part.strip()!r}: expected one of {', '.join(_KEYS)} as key=value"
            )
        if key in found:
            raise ConfigurationError(f"price {key!r} given twice")
        try:
            number = float(value)
        except ValueError:
            raise ConfigurationError(f"price {key}: {value.strip()!r} is not a number") from None
        if not math.isfinite(number) or number < 0:
            raise ConfigurationError(f"price {key}: {value.strip()!r} is not a finite price >= 0")
        found[key] = number
    missing = [key for key in ("input", "output") if key not in found]
    if missing:
        raise ConfigurationError(f"prices {text!r}: {' and '.join(missing)} missing")
    return PriceModel(
        "custom",
        found["input"],
        found["output"],
        found.get("cache-read", found["input"]),
        found.get("cache-write", found["input"]),
    )
