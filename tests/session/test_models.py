"""The shipped model table, the model-id lookup, overrides and user tables."""

from __future__ import annotations

import datetime
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import (
    ContextSession,
    ModelInfo,
    ModelTableError,
    UnknownModelWarning,
    WindowkeeperError,
    context_window_info,
    lookup_model,
    model_window,
)
from windowkeeper.session._models import load_model_table


def _shipped() -> dict[str, Any]:
    text = resources.files("windowkeeper").joinpath("data", "models.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def _resolved_id(model_id: str) -> str | None:
    info = lookup_model(model_id)
    return None if info is None else info.id


def _write_table(tmp_path: Path, models: list[dict[str, Any]]) -> Path:
    path = tmp_path / "my-models.json"
    path.write_text(json.dumps({"models": models}), encoding="utf-8")
    return path


class TestAliases:
    """Ids and aliases name their model, in any case."""

    @pytest.mark.parametrize(
        ("model_id", "expected"),
        [
            ("claude-sonnet-4-5", "claude-sonnet-4-5"),
            ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
            ("claude-4.5-sonnet", "claude-sonnet-4-5"),
            ("claude-sonnet-4.5", "claude-sonnet-4-5"),
            ("claude-opus-4-0", "claude-opus-4"),
            ("claude-3-7-sonnet-latest", "claude-3-7-sonnet"),
            ("gpt-4.1-mini", "gpt-4.1-mini"),
            ("gpt-5-codex", "gpt-5-codex"),
            ("grok-4-0709", "grok-4"),
            ("grok-4-fast-non-reasoning", "grok-4-fast"),
            ("mistral-large-2411", "mistral-large"),
            ("codestral-2508", "codestral"),
            ("devstral", "devstral-small"),
            ("qwen3-coder-480b-a35b-instruct", "qwen3-coder-480b-a35b-instruct"),
            ("gemini-2.5-pro-preview-06-05", "gemini-2.5-pro"),
        ],
    )
    def test_alias_names_its_model(self, model_id: str, expected: str) -> None:
        """A listed id or alias resolves to the model that lists it."""
        assert _resolved_id(model_id) == expected

    @pytest.mark.parametrize(
        "model_id", ["Claude-Sonnet-4-5", "CLAUDE-4.5-SONNET", "  claude-sonnet-4-5\n"]
    )
    def test_case_and_surrounding_space_are_ignored(self, model_id: str) -> None:
        """Matching is case-insensitive and ignores surrounding whitespace."""
        assert _resolved_id(model_id) == "claude-sonnet-4-5"

    def test_a_lookup_gives_the_entry_and_its_source(self) -> None:
        """The ModelInfo carries the numbers and the vendor page they were read on."""
        assert lookup_model("claude-sonnet-4-5") == ModelInfo(
            id="claude-sonnet-4-5",
            provider="anthropic",
            context_window=200_000,
            max_output_tokens=64_000,
            source="https://platform.claude.com/docs/en/models/sonnet-4-5/overview",
        )


class TestDecoratedIds:
    """Dates, route prefixes and cloud decorations fall back to the model they decorate."""

    @pytest.mark.parametrize(
        ("model_id", "expected"),
        [
            ("claude-opus-4-5-20991231", "claude-opus-4-5"),
            ("gpt-4o-2024-08-06", "gpt-4o"),
            ("o3-2025-04-16", "o3"),
            ("gpt-5-2099-01-01", "gpt-5"),
            ("claude-haiku-4-5@20251001", "claude-haiku-4-5"),
            ("gemini-2.5-flash@001", "gemini-2.5-flash"),
            ("mistral-medium-latest", "mistral-medium"),
            ("qwen-max-latest", "qwen-max"),
        ],
    )
    def test_date_and_latest_suffixes_fall_back(self, model_id: str, expected: str) -> None:
        """-YYYYMMDD, -YYYY-MM-DD, @date and -latest reach the undated model."""
        assert _resolved_id(model_id) == expected

    def test_a_listed_snapshot_beats_the_date_fallback(self) -> None:
        """gpt-4o-2024-05-13 has its own entry (4 096 output tokens), not gpt-4o's."""
        info = lookup_model("gpt-4o-2024-05-13")
        assert info is not None
        assert (info.id, info.max_output_tokens) == ("gpt-4o-2024-05-13", 4_096)

    @pytest.mark.parametrize(
        ("model_id", "expected"),
        [
            ("anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"),
            ("openrouter/anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"),
            ("anthropic/claude-3.7-sonnet:thinking", "claude-3-7-sonnet"),
            ("openai/gpt-4o-mini", "gpt-4o-mini"),
            ("models/gemini-2.5-pro", "gemini-2.5-pro"),
            ("google/gemini-2.5-flash", "gemini-2.5-flash"),
            ("deepseek/deepseek-chat", "deepseek-chat"),
            ("mistralai/codestral-2508", "codestral"),
            ("x-ai/grok-code-fast-1:free", "grok-code-fast-1"),
            ("xai/grok-4", "grok-4"),
            ("qwen/qwen3-coder", "qwen3-coder-480b-a35b-instruct"),
        ],
    )
    def test_route_prefixes_and_tags_are_stripped(self, model_id: str, expected: str) -> None:
        """provider/ and router/provider/ prefixes and :tags are peeled off."""
        assert _resolved_id(model_id) == expected

    @pytest.mark.parametrize(
        ("model_id", "expected"),
        [
            ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"),
            ("global.anthropic.claude-opus-4-5-20251101-v1:0", "claude-opus-4-5"),
            ("anthropic.claude-3-5-sonnet-20241022-v2:0", "claude-3-5-sonnet"),
            ("eu.anthropic.claude-3-7-sonnet-20250219-v1:0", "claude-3-7-sonnet"),
            (
                "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-haiku-20240307-v1:0",
                "claude-3-haiku",
            ),
            ("openai.gpt-oss-120b-1:0", "gpt-oss-120b"),
        ],
    )
    def test_bedrock_ids_are_understood(self, model_id: str, expected: str) -> None:
        """Region and vendor prefixes, -v1:0 and -1:0 version suffixes and ARNs are peeled off."""
        assert _resolved_id(model_id) == expected

    @pytest.mark.parametrize(
        "model_id", ["claude-opus-4-7", "claude-sonnet-9", "gpt-6", "my-local-llama", "o1-mini", ""]
    )
    def test_unknown_models_are_not_guessed(self, model_id: str) -> None:
        """A newer or unlisted model is unknown, never taken for an older relative."""
        assert lookup_model(model_id) is None


class TestModelWindow:
    """model_window turns a model id into the original's window and limit."""

    def test_known_model_uses_the_original_buffers(self) -> None:
        """A 200 000-token model gets the original's 160 000 limit."""
        assert model_window("claude-sonnet-4-5-20250929") == context_window_info(200_000)

    def test_separate_input_cap_bounds_the_window(self) -> None:
        """GPT-5's 400 000 window carries at most 272 000 input tokens, so 272 000 is used."""
        info = lookup_model("gpt-5")
        assert info is not None
        assert (info.context_window, info.input_limit) == (400_000, 272_000)
        assert model_window("openai/gpt-5") == context_window_info(272_000)

    def test_unknown_model_falls_back_to_128k_with_a_warning(self) -> None:
        """An unknown id gets 128 000 tokens and an UnknownModelWarning naming it."""
        with pytest.warns(UnknownModelWarning, match="acme-frontier-9"):
            info = model_window("acme-frontier-9")
        assert info == context_window_info(None)
        assert info.context_window == 128_000

    def test_the_warning_is_a_user_warning(self) -> None:
        """Callers filtering UserWarning also catch it."""
        assert issubclass(UnknownModelWarning, UserWarning)


class TestOverrides:
    """User numbers beat the shipped table."""

    def test_model_info_override_beats_the_table(self) -> None:
        """A ModelInfo override is returned as given."""
        mine = ModelInfo("claude-sonnet-4-5", "anthropic", 1_000_000, 64_000, "my notes")
        assert lookup_model("claude-sonnet-4-5", overrides={"claude-sonnet-4-5": mine}) is mine
        assert model_window("claude-sonnet-4-5", overrides={"claude-sonnet-4-5": mine}) == (
            context_window_info(1_000_000)
        )

    def test_dict_override_is_laid_over_the_shipped_entry(self) -> None:
        """A dict sets only the fields it names; the rest come from the table."""
        info = lookup_model(
            "claude-sonnet-4-5", overrides={"claude-sonnet-4-5": {"context_window": 1_000_000}}
        )
        assert info == ModelInfo("claude-sonnet-4-5", "anthropic", 1_000_000, 64_000, "override")

    def test_override_reaches_every_spelling_of_its_model(self) -> None:
        """An override keyed by one alias answers dated, prefixed and Bedrock spellings too."""
        overrides = {"claude-4.5-sonnet": {"context_window": 500_000}}
        for model_id in (
            "claude-sonnet-4-5",
            "anthropic/claude-sonnet-4.5",
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        ):
            info = lookup_model(model_id, overrides=overrides)
            assert info is not None
            assert info.context_window == 500_000, model_id

    def test_new_window_replaces_the_shipped_input_cap(self) -> None:
        """Overriding GPT-5's window drops the shipped 272 000 input cap."""
        info = lookup_model("gpt-5", overrides={"gpt-5": {"context_window": 1_000_000}})
        assert info is not None
        assert (info.input_limit, info.max_output_tokens) == (1_000_000, 128_000)

    def test_smaller_window_bounds_the_shipped_output_limit(self) -> None:
        """A window below the shipped output limit brings the output limit down with it."""
        info = lookup_model("gpt-5", overrides={"gpt-5": {"context_window": 100_000}})
        assert info is not None
        assert info.max_output_tokens == 100_000

    def test_override_adds_an_unknown_model(self) -> None:
        """A full dict makes an unknown model known, under its key."""
        overrides = {"acme/frontier-9": {"context_window": 64_000, "max_output_tokens": 8_000}}
        info = lookup_model("ACME/Frontier-9", overrides=overrides)
        assert info == ModelInfo("acme/frontier-9", "custom", 64_000, 8_000, "override")
        assert model_window("acme/frontier-9", overrides=overrides) == context_window_info(64_000)

    def test_overrides_leave_the_table_alone(self) -> None:
        """Without overrides the shipped numbers come back."""
        lookup_model(
            "claude-sonnet-4-5", overrides={"claude-sonnet-4-5": {"context_window": 9_000}}
        )
        info = lookup_model("claude-sonnet-4-5")
        assert info is not None
        assert info.context_window == 200_000

    @pytest.mark.parametrize(
        ("value", "problem"),
        [
            ({"max_output_tokens": 8_000}, "context_window and max_output_tokens are required"),
            ({"context_window": "big", "max_output_tokens": 8_000}, "context_window must be"),
            ({"context_window": 0, "max_output_tokens": 8_000}, "positive integer"),
            ({"context_window": 1_000, "max_output_tokens": 8_000}, "exceeds context_window"),
            ({"context_windw": 64_000}, "unknown field"),
            (64_000, "must be a ModelInfo or a dict"),
            (ModelInfo("x", "y", 1_000, 2_000, "z"), "exceeds context_window"),
        ],
    )
    def test_bad_override_names_its_key(self, value: object, problem: str) -> None:
        """A malformed override raises ModelTableError naming the override and the problem."""
        with pytest.raises(ModelTableError, match=problem) as caught:
            lookup_model("acme-1", overrides={"acme-1": value})  # type: ignore[dict-item]
        assert (caught.value.source, caught.value.entry) == ("overrides", "'acme-1'")


class TestUserTable:
    """load_model_table reads a JSON file of the shipped schema."""

    def test_user_file_beats_the_table_and_adds_models(self, tmp_path: Path) -> None:
        """Entries of a user file override shipped models and add new ones, with aliases."""
        path = _write_table(
            tmp_path,
            [
                {
                    "id": "claude-sonnet-4-5",
                    "provider": "anthropic",
                    "context_window": 1_000_000,
                    "max_output_tokens": 64_000,
                },
                {
                    "id": "acme-frontier-9",
                    "provider": "acme",
                    "context_window": 64_000,
                    "max_output_tokens": 8_000,
                    "aliases": ["frontier"],
                },
            ],
        )
        table = load_model_table(path)
        sonnet = lookup_model("claude-sonnet-4-5-20250929", overrides=table)
        assert sonnet is not None
        assert (sonnet.context_window, sonnet.source) == (1_000_000, str(path))
        assert lookup_model("acme/Frontier", overrides=table) == ModelInfo(
            "acme-frontier-9", "acme", 64_000, 8_000, str(path)
        )
        assert lookup_model("gpt-4o", overrides=table) == lookup_model("gpt-4o")

    def test_the_shipped_file_loads_as_a_user_table(self) -> None:
        """The shipped table itself is valid input for load_model_table."""
        path = Path(str(resources.files("windowkeeper").joinpath("data", "models.json")))
        table = load_model_table(path)
        assert table["claude-4.5-sonnet"].context_window == 200_000

    def test_missing_file_is_named(self, tmp_path: Path) -> None:
        """An unreadable file raises ModelTableError naming it."""
        path = tmp_path / "absent.json"
        with pytest.raises(ModelTableError, match=r"absent\.json") as caught:
            load_model_table(path)
        assert isinstance(caught.value, WindowkeeperError)
        assert isinstance(caught.value, ValueError)

    def test_invalid_json_names_file_and_line(self, tmp_path: Path) -> None:
        """Text that is not JSON is reported with its file, line and column."""
        path = tmp_path / "broken.json"
        path.write_text('{"models": [\n  {"id": }\n]}', encoding="utf-8")
        with pytest.raises(ModelTableError, match=r"broken\.json: line 2 column"):
            load_model_table(path)

    @pytest.mark.parametrize(
        ("entry", "problem"),
        [
            ({"provider": "acme", "context_window": 1_000, "max_output_tokens": 100}, "id must be"),
            (
                {"id": "acme-1", "provider": "acme", "max_output_tokens": 100},
                "context_window must be",
            ),
            (
                {"id": "acme-1", "provider": "acme", "context_window": -5, "max_output_tokens": 1},
                "context_window must be a positive integer",
            ),
            (
                {
                    "id": "acme-1",
                    "provider": "acme",
                    "context_window": True,
                    "max_output_tokens": 1,
                },
                "context_window must be a positive integer",
            ),
            (
                {
                    "id": "acme-1",
                    "provider": "acme",
                    "context_window": 100,
                    "max_output_tokens": 200,
                },
                "max_output_tokens \\(200\\) exceeds context_window \\(100\\)",
            ),
            (
                {
                    "id": "acme-1",
                    "provider": "acme",
                    "context_window": 100,
                    "max_output_tokens": 10,
                    "aliases": "acme",
                },
                "aliases must be a list",
            ),
            (
                {
                    "id": "acme-1",
                    "provider": "acme",
                    "context_window": 100,
                    "max_output_tokens": 10,
                    "contxt": 5,
                },
                "unknown field",
            ),
        ],
    )
    def test_malformed_entry_names_file_and_entry(
        self, tmp_path: Path, entry: dict[str, Any], problem: str
    ) -> None:
        """A bad entry raises ModelTableError naming the file and the entry's position."""
        good = {"id": "ok-1", "provider": "acme", "context_window": 100, "max_output_tokens": 10}
        path = _write_table(tmp_path, [good, entry])
        with pytest.raises(ModelTableError, match=problem) as caught:
            load_model_table(path)
        assert caught.value.source == str(path)
        assert caught.value.entry.startswith("models[1]")
        assert str(path) in str(caught.value)

    def test_alias_naming_two_models_is_refused(self, tmp_path: Path) -> None:
        """One alias on two entries is an error naming the alias and both models."""
        first = {"id": "acme-1", "provider": "acme", "context_window": 100, "max_output_tokens": 10}
        second = {**first, "id": "acme-2", "aliases": ["ACME-1"]}
        path = _write_table(tmp_path, [first, second])
        with pytest.raises(ModelTableError, match="'ACME-1' already names 'acme-1'") as caught:
            load_model_table(path)
        assert caught.value.entry == "models[1] ('acme-2')"

    def test_models_must_be_a_list(self, tmp_path: Path) -> None:
        """A file without a models list is refused."""
        path = tmp_path / "t.json"
        path.write_text('{"models": {}}', encoding="utf-8")
        with pytest.raises(ModelTableError, match="models: must be a list"):
            load_model_table(path)


REQUIRED_MODELS = [
    # Anthropic: Claude 3, 3.5, 3.7, 4, 4.1 and 4.5
    "claude-3-opus",
    "claude-3-sonnet",
    "claude-3-haiku",
    "claude-3-5-sonnet",
    "claude-3-5-haiku",
    "claude-3-7-sonnet",
    "claude-opus-4",
    "claude-sonnet-4",
    "claude-opus-4-1",
    "claude-opus-4-5",
    "claude-sonnet-4-5",
    "claude-haiku-4-5",
    # OpenAI
    "gpt-4o",
    "gpt-4o-mini",
    "gpt-4.1",
    "gpt-4.1-mini",
    "gpt-4.1-nano",
    "o1",
    "o3",
    "o3-mini",
    "o4-mini",
    "gpt-5",
    "gpt-5-mini",
    "gpt-5-nano",
    "gpt-5-codex",
    "gpt-5.1",
    "gpt-oss-20b",
    "gpt-oss-120b",
    # Google
    "gemini-2.0-flash",
    "gemini-2.5-pro",
    "gemini-2.5-flash",
    "gemini-2.5-flash-lite",
    "gemini-3-pro-preview",
    # DeepSeek, Mistral, xAI, Qwen
    "deepseek-chat",
    "deepseek-reasoner",
    "mistral-large",
    "mistral-medium",
    "mistral-small",
    "codestral",
    "devstral",
    "grok-3",
    "grok-3-mini",
    "grok-4",
    "grok-4-fast",
    "grok-code-fast-1",
    "qwen-max",
    "qwen-plus",
    "qwen-turbo",
    "qwen3-coder-plus",
    "qwen3-max",
    "qwen3-coder-480b-a35b-instruct",
]


class TestShippedTable:
    """data/models.json is well-formed, sourced and ships in the package."""

    def test_every_entry_has_sane_positive_limits(self) -> None:
        """Limits are positive integers, output and input caps within the window."""
        for entry in _shipped()["models"]:
            limits = [entry["context_window"], entry["max_output_tokens"]]
            limits += [entry["max_input_tokens"]] if "max_input_tokens" in entry else []
            assert all(type(n) is int and n > 0 for n in limits), entry["id"]
            assert entry["max_output_tokens"] <= entry["context_window"], entry["id"]
            assert entry.get("max_input_tokens", 0) <= entry["context_window"], entry["id"]

    def test_every_entry_says_whether_and_where_it_was_checked(self) -> None:
        """Each entry has a boolean verified flag and an https source; unverified ones explain."""
        for entry in _shipped()["models"]:
            assert isinstance(entry["verified"], bool), entry["id"]
            assert entry["source"].startswith("https://"), entry["id"]
            if not entry["verified"]:
                assert entry.get("note"), entry["id"]

    def test_no_name_maps_to_two_models(self) -> None:
        """Ids and aliases, case-folded, are unique across the table."""
        owners: dict[str, str] = {}
        for entry in _shipped()["models"]:
            for name in [entry["id"], *entry["aliases"]]:
                key = name.lower()
                assert owners.setdefault(key, entry["id"]) == entry["id"], key

    def test_every_name_resolves_to_its_own_entry(self) -> None:
        """Each id and alias looks up the entry that lists it."""
        for entry in _shipped()["models"]:
            for name in [entry["id"], *entry["aliases"]]:
                assert _resolved_id(name) == entry["id"], name

    def test_every_provider_has_sources_and_a_date(self) -> None:
        """Every provider used by an entry names its vendor pages and when they were read."""
        data = _shipped()
        for provider in {entry["provider"] for entry in data["models"]}:
            meta = data["providers"][provider]
            assert meta["sources"], provider
            assert all(url.startswith("https://") for url in meta["sources"]), provider
            datetime.date.fromisoformat(meta["checked"])
            assert meta["note"], provider

    def test_the_requested_models_are_present(self) -> None:
        """Every model family issue 6 asks for resolves."""
        missing = [name for name in REQUIRED_MODELS if lookup_model(name) is None]
        assert missing == []

    def test_the_table_is_package_data(self) -> None:
        """The JSON is read with importlib.resources from the installed package."""
        assert resources.files("windowkeeper").joinpath("data", "models.json").is_file()


# ------------------------------------------------------------ the bounds of a table, one by one

ACME = {"id": "acme-1", "provider": "acme", "context_window": 100, "max_output_tokens": 10}


def _one(tmp_path: Path, data: object) -> dict[str, ModelInfo]:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return load_model_table(path)


class TestTableBounds:
    """Each check of a user table at its bound: what is taken, and what is refused by name."""

    @pytest.mark.parametrize(
        ("changes", "limits"),
        [
            ({"context_window": 1, "max_output_tokens": 1}, (1, 1, None)),
            ({"max_output_tokens": 100}, (100, 100, None)),  # output may fill the window
            ({"max_input_tokens": 100}, (100, 10, 100)),  # so may the input cap
            ({"max_input_tokens": 1}, (100, 10, 1)),
            ({"verified": True, "note": "", "aliases": []}, (100, 10, None)),
            ({"verified": False, "aliases": ["ACME-1", "acme-one"]}, (100, 10, None)),  # own id
        ],
    )
    def test_an_entry_at_its_bounds_is_taken(
        self, tmp_path: Path, changes: dict[str, Any], limits: tuple[Any, ...]
    ) -> None:
        table = _one(tmp_path, {"models": [{**ACME, **changes}]})
        info = table["acme-1"]
        assert (info.context_window, info.max_output_tokens, info.max_input_tokens) == limits
        assert set(table) == {"acme-1", *(a.lower() for a in changes.get("aliases", []))}

    @pytest.mark.parametrize(
        ("changes", "problem"),
        [
            ({"context_window": 0}, "context_window must be a positive integer, not 0"),
            ({"max_output_tokens": 101}, "max_output_tokens (101) exceeds context_window (100)"),
            ({"max_input_tokens": 101}, "max_input_tokens (101) exceeds context_window (100)"),
            ({"max_input_tokens": 0}, "max_input_tokens must be a positive integer, not 0"),
            ({"aliases": [" "]}, "aliases must be a list of non-empty strings"),
            ({"aliases": [5]}, "aliases must be a list of non-empty strings"),
            ({"verified": "yes"}, "verified must be true or false"),
            ({"note": 5}, "note must be a string"),
            ({"source": ""}, "source must be a non-empty string, not ''"),
            ({"id": "  "}, "id must be a non-empty string, not '  '"),
            ({"provider": 5}, "provider must be a non-empty string, not 5"),
        ],
    )
    def test_an_entry_past_a_bound_is_refused(
        self, tmp_path: Path, changes: dict[str, Any], problem: str
    ) -> None:
        with pytest.raises(ModelTableError, match=re.escape(problem)):
            _one(tmp_path, {"models": [{**ACME, **changes}]})

    def test_a_user_table_names_itself_as_every_entry_source(self, tmp_path: Path) -> None:
        table = _one(tmp_path, {"models": [{**ACME, "source": "https://acme.example/models"}]})
        assert table["acme-1"].source == str(tmp_path / "t.json")

    def test_the_shipped_entries_keep_their_own_sources(self) -> None:
        info = lookup_model("claude-sonnet-4-5")
        assert info is not None
        assert info.source.startswith("https://")

    @pytest.mark.parametrize(
        ("data", "problem"),
        [
            ([], "(top level): must be an object with a 'models' list"),
            ({"providers": [], "models": []}, "providers: must be an object of objects"),
            ({"providers": {"acme": 5}, "models": []}, "providers: must be an object of objects"),
            ({"models": [5]}, "models[0]: must be an object"),
            ({"models": [ACME, ACME]}, "id 'acme-1' appears twice"),
        ],
    )
    def test_a_malformed_table_is_refused(self, tmp_path: Path, data: object, problem: str) -> None:
        with pytest.raises(ModelTableError, match=re.escape(problem)):
            _one(tmp_path, data)

    def test_providers_of_objects_are_taken(self, tmp_path: Path) -> None:
        table = _one(tmp_path, {"providers": {"acme": {"sources": []}}, "models": [ACME]})
        assert list(table) == ["acme-1"]

    def test_a_model_info_is_a_frozen_value(self) -> None:
        info = lookup_model("claude-sonnet-4-5")
        assert info is not None
        with pytest.raises(AttributeError):
            info.context_window = 1  # type: ignore[misc]
        assert not hasattr(info, "__dict__")


class TestCandidateBounds:
    @pytest.mark.parametrize(("prefixes", "found"), [(1, True), (63, True), (64, False)])
    def test_at_most_64_spellings_are_tried(self, prefixes: int, found: bool) -> None:
        """Each route prefix peeled is one more spelling; the 65th is not tried."""
        model_id = "r/" * prefixes + "claude-sonnet-4-5"
        assert (lookup_model(model_id) is not None) is found

    @pytest.mark.parametrize(
        "model_id",
        [
            "anthropic/claude-sonnet-4-5-20250929",  # a route, then a date
            "openrouter/anthropic/claude-sonnet-4-5:thinking",  # two routes, then a tag
            "anthropic:claude-sonnet-4-5-latest",  # a provider prefix, then -latest
        ],
    )
    def test_decorations_are_peeled_one_after_another(self, model_id: str) -> None:
        assert _resolved_id(model_id) == _resolved_id("claude-sonnet-4-5")

    @pytest.mark.parametrize("model_id", ["", "   "])
    def test_an_empty_id_is_unknown(self, model_id: str) -> None:
        assert lookup_model(model_id) is None


class TestOverrideBounds:
    def test_an_override_of_another_model_leaves_this_one_to_the_table(self) -> None:
        overrides = {"gpt-4o": {"context_window": 64_000}}
        assert lookup_model("claude-sonnet-4-5", overrides=overrides) == lookup_model(
            "claude-sonnet-4-5"
        )

    @pytest.mark.parametrize(("key", "shown"), [("", "''"), ("  ", "'  '"), (5, "5")])
    def test_an_override_key_must_be_a_model_id(self, key: Any, shown: str) -> None:
        with pytest.raises(ModelTableError, match="keys must be non-empty model ids") as caught:
            lookup_model("acme-1", overrides={key: ACME})
        assert caught.value.entry == shown

    def test_warnings_point_at_the_caller(self) -> None:
        with pytest.warns(UnknownModelWarning) as caught:
            model_window("acme-unknown-1")
        assert caught[0].filename == __file__

    def test_the_missing_window_warning_points_at_the_caller(self) -> None:
        with pytest.warns(UnknownModelWarning, match="no model and no context_window") as caught:
            ContextSession()
        assert caught[0].filename == __file__
