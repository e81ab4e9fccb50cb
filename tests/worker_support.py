"""Shared by the worker tests: a clock the test moves, and what a worker needs around it."""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from hindsight_insights.config import Settings
from hindsight_insights.errors import HindsightError
from hindsight_insights.models import TurnDraft, TurnSignals
from hindsight_insights.reflection import ExtractionRequest, Extractor, ReflectedEvidence, ReflectedInsight, Reflector
from hindsight_insights.store import InsightStore
from worker.db import open_engine
from worker.runner import ReflectionWorker


class FakeClock:
    """A clock that only moves when the test says so (thread-safe: leases are renewed from another thread)."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, **delta: float) -> datetime:
        with self._lock:
            self._now += timedelta(**delta)
            return self._now

    def set(self, moment: datetime) -> None:
        with self._lock:
            self._now = moment


# ---- a worker on a real store and a real state database -------------------------------------------------------------

NAME = re.compile(r"叫我(\S{1,4}?)就行")
TABLE = "用表格"


@dataclass
class RuleExtractor:
    """A model-free extractor (the offline one is being written elsewhere): 叫我X就行 teaches how to address the user;
    用表格 in two or more sessions (a request repeated across sessions, nightly) teaches to compare in a table.
    It keeps every request it got, so tests see what was reflected on, and can fail on purpose."""

    name: str = "rules"
    calls: list[tuple[str, list[str]]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # raised, one per call, before anything is extracted

    def extract(self, request: ExtractionRequest) -> Sequence[ReflectedInsight]:
        self.calls.append((request.variant, [s.session_id for s in request.sessions]))
        if self.failures:
            raise HindsightError(self.failures.pop(0))
        found: list[ReflectedInsight] = []
        for session in request.sessions:
            for turn in session.turns:
                match = NAME.search(turn.user_message)
                if match:
                    found.append(
                        ReflectedInsight(
                            topic="称呼",
                            kind="preference",
                            scene="general",
                            action=f"当你称呼这位用户时，叫他“{match.group(1)}”。",
                            evidence=ReflectedEvidence(
                                quote=match.group(0), turn=turn.turn_index, session=session.label
                            ),
                            confidence=0.8,
                            scope="user",
                        )
                    )
        tables = [(s, t) for s in request.sessions for t in s.turns if TABLE in t.user_message]
        if request.variant == "nightly" and len({s.session_id for s, _ in tables}) >= 2:
            session, turn = tables[-1]
            found.append(
                ReflectedInsight(
                    topic="对比格式",
                    kind="preference",
                    scene="方案对比",
                    action="当这位用户要你比较方案时，你用表格列出对比。",
                    evidence=ReflectedEvidence(quote=turn.user_message, turn=turn.turn_index, session=session.label),
                    confidence=0.8,
                    scope="user",
                )
            )
        return found

    def variants(self) -> list[str]:
        return [variant for variant, _ in self.calls]


def say(
    store: InsightStore,
    clock: FakeClock,
    session: str,
    user: str,
    text: str,
    signals: TurnSignals | None = None,
    scene: str = "general",
) -> None:
    """A turn recorded now (by the fake clock), as record_turn stores it."""
    draft = TurnDraft(
        session_id=session,
        user_id=user,
        scene=scene,
        user_message=text,
        assistant_message="好的。",
        signals=signals or TurnSignals(),
    )
    store.turns.append(draft, now=clock.now())


CORRECTION = TurnSignals(correction=True)
STOPPED = TurnSignals(stopped_generation=True)


def worker_settings(store: InsightStore, **changes: Any) -> Settings:
    return store.settings.model_copy(update={"timezone": "Asia/Shanghai", **changes})


@contextlib.contextmanager
def running_worker(
    store: InsightStore,
    url: str,
    clock: FakeClock,
    source: Reflector | Extractor,
    owner: str = "worker-test",
    **changes: Any,
) -> Iterator[ReflectionWorker]:
    engine = open_engine(url)
    try:
        yield ReflectionWorker(
            store, source, engine, settings=worker_settings(store, **changes), clock=clock, owner=owner
        )
    finally:
        engine.dispose()
