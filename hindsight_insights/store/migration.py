"""Bringing a project's stored insights up to this version: an explicit step (`python -m hindsight_cli migrate`),
never a side effect of opening a store, which only warns (InsightStore.open)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from hindsight_insights.embedder import Embedder
from hindsight_insights.models import Insight
from hindsight_insights.store.schema import VECTOR_TEXT_VERSION
from hindsight_insights.store.table import embedding_text
from hindsight_insights.store.tenancy import ProjectTenancy
from hindsight_insights.store.weaviate_table import WeaviateInsightTable

log = logging.getLogger(__name__)

MIGRATE_COMMAND = "python -m hindsight_cli migrate"


def embed_again(table: WeaviateInsightTable, embedder: Embedder, tenancy: ProjectTenancy, batch_size: int = 256) -> int:
    """Make every insight's vector, search text and keys again from what it says now, then note the recipe's
    version in the project's record. Needed once for a collection whose vectors were made another way (which also clears
    the words of users forgotten before forgetting remade them); idempotent, so an interrupted run is finished by
    running it again. Returns how many insights it embedded."""
    pending: list[Insight] = []
    done = 0
    with table.failures("making the insights' vectors again", safe_to_rerun=True):
        for insight in table.everything():
            pending.append(insight)
            if len(pending) == batch_size:
                done += _replace_vectors(table, embedder, pending)
                pending = []
        done += _replace_vectors(table, embedder, pending)
        tenancy.record_vectors(VECTOR_TEXT_VERSION)
    log.info("made the vectors of %d insights again (vector text version %d)", done, VECTOR_TEXT_VERSION)
    return done


def _replace_vectors(table: WeaviateInsightTable, embedder: Embedder, insights: Sequence[Insight]) -> int:
    if not insights:
        return 0
    vectors = embedder.embed([embedding_text(insight) for insight in insights])
    # A PATCH of the search text and vector only: a writer changing the insight meanwhile loses nothing. One request
    # per insight (there is no batch PATCH); a few at a time keep Weaviate busy.
    with ThreadPoolExecutor(max_workers=4, thread_name_prefix="hindsight-embed-again") as pool:
        list(pool.map(lambda insight, vector: table.update_searchable(insight, {}, vector), insights, vectors))
    return len(insights)
