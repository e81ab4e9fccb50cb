"""Collection naming, idempotent creation, and the embedder binding."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
import weaviate
from weaviate.classes.config import Reconfigure

from hindsight_insights.config import Settings
from hindsight_insights.embedder import Embedder, Vectors
from hindsight_insights.errors import EmbedderMismatch, HindsightError, InvalidInput
from hindsight_insights.store import InsightStore
from hindsight_insights.store.schema import FLAT_SEARCH_CUTOFF, collection_names, ensure_collections

VALID_CLASS = re.compile(r"^[A-Z][_0-9A-Za-z]*$")


@pytest.mark.parametrize("project", ["default", "售后客服", "Shop-CN", "shop cn", "a" * 100, "电商 / 退货 v2", "🙂"])
def test_any_project_name_maps_to_valid_class_names(project: str) -> None:
    names = collection_names(project)
    assert VALID_CLASS.match(names.insights) and VALID_CLASS.match(names.turns)
    assert names.insights.endswith("_Insight") and names.turns.endswith("_Turn")


def test_mapping_is_readable_and_collision_free() -> None:
    assert collection_names("default").insights == "Hindsight_default_Insight"
    assert collection_names("shop_cn").insights == "Hindsight_shop_cn_Insight"
    distinct = ["Shop-CN", "shop-cn", "shop cn", "shop_cn", "售后", "售前", "ＳＨＯＰ"]
    assert len({collection_names(name).insights for name in distinct}) == len(distinct)
    assert collection_names("ＳＨＯＰ") == collection_names("SHOP")  # full-width letters are the same name


def test_empty_project_name_is_rejected() -> None:
    with pytest.raises(InvalidInput, match="project: must not be empty"):
        collection_names("  ")


def test_creation_is_idempotent_and_records_the_embedder(
    client: weaviate.WeaviateClient, project_settings: Settings, embedder: Embedder
) -> None:
    first = ensure_collections(client, project_settings.project, embedder)
    second = ensure_collections(client, project_settings.project, embedder)
    assert first.insights.name == second.insights.name
    description = first.insights.config.get().description or ""
    assert embedder.id in description and '"dimension": 512' in description


class OtherEmbedder:
    """Another model as the store sees one: an id and a dimension (its vectors are never computed here)."""

    @property
    def id(self) -> str:
        return "other-model@1"

    @property
    def dimension(self) -> int:
        return 384

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        return np.zeros((len(texts), self.dimension), dtype=np.float32)


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
    client.collections.create(collection_names(project_settings.project).insights)
    with pytest.raises(HindsightError, match="not created by Hindsight Insights"):
        ensure_collections(client, project_settings.project, embedder)


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
