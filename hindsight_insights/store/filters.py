"""The Weaviate filters the store's rules are written in: who may see what, and which insights share a slot."""

from __future__ import annotations

from datetime import datetime

from weaviate.classes.query import Filter, FilterReturn

from hindsight_insights.models import GENERAL_SCENE, InsightStatus, Scope, normalize_scene

WeaviateFilter = FilterReturn


def visible_to(user_id: str | None) -> WeaviateFilter:
    """Project-wide insights, and this user's own."""
    scope = Filter.by_property("scope").equal(Scope.PROJECT.value)
    if user_id:
        scope = scope | (
            Filter.by_property("scope").equal(Scope.USER.value) & Filter.by_property("user_id").equal(user_id)
        )
    return scope


def eligible(scene: str, user_id: str | None, now: datetime) -> WeaviateFilter:
    """Scene (given or general), then scope (this user or project-wide), then active and unexpired."""
    scene = normalize_scene(scene)
    scenes = [GENERAL_SCENE] if scene == GENERAL_SCENE else [scene, GENERAL_SCENE]
    return Filter.all_of(
        [
            Filter.by_property("scene").contains_any(scenes),
            visible_to(user_id),
            Filter.by_property("status").equal(InsightStatus.ACTIVE.value),
            Filter.by_property("expire_at").is_none(True) | Filter.by_property("expire_at").greater_than(now),
        ]
    )


def active_in_slot(scene: str, scope: Scope, user_id: str | None) -> WeaviateFilter:
    """Active insights of one scene and scope (and user, for user scope): where a newer one supersedes."""
    parts = [
        Filter.by_property("scene").equal(scene),
        Filter.by_property("scope").equal(scope.value),
        Filter.by_property("status").equal(InsightStatus.ACTIVE.value),
    ]
    if scope is Scope.USER and user_id:
        parts.append(Filter.by_property("user_id").equal(user_id))
    return Filter.all_of(parts)


def owned_by(user_id: str) -> WeaviateFilter:
    return Filter.by_property("user_id").equal(user_id)
