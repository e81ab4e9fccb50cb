"""The store of one project, over Weaviate (its tenant of the shared collections: tenancy.py): insights (the facade
in insights.py over its rooms: writing, lifecycle, forgetting, reads, all over the table port of table.py; search and
recall in retrieval.py), the turn log (turns.py) and the review audit (audit.py). What governance and reflection need
of it is in ports.py."""

from __future__ import annotations

import weaviate

from hindsight_insights.config import Settings
from hindsight_insights.connection import connect_url, require_server_version, weaviate_errors
from hindsight_insights.embedder import Embedder, load_embedder
from hindsight_insights.errors import WeaviateUnavailable
from hindsight_insights.screening import Screen, screen_for
from hindsight_insights.store.insights import InsightStore
from hindsight_insights.store.retrieval import MAX_TOP_K, SITUATIONAL_KINDS, GateInput, SearchMode, newest_per_topic
from hindsight_insights.store.turns import TurnLog

__all__ = [
    "MAX_TOP_K",
    "SITUATIONAL_KINDS",
    "GateInput",
    "InsightStore",
    "SearchMode",
    "TurnLog",
    "connect_checked",
    "newest_per_topic",
    "open_store",
]


def connect_checked(settings: Settings) -> weaviate.WeaviateClient:
    """A client of `settings.weaviate_url`, whose server is a version this one supports. Close it when done."""
    if not settings.weaviate_url:
        raise WeaviateUnavailable("no Weaviate URL configured: set HINDSIGHT_WEAVIATE_URL, or start a local server")
    client = connect_url(settings, settings.weaviate_url)
    try:
        with weaviate_errors("checking the server version"):
            require_server_version(str(client.get_meta().get("version", "")))
    except BaseException:
        client.close()
        raise
    return client


def open_store(
    settings: Settings,
    embedder: Embedder | None = None,
    screen: Screen | None = None,
    *,
    keep_active: bool = True,
) -> InsightStore:
    """Connect to `settings.weaviate_url`, check the server's version, ensure the project's collections.

    Every write of the store passes `screen`; unset, the configured one is built here (screening.screen_for: the
    rules and, unless HINDSIGHT_SCREEN_LEARNED=false, the learned screen over the built-in embedder). The store owns
    the connection: `close()` it when done. `keep_active`: see InsightStore.open.
    """
    client = connect_checked(settings)
    try:
        embedder = embedder or load_embedder(settings)
        screen = screen or screen_for(settings, embedder)
        return InsightStore.open(client, settings, embedder, owns_client=True, screen=screen, keep_active=keep_active)
    except BaseException:
        client.close()
        raise
