"""What may be stored, and in what state. Every writer (the plugin's tools, the worker, the CLI) passes its drafts
through here before the store sees them:

1. the poisoning screen (poisoning.py) runs on the text as given: instruction-like content, role changes, prompt
   exfiltration, data sent to an address, privilege escalation, in any disguise, is held for review, never active;
2. secrets and personal data are redacted (redaction.py) in every text field, whatever happens next;
3. scope: what one user's conversation teaches stays with that user; a request for project scope is held for review
   unless the routing rules (routing.py) promoted it.

Turns are redacted the same way before they are stored, so an insight's evidence quote still matches the stored
transcript word for word.
"""

from __future__ import annotations

from dataclasses import dataclass

from hindsight_insights.detection.poisoning import screen
from hindsight_insights.detection.redaction import redact
from hindsight_insights.models import Evidence, InsightDraft, InsightStatus, Scope, TurnDraft

PROJECT_NEEDS_REVIEW = "project-wide: learned from one user's conversation, it applies to everyone once reviewed"


@dataclass(frozen=True)
class Admitted:
    draft: InsightDraft
    redacted: list[str]  # the kinds of secret or personal data removed


def admit_insight(draft: InsightDraft, *, project_allowed: bool = False) -> Admitted:
    """The draft as it may be stored. `project_allowed`: a routing rule (never the draft's author) made it
    project-wide."""
    screening = screen(draft.topic, draft.action, draft.observation, draft.evidence.quote, *draft.tags)
    redacted: list[str] = []

    def clean(text: str) -> str:
        result = redact(text)
        redacted.extend(result.found)
        return result.text

    update: dict[str, object] = {
        "topic": clean(draft.topic),
        "action": clean(draft.action),
        "observation": clean(draft.observation),
        "tags": [clean(tag) for tag in draft.tags],
        "evidence": Evidence(
            quote=clean(draft.evidence.quote), session_id=draft.evidence.session_id, turn=draft.evidence.turn
        ),
    }
    if draft.condition_detail:
        update["condition_detail"] = clean(draft.condition_detail)
    if screening.suspect and draft.status in (InsightStatus.ACTIVE, InsightStatus.PENDING_REVIEW):
        # Also over a pending draft's own reason: a suspect must never wait for something that approves it by
        # itself (a second user's agreement). The reasons quote the text, so they are redacted like it.
        reason = redact("possible prompt injection: " + "; ".join(screening.reasons)).text
        update |= {"status": InsightStatus.PENDING_REVIEW, "review_reason": reason[:500]}
    elif (
        draft.resolved_scope is Scope.PROJECT
        and draft.user_id
        and not project_allowed
        and draft.status is InsightStatus.ACTIVE
    ):
        update |= {"status": InsightStatus.PENDING_REVIEW, "review_reason": PROJECT_NEEDS_REVIEW}
    return Admitted(draft=draft.model_copy(update=update), redacted=redacted)


def admit_turn(draft: TurnDraft) -> TurnDraft:
    """The turn as it may be stored: secrets and personal data redacted from both messages and from the answer's
    sources and tool calls (a source can be a URL with a token, a tool call can carry an e-mail address)."""
    return draft.model_copy(
        update={
            "user_message": redact(draft.user_message).text,
            "assistant_message": redact(draft.assistant_message).text,
            "sources": [redact(source).text for source in draft.sources],
            "tool_calls": [redact(call).text for call in draft.tool_calls],
        }
    )
