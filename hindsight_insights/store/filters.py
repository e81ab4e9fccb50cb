"""The Weaviate filters the store's rules are written in: who may see what, what is the rule now, one slot."""

from __future__ import annotations

from datetime import datetime

from weaviate.classes.query import Filter, FilterReturn

from hindsight_insights.keys import GENERAL_SCENE, scene_key
from hindsight_insights.models import InsightStatus, Scope

WeaviateFilter = FilterReturn


def visible_to(user_id: str | None, session_id: str | None = None) -> WeaviateFilter:
    """Project-wide insights, this user's own, and those kept for this session only."""
    scope = Filter.by_property("scope").equal(Scope.PROJECT.value)
    if user_id:
        scope = scope | (Filter.by_property("scope").equal(Scope.USER.value) & _user(user_id))
        if session_id:
            scope = scope | (
                Filter.by_property("scope").equal(Scope.SESSION.value)
                & _user(user_id)
                & Filter.by_property("evidence_session_id").equal(session_id)
            )
    return scope


def _user(user_id: str) -> WeaviateFilter:
    return Filter.by_property("user_id").equal(user_id)


def in_force(now: datetime) -> WeaviateFilter:
    """The rule of its slot now: active, or superseded by versions that have all expired (store/chain.py); and not
    expired itself. The expiry sweep later writes what this filter already sees."""
    resumed = Filter.by_property("status").equal(InsightStatus.SUPERSEDED.value) & Filter.by_property(
        "resume_at"
    ).less_or_equal(now)
    return (Filter.by_property("status").equal(InsightStatus.ACTIVE.value) | resumed) & (
        Filter.by_property("expire_at").is_none(True) | Filter.by_property("expire_at").greater_than(now)
    )


def eligible(scene: str, user_id: str | None, now: datetime, session_id: str | None = None) -> WeaviateFilter:
    """Scene (given or general), then scope (this user, this session, or project-wide), then in force."""
    key = scene_key(scene)
    scenes = [GENERAL_SCENE] if key == GENERAL_SCENE else [key, GENERAL_SCENE]
    visible = visible_to(user_id, session_id)
    return Filter.all_of([Filter.by_property("scene_key").contains_any(scenes), visible, in_force(now)])


def in_slot(slot_key: str) -> WeaviateFilter:
    return Filter.by_property("slot_key").equal(slot_key)


def owned_by(user_id: str) -> WeaviateFilter:
    """A user's own insights (user and session scope): they go when the user is forgotten."""
    own_scopes = [Scope.USER.value, Scope.SESSION.value]
    return Filter.by_property("scope").contains_any(own_scopes) & _user(user_id)


def supported_by(user_id: str) -> WeaviateFilter:
    """Project-wide insights that this user's conversations support."""
    return Filter.by_property("scope").equal(Scope.PROJECT.value) & Filter.by_property("supporters").contains_any(
        [user_id]
    )
