"""A write of an insight, with the trust boundary as a type.

A `WriteCommand` is two parts. `Provenance` is trusted: who writes and for whom, from which session and source,
and what scope the writer asks for. It is built only from what the caller knows for itself: Dify's runtime (the end
user, the conversation) and the builder's `form: form` settings, the worker's or the CLI's own context, or the
rule-based detector. `InsightContent` (models.py) is what a model or a person wrote; it has no field for any of
those, so nothing a model writes can choose whose data it is, widen its scope or mark it as reviewed.

Every write goes through governance.writing.write (or write_many), which admits the command (screening, redaction,
scope: scope.py) before the store sees it.
"""

from __future__ import annotations

from dataclasses import dataclass

from hindsight_insights.detection.correction_types import Correction
from hindsight_insights.models import InsightContent, Scope


@dataclass(frozen=True)
class Provenance:
    """The trusted part of a write.

    source: what wrote it (dify:save_insight, detector, reflection:<name>, an operator's import).
    user_id: the end user whose conversation taught it (Dify's end user, or the builder's end_user_id setting);
        None only for an operator's own project-wide write.
    session_id: the conversation it was learned in (Dify's conversation id, the stored turn's session).
    scope: what the writer asks for, from a trusted setting (the builder's `scope` form setting); None: the default
        of scope.py.
    correction: the rule-based detector's finding (its type and confidence), when the detector wrote it: it asks for
        a scope by the table in scope.py, and only its confidence may verify a fact by agreement.
    planted: why the session it was learned in holds an instruction planted for an AI
        (screening.planted_instruction, read from the stored turns by the writer), when one does: it waits for a
        reviewer.
    """

    source: str
    user_id: str | None
    session_id: str | None = None
    scope: Scope | None = None
    correction: Correction | None = None
    planted: str | None = None


@dataclass(frozen=True)
class WriteCommand:
    """One insight to write: what was written (`content`) and the trusted context it was written in."""

    content: InsightContent
    provenance: Provenance
