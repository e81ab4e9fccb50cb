"""The Dify side of a tool call: one cached store per credentials set, and every failure turned into a result."""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import ValidationError

from hindsight_dify.credentials import ProviderCredentials
from hindsight_dify.operations import OPERATIONS, Context
from hindsight_dify.results import ToolResult, error_result
from hindsight_insights.config import Settings
from hindsight_insights.errors import HindsightError, InvalidInput
from hindsight_insights.store import InsightStore, open_store

log = logging.getLogger(__name__)


class StoreCache:
    """Open stores keyed by their settings. Connecting costs far more than a search, so connections are reused."""

    def __init__(self, base: Settings | None = None) -> None:
        self._base = base
        self._stores: dict[str, InsightStore] = {}
        self._lock = threading.Lock()

    def base_settings(self) -> Settings:
        if self._base is None:
            self._base = Settings()
        return self._base

    def settings_for(self, credentials: Mapping[str, Any]) -> Settings:
        return ProviderCredentials.parse_credentials(credentials).settings(self.base_settings())

    def store_for(self, credentials: Mapping[str, Any]) -> InsightStore:
        settings = self.settings_for(credentials)
        key = cache_key(settings)
        with self._lock:
            cached = self._stores.get(key)
            if cached is not None and cached.is_connected():
                return cached
            store = open_store(settings)
            self._stores[key] = store
            return store

    def validate(self, credentials: Mapping[str, Any]) -> str:
        """Connect, check the version, ensure the collections. Returns a one-line summary."""
        store = self.store_for(credentials)
        insights, turns = store.count()
        settings = store.settings
        return f"Connected to {settings.weaviate_url}, project {settings.project!r}: {insights} insights, {turns} turns"


def cache_key(settings: Settings) -> str:
    """Settings with secrets included (model_dump masks SecretStr), hashed so they are not kept in clear."""
    secrets = [s.get_secret_value() if s else "" for s in (settings.weaviate_api_key, settings.openai_api_key)]
    material = json.dumps([settings.model_dump_json(), secrets])
    return hashlib.sha256(material.encode()).hexdigest()


def run(
    stores: StoreCache, operation: str, credentials: Mapping[str, Any], parameters: Mapping[str, Any], context: Context
) -> ToolResult:
    """One tool call: every failure becomes an error result, never a traceback."""
    try:
        return OPERATIONS[operation](stores.store_for(credentials), parameters, context)
    except HindsightError as error:
        return error_result(error)
    except ValidationError as error:
        return error_result(InvalidInput.from_validation_error(error))
    except Exception as error:
        log.exception("%s failed", operation)
        return error_result(HindsightError(f"unexpected {type(error).__name__}: {error}. The plugin log has details."))


# One per plugin process: every tool call with the same credentials reuses one connection and one embedder.
STORES = StoreCache()


def invoke(tool: Any, operation: str, parameters: Mapping[str, Any], stores: StoreCache = STORES) -> Iterator[Any]:
    """The body of a Dify tool's `_invoke`: run the operation and yield its messages.

    `tool` is the dify_plugin Tool; only its runtime, session and `create_*_message` methods are used, so this
    package never imports dify_plugin (which monkey-patches gevent on import).
    """
    context = Context(user_id=tool.runtime.user_id, conversation_id=getattr(tool.session, "conversation_id", None))
    result = run(stores, operation, tool.runtime.credentials, parameters, context)
    yield tool.create_text_message(result.text)
    yield tool.create_json_message(result.json)
    for name, value in result.variables.items():
        yield tool.create_variable_message(name, value)
