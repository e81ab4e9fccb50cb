"""The versions of one slot, and which of them is the rule now. Pure: the store reads a slot, plans, and writes.

A slot is one topic in one scene for one owner (a user, or the project). Its versions form a chain ordered by
`asserted_at` (when the content was last said), ties broken by id so that every writer computes the same order.
The plan, for every version in the chain (active, superseded or expired ones; pending, rejected and suspect
versions stand outside it):

- a version whose `expire_at` has passed is `expired`;
- the newest living version is `active`: the one rule of the slot;
- every other living version is `superseded`, and `resume_at` says when it becomes the rule again without anyone
  writing: when every newer version has expired (None if one of them never expires). Search treats a superseded
  version past its `resume_at` as active, so a holiday address that expires brings the normal one back at once;
- `supersedes` and `superseded_by` link each version to its older and newer neighbour, so the history can be walked
  both ways.

Removing the head (deleting, rejecting, expiring it, or forgetting its user) and planning again makes the newest
remaining living version active. Two writers that raced plan the same result from the same versions, so the slot
converges to exactly one active version; the store re-reads after writing until the slot is settled.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from hindsight_insights.models import Insight, InsightStatus

CHAIN_STATUSES = frozenset({InsightStatus.ACTIVE, InsightStatus.SUPERSEDED, InsightStatus.EXPIRED})


@dataclass(frozen=True)
class VersionState:
    status: InsightStatus
    supersedes: list[uuid.UUID]
    superseded_by: uuid.UUID | None
    resume_at: datetime | None


def alive(insight: Insight, now: datetime) -> bool:
    return insight.expire_at is None or insight.expire_at > now


def order(versions: Iterable[Insight]) -> list[Insight]:
    """Chain members, oldest first."""
    members = [v for v in versions if v.status in CHAIN_STATUSES]
    return sorted(members, key=lambda v: (v.asserted_at, str(v.id)))


def head(versions: Iterable[Insight], now: datetime) -> Insight | None:
    living = [v for v in order(versions) if alive(v, now)]
    return living[-1] if living else None


def plan(versions: Iterable[Insight], now: datetime) -> dict[uuid.UUID, VersionState]:
    """The state every chain member should have now."""
    members = order(versions)
    current = head(members, now)
    states = {}
    for index, version in enumerate(members):
        newer = members[index + 1 :]
        if not alive(version, now):
            status, resume_at = InsightStatus.EXPIRED, None
        elif version is current:
            status, resume_at = InsightStatus.ACTIVE, None
        else:
            expiries = [n.expire_at for n in newer]
            status = InsightStatus.SUPERSEDED
            resume_at = max(e for e in expiries if e is not None) if all(e is not None for e in expiries) else None
        states[version.id] = VersionState(
            status=status,
            supersedes=[members[index - 1].id] if index > 0 else [],
            superseded_by=newer[0].id if newer else None,
            resume_at=resume_at,
        )
    return states


def state_of(insight: Insight) -> VersionState:
    return VersionState(insight.status, list(insight.supersedes), insight.superseded_by, insight.resume_at)
