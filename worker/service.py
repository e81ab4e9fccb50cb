"""A worker opened from the settings, for the CLI: Weaviate (the configured URL, or a local server for the duration),
the project's store, the reflector `reflection_llm` chooses, and the state database."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator, Sequence

from sqlalchemy import make_url

from hindsight_insights.config import Settings
from hindsight_insights.detector_model import learned_detector
from hindsight_insights.errors import HindsightError
from hindsight_insights.reflection import ExtractionRequest, Extractor, ReflectedInsight, Reflector, load_reflector
from hindsight_insights.reflection.offline import OfflineExtractor
from hindsight_insights.store import open_store
from hindsight_insights.weaviate_server import running_weaviate
from worker.clock import Clock
from worker.db import open_engine, state_url
from worker.metrics import metrics_served
from worker.runner import ReflectionWorker
from worker.schedule import serve

log = logging.getLogger(__name__)


class NoReflection:
    """The source of a worker that only sweeps (`expire`, `worker-status`): those need no model and no key."""

    name = "none"

    def extract(self, request: ExtractionRequest) -> Sequence[ReflectedInsight]:
        raise HindsightError("this command does not reflect")


@contextlib.contextmanager
def open_worker(
    settings: Settings,
    *,
    reflects: bool = True,
    source: Reflector | Extractor | None = None,
    clock: Clock | None = None,
) -> Iterator[ReflectionWorker]:
    """The worker the settings describe. The reflector is made first, so a missing key or endpoint fails before
    anything is started."""
    chosen = source or (load_reflector(settings) if reflects else NoReflection())
    with running_weaviate(settings) as running, contextlib.closing(open_store(running)) as store:
        if isinstance(chosen, OfflineExtractor):  # the rules' extractor reads with the learned detector beside them
            chosen = chosen.with_detector(learned_detector(store.embedder, running))
        engine = open_engine(state_url(running))
        try:
            yield ReflectionWorker(store, chosen, engine, settings=running, clock=clock)
        finally:
            engine.dispose()


def run(worker: ReflectionWorker, stop: threading.Event) -> None:
    """Run the worker on its schedule until `stop` is set, with its metrics served when a port is configured."""
    with metrics_served(worker, worker.settings.metrics_port) as port:
        if port is not None:
            log.info("metrics at http://127.0.0.1:%d/metrics", port)
        serve(worker, worker.settings, worker.state, stop)


def shown_url(settings: Settings) -> str:
    """The state database's URL without its password, for a log line."""
    return make_url(state_url(settings)).render_as_string(hide_password=True)
