"""Collection naming, idempotent creation, and the embedder binding (tenant names: test_tenancy.py)."""

from __future__ import annotations

import logging
import re
from typing import Any

import numpy as np
import pytest
import weaviate
from weaviate.classes.config import Reconfigure

from hindsight_insights.config import Settings
from hindsight_insights.embedder import Embedder
from hindsight_insights.errors import EmbedderMismatch, HindsightError, InvalidInput
from hindsight_insights.models import InsightDraft
from hindsight_insights.store import InsightStore
from hindsight_insights.store.migration import embed_again
from hindsight_insights.store.schema import (
    FLAT_SEARCH_CUTOFF,
    INSIGHTS,
    VECTOR_TEXT_VERSION,
    legacy_collection_names,
    vector_of,
)
from hindsight_insights.store.table import embedding_text
from hindsight_insights.store.tenancy import (
    REGISTRY,
    check_binding,
    ensure_collections,
    project_collection,
    registry_id,
)
from testkit.admitted import admitted_as_is
from testkit.embedders import OtherEmbedder

VALID_CLASS = re.compile(r"^[A-Z][_0-9A-Za-z]*$")


@pytest.mark.parametrize("project", ["default", "售后客服", "Shop-CN", "shop cn", "a" * 100, "电商 / 退货 v2", "🙂"])
def test_any_project_name_maps_to_valid_class_names_in_the_old_layout(project: str) -> None:
    """The per-project layout before tenants: the migration still finds a project's collections by it."""
    names = legacy_collection_names(project)
    assert VALID_CLASS.match(names.insights) and VALID_CLASS.match(names.turns)
    assert names.insights.endswith("_Insight") and names.turns.endswith("_Turn")


def test_old_mapping_is_readable_and_collision_free() -> None:
    assert legacy_collection_names("default").insights == "Hindsight_default_Insight"
    assert legacy_collection_names("shop_cn").budget == "Hindsight_shop_cn_Budget"
    distinct = ["Shop-CN", "shop-cn", "shop cn", "shop_cn", "售后", "售前", "ＳＨＯＰ"]
    assert len({legacy_collection_names(name).insights for name in distinct}) == len(distinct)
    assert legacy_collection_names("ＳＨＯＰ") == legacy_collection_names("SHOP")  # full-width letters: the same name


def test_empty_project_name_is_rejected(client: weaviate.WeaviateClient, embedder: Embedder) -> None:
    with pytest.raises(InvalidInput, match="project: must not be empty"):
        legacy_collection_names("  ")
    with pytest.raises(InvalidInput, match="project: must not be empty"):
        ensure_collections(client, " \u3000 ", embedder)


def test_creation_is_idempotent_and_records_the_embedder(
    client: weaviate.WeaviateClient, project_settings: Settings, embedder: Embedder
) -> None:
    first = ensure_collections(client, project_settings.project, embedder)
    second = ensure_collections(client, project_settings.project, embedder)
    assert first.insights.name == second.insights.name == "HindsightInsight"
    assert first.tenant == second.tenant == project_settings.project
    assert first.insights.tenant == project_settings.project  # the handle is scoped to the project's tenant
    record = client.collections.use(REGISTRY).query.fetch_object_by_id(registry_id(first.tenant))
    assert record is not None
    assert record.properties["embedder"] == embedder.id and record.properties["dimension"] == 512
    assert record.properties["project"] == project_settings.project


def test_embedder_mismatch_is_an_error(
    client: weaviate.WeaviateClient, project_settings: Settings, embedder: Embedder
) -> None:
    InsightStore.open(client, project_settings, embedder)
    with pytest.raises(
        EmbedderMismatch, match=r"holds vectors of use-m3@0\.2\.1 \(512 dims\).*other-model@1 \(384 dims\)"
    ):
        InsightStore.open(client, project_settings, OtherEmbedder())


def test_foreign_collection_is_not_adopted(
    client: weaviate.WeaviateClient, project_settings: Settings, embedder: Embedder
) -> None:
    name = f"Foreign_{project_settings.project.replace('-', '_')}"
    foreign = client.collections.create(name)
    try:
        with pytest.raises(HindsightError, match="not created by this version of Hindsight Insights"):
            check_binding(foreign, name, tenants=True)
    finally:
        client.collections.delete(name)


def test_filtered_vector_search_walks_the_graph_above_the_cutoff(
    client: weaviate.WeaviateClient, project_settings: Settings, embedder: Embedder
) -> None:
    """The flat-search cutoff is set on new collections and on older ones when they are opened."""
    insights = ensure_collections(client, project_settings.project, embedder).insights

    def cutoff() -> Any:
        return insights.config.get().vector_config["default"].vector_index_config.flat_search_cutoff  # type: ignore[index, union-attr]

    assert cutoff() == FLAT_SEARCH_CUTOFF
    insights.config.update(
        vector_config=[
            Reconfigure.Vectors.update(
                name="default", vector_index_config=Reconfigure.VectorIndex.hnsw(flat_search_cutoff=40000)
            )
        ]
    )
    ensure_collections(client, project_settings.project, embedder)
    assert cutoff() == FLAT_SEARCH_CUTOFF


def test_vectors_made_the_old_way_are_kept_with_a_warning_at_open_and_made_again_by_the_migration(
    client: weaviate.WeaviateClient, project_settings: Settings, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    """A collection whose binding predates the vector text version (vectors from topic, action and observation):
    opening it changes nothing and warns, naming the command; search keeps working. The migration makes every
    insight's vector (and search text) again from what it says, and the binding then records the version."""
    store = InsightStore.open(client, project_settings, embedder)
    drafts = [
        InsightDraft.parse(
            {
                "topic": f"退货地址 {index}",
                "kind": "fact",
                "scene": "售后服务",
                "action": f"退货寄到 {index} 号仓。",
                "observation": "一段很长的经过：" * 20,
                "evidence": f"我要退货，寄到哪个仓？{index}",
            }
        )
        for index in range(3)
    ]
    ids = [store.save(admitted_as_is(draft)).id for draft in drafts]
    insights = project_collection(client, project_settings.project, INSIGHTS)
    old_texts = [f"{d.topic}\n{d.action}\n{d.observation}\n{d.scene}" for d in drafts]
    old_vectors = embedder.embed(old_texts)
    for insight_id, vector in zip(ids, old_vectors, strict=True):
        insights.data.update(uuid=insight_id, vector={"default": vector.tolist()})
    # The search text of an insight scrubbed before forgetting remade it: it still held the forgotten user's words.
    search_text = str(insights.query.fetch_object_by_id(ids[0]).properties["search_text"])
    insights.data.update(uuid=ids[0], properties={"search_text": search_text + " alice 的 原话"})
    # A slot key made by an older normaliser (which dropped a number's sign): the migration makes it again too.
    slot_key = str(insights.query.fetch_object_by_id(ids[1]).properties["slot_key"])
    insights.data.update(uuid=ids[1], properties={"slot_key": "made the old way", "topic_key": "made the old way"})
    store.tenancy.record_vectors(1)  # as the migration into tenants records a project copied with such vectors

    assert ensure_collections(client, project_settings.project, embedder).vector_text_version == 1
    with caplog.at_level(logging.WARNING, logger="hindsight_insights.store.insights"):
        reopened = InsightStore.open(client, project_settings, embedder)
    assert reopened.vectors_outdated and "python -m hindsight_cli migrate --project test-" in caplog.text
    for insight_id, vector in zip(ids, old_vectors, strict=True):  # opening made nothing again
        stored = insights.query.fetch_object_by_id(insight_id, include_vector=True)
        assert stored is not None and np.allclose(vector_of(stored), vector, atol=1e-5)
    # Search keeps working meanwhile (the old vectors rank below the no-match gate; a plain threshold finds them).
    found = reopened.retrieval.search("我要退货，寄到哪个仓？1", scene="售后服务", score_threshold=0.0)
    assert sorted(hit.insight.id for hit in found) == sorted(ids)

    assert embed_again(reopened.insight_table, embedder, reopened.tenancy, batch_size=2) == 3
    expected = embedder.embed([embedding_text(reopened.get(insight_id)) for insight_id in ids])
    for insight_id, vector in zip(ids, expected, strict=True):
        stored = insights.query.fetch_object_by_id(insight_id, include_vector=True)
        assert stored is not None and np.allclose(vector_of(stored), vector, atol=1e-5)
    assert insights.query.fetch_object_by_id(ids[0]).properties["search_text"] == search_text
    assert insights.query.fetch_object_by_id(ids[1]).properties["slot_key"] == slot_key
    assert reopened.tenancy.vector_text_version() == VECTOR_TEXT_VERSION
    assert ensure_collections(client, project_settings.project, embedder).vector_text_version == VECTOR_TEXT_VERSION
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="hindsight_insights.store.insights"):
        migrated = InsightStore.open(client, project_settings, embedder)
    assert not migrated.vectors_outdated and "migrate" not in caplog.text
    assert migrated.retrieval.search("我要退货，寄到哪个仓？1", scene="售后服务")[0].insight.id == ids[1]
