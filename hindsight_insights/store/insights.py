"""The store of one project: a facade over its rooms, each written over an `InsightTable` (table.py).

    writing.py      save, import_many: the save policy, slots, chains, merging, insert races, undo
    lifecycle.py    approve, revise, set_status, delete, expire_sweep, retire
    forgetting.py   forget_user and the scrubbing of a forgotten user's words
    reads.py        get, visible_ids, slot_versions_of, history, list_insights, count
    retrieval.py    search, recall, standing_rules, gate_inputs: `store.retrieval` (Weaviate's only)

`ProjectStore` composes the rooms over any table and turn log; `InsightStore` is it over Weaviate, with retrieval,
the audit trail and the connection. testkit/memory_store.py has one in memory.
"""

from __future__ import annotations

import logging
import shlex
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import weaviate

from hindsight_insights.admission import Admitted
from hindsight_insights.config import Settings
from hindsight_insights.connection import weaviate_errors
from hindsight_insights.embedder import Embedder
from hindsight_insights.errors import HindsightError
from hindsight_insights.models import (
    ForgetResult,
    Insight,
    InsightDraft,
    InsightKind,
    InsightStatus,
    SaveResult,
)
from hindsight_insights.screening import RULES_ONLY, Screen
from hindsight_insights.store.audit import AuditLog
from hindsight_insights.store.blame import BlameLedger
from hindsight_insights.store.budget import WeaviateBudget
from hindsight_insights.store.examples import ExampleLibrary
from hindsight_insights.store.forgetting import Forgetting
from hindsight_insights.store.graph import DependencyGraph
from hindsight_insights.store.lifecycle import Lifecycle
from hindsight_insights.store.ports import TurnRecords
from hindsight_insights.store.reads import InsightReads
from hindsight_insights.store.replication import replication_of
from hindsight_insights.store.retrieval import Retrieval
from hindsight_insights.store.schema import VECTOR_TEXT_VERSION, ProjectCollections
from hindsight_insights.store.suggestions import SuggestionBox
from hindsight_insights.store.table import InsightTable
from hindsight_insights.store.tenancy import ProjectTenancy, ensure_collections
from hindsight_insights.store.tenant_migration import warn_of_legacy_collections
from hindsight_insights.store.turns import TurnLog
from hindsight_insights.store.weaviate_table import WeaviateInsightTable
from hindsight_insights.store.writing import InsightWriter

log = logging.getLogger(__name__)


class ProjectStore[T: TurnRecords]:
    """Insights and turns of one project, over an insight table and a turn log."""

    def __init__(self, table: InsightTable, turns: T, settings: Settings, screen: Screen = RULES_ONLY) -> None:
        self.table = table
        self.turns = turns
        self.reads = InsightReads(table, settings.project)
        self._writer = InsightWriter(table)  # private: new insights enter only as Admitted, through save
        self.lifecycle = Lifecycle(table, self.reads)
        self.forgetting = Forgetting(table, turns)
        self._settings = settings
        self._screen = screen

    @property
    def settings(self) -> Settings:
        return self._settings

    @property
    def screen(self) -> Screen:
        """The poisoning screen every write of this store passes (governance.writing -> admission)."""
        return self._screen

    # ---- writing.py -----------------------------------------------------------------------------------------

    def save(self, admitted: Admitted, now: datetime | None = None) -> SaveResult:
        """Store one admitted draft by the save policy. Only admission makes an `Admitted`, so nothing reaches a
        project unscreened, unredacted or with a scope that admission did not decide (governance.writing.write)."""
        return self._writer.save(admitted.draft, now)

    def import_many(self, admitted: Sequence[Admitted], batch_size: int = 256, now: datetime | None = None) -> int:
        """Bulk load of admitted drafts (governance.writing.write_many); all or nothing."""
        return self._writer.import_many([one.draft for one in admitted], batch_size, now)

    # ---- reads.py -------------------------------------------------------------------------------------------

    def get(self, insight_id: uuid.UUID | str) -> Insight:
        return self.reads.get(insight_id)

    def visible_ids(
        self, insight_ids: Sequence[uuid.UUID], user_id: str | None, session_id: str | None = None
    ) -> set[uuid.UUID]:
        return self.reads.visible_ids(insight_ids, user_id, session_id)

    def slot_versions_of(self, insight: InsightDraft | Insight) -> list[Insight]:
        return self.reads.slot_versions_of(insight)

    def history(self, insight_id: uuid.UUID | str) -> list[Insight]:
        return self.reads.history(insight_id)

    def list_insights(
        self,
        *,
        status: InsightStatus | None = None,
        user_id: str | None = None,
        scene: str | None = None,
        kind: InsightKind | None = None,
        limit: int = 100,
    ) -> list[Insight]:
        return self.reads.list_insights(status=status, user_id=user_id, scene=scene, kind=kind, limit=limit)

    def count(self, *, user_id: str | None = None) -> tuple[int, int]:
        """(insights, turns), optionally of one user (their own insights, and their turns)."""
        return self.reads.count(user_id=user_id), self.turns.count(user_id=user_id)

    # ---- lifecycle.py ---------------------------------------------------------------------------------------

    def approve(self, insight_id: uuid.UUID | str, reviewer: str = "reviewer", now: datetime | None = None) -> Insight:
        return self.lifecycle.approve(insight_id, reviewer, now)

    def revise(self, insight_id: uuid.UUID | str, changes: dict[str, Any], now: datetime | None = None) -> Insight:
        return self.lifecycle.revise(insight_id, changes, now)

    def set_status(self, insight_id: uuid.UUID | str, status: InsightStatus, now: datetime | None = None) -> Insight:
        return self.lifecycle.set_status(insight_id, status, now)

    def delete(self, insight_id: uuid.UUID | str, now: datetime | None = None) -> None:
        self.lifecycle.delete(insight_id, now)

    def expire_sweep(self, now: datetime | None = None) -> int:
        return self.lifecycle.expire_sweep(now)

    def retire(self, insight_id: uuid.UUID | str, now: datetime | None = None) -> Insight:
        return self.lifecycle.retire(insight_id, now)

    # ---- forgetting.py --------------------------------------------------------------------------------------

    def forget_user(self, user_id: str, now: datetime | None = None) -> ForgetResult:
        return self.forgetting.forget_user(user_id, now)


class InsightStore(ProjectStore[TurnLog]):
    """A project's store over Weaviate. Create with `open_store(settings)` or `InsightStore.open(client, ...)`."""

    def __init__(
        self,
        collections: ProjectCollections,
        embedder: Embedder,
        settings: Settings,
        client: weaviate.WeaviateClient,
        screen: Screen = RULES_ONLY,
        *,
        owns_client: bool = False,
    ) -> None:
        self.insight_table = WeaviateInsightTable(collections.insights, embedder)
        super().__init__(self.insight_table, TurnLog(collections.turns), settings, screen)
        self.budget = WeaviateBudget(collections.budget)  # the project's daily workspace-model calls (cascade.py)
        self.tenancy = ProjectTenancy(
            client, collections.project, collections.tenant, replication=replication_of(settings)
        )
        self.audit = AuditLog(collections.audit)
        self.blame_ledger = BlameLedger(collections.blame)  # blame and support of injected insights
        self.graph = DependencyGraph(self.reads, self.insight_table, self.turns, self.blame_ledger)
        self.examples = ExampleLibrary(collections.examples, embedder, settings)  # few-shot examples
        self.suggestions = SuggestionBox(collections.suggestions, settings)  # prompt suggestions (store/suggestions.py)
        self.retrieval = Retrieval(collections.insights, embedder, settings)
        self.embedder = embedder
        self.vectors_outdated = collections.vector_text_version < VECTOR_TEXT_VERSION
        self._client = client if owns_client else None  # set when this store owns the connection (open_store)

    @classmethod
    def open(
        cls,
        client: weaviate.WeaviateClient,
        settings: Settings,
        embedder: Embedder,
        *,
        owns_client: bool = False,
        screen: Screen = RULES_ONLY,
        keep_active: bool = True,
    ) -> InsightStore:
        """The project's store over `client`. `screen` is the process's (screening.screen_for; open_store builds it):
        the rules alone unless given. `keep_active`: deactivate the least recently used projects past the cap now.
        The sweep lists every project's tenants, so a process opening many stores (the plugin) runs it at most once
        a minute and passes False in between (hindsight_dify.runtime.StoreCache)."""
        with weaviate_errors("creating the project's collections"):
            collections = ensure_collections(client, settings.project, embedder, replication=replication_of(settings))
        store = cls(collections, embedder, settings, client, screen, owns_client=owns_client)
        if keep_active:
            try:
                store.tenancy.keep_active(settings.max_active_tenants)
            except HindsightError as error:  # the cap is kept again by the next sweep or the worker's
                log.warning("could not deactivate idle projects: %s", error)
        warn_of_legacy_collections(client, settings.project)
        if store.vectors_outdated:
            # Re-embedding a large project takes minutes: an explicit step, never a side effect of opening.
            log.warning(
                "the insights of project %r have vectors made by an older version (vector text version %d, now %d): "
                "search keeps working on them, but the words of users forgotten before the upgrade may still be in "
                "them. Run `python -m hindsight_cli migrate --project %s` once to make them again.",
                settings.project,
                collections.vector_text_version,
                VECTOR_TEXT_VERSION,
                shlex.quote(settings.project),
            )
        return store

    def forget_user(self, user_id: str, now: datetime | None = None) -> ForgetResult:
        """As ProjectStore's; the user's blame, few-shot examples and quotes in prompt suggestions go too."""
        result = super().forget_user(user_id, now)
        self.blame_ledger.forget_user(user_id)
        self.examples.forget_user(user_id)
        self.suggestions.forget_user(user_id)
        return result

    def restore(self, insight_id: uuid.UUID | str, now: datetime | None = None) -> Insight:
        return self.lifecycle.restore(insight_id, now)

    def is_connected(self) -> bool:
        return self._client is None or self._client.is_connected()

    def close(self) -> None:
        self.retrieval.close()
        if self._client is not None:
            self._client.close()
