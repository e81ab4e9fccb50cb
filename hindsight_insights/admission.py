"""What may be stored, and in what state. Every write (governance/writing.py) passes through here before the store
sees it:

1. the poisoning screen (screening.py: the rules of poisoning.py and the learned screen, built once per process and
   handed down by the store) runs on the text as given: instruction-like content, role changes, prompt exfiltration,
   data sent to an address, privilege escalation, in any disguise, is held for review, never active. What the
   learned screen is unsure of goes to the workspace model when the call has one (a cascade.Cascade), else is held.
   What was learned in a session that carried an instruction planted for an AI (the provenance says so) is held
   too;
2. secrets and personal data are redacted (redaction.py) in every text field, whatever happens next;
3. scope (scope.py, from the command's trusted provenance only): what one user's conversation teaches stays with
   that user; a write asking for project scope is also written project-wide, held for review.

Turns are redacted the same way before they are stored, so an insight's evidence quote still matches the stored
transcript word for word.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from hindsight_insights.cascade import Cascade
from hindsight_insights.commands import WriteCommand
from hindsight_insights.config import Settings
from hindsight_insights.detection.redaction import redact, redact_together
from hindsight_insights.fewshot import ExampleDraft
from hindsight_insights.models import Evidence, InsightContent, InsightDraft, InsightStatus, TurnDraft
from hindsight_insights.scope import Target, decide_scope
from hindsight_insights.screening import Screen, decide

_ADMISSION = object()  # only this module holds it, so only admission makes an Admitted


@dataclass(frozen=True)
class Admitted:
    """A draft that passed admission: screened, redacted, placed by scope.py. Only `admit` and `hold`
    make one; the store is given nothing else."""

    draft: InsightDraft
    redacted: list[str]  # the kinds of secret or personal data removed
    target: Target
    suspect: bool  # the poisoning screen held it
    _made_by: object = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self._made_by is not _ADMISSION:
            raise TypeError("an Admitted is made by admission.admit only")


def admit(
    command: WriteCommand,
    settings: Settings,
    screen: Screen,
    cascade: Cascade | None = None,
    now: datetime | None = None,
) -> list[Admitted]:
    """The drafts a command may be stored as, the user's first (or the only one): the content screened (by the
    process's `screen`; unsure items asked of the call's workspace model, if it has a `cascade`) and redacted once,
    then placed on each target that scope.py decides from the command's provenance."""
    content, provenance = command.content, command.provenance
    texts = screened_texts(content)
    decision = decide(
        screen, texts, cascade, now or datetime.now(UTC), learned_reads=_written_by_others(command, texts)
    )
    clean, redacted = _redacted(content, provenance.session_id)
    suspect_reason = None
    if decision.held and decision.reason:
        # Also over a project copy's own reason: a suspect must never wait for something that approves it by
        # itself (a second user's agreement). The reasons quote the text, so they are redacted like it.
        suspect_reason = redact(decision.reason).text[:500]
    elif provenance.planted:
        suspect_reason = redact(provenance.planted).text[:500]
    admitted = []
    for target in decide_scope(provenance, settings):
        reason = suspect_reason or target.review_reason
        data = clean | {
            "user_id": provenance.user_id,
            "scope": target.scope,
            "source": provenance.source,
            "status": InsightStatus.PENDING_REVIEW if reason else InsightStatus.ACTIVE,
            "review_reason": reason,
        }
        draft = InsightDraft.parse(data, now=now)
        held = decision.held or suspect_reason is not None
        admitted.append(Admitted(draft, redacted, target, held, _made_by=_ADMISSION))
    return admitted


def screened_texts(content: InsightContent) -> dict[str, str]:
    """What the screen reads of an insight, by field name: every text that can reach a rules block."""
    texts = {
        "topic": content.topic,
        "action": content.action,
        "observation": content.observation,
        "evidence": content.evidence.quote,
    }
    texts |= {f"tag {i + 1}": tag for i, tag in enumerate(content.tags)}
    if content.condition_detail:
        texts["condition"] = content.condition_detail
    return texts


def _written_by_others(command: WriteCommand, texts: dict[str, str]) -> dict[str, str]:
    """What the learned screen reads: the words of whoever wrote the content. A detector lesson is our own template
    (prompts/corrections/) wrapped around the user's message, whose second-person wording ("follow their request")
    the model would read as an instruction; it reads the user's message (the evidence) alone there. The patterns
    still read every field."""
    if command.provenance.correction is None:
        return texts
    return {"evidence": command.content.evidence.quote}


def hold(admitted: Admitted, reason: str) -> Admitted:
    """An admitted draft held for review with another reason (a conflict with the project's rule). A suspect keeps
    the screen's reason: what it matched is what a reviewer must see."""
    if admitted.suspect:
        return admitted
    draft = admitted.draft.model_copy(update={"status": InsightStatus.PENDING_REVIEW, "review_reason": reason[:500]})
    return Admitted(draft, admitted.redacted, admitted.target, False, _made_by=_ADMISSION)


def _redacted(content: InsightContent, session_id: str | None) -> tuple[dict[str, object], list[str]]:
    """The content's fields with secrets and personal data replaced, and the kinds removed. The evidence gets the
    session it was said in from the provenance."""
    # Every field read together (redaction.redact_together): a label in one names the value in another.
    texts = [content.topic, content.action, content.observation, content.evidence.quote, content.condition_detail or ""]
    topic, action, observation, quote, condition, *tags = redact_together([*texts, *content.tags])
    found = [kind for result in (topic, action, observation, quote, condition, *tags) for kind in result.found]
    fields: dict[str, object] = dict(content)
    fields |= {
        "topic": topic.text,
        "action": action.text,
        "observation": observation.text,
        "tags": [tag.text for tag in tags],
        "evidence": Evidence(quote=quote.text, turn=content.evidence.turn, session_id=session_id),
    }
    if content.condition_detail:
        fields["condition_detail"] = condition.text
    return fields, found


def admit_turn(draft: TurnDraft) -> TurnDraft:
    """The turn as it may be stored: secrets and personal data redacted from both messages and from the answer's
    sources and tool calls (a source can be a URL with a token, a tool call can carry an e-mail address)."""
    user, assistant, *rest = redact_together(
        [draft.user_message, draft.assistant_message, *draft.sources, *draft.tool_calls]
    )
    sources, calls = rest[: len(draft.sources)], rest[len(draft.sources) :]
    return draft.model_copy(
        update={
            "user_message": user.text,
            "assistant_message": assistant.text,
            "sources": [source.text for source in sources],
            "tool_calls": [call.text for call in calls],
        }
    )


def admit_example(draft: ExampleDraft) -> ExampleDraft:
    """A few-shot example as it may be stored: every text redacted (it is made from stored turns, redacted already;
    this holds whatever a caller built it from)."""
    return draft.model_copy(
        update={name: redact(getattr(draft, name)).text for name in ("scene", "topic", "context", "said", "corrected")}
    )
