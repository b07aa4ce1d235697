"""Known models' context windows, found from the model ids agents actually send.

The table ships in the package as ``data/models.json``: for each model its canonical id,
provider, ``context_window``, ``max_output_tokens``, an optional ``max_input_tokens`` (when the
vendor caps input separately, as OpenAI does for GPT-5: 272 000 of its 400 000), aliases, the
vendor page the numbers come from and whether they were confirmed there. Each provider names
its sources and the date the numbers were taken.

A model id is matched case-insensitively. When it is not a known id or alias, the decorations
routers and clouds add are peeled off one at a time, and the first form the table knows wins:

- route prefixes: ``anthropic/``, ``openrouter/anthropic/``, ``models/``, Bedrock ARNs;
- provider prefixes as frameworks write them: ``anthropic:``, ``openai:``, ``google-gla:``;
- Bedrock region and vendor prefixes: ``us.anthropic.``, ``global.anthropic.``, ``openai.``;
- tags and versions: ``:0``, ``-v1:0``, ``-1:0``, ``:free``, ``:thinking``, ``-v2``;
- dates: ``-20250929``, ``-2024-08-06``, ``@20250929`` (so a dated snapshot falls back to its
  undated alias unless the table lists the snapshot itself), and ``-latest``.

Nothing else is guessed: ``claude-opus-4-7`` is unknown rather than taken for Claude Opus 4.

User numbers win over the table. ``overrides`` maps a model id (any spelling the lookup
understands) to a :class:`ModelInfo` or to a dict of the JSON entry's fields; a dict is laid over
the table's entry for that model, so ``{"claude-sonnet-4-5": {"context_window": 1_000_000}}``
enables the 1M beta and keeps the rest. :func:`load_model_table` reads a JSON file of the same
schema into such a mapping.

An unknown model gets the original's default window of 128 000 tokens from :func:`model_window`,
with an :class:`UnknownModelWarning` (a ``UserWarning``) naming the id, so a misspelt model is
seen but nothing breaks; filter the category to silence it.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Mapping
from functools import cache
from os import PathLike
from pathlib import Path

from .._errors import ModelTableError, UnknownModelWarning
from .._record import record, replace
from ..core._window import DEFAULT_CONTEXT_WINDOW, ContextWindowInfo, context_window_info

__all__ = [
    "ModelInfo",
    "ModelTableError",
    "UnknownModelWarning",
    "load_model_table",
    "lookup_model",
    "model_window",
]


@record(frozen=True, slots=True)
class ModelInfo:
    """A model's limits and where they were read.

    ``source`` is the vendor page for the shipped table, the file for :func:`load_model_table`
    and ``"override"`` for a dict override.
    """

    id: str
    provider: str
    context_window: int
    max_output_tokens: int
    source: str
    max_input_tokens: int | None = None

    @property
    def input_limit(self) -> int:
        """The most tokens a request may carry: the window, or the separate input cap if smaller."""
        if self.max_input_tokens is None:
            return self.context_window
        return min(self.max_input_tokens, self.context_window)


# -- matching model ids ----------------------------------------------------------------------

# Each rewrite peels one decoration; candidates are tried with the fewest rewrites first.
_REWRITES = (
    r"^[^/]+/(?P<rest>.+)$",  # route prefixes: anthropic/, openrouter/..., models/
    r"^[a-z][a-z0-9_-]{0,30}:(?P<rest>[a-z].+)$",  # provider prefixes: anthropic:, google-gla:
    (  # Bedrock: us.anthropic., global.anthropic., openai., qwen.
        r"^(?:[a-z]{2,6}\.)?"
        r"(?:anthropic|openai|google|mistral|deepseek|qwen|xai|x-ai|meta|amazon|alibaba)\."
        r"(?P<rest>.+)$"
    ),
    r"^(?P<rest>.+)@[^@]*$",  # Vertex: @20250929, @001
    r"^(?P<rest>.+):[^:]*$",  # tags: :0, :free, :thinking
    r"^(?P<rest>.+)-v?\d+:\d+$",  # Bedrock versions: -v1:0, -1:0
    r"^(?P<rest>.+)-v\d+$",  # a Bedrock version left after its tag went: -v2
    r"^(?P<rest>.+)-(?:\d{8}|\d{4}-\d{2}-\d{2})$",  # dates
    r"^(?P<rest>.+)-latest$",
)


@cache
def _rewrites() -> tuple[re.Pattern[str], ...]:
    """The rewrites compiled, on the first lookup (importing windowkeeper compiles none)."""
    return tuple(re.compile(pattern) for pattern in _REWRITES)


_MAX_CANDIDATES = 64


def _candidates(model_id: str) -> tuple[str, ...]:
    """``model_id`` lowercased, then every form left by peeling decorations, fewest peels first."""
    first = model_id.strip().lower()
    if not first:
        return ()
    found = [first]
    position = 0
    while position < len(found) and len(found) < _MAX_CANDIDATES:
        current = found[position]
        position += 1
        for pattern in _rewrites():
            match = pattern.match(current)
            if match is not None and match["rest"] not in found:
                found.append(match["rest"])
    return tuple(found)


# -- reading tables --------------------------------------------------------------------------

_ENTRY_FIELDS = frozenset(
    {
        "id",
        "provider",
        "context_window",
        "max_output_tokens",
        "max_input_tokens",
        "aliases",
        "verified",
        "source",
        "note",
    }
)
_OVERRIDE_FIELDS = _ENTRY_FIELDS - {"aliases"}


# The internal records below are plain classes, not dataclasses: making a dataclass costs
# about a millisecond of start-up, and nothing compares or prints these.


class _Table:
    """Models by canonical id (lowercase) and every id and alias mapped to its canonical id."""

    __slots__ = ("index", "models")

    def __init__(self) -> None:
        self.models: dict[str, ModelInfo] = {}
        self.index: dict[str, str] = {}

    def resolve(self, candidates: tuple[str, ...]) -> str | None:
        for candidate in candidates:
            canonical = self.index.get(candidate)
            if canonical is not None:
                return canonical
        return None


class _Fail:
    """Makes the :class:`ModelTableError` for one entry."""

    def __init__(self, source: str, entry: str) -> None:
        self.source = source
        self.entry = entry

    def __call__(self, problem: str) -> ModelTableError:
        return ModelTableError(self.source, self.entry, problem)


def _text(entry: Mapping[str, object], key: str, fail: _Fail) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise fail(f"{key} must be a non-empty string, not {value!r}")
    return value.strip()


def _count(entry: Mapping[str, object], key: str, fail: _Fail) -> int:
    value = entry.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise fail(f"{key} must be a positive integer, not {value!r}")
    return value


def _check_limits(context: int, output: int, max_input: int | None, fail: _Fail) -> None:
    if output > context:
        raise fail(f"max_output_tokens ({output}) exceeds context_window ({context})")
    if max_input is not None and max_input > context:
        raise fail(f"max_input_tokens ({max_input}) exceeds context_window ({context})")


def _parse_entry(raw: object, fail: _Fail, file_source: str | None) -> tuple[ModelInfo, list[str]]:
    if not isinstance(raw, Mapping):
        raise fail("must be an object")
    unknown = sorted(set(raw) - _ENTRY_FIELDS)
    if unknown:
        raise fail(f"unknown field(s) {', '.join(unknown)}")
    model_id = _text(raw, "id", fail)
    fail.entry = f"{fail.entry} ({model_id!r})"
    provider = _text(raw, "provider", fail)
    context = _count(raw, "context_window", fail)
    output = _count(raw, "max_output_tokens", fail)
    max_input = _count(raw, "max_input_tokens", fail) if "max_input_tokens" in raw else None
    _check_limits(context, output, max_input, fail)
    aliases = raw.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) and a.strip() for a in aliases):
        raise fail("aliases must be a list of non-empty strings")
    if "verified" in raw and not isinstance(raw["verified"], bool):
        raise fail("verified must be true or false")
    if "note" in raw and not isinstance(raw["note"], str):
        raise fail("note must be a string")
    source = _text(raw, "source", fail) if file_source is None or "source" in raw else file_source
    info = ModelInfo(
        id=model_id,
        provider=provider,
        context_window=context,
        max_output_tokens=output,
        source=file_source or source,
        max_input_tokens=max_input,
    )
    return info, [model_id, *aliases]


def _parse_table(data: object, where: str, file_source: str | None) -> _Table:
    """Check a table's JSON and index it; ``file_source`` (if given) becomes every entry's source."""
    if not isinstance(data, Mapping):
        raise ModelTableError(where, "(top level)", "must be an object with a 'models' list")
    providers = data.get("providers", {})
    if not isinstance(providers, Mapping) or not all(
        isinstance(value, Mapping) for value in providers.values()
    ):
        raise ModelTableError(where, "providers", "must be an object of objects")
    entries = data.get("models")
    if not isinstance(entries, list):
        raise ModelTableError(where, "models", "must be a list")
    table = _Table()
    for position, raw in enumerate(entries):
        fail = _Fail(where, f"models[{position}]")
        info, names = _parse_entry(raw, fail, file_source)
        canonical = info.id.lower()
        if canonical in table.models:
            raise fail(f"id {info.id!r} appears twice")
        table.models[canonical] = info
        for name in names:
            key = name.strip().lower()
            owner = table.index.get(key)
            if owner is not None and owner != canonical:
                raise fail(f"{name!r} already names {table.models[owner].id!r}")
            table.index[key] = canonical
    return table


@cache
def _builtin() -> _Table:
    """The shipped table, read and checked on the first lookup rather than at import.

    The file is read beside the package; only a package that is not in a folder (a zip) is read
    through ``importlib.resources``, whose import costs more than reading the table.
    """
    try:
        text = (Path(__file__).parent.parent / "data" / "models.json").read_text("utf-8")
    except OSError:
        from importlib import resources  # noqa: PLC0415 - a zipped package's

        text = resources.files("windowkeeper").joinpath("data", "models.json").read_text("utf-8")
    return _parse_table(json.loads(text), "windowkeeper/data/models.json", None)


def load_model_table(path: str | PathLike[str]) -> dict[str, ModelInfo]:
    """Read a JSON model table of the shipped schema, for ``overrides=``.

    The file holds ``{"models": [{"id", "provider", "context_window", "max_output_tokens",
    "aliases"?, "max_input_tokens"?, ...}, ...]}``. The result maps every id and alias
    (lowercased) to its :class:`ModelInfo`, whose ``source`` is the file. Raises
    :class:`ModelTableError` naming the file and the entry when the file cannot be read or an
    entry is malformed (missing or non-positive numbers, output above the window, an alias
    naming two models, an unknown field).
    """
    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ModelTableError(where, "(file)", f"cannot be read: {error}") from error
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        entry = f"line {error.lineno} column {error.colno}"
        raise ModelTableError(where, entry, f"not JSON: {error.msg}") from error
    table = _parse_table(data, where, where)
    return {key: table.models[canonical] for key, canonical in table.index.items()}


# -- overrides -------------------------------------------------------------------------------


class _Overrides:
    """Overrides by lowercased key, and by the canonical id of the shipped model they override."""

    __slots__ = ("by_key", "by_model")

    def __init__(self, by_key: dict[str, ModelInfo], by_model: dict[str, ModelInfo]) -> None:
        self.by_key = by_key
        self.by_model = by_model  # the shipped model's canonical id -> the first override for it


def _check_info(info: ModelInfo, fail: _Fail) -> None:
    limits = {"context_window": info.context_window, "max_output_tokens": info.max_output_tokens}
    if info.max_input_tokens is not None:
        limits["max_input_tokens"] = info.max_input_tokens
    for name in limits:
        _count(limits, name, fail)
    _check_limits(info.context_window, info.max_output_tokens, info.max_input_tokens, fail)


def _override_info(key: str, value: object, base: ModelInfo | None) -> ModelInfo:
    """An override as a :class:`ModelInfo`; a dict is laid over ``base``, the shipped entry."""
    fail = _Fail("overrides", repr(key))
    if isinstance(value, ModelInfo):
        _check_info(value, fail)
        return value
    if not isinstance(value, Mapping):
        raise fail(f"must be a ModelInfo or a dict, not {type(value).__name__}")
    unknown = sorted(set(value) - _OVERRIDE_FIELDS)
    if unknown:
        raise fail(f"unknown field(s) {', '.join(unknown)}")
    context = _count(value, "context_window", fail) if "context_window" in value else None
    output = _count(value, "max_output_tokens", fail) if "max_output_tokens" in value else None
    if base is None:
        if context is None or output is None:
            raise fail(
                "context_window and max_output_tokens are required for a model the table does not know"
            )
        info = ModelInfo(key.strip(), "custom", context, output, "override")
    else:
        info = replace(base, source="override")
        if context is not None:
            # A new window replaces the shipped input cap and bounds the shipped output limit.
            info = replace(
                info,
                context_window=context,
                max_output_tokens=min(info.max_output_tokens, context),
                max_input_tokens=None,
            )
        if output is not None:
            info = replace(info, max_output_tokens=output)
    if "max_input_tokens" in value:
        info = replace(info, max_input_tokens=_count(value, "max_input_tokens", fail))
    if "id" in value:
        info = replace(info, id=_text(value, "id", fail))
    if "provider" in value:
        info = replace(info, provider=_text(value, "provider", fail))
    if "source" in value:
        info = replace(info, source=_text(value, "source", fail))
    _check_info(info, fail)
    return info


def _overrides(overrides: Mapping[str, ModelInfo | Mapping[str, object]]) -> _Overrides:
    builtin = _builtin()
    by_key: dict[str, ModelInfo] = {}
    by_model: dict[str, ModelInfo] = {}
    for key, value in overrides.items():
        if not isinstance(key, str) or not key.strip():
            raise ModelTableError("overrides", repr(key), "keys must be non-empty model ids")
        canonical = builtin.resolve(_candidates(key))
        base = None if canonical is None else builtin.models[canonical]
        info = _override_info(key, value, base)
        by_key.setdefault(key.strip().lower(), info)
        if canonical is not None:
            by_model.setdefault(canonical, info)
    return _Overrides(by_key, by_model)


# -- the public lookups ----------------------------------------------------------------------


def lookup_model(
    model_id: str, *, overrides: Mapping[str, ModelInfo | Mapping[str, object]] | None = None
) -> ModelInfo | None:
    """The limits of ``model_id``, or None when neither ``overrides`` nor the table knows it.

    An override applies to every spelling that reaches its key or the same shipped model: an
    override for ``claude-4.5-sonnet`` also answers ``us.anthropic.claude-sonnet-4-5-20250929-v1:0``.
    Raises :class:`ModelTableError` for a malformed override.
    """
    candidates = _candidates(model_id)
    builtin = _builtin()
    canonical = builtin.resolve(candidates)
    if overrides:
        user = _overrides(overrides)
        for candidate in candidates:
            if candidate in user.by_key:
                return user.by_key[candidate]
        if canonical is not None and canonical in user.by_model:
            return user.by_model[canonical]
    return None if canonical is None else builtin.models[canonical]


def warn_no_window() -> None:
    """Warn that a session was given neither a model nor a window (128 000 tokens assumed)."""
    warnings.warn(
        f"no model and no context_window given: assuming a {DEFAULT_CONTEXT_WINDOW:,}-token"
        " window; pass context_window=<tokens> or model=<id>",
        UnknownModelWarning,
        stacklevel=3,
    )


def model_window(
    model_id: str, *, overrides: Mapping[str, ModelInfo | Mapping[str, object]] | None = None
) -> ContextWindowInfo:
    """The :class:`ContextWindowInfo` for ``model_id``, from its :attr:`ModelInfo.input_limit`.

    An unknown model gets the original's default of 128 000 tokens and an
    :class:`UnknownModelWarning` naming it.
    """
    info = lookup_model(model_id, overrides=overrides)
    if info is None:
        warnings.warn(
            f"unknown model {model_id!r}: assuming a {DEFAULT_CONTEXT_WINDOW:,}-token context"
            " window; give the window in tokens instead: context_window= (ContextSession and"
            " every adapter take it), or model_window(model, overrides=...)",
            UnknownModelWarning,
            stacklevel=2,
        )
        return context_window_info(None)
    return context_window_info(info.input_limit)
