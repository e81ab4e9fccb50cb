"""The Weaviate filters the store's rules are written in: who may see what, what is the rule now, one slot."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime

from weaviate.classes.query import Filter, FilterReturn

from hindsight_insights.keys import GENERAL_SCENE, scene_key
from hindsight_insights.models import InsightKind, InsightStatus, Scope

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
    expired itself. The expiry sweep later writes what this filter already sees. Insight.in_force_at is the same
    rule for an object in hand."""
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


def matching(
    *,
    status: InsightStatus | None = None,
    user_id: str | None = None,
    scene: str | None = None,
    kind: InsightKind | None = None,
) -> WeaviateFilter | None:
    """Every given condition (a listing's filters); None when none is given."""
    parts = []
    if status is not None:
        parts.append(Filter.by_property("status").equal(status.value))
    if user_id is not None:
        parts.append(owned_by(user_id))
    if scene is not None:
        parts.append(Filter.by_property("scene_key").equal(scene_key(scene)))
    if kind is not None:
        parts.append(of_kinds([kind]))
    return Filter.all_of(parts) if parts else None


def of_kinds(kinds: Iterable[InsightKind]) -> WeaviateFilter:
    return Filter.by_property("kind").contains_any([kind.value for kind in kinds])


def standing_channel() -> WeaviateFilter:
    """What recall's standing channel reads (docs/architecture.md, "Retrieval"): preferences, and a user's own rules
    of every kind. What a user taught about their own work holds for them in that scene whatever they ask."""
    return of_kinds([InsightKind.PREFERENCE]) | Filter.by_property("scope").equal(Scope.USER.value)


def situational_channel(kinds: Iterable[InsightKind]) -> WeaviateFilter:
    """What recall's situational channel reads: the given kinds, but never a user's own rule (standing_channel)."""
    return of_kinds(kinds) & Filter.by_property("scope").not_equal(Scope.USER.value)


def with_ids(ids: Iterable[uuid.UUID]) -> WeaviateFilter:
    return Filter.by_id().contains_any(list(ids))


def in_slots(slot_keys: Iterable[str]) -> WeaviateFilter:
    return Filter.by_property("slot_key").contains_any(sorted(set(slot_keys)))


def past_expiry(now: datetime) -> WeaviateFilter:
    """Versions whose expire_at has passed and that the sweep has yet to mark expired."""
    live = [InsightStatus.ACTIVE.value, InsightStatus.SUPERSEDED.value, InsightStatus.PENDING_REVIEW.value]
    return Filter.by_property("expire_at").less_or_equal(now) & Filter.by_property("status").contains_any(live)
