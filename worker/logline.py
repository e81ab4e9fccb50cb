"""One structured line per reflection: a JSON object on the `worker.reflection` logger (the CLI prints that logger's
messages as they are, so a log shipper reads one JSON object per line)."""

from __future__ import annotations

import json
import logging
from datetime import date

from hindsight_insights.reflection import ReflectionReport

log = logging.getLogger("worker.reflection")


def reflection_line(
    report: ReflectionReport,
    *,
    project: str,
    trigger: str,
    subject: str,
    attempt: int,
    worker: str,
    day: date,
    spent: int,
    budget: int,
) -> str:
    line = {
        "event": "reflection",
        "project": project,
        "trigger": trigger,
        "subject": subject,
        "variant": report.variant,
        "user_id": report.user_id,
        "session_ids": report.session_ids,
        "attempt": attempt,
        "outcome": report.outcome,
        "reason": report.reason,
        "counts": report.counts,
        "saved_ids": [str(i) for i in report.saved_ids],
        "llm_calls": report.llm_calls,
        "tokens_in": report.tokens_in,
        "tokens_out": report.tokens_out,
        "cached_share": report.cached_share,
        "model": report.model,
        "via_batch": report.via_batch,
        "duration_s": report.duration_s,
        "worker": worker,
        "day": day.isoformat(),
        "spent_today": spent,
        "budget": budget,
    }
    return json.dumps(line, ensure_ascii=False, separators=(",", ":"))


def log_reflection(line: str, failed: bool) -> None:
    log.log(logging.WARNING if failed else logging.INFO, line)
