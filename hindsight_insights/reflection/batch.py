"""The nightly bulk run over Anthropic's Message Batches API (half the price of direct calls, results within 24 h).

    submit   prepare each group of sessions (one user's sessions for the nightly variant), build the same request a
             direct call would send, and create one batch; each request's custom_id names its group
    wait     poll `retrieve` until the batch has ended
    collect  stream the results (JSONL, in no particular order), map each custom_id back to its sessions, and hand
             each succeeded message to ReflectionEngine.finish: parsed, verified and saved like a direct answer

A `BatchJob` is plain data (pydantic): the worker can store it and collect in another process. Collecting reads the
sessions again, so a user forgotten in the meantime has nothing saved. A malformed result is retried once with a
direct call (the engine's single retry); an errored, expired or canceled request becomes a failed report with the
reason, to be reflected on another night. The system prompt is cached with the 1-hour TTL: batch requests are
processed over more than the default 5 minutes.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from anthropic.types.messages import MessageBatch, MessageBatchResult
from anthropic.types.messages.batch_create_params import Request
from pydantic import BaseModel, ConfigDict

from hindsight_insights.errors import HindsightError
from hindsight_insights.reflection.claude import AnthropicReflector, CacheTtl
from hindsight_insights.reflection.engine import ReflectionEngine
from hindsight_insights.reflection.output import REFLECTION_SCHEMA
from hindsight_insights.reflection.report import ReflectionReport
from hindsight_insights.reflection.transcript import Variant

log = logging.getLogger(__name__)


class BatchNotReady(HindsightError):
    """The batch was still processing when the wait ended; collect it later with the same BatchJob."""


class BatchRequest(BaseModel):
    model_config = ConfigDict(frozen=True)

    custom_id: str
    variant: Variant
    session_ids: list[str]


class BatchJob(BaseModel):
    """A submitted batch and what each of its requests is about."""

    model_config = ConfigDict(frozen=True)

    batch_id: str
    model: str
    submitted_at: datetime
    requests: list[BatchRequest]


def custom_id(variant: Variant, index: int, session_ids: Sequence[str]) -> str:
    """Unique within the batch and within the API's pattern ^[a-zA-Z0-9_-]{1,64}$, whatever the session ids hold."""
    digest = hashlib.sha256("\n".join(session_ids).encode()).hexdigest()[:16]
    return f"{variant}-{index:05d}-{digest}"


class ReflectionBatch:
    def __init__(
        self,
        engine: ReflectionEngine,
        reflector: AnthropicReflector,
        *,
        poll_interval_s: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
        cache_ttl: CacheTtl = "1h",
    ) -> None:
        self._engine = engine
        self._reflector = reflector
        self._poll_interval_s = poll_interval_s
        self._sleep = sleep
        self._cache_ttl: CacheTtl = cache_ttl

    def run(
        self, groups: Sequence[Sequence[str]], variant: Variant = "nightly", *, timeout_s: float | None = None
    ) -> list[ReflectionReport]:
        """Submit, wait and collect: one report per group, in the order of `groups`."""
        job, failed = self.submit(groups, variant)
        if job is None:
            return failed
        self.wait(job, timeout_s=timeout_s)
        collected = self.collect(job)
        by_group = {tuple(report.session_ids): report for report in [*failed, *collected]}
        ordered = [by_group.pop(tuple(ids), None) for ids in map(list, groups)]
        return [report for report in ordered if report is not None] + list(by_group.values())

    def submit(
        self, groups: Sequence[Sequence[str]], variant: Variant = "nightly"
    ) -> tuple[BatchJob | None, list[ReflectionReport]]:
        """Create the batch. Groups that cannot be reflected on (no turns, several users) come back as failed reports
        right away; None instead of a job when no group is left."""
        requests: list[Request] = []
        planned: list[BatchRequest] = []
        failed: list[ReflectionReport] = []
        for index, session_ids in enumerate(groups):
            try:
                prepared = self._engine.prepare(session_ids, variant)
            except HindsightError as error:
                failed.append(self._engine.failure(session_ids, variant, str(error), via_batch=True))
                continue
            key = custom_id(variant, index, prepared.session_ids)
            prompt = prepared.prompt
            params = self._reflector.request(prompt.system, prompt.user, REFLECTION_SCHEMA, cache_ttl=self._cache_ttl)
            requests.append({"custom_id": key, "params": params})
            planned.append(BatchRequest(custom_id=key, variant=variant, session_ids=list(session_ids)))
        if not requests:
            return None, failed
        batch = self._reflector.client.messages.batches.create(requests=requests)
        log.info("submitted reflection batch %s with %d requests", batch.id, len(requests))
        job = BatchJob(batch_id=batch.id, model=self._reflector.model, submitted_at=datetime.now(UTC), requests=planned)
        return job, failed

    def status(self, job: BatchJob) -> MessageBatch:
        return self._reflector.client.messages.batches.retrieve(job.batch_id)

    def wait(self, job: BatchJob, *, timeout_s: float | None = None) -> MessageBatch:
        """Poll until the batch has ended. BatchNotReady after `timeout_s` (None: wait as long as it takes; the API
        ends every batch within 24 hours)."""
        interval = self._poll_interval_s or self._engine_settings_poll()
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            batch = self.status(job)
            if batch.processing_status == "ended":
                counts = batch.request_counts
                log.info(
                    "reflection batch %s ended: %d succeeded, %d errored, %d expired, %d canceled",
                    batch.id,
                    counts.succeeded,
                    counts.errored,
                    counts.expired,
                    counts.canceled,
                )
                return batch
            if deadline is not None and time.monotonic() + interval > deadline:
                raise BatchNotReady(f"batch {job.batch_id} is still {batch.processing_status}; collect it later")
            self._sleep(interval)

    def collect(self, job: BatchJob) -> list[ReflectionReport]:
        """One report per request of the job, in the job's order, from the ended batch's results."""
        by_id = {request.custom_id: request for request in job.requests}
        reports: dict[str, ReflectionReport] = {}
        for line in self._reflector.client.messages.batches.results(job.batch_id):
            request = by_id.get(line.custom_id)
            if request is None:
                log.warning("batch %s returned a result for unknown request %s", job.batch_id, line.custom_id)
                continue
            reports[line.custom_id] = self._report(request, line.result)
        for request in job.requests:
            if request.custom_id not in reports:
                reports[request.custom_id] = self._engine.failure(
                    request.session_ids, request.variant, "the batch returned no result for it", via_batch=True
                )
        return [reports[request.custom_id] for request in job.requests]

    def _report(self, request: BatchRequest, result: MessageBatchResult) -> ReflectionReport:
        if result.type == "succeeded":
            answer = self._reflector.answer(result.message, REFLECTION_SCHEMA)
            started = time.monotonic()
            try:
                prepared = self._engine.prepare(request.session_ids, request.variant)
            except HindsightError as error:  # e.g. the user was forgotten after the batch was submitted
                return self._engine.failure(
                    request.session_ids, request.variant, str(error), answer=answer, via_batch=True
                )
            return self._engine.finish(prepared, answer, started=started, via_batch=True)
        if result.type == "errored":
            problem = result.error.error
            reason = f"the batch request errored: {problem.type}: {problem.message}"
        elif result.type == "expired":
            reason = "the batch expired before this request was processed"
        else:
            reason = "the batch was canceled before this request was processed"
        return self._engine.failure(request.session_ids, request.variant, reason, via_batch=True)

    def _engine_settings_poll(self) -> float:
        return self._engine.settings.reflection_batch_poll_s
