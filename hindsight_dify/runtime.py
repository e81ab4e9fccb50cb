"""The Dify side of a tool call: one cached store per credentials set, every failure turned into a result, and no
call that can stall the others (a frozen Weaviate, a long embedding)."""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from hindsight_dify.credentials import ProviderCredentials
from hindsight_dify.operations import ERROR_VARIABLES, OPERATIONS, Context
from hindsight_dify.params import Parameters, refuse_non_unicode
from hindsight_dify.results import ToolResult, error_result
from hindsight_insights.config import Settings
from hindsight_insights.connection import WeaviateUnreachable
from hindsight_insights.embedder import Embedder, OpenAICompatibleEmbedder, Vectors, load_embedder
from hindsight_insights.errors import HindsightError, InvalidInput
from hindsight_insights.screening import screen_for
from hindsight_insights.store import InsightStore, open_store
from hindsight_insights.store.tenancy import TOUCH_EVERY_S

log = logging.getLogger(__name__)


class StoreCache:
    """Open stores keyed by their settings. Connecting costs far more than a search, so connections are reused."""

    def __init__(self, base: Settings | None = None, *, sweep_every_s: float = TOUCH_EVERY_S) -> None:
        self._base = base
        self._stores: dict[str, InsightStore] = {}
        self._lock = threading.Lock()
        self.sweep_every_s = sweep_every_s
        self._swept_at: float | None = None  # when a store opened here last deactivated idle projects

    def _sweep_due(self) -> bool:
        """Whether the next store opened deactivates idle projects: the first, then at most one every
        `sweep_every_s` (the sweep lists every project's tenants: opening each of many projects must not pay it)."""
        with self._lock:
            now = time.monotonic()
            if self._swept_at is not None and now - self._swept_at < self.sweep_every_s:
                return False
            self._swept_at = now
            return True

    def base_settings(self) -> Settings:
        if self._base is None:
            self._base = Settings()
        return self._base

    def settings_for(self, credentials: Mapping[str, Any]) -> Settings:
        refuse_non_unicode(credentials, "credentials.")
        return ProviderCredentials.parse_credentials(credentials).settings(self.base_settings())

    def store_for(self, credentials: Mapping[str, Any]) -> InsightStore:
        settings = self.settings_for(credentials)
        key = cache_key(settings)
        with self._lock:
            cached = self._stores.get(key)
        if cached is not None and cached.is_connected():
            try:  # the project's last use, for deactivating idle ones (at most once a minute)
                cached.tenancy.touch()
            except HindsightError as error:  # bookkeeping only: the call itself meets the failure, and is answered
                log.warning("could not note the project's use: %s", error)
            return cached
        # Connect outside the lock: a slow or unreachable server must not hold up calls for other credentials.
        cooperate_with_gevent()
        embedder = plugin_embedder(settings)
        store = open_store(
            settings, embedder, screen_for(settings, embedder, plugin_embedder), keep_active=self._sweep_due()
        )
        with self._lock:
            raced = self._stores.get(key)
            if raced is not None and raced.is_connected():
                store.close()
                return raced
            self._stores[key] = store
            return store

    def discard(self, store: InsightStore) -> None:
        """Forget and close a store whose connection failed: the next call connects anew. The failed client's gRPC
        channel backs off between reconnects (seconds, growing), so it would fail calls after Weaviate is back."""
        with self._lock:
            self._stores = {key: cached for key, cached in self._stores.items() if cached is not store}
        try:
            store.close()
        except Exception:  # closing a client of a dead server may fail; it is dropped either way
            log.warning("closing a store after a connection failure failed", exc_info=True)

    def close(self) -> None:
        """Close every open store (the plugin process never needs this; a CLI run that ends does)."""
        with self._lock:
            stores, self._stores = list(self._stores.values()), {}
        for store in stores:
            store.close()

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
    store = None
    try:
        identity = {
            "user_id": context.user_id,
            "conversation_id": context.conversation_id,
            "message_id": context.message_id,
        }
        refuse_non_unicode(identity, "Dify's ")
        checked = Parameters(parameters)  # before connecting: bad input is refused even while Weaviate is down
        store = stores.store_for(credentials)
        return OPERATIONS[operation](store, checked, context)
    except WeaviateUnreachable as error:
        if store is not None:
            stores.discard(store)
        result = error_result(error)
    except HindsightError as error:
        result = error_result(error)
    except ValidationError as error:
        result = error_result(InvalidInput.from_validation_error(error))
    except Exception as error:
        log.exception("%s failed", operation)
        result = error_result(HindsightError(f"unexpected {type(error).__name__}. The plugin log has details."))
    result.variables = dict(ERROR_VARIABLES.get(operation, {}))
    return result


def _gevent_patched() -> bool:
    try:
        from gevent.monkey import is_module_patched
    except ImportError:  # gevent comes with dify_plugin; without it there is no event loop to protect
        return False
    return bool(is_module_patched("threading"))


@functools.cache
def cooperate_with_gevent() -> bool:
    """Keep one call from stalling the others, under dify_plugin's gevent.

    dify_plugin monkey-patches the process with gevent: its tool calls and heartbeats are greenlets on one OS thread.
    Sockets are patched and yield while they wait, but gRPC (Weaviate's query channel) blocks the thread in C unless
    told to use gevent's loop. This does that, once, before the first channel is made. Returns whether gevent runs.
    """
    if not _gevent_patched():
        return False
    from grpc.experimental import gevent as grpc_gevent

    grpc_gevent.init_gevent()
    return True


def off_event_loop[T](work: Callable[[], T]) -> T:
    """Run CPU-bound work (embedding a text with numpy) in one of gevent's real OS threads while this greenlet waits
    cooperatively; in place when gevent does not run. Only for work that touches no socket: a gevent socket belongs
    to the thread whose loop created it."""
    if not _gevent_patched():
        return work()
    from gevent import get_hub

    return get_hub().threadpool.spawn(work).get()  # type: ignore[no-any-return]


class OffloadedEmbedder:
    """An in-process embedder whose numpy work runs off the event loop (a 4,000-character query takes a while)."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner

    @property
    def id(self) -> str:
        return self._inner.id

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        return off_event_loop(lambda: self._inner.embed(texts, query=query))


def plugin_embedder(settings: Settings) -> Embedder:
    embedder = load_embedder(settings)
    # A remote endpoint waits on a socket, which already yields; only local models compute in this process.
    return embedder if isinstance(embedder, OpenAICompatibleEmbedder) else OffloadedEmbedder(embedder)


# One per plugin process: every tool call with the same credentials reuses one connection and one embedder.
STORES = StoreCache()


def invoke(tool: Any, operation: str, parameters: Mapping[str, Any], stores: StoreCache = STORES) -> Iterator[Any]:
    """The body of a Dify tool's `_invoke`: run the operation and yield its messages.

    `tool` is the dify_plugin Tool; only its runtime, session (with its backwards model invocation) and
    `create_*_message` methods are used, so this package never imports dify_plugin (which monkey-patches gevent on
    import).
    """
    session = getattr(tool, "session", None)
    context = Context(
        user_id=tool.runtime.user_id,
        conversation_id=getattr(session, "conversation_id", None),
        message_id=getattr(session, "message_id", None),
        llm=getattr(getattr(session, "model", None), "llm", None),
        rerank=getattr(getattr(session, "model", None), "rerank", None),
    )
    result = run(stores, operation, tool.runtime.credentials, parameters, context)
    yield tool.create_text_message(result.text)
    yield tool.create_json_message(result.json)
    for name, value in result.variables.items():
        yield tool.create_variable_message(name, value)


def validate(credentials: Mapping[str, Any], stores: StoreCache = STORES) -> str:
    """The provider's credential check: connect, check the version, ensure the collections."""
    return stores.validate(credentials)
