"""What blame costs record_turn: the same store with its blame ledger beside the same store seen without one (what
record_turn did before blame), interleaved round by round in one run, over one local Weaviate.

Each measured call is the second turn of a fresh session whose first answer was given `--injected` insights: either
a reply without complaint (blame writes a support mark per insight) or a correction (blame embeds the complaint,
reads the insights' stored vectors, writes the marks, and reads the tally of each insight it blamed). Rules-only
detector, no workspace model. Reported as medians and ratios (with / without).

    make bench-blame    (or: .venv/bin/python -m bench.bench_blame [--rounds N] [--injected K])
"""

from __future__ import annotations

from hindsight_insights.quiet import quiet_dependency_warnings

quiet_dependency_warnings()  # every entry point calls it first

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from hindsight_insights.commands import Provenance, WriteCommand
from hindsight_insights.config import Settings
from hindsight_insights.governance.recording import record_turn
from hindsight_insights.governance.writing import write
from hindsight_insights.models import InsightContent, TurnDraft
from hindsight_insights.store import InsightStore, open_store
from hindsight_insights.weaviate_server import running_weaviate


class WithoutBlame:
    """The store as record_turn saw it before blame: everything but the ledger (governance.blame judges only a store
    that has one: ports.BlamingStore)."""

    def __init__(self, store: InsightStore) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        if name == "blame_ledger":
            raise AttributeError(name)
        return getattr(self._store, name)


def second_turn(store: Any, settings: Settings, injected: list[uuid.UUID], complaint: bool) -> float:
    session = f"bench-{uuid.uuid4().hex[:10]}"
    first = TurnDraft(
        session_id=session,
        user_id="bench-user",
        user_message="第 1 件事怎么处理？",
        assistant_message="按第 1 条规则处理。",
        injected_insight_ids=injected,
    )
    record_turn(store, first, settings)
    said = "不对，第 1 件事要先登记，不是直接处理" if complaint else "好的，谢谢"
    second = first.model_copy(update={"user_message": said, "assistant_message": "好的。"})
    started = time.perf_counter()
    record_turn(store, second, settings)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--injected", type=int, default=5)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as data_dir:
        settings = Settings(data_dir=Path(data_dir), project="bench-blame", detector=False)
        with running_weaviate(settings) as running:
            store = open_store(running)
            try:
                injected = []
                for number in range(arguments.injected):
                    content = InsightContent.parse(
                        {
                            "topic": f"第 {number} 件事",
                            "kind": "process",
                            "action": f"当顾客问第 {number} 件事时，先登记再处理。",
                            "evidence": {"quote": f"第 {number} 件事先登记"},
                        }
                    )
                    (placed,) = write(store, WriteCommand(content, Provenance("operator", "bench-user", "s0")))
                    injected.append(placed.result.id)
                for label, complaint in (("reply without complaint", False), ("correction", True)):
                    timed: dict[str, list[float]] = {"with": [], "without": []}
                    for _ in range(arguments.rounds):  # interleaved: both see the same server state and load
                        timed["without"].append(second_turn(WithoutBlame(store), running, injected, complaint))
                        timed["with"].append(second_turn(store, running, injected, complaint))
                    with_, without = statistics.median(timed["with"]), statistics.median(timed["without"])
                    print(
                        f"record_turn, {label}, {arguments.injected} insights injected: median {with_ * 1000:.1f} ms "
                        f"with blame, {without * 1000:.1f} ms without: {with_ / without:.2f}x "
                        f"({arguments.rounds} calls each)"
                    )
            finally:
                store.close()


if __name__ == "__main__":
    main()
