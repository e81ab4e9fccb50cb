"""The reflection worker with the offline extractor: reflections per minute and the worker process's peak RSS.

One local Weaviate, two projects filled alike with ended 10-turn sessions (the labelled reflection sessions, cycled to
ten turns, each copy a user of its own), recorded through the plugin's record_turn. Side by side:

- "worker": `python -m hindsight_cli worker --once` as its own process, as an operator runs it (state in SQLite):
  finding the ended sessions, claiming each, reflecting, saving; its peak RSS from the kernel (wait4);
- "engine": the same reflections by ReflectionEngine.reflect_session in this process, without the worker's
  scanning and claims.

The ratio worker/engine is the worker's own overhead per reflection. The RSS target is 300 MB. Also printed: the
reflection prompt a model would get for those 10-turn sessions, in characters and in Qwen tokens (bench/tokens.py), and
the share of it that is the same for every session (system prompt and instructions), which the prompt cache serves.

    .venv/bin/python -m bench.bench_worker [--sessions 120]
"""

from __future__ import annotations

from hindsight_insights.quiet import quiet_dependency_warnings

quiet_dependency_warnings()  # before anything imports weaviate-client

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.tokens import qwen_tokens
from hindsight_dify import Context, StoreCache, credentials_for, run
from hindsight_insights.config import Settings
from hindsight_insights.reflection.engine import ReflectionEngine
from hindsight_insights.reflection.offline import OfflineExtractor
from hindsight_insights.reflection.transcript import Variant
from hindsight_insights.store import InsightStore
from hindsight_insights.weaviate_server import LocalWeaviate, ensure_binary, start_local

SESSIONS = Path(__file__).parent / "data" / "reflection_sessions.json"
TURNS_PER_SESSION = 10
RSS_TARGET_MB = 300


def ten_turns(session: dict[str, Any]) -> list[dict[str, str]]:
    turns: list[dict[str, str]] = session["turns"]
    return [turns[index % len(turns)] for index in range(TURNS_PER_SESSION)]


def fill(stores: StoreCache, credentials: dict[str, Any], count: int) -> list[str]:
    """`count` sessions, each of its own user, recorded through the plugin's record_turn (so that the corrections in
    them are flagged, as the worker needs). Returns their ids."""
    labelled = json.loads(SESSIONS.read_text())["sessions"]
    session_ids = []
    for number in range(count):
        session = labelled[number % len(labelled)]
        session_id = f"bench-{number:04d}"
        for index, turn in enumerate(ten_turns(session)):
            parameters = {
                "user_message": turn["user"],
                "assistant_message": turn["assistant"],
                "scene": session["scene"],
            }
            context = Context(
                user_id=f"{session['user_id']}-{number}", conversation_id=session_id, message_id=f"{session_id}-{index}"
            )
            result = run(stores, "record_turn", credentials, parameters, context)
            if "error" in result.json:
                raise SystemExit(f"record_turn failed: {result.json['error']['message']}")
        session_ids.append(session_id)
    return session_ids


@dataclass
class WorkerRun:
    seconds: float
    peak_rss_mb: float
    reflections: list[tuple[list[str], Variant]]
    failed: int


def run_worker(server: LocalWeaviate, project: str, state_dir: Path) -> WorkerRun:
    """One `worker --once` process, from start to exit, over the project's ended sessions."""
    environment = {
        **os.environ,
        "HINDSIGHT_WEAVIATE_URL": server.url,
        "HINDSIGHT_WEAVIATE_GRPC_PORT": str(server.grpc_port),
        "HINDSIGHT_WEAVIATE_API_KEY": server.api_key,
        "HINDSIGHT_PROJECT": project,
        "HINDSIGHT_REFLECTION_LLM": "offline",
        "HINDSIGHT_WORKER_STATE_URL": f"sqlite:///{state_dir / f'{project}.sqlite'}",
        "HINDSIGHT_WORKER_IDLE_MINUTES": "0.02",  # the sessions were written just before: ended after 1.2 s
        "HINDSIGHT_WORKER_POLL_INTERVAL_S": "3600",  # one poll reflects on them all
    }
    command = [sys.executable, "-m", "hindsight_cli", "worker", "--once", "--json"]
    output, errors = state_dir / f"{project}.json", state_dir / f"{project}.log"
    started = time.monotonic()
    with output.open("w") as stdout, errors.open("w") as stderr:
        process = subprocess.Popen(command, env=environment, stdout=stdout, stderr=stderr)
        _, status, usage = os.wait4(process.pid, 0)  # this child's own peak RSS, in KiB
    seconds = time.monotonic() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"worker --once failed:\n{errors.read_text()[-2000:]}")
    peak_kib = usage.ru_maxrss
    reflections = json.loads(output.read_text())["reflections"]
    return WorkerRun(
        seconds=seconds,
        peak_rss_mb=peak_kib / 1024,
        reflections=[(item["session_ids"], item["variant"]) for item in reflections],
        failed=sum(item["outcome"] != "ok" for item in reflections),
    )


def run_engine(store: InsightStore, reflections: list[tuple[list[str], Variant]]) -> tuple[float, int]:
    """The worker's reflections again, on the twin project, in this process. Returns (seconds, failed)."""
    engine = ReflectionEngine(store, OfflineExtractor(store.settings))
    started = time.monotonic()
    reports = [engine.reflect(session_ids, variant) for session_ids, variant in reflections]
    return time.monotonic() - started, sum(report.outcome != "ok" for report in reports)


@dataclass(frozen=True)
class PromptSize:
    """The median session-end prompt: characters, and Qwen tokens (bench/tokens.py) split into the part that is the
    same for every session (system prompt and instructions, what the prompt cache serves) and the transcript."""

    characters: float
    fixed_share: float
    system_tokens: float
    transcript_tokens: float


def prompt_sizes(store: InsightStore, session_ids: list[str]) -> PromptSize:
    engine = ReflectionEngine(store, OfflineExtractor(store.settings))
    totals, shares, system_tokens, transcript_tokens = [], [], [], []
    for session_id in session_ids:
        prompt = engine.prepare([session_id], "session").prompt
        total = len(prompt.system) + len(prompt.user)
        totals.append(total)
        shares.append(len(prompt.system) / total)
        system_tokens.append(qwen_tokens(prompt.system))
        transcript_tokens.append(qwen_tokens(prompt.user))
    return PromptSize(
        statistics.median(totals),
        statistics.median(shares),
        statistics.median(system_tokens),
        statistics.median(transcript_tokens),
    )


def per_minute(count: int, seconds: float) -> str:
    return f"{count / seconds * 60:.0f}/min" if seconds > 0 else "n/a"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=120)
    args = parser.parse_args()
    run_id = uuid.uuid4().hex[:8]
    names = ("idle", "worker", "engine")  # idle: an empty project, for the worker's start-up alone
    with tempfile.TemporaryDirectory() as work:
        base = Settings(_env_file=None, weaviate_url=None, weaviate_insert_timeout_s=120)
        server = start_local(ensure_binary(base), Path(work) / "weaviate")
        cache = StoreCache(base)
        try:
            credentials = {
                name: credentials_for(server.settings(base).model_copy(update={"project": f"bench-{name}-{run_id}"}))
                for name in names
            }
            cache.store_for(credentials["idle"])  # its collections, empty
            sessions = {name: fill(cache, credentials[name], args.sessions) for name in ("worker", "engine")}
            print(f"{args.sessions} sessions of {TURNS_PER_SESSION} turns in each of two projects", flush=True)
            time.sleep(2)  # past the worker's idle time
            idle = run_worker(server, credentials["idle"]["project"], Path(work))
            busy = run_worker(server, credentials["worker"]["project"], Path(work))
            engine_store = cache.store_for(credentials["engine"])
            engine_s, engine_failed = run_engine(engine_store, busy.reflections)
            prompt = prompt_sizes(engine_store, sessions["engine"][:40])
        finally:
            cache.close()
            server.stop()
    count = len(busy.reflections)
    reflecting_s = busy.seconds - idle.seconds
    print(f"worker --once, empty project: {idle.seconds:.1f} s (start-up: Python, embedder, Weaviate, state db)")
    print(
        f"worker --once, {args.sessions} sessions: {busy.seconds:.1f} s, {count} reflections ({busy.failed} failed) "
        f"-> {per_minute(count, reflecting_s)} beyond start-up, {per_minute(count, busy.seconds)} start-up included"
    )
    engine_rate = per_minute(count, engine_s)
    print(f"engine in process, same reflections: {engine_s:.1f} s ({engine_failed} failed) -> {engine_rate}")
    if count and engine_s > 0:
        print(f"ratio worker/engine per reflection, beyond start-up: {reflecting_s / engine_s:.2f}x (scans and claims)")
    verdict = "met" if busy.peak_rss_mb <= RSS_TARGET_MB else "not met"
    print(
        f"worker peak RSS: {busy.peak_rss_mb:.0f} MB reflecting, {idle.peak_rss_mb:.0f} MB idle "
        f"(target {RSS_TARGET_MB} MB: {verdict})"
    )
    tokens = prompt.system_tokens + prompt.transcript_tokens
    print(
        f"session-end prompt for a 10-turn session: median {prompt.characters:.0f} characters, of which "
        f"{prompt.fixed_share:.0%} is the same for every session (the cacheable system prompt)"
    )
    print(
        f"  in Qwen tokens: median {tokens:.0f} = {prompt.system_tokens:.0f} system (cacheable, "
        f"{prompt.system_tokens / tokens:.0%}) + {prompt.transcript_tokens:.0f} transcript; one call per reflection"
    )


if __name__ == "__main__":
    main()
