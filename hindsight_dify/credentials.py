"""The plugin's provider credentials, as Dify sends them, mapped onto the core's settings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator

from hindsight_insights.config import Language, Settings
from hindsight_insights.errors import InvalidInput
from hindsight_insights.models import StrictModel

EMPTY_PROJECT = (
    "is empty: set the project name in the provider's credentials (each project keeps its own insights; the form's "
    "default is `default`, which a blank does not choose for you)"
)


def blank_to_none(value: Any) -> Any:
    """Dify sends an empty string for a field that was left empty."""
    return None if value is None or (isinstance(value, str) and not value.strip()) else value


class ProviderCredentials(StrictModel):
    """The plugin's provider credentials as Dify sends them (strings; blank means unset)."""

    weaviate_url: str = Field(min_length=1)
    weaviate_api_key: SecretStr | None = None
    weaviate_grpc_host: str | None = None
    weaviate_grpc_port: int = Field(50051, ge=1, le=65535)
    project: str = Field("default", min_length=1, max_length=100)
    embedder: Literal["use-m3", "openai"] = "use-m3"
    embedding_base_url: str | None = None
    embedding_api_key: SecretStr | None = None
    embedding_model: str | None = None
    # e5-style models behind an OpenAI-compatible endpoint need their query and passage prefixes.
    embedding_query_prefix: str | None = None
    embedding_passage_prefix: str | None = None
    language: Language = "zh"
    top_k: int = Field(5, ge=1, le=20)
    score_threshold: float | None = Field(None, ge=0.0, le=1.0)  # blank: the embedder's calibrated gate

    @field_validator("*", mode="before")
    @classmethod
    def _blank(cls, value: Any) -> Any:
        return blank_to_none(value)

    @classmethod
    def parse_credentials(cls, credentials: Mapping[str, Any]) -> ProviderCredentials:
        # The project is a required field that Dify's form fills with `default`: absent (credentials set up without
        # the form) it is that documented default, but emptied it is a mistake, not a wish to share `default`.
        if "project" in credentials and blank_to_none(credentials["project"]) is None:
            raise InvalidInput([("project", EMPTY_PROJECT)])
        # Dify keeps the key of an optional field that was left empty; dropping blanks lets the defaults apply.
        return cls.parse({key: value for key, value in credentials.items() if blank_to_none(value) is not None})

    def settings(self, base: Settings) -> Settings:
        update: dict[str, Any] = {
            "weaviate_url": self.weaviate_url.strip().rstrip("/"),
            "weaviate_api_key": self.weaviate_api_key,
            "weaviate_grpc_host": self.weaviate_grpc_host,
            "weaviate_grpc_port": self.weaviate_grpc_port,
            "project": self.project,
            "embedder": self.embedder,
            "language": self.language,
            "top_k": self.top_k,
            "score_threshold": self.score_threshold,
        }
        if self.embedder == "openai":
            update |= {"openai_base_url": self.embedding_base_url, "openai_api_key": self.embedding_api_key}
            if self.embedding_model:
                update["openai_model"] = self.embedding_model
            update["openai_query_prefix"] = self.embedding_query_prefix or ""
            update["openai_passage_prefix"] = self.embedding_passage_prefix or ""
        return base.model_copy(update=update)


def credentials_for(settings: Settings) -> dict[str, str]:
    """What Dify would send for a provider set up on these settings' Weaviate and project (the demo and the
    benchmarks call the tools as Dify does)."""
    if not settings.weaviate_url:
        raise ValueError("credentials_for needs settings with a weaviate_url (a running Weaviate)")
    return {
        "weaviate_url": settings.weaviate_url,
        "weaviate_api_key": settings.weaviate_api_key.get_secret_value() if settings.weaviate_api_key else "",
        "weaviate_grpc_port": str(settings.weaviate_grpc_port),
        "project": settings.project,
        "language": settings.language,
    }
