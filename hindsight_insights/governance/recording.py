"""What happens when a turn is recorded (the plugin's record_turn, the demo, any client):

0. a session belongs to the user who began it: another user's turn in it is refused, nothing stored (or returned);
1. a retry of a recorded Dify message changes nothing: the stored turn is returned;
2. the user's message is read by the correction detector, against the session's previous assistant answer (the
   rules, and the learned detector beside them when the caller passes one: detector_model.learned_detector, loaded
   once per process by the caller); with a workspace model (the call's cascade), a turn the learned detector is
   unsure of is asked about once (cascade.CorrectionAsker), and what it said is returned (`Recorded.asked`);
3. the turn is stored, redacted, with what the detector found (its signals flag the session for the worker), and
   with the injected insights this user could have been given: another user's id is left out and reported, so that
   no caller can mark someone else's insight as used (the worker's TTL keeps used insights);
4. behaviour memory: a corrected previous answer gets the error status and a correction record, and the pair
   (question, answer, the user's correction) becomes the user's few-shot example (examples.py), when the store keeps
   them;
5. blame: the insights injected into the corrected (or disliked) answer are blamed, those used without complaint
   supported, and one blamed past the threshold becomes suspect (blame.py; on a store that keeps blame);
6. what the correction teaches is written at once (lessons.py, writing.write).
"""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

from hindsight_insights.admission import admit_turn
from hindsight_insights.cascade import Cascade, CorrectionAsker, CorrectionOpinion
from hindsight_insights.config import Settings
from hindsight_insights.detection.correction_types import Correction, CorrectionType
from hindsight_insights.detection.corrections import detect, opening_request, own_input_put_right
from hindsight_insights.detection.learned_corrections import LearnedDetector
from hindsight_insights.detection.redaction import redact_together
from hindsight_insights.errors import InvalidInput
from hindsight_insights.fewshot import FewShotExample
from hindsight_insights.governance.blame import Judged, judge_turn
from hindsight_insights.governance.examples import keep_example
from hindsight_insights.governance.lessons import lesson_for
from hindsight_insights.governance.writing import Placed, write
from hindsight_insights.models import CorrectionRecord, Turn, TurnDraft
from hindsight_insights.screening import planted_instruction
from hindsight_insights.store.ports import BlamingStore, RecordingStore
from hindsight_insights.store.turns import turn_uuid

NO_CORRECTION = Correction(CorrectionType.NONE, 0.0)


@dataclass(frozen=True)
class Recorded:
    turn: Turn
    correction: Correction
    corrected_turn: Turn | None  # the earlier answer the user's message corrected
    learned: list[Placed]
    repeated: bool  # a retry of a message already recorded: nothing new was done
    unseen_injected: list[uuid.UUID] = field(default_factory=list)  # ids this user could not have been given
    asked: CorrectionOpinion | None = None  # the workspace model's opinion of an unsure turn, when it was consulted
    example: FewShotExample | None = None  # the few-shot example the correction made, when the store keeps them
    judged: list[Judged] = field(default_factory=list)  # blame and support this turn gave the insights it judged


def record_turn(
    store: RecordingStore,
    draft: TurnDraft,
    settings: Settings,
    now: datetime | None = None,
    detector: LearnedDetector | None = None,
    *,
    cascade: Cascade | None = None,  # the call's workspace model, for what the detector and screen are unsure of
) -> Recorded:
    now = now or datetime.now(UTC)
    if store.turns.holds_other_users(draft.session_id, draft.user_id):
        raise InvalidInput(
            [
                (
                    "session_id",
                    f"session {draft.session_id} holds turns of another user than the one this call acts for; "
                    "record each user's turns in a session of their own (by default Dify's conversation id). "
                    "Nothing was recorded",
                )
            ]
        )
    if draft.message_id and (stored := store.turns.get(turn_uuid(draft))) is not None:
        return Recorded(stored, NO_CORRECTION, None, [], repeated=True)
    previous = store.turns.latest(draft.session_id)
    asker = CorrectionAsker(cascade, now) if cascade is not None else None
    correction = (
        detect(draft.user_message, previous.assistant_message if previous else None, detector, asker)
        if draft.user_message.strip()
        else NO_CORRECTION
    )
    earlier: list[Turn] | None = None  # the session before this turn, when a fact put right needed it read
    if previous is None:
        correction = opening_request(correction)
    elif correction.type is CorrectionType.FACTUAL:
        earlier = store.turns.session(draft.session_id)
        correction = own_input_put_right(
            correction, draft.user_message, [t.user_message for t in earlier], [t.assistant_message for t in earlier]
        )
    # What the detector quotes is stored redacted like the turn, and read with the turn: a labelled number whose label
    # stays in the message (身份证号 …, with a wrong check digit) is no secret to the quote alone.
    correction = _redacted(correction, draft.user_message, previous.assistant_message if previous else None)
    signals = draft.signals.model_copy(update={"detected": correction.stored()})
    visible = store.visible_ids(draft.injected_insight_ids, draft.user_id, draft.session_id)
    injected = [i for i in draft.injected_insight_ids if i in visible]
    unseen = [i for i in draft.injected_insight_ids if i not in visible]
    turn = store.turns.append(
        admit_turn(draft.model_copy(update={"signals": signals, "injected_insight_ids": injected})), now
    )
    corrected_turn = None
    example = None
    if correction.is_correction and previous is not None and previous.assistant_message:
        record = CorrectionRecord(
            type=correction.type.value,
            original=correction.original,
            corrected=correction.corrected,
            condition=correction.condition,
            condition_detail=correction.condition_detail,
            by=turn.user_id,
            at=now,
            in_turn=turn.id,
        )
        corrected_turn = store.turns.mark_corrected(previous, record)
        example = keep_example(store, correction, corrected_turn, turn, now)
    judged = judge_turn(store, turn, previous, correction, now) if isinstance(store, BlamingStore) else []
    lesson = lesson_for(correction, turn, settings, now, detector)
    if lesson is not None:
        # (read only when there is something to learn, and once: a lesson of a session with a planted instruction
        # waits)
        session = store.turns.session(draft.session_id) if earlier is None else [*earlier, turn]
        planted = planted_instruction(store.screen, [t.user_message for t in session])
        lesson = dataclasses.replace(lesson, provenance=dataclasses.replace(lesson.provenance, planted=planted))
    learned = write(store, lesson, cascade=cascade, now=now) if lesson is not None else []
    return Recorded(
        turn,
        correction,
        corrected_turn,
        learned,
        repeated=False,
        unseen_injected=unseen,
        asked=asker.opinion if asker is not None else None,
        example=example,
        judged=judged,
    )


def _redacted(correction: Correction, message: str, previous_answer: str | None) -> Correction:
    """The detector quotes the user's words (and the answer's), in its topic and condition too; they are stored
    redacted, like the turn, and read together with the message and the answer they come from
    (redaction.redact_together): the value a label names in the message goes from the quote too."""
    quotes = [correction.corrected, correction.original, correction.topic, correction.condition_detail]
    if not any(quotes):
        return correction  # (nothing quoted: the message is not read twice)
    _, _, corrected, original, topic, condition = redact_together(
        [message, previous_answer or "", *(quote or "" for quote in quotes)]
    )
    return dataclasses.replace(
        correction,
        corrected=corrected.text if correction.corrected else None,
        original=original.text if correction.original else None,
        topic=topic.text if correction.topic else correction.topic,
        condition_detail=condition.text if correction.condition_detail else None,
    )
