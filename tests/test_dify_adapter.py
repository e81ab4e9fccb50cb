"""The Dify adapter without the plugin: version check, parameter parsing, the connection cache, LLM JSON."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from hindsight_dify import ProviderCredentials, cache_key, error_result
from hindsight_dify.params import Parameters, recent_turns
from hindsight_insights.config import Settings
from hindsight_insights.connection import require_server_version
from hindsight_insights.errors import InvalidInput, WeaviateUnavailable
from hindsight_insights.llm_json import insight_from_llm_json, json_object


@pytest.mark.parametrize("version", ["1.27.0", "1.27.10", "1.39.0", "2.0.0", "1.30.0-rc.1"])
def test_supported_server_versions(version: str) -> None:
    require_server_version(version)


@pytest.mark.parametrize("version", ["1.26.9", "1.19.0", "0.22.0", "", "unknown"])
def test_too_old_server_is_refused_with_what_to_do(version: str) -> None:
    with pytest.raises(WeaviateUnavailable, match=r"too old: Hindsight Insights needs 1\.27 or newer\. Upgrade"):
        require_server_version(version)


def test_credentials_blanks_take_defaults_and_map_to_settings() -> None:
    credentials = ProviderCredentials.parse_credentials(
        {
            "weaviate_url": "http://weaviate:8080/",
            "weaviate_api_key": "",
            "weaviate_grpc_port": "",
            "project": "售后",
            "top_k": "7",
            "score_threshold": "0.2",
            "language": "en",
            "embedder": "use-m3",
        }
    )
    settings = credentials.settings(Settings(_env_file=None))
    assert (settings.weaviate_url, settings.weaviate_grpc_port, settings.weaviate_api_key) == (
        "http://weaviate:8080",
        50051,
        None,
    )
    assert (settings.project, settings.top_k, settings.score_threshold, settings.language) == ("售后", 7, 0.2, "en")


def test_openai_credentials_reach_the_settings() -> None:
    credentials = ProviderCredentials.parse_credentials(
        {
            "weaviate_url": "http://w:8080",
            "embedder": "openai",
            "embedding_base_url": "http://e/v1",
            "embedding_api_key": "k",
            "embedding_model": "m",
        }
    )
    settings = credentials.settings(Settings(_env_file=None))
    assert (settings.embedder, settings.openai_base_url, settings.openai_model) == ("openai", "http://e/v1", "m")
    assert settings.openai_api_key is not None and settings.openai_api_key.get_secret_value() == "k"


def test_cache_key_tells_secrets_apart() -> None:
    base = Settings(_env_file=None, weaviate_url="http://w:8080")
    right = base.model_copy(update={"weaviate_api_key": SecretStr("right")})
    wrong = base.model_copy(update={"weaviate_api_key": SecretStr("wrong")})
    assert right.model_dump_json() == wrong.model_dump_json()  # why the key cannot be the dump alone
    assert cache_key(right) != cache_key(wrong)
    assert "right" not in cache_key(right)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("a, b，c、d\ne", ["a", "b", "c", "d", "e"]),
        ('["x", " y "]', ["x", "y"]),
        (["p", ""], ["p"]),
        ("", []),
        (None, []),
    ],
)
def test_list_parameters(value: object, expected: list[str]) -> None:
    assert Parameters({"tags": value}).text_list("tags") == expected


def test_list_parameter_that_is_broken_json() -> None:
    with pytest.raises(InvalidInput, match="tags: looks like a JSON array but is not valid JSON"):
        Parameters({"tags": "[1, "}).text_list("tags")


@pytest.mark.parametrize(
    ("value", "expected"), [(True, True), ("true", True), ("是", True), ("0", False), (None, False), ("", False)]
)
def test_boolean_parameters(value: object, expected: bool) -> None:
    assert Parameters({"flag": value}).boolean("flag") is expected


def test_recent_turns() -> None:
    assert recent_turns('["第一轮", "第二轮"]') == ["第一轮", "第二轮"]
    assert recent_turns("line one\n\nline two") == ["line one", "line two"]
    assert recent_turns("[not json") == ["[not json"]


def test_insight_json_fence_and_errors() -> None:
    assert json_object('```json\n{"a": 1}\n```', "insight_json") == {"a": 1}
    assert json_object("```\n{}\n```", "insight_json") == {}
    assert insight_from_llm_json("```\n{}\n```").content is None
    with pytest.raises(InvalidInput, match="insight_json: is not valid JSON"):
        json_object("{'single': 'quotes'}", "insight_json")


def test_error_result_is_text_and_structured() -> None:
    result = error_result(InvalidInput([("topic", "must not be empty"), ("confidence", "too big")]))
    assert result.text == "Error (invalid_input): topic: must not be empty; confidence: too big"
    assert result.json["error"]["problems"] == [
        {"field": "topic", "rule": "must not be empty"},
        {"field": "confidence", "rule": "too big"},
    ]
