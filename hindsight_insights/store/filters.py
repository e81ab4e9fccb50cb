"""The Weaviate filters the store's rules are written in: who may see what, what is the rule now, one slot."""

from __future__ import annotations

from datetime import datetime

from weaviate.classes.query import Filter, FilterReturn

from hindsight_insights.keys import GENERAL_SCENE, scene_key
from hindsight_insights.models import InsightStatus, Scope

WeaviateFilter = FilterReturn


def visible_to(user_id: str | None) -> WeaviateFilter:
    """Project-wide insights, and this user's own."""
    scope = Filter.by_property("scope").equal(Scope.PROJECT.value)
    if user_id:
        scope = scope | owned_by(user_id)
    return scope


def in_force(now: datetime) -> WeaviateFilter:
    """The rule of its slot now: active, or superseded by versions that have all expired (store/chain.py); and not
    expired itself. The expiry sweep later writes what this filter already sees."""
    resumed = Filter.by_property("status").equal(InsightStatus.SUPERSEDED.value) & Filter.by_property(
        "resume_at"
    ).less_or_equal(now)
    return (Filter.by_property("status").equal(InsightStatus.ACTIVE.value) | resumed) & (
        Filter.by_property("expire_at").is_none(True) | Filter.by_property("expire_at").greater_than(now)
    )


def eligible(scene: str, user_id: str | None, now: datetime) -> WeaviateFilter:
    """Scene (given or general), then scope (this user or project-wide), then in force."""
    key = scene_key(scene)
    scenes = [GENERAL_SCENE] if key == GENERAL_SCENE else [key, GENERAL_SCENE]
    return Filter.all_of([Filter.by_property("scene_key").contains_any(scenes), visible_to(user_id), in_force(now)])


def in_slot(slot_key: str) -> WeaviateFilter:
    return Filter.by_property("slot_key").equal(slot_key)


def owned_by(user_id: str) -> WeaviateFilter:
    """A user's own insights (user scope): they go when the user is forgotten."""
    return Filter.by_property("scope").equal(Scope.USER.value) & Filter.by_property("user_id").equal(user_id)


def supported_by(user_id: str) -> WeaviateFilter:
    """Project-wide insights that this user's conversations support."""
    return Filter.by_property("scope").equal(Scope.PROJECT.value) & Filter.by_property("supporters").contains_any(
        [user_id]
    )
