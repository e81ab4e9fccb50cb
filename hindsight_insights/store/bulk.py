"""Bulk deletion that finishes: Weaviate's delete_many removes at most the server's query limit (10,000 by default)
per call and reports success, so one call can leave objects behind."""

from __future__ import annotations

from weaviate.classes.query import FilterReturn
from weaviate.collections import Collection


def delete_all(collection: Collection, where: FilterReturn) -> int:
    """Delete every object matching `where`, repeating until none is left. Returns how many were really deleted."""
    deleted = 0
    while True:
        result = collection.data.delete_many(where=where)
        deleted += int(result.successful)
        if result.matches == 0 or result.successful == 0:
            return deleted
