"""The reflection engine: a stored session in, the insights it teaches saved, a report out.

    prepare   read the sessions' turns (one user only), cut the transcript to the cap, render the prompt
    ask       one call to the reflector; a malformed answer is asked again ONCE with the problems; an extractor
              (no model) gives its candidates directly
    verify    every candidate's evidence quote against the user messages of the session (verify.py); dropped
              candidates are counted with the reason
    save      governance.writing.write: admission (poisoning screen, redaction, scope) and the layered writes

Nothing is saved until every candidate of the answer has been checked, and nothing at all from an answer that is
malformed twice. Cost bound: at most one model call per reflection, two when the answer is retried; the transcript is
capped (transcript.py). The worker calls `reflect_session` at session end, `reflect_anomaly` on a flagged turn and
`reflect_user` (or the batch in batch.py) at night.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from hindsight_insights.commands import Provenance, WriteCommand
from hindsight_insights.config import Language, Settings
from hindsight_insights.detection.correction_types import Correction
from hindsight_insights.errors import HindsightError, InvalidInput
from hindsight_insights.governance.writing import write
from hindsight_insights.models import MAX_TAGS, Condition, Insight, InsightContent, InsightStatus, Scope
from hindsight_insights.ranking import same_instruction
from hindsight_insights.reflection.llm import (
    DetectedCandidate,
    ExtractionRequest,
    Extractor,
    LlmAnswer,
    LlmError,
    Reflector,
)
from hindsight_insights.reflection.output import REFLECTION_SCHEMA, MalformedOutput, ReflectedInsight, parse_output
from hindsight_insights.reflection.prompt import (
    MAX_KNOWN_TOPICS,
    FaultyInsight,
    KnownTopic,
    ReflectionPrompt,
    build_prompt,
    retry_prompt,
)
from hindsight_insights.reflection.report import Dropped, ReflectionReport
from hindsight_insights.reflection.transcript import MAX_NIGHTLY_SESSIONS, SessionTranscript, Variant, view
from hindsight_insights.reflection.verify import QuoteRejected, VerifiedQuote, verify_quote
from hindsight_insights.screening import planted_instruction
from hindsight_insights.store.ports import ReflectionStore

log = logging.getLogger(__name__)

MAX_INSIGHTS_PER_REFLECTION = 8  # more from one session means the model is listing, not learning


class CannotReflect(HindsightError):
    """The sessions cannot be reflected on: no stored turns, or turns of more than one user."""


@dataclass(frozen=True)
class PreparedReflection:
    """Everything one reflection needs before its model call: kept apart so that a batch can send many at once."""

    variant: Variant
    user_id: str
    sessions: list[SessionTranscript]
    prompt: ReflectionPrompt
    excluded: tuple[Insight, ...] = ()  # faulty insights a repair re-reflects without (reflection/repair.py)

    @property
    def session_ids(self) -> list[str]:
        return [session.session_id for session in self.sessions]


class ReflectionEngine:
    """Reflects with one source of candidates: a model (`Reflector`) or a model-free `Extractor`."""

    def __init__(
        self,
        store: ReflectionStore,
        source: Reflector | Extractor,
        *,
        settings: Settings | None = None,
        language: Language | None = None,
        max_insights: int = MAX_INSIGHTS_PER_REFLECTION,
    ) -> None:
        """`settings` default to the store's; `language` (of the prompts) to the settings'."""
        if not isinstance(source, Reflector | Extractor):
            raise TypeError("source must be a Reflector (reflect) or an Extractor (extract)")
        self._store = store
        self._source = source
        self._settings = settings or store.settings
        self._language: Language = language or self._settings.language
        self._max_insights = max_insights

    @property
    def settings(self) -> Settings:
        return self._settings

    @property
    def source(self) -> str:
        """The `source` of every insight this engine saves."""
        return f"reflection:{self._source.name}"

    # ---- entry points ---------------------------------------------------------------------------------------

    def reflect_session(
        self, session_id: str, *, user_id: str | None = None, excluded: Sequence[Insight] = ()
    ) -> ReflectionReport:
        """At session end: what this session teaches. With `user_id`, only a session of that user is read. A repair
        passes `excluded`: insights a reviewer found faulty, named to the model as such and never learned again."""
        return self.reflect([session_id], "session", user_id=user_id, excluded=excluded)

    def reflect_anomaly(self, session_id: str, *, user_id: str | None = None) -> ReflectionReport:
        """On a flagged turn (dislike, tool error, stopped generation, correction): what went wrong and what to do."""
        return self.reflect([session_id], "anomaly", user_id=user_id)

    def reflect_user(self, session_ids: Sequence[str]) -> ReflectionReport:
        """Nightly: several sessions of one user, for requests repeated across sessions; duplicates consolidated."""
        return self.reflect(session_ids, "nightly")

    def reflect(
        self,
        session_ids: Sequence[str],
        variant: Variant,
        *,
        user_id: str | None = None,
        excluded: Sequence[Insight] = (),
    ) -> ReflectionReport:
        """`user_id`: the user a caller acts for (a Dify tool call); sessions with turns of anyone else are refused."""
        started = time.monotonic()
        try:
            prepared = self.prepare(session_ids, variant, user_id=user_id, excluded=excluded)
        except HindsightError as error:  # CannotReflect, or the store could not be read
            report = self._report(list(session_ids), variant, None)
            return self._failed(report, str(error), started)
        if isinstance(self._source, Extractor):
            return self._from_extractor(prepared, started)
        try:
            answer = self._source.reflect(prepared.prompt.system, prepared.prompt.user, REFLECTION_SCHEMA)
        except LlmError as error:
            report = self._report(prepared.session_ids, variant, prepared.user_id)
            report.llm_calls = 1
            return self._failed(report, f"the model call failed: {error}", started)
        return self.finish(prepared, answer, started=started)

    # ---- the steps ------------------------------------------------------------------------------------------

    def prepare(
        self,
        session_ids: Sequence[str],
        variant: Variant,
        *,
        user_id: str | None = None,
        excluded: Sequence[Insight] = (),
    ) -> PreparedReflection:
        """Read the sessions and render the prompt. Raises CannotReflect, also when `user_id` is given and a turn
        belongs to someone else."""
        ids = list(dict.fromkeys(s.strip() for s in session_ids if s.strip()))
        if not ids:
            raise CannotReflect("no session id given")
        if variant != "nightly" and len(ids) != 1:
            raise CannotReflect(f"the {variant} variant reflects on one session, not {len(ids)}")
        stored = [(session_id, self._store.turns.session(session_id)) for session_id in ids]
        found = [(session_id, turns) for session_id, turns in stored if turns]
        if not found:
            raise CannotReflect(f"no stored turns for session {', '.join(ids)}")
        users = sorted({turn.user_id for _, turns in found for turn in turns})
        if len(users) > 1:
            # Scope must not leak: one user's lessons are saved for that user, so a reflection never mixes users.
            raise CannotReflect(f"the turns belong to {len(users)} users; a reflection reads one user's sessions")
        if user_id is not None and users != [user_id]:
            # What is learned is saved for the turns' user: a caller must not make the model read, or write lessons
            # for, someone else. The other user's id is not named.
            raise CannotReflect("the session's turns belong to another user than the one this reflection acts for")
        found.sort(key=lambda item: item[1][0].sequence)  # oldest first: the nightly prompt says S1 is the earliest
        found = found[-MAX_NIGHTLY_SESSIONS:]
        sessions = [
            SessionTranscript(label=f"S{number}", session_id=session_id, user_id=users[0], turns=turns)
            for number, (session_id, turns) in enumerate(found, start=1)
        ]
        views = view(sessions, self._settings.reflection_max_transcript_chars)
        known = self._known_topics(users[0])
        faulty = [FaultyInsight(topic=i.topic, action=i.action) for i in excluded]
        prompt = build_prompt(self._settings.prompts_dir, variant, self._language, views, known, faulty)
        return PreparedReflection(
            variant=variant, user_id=users[0], sessions=sessions, prompt=prompt, excluded=tuple(excluded)
        )

    def finish(
        self, prepared: PreparedReflection, answer: LlmAnswer, *, started: float | None = None, via_batch: bool = False
    ) -> ReflectionReport:
        """Parse a model's answer (asking once more if it is malformed), verify and save. A batch calls this with
        each result; the retry, if needed, is a direct call."""
        started = time.monotonic() if started is None else started
        report = self._report(prepared.session_ids, prepared.variant, prepared.user_id, via_batch=via_batch)
        self._count(report, answer)
        if answer.refusal is not None:
            return self._failed(report, f"the model declined to answer: {answer.refusal}", started)
        try:
            parsed = parse_output(answer.content)
        except MalformedOutput as first:
            log.warning("reflection on %s: malformed answer, asking once more: %s", prepared.session_ids, first)
            if not isinstance(self._source, Reflector):
                return self._failed(report, f"malformed output: {first}", started)
            user = retry_prompt(self._settings.prompts_dir, prepared.prompt, str(first), cut_off=answer.cut_off)
            try:
                retried = self._source.reflect(prepared.prompt.system, user, REFLECTION_SCHEMA)
            except LlmError as error:
                report.llm_calls += 1
                return self._failed(report, f"malformed output ({first}); the retry call failed: {error}", started)
            self._count(report, retried)
            if retried.refusal is not None:
                return self._failed(report, f"the model declined to answer: {retried.refusal}", started)
            try:
                parsed = parse_output(retried.content)
            except MalformedOutput as second:
                return self._failed(report, f"malformed output twice; last: {second}", started)
        report.ignored_fields = parsed.ignored
        return self._save(prepared, parsed.insights, report, started)

    def failure(
        self,
        session_ids: Sequence[str],
        variant: Variant,
        reason: str,
        *,
        answer: LlmAnswer | None = None,
        via_batch: bool = False,
    ) -> ReflectionReport:
        """The report of a reflection that failed before its answer could be used (e.g. a batch request errored)."""
        report = self._report(list(session_ids), variant, None, via_batch=via_batch)
        if answer is not None:
            self._count(report, answer)
        return self._failed(report, reason, time.monotonic())

    # ---- internals ------------------------------------------------------------------------------------------

    def _from_extractor(self, prepared: PreparedReflection, started: float) -> ReflectionReport:
        assert isinstance(self._source, Extractor)
        report = self._report(prepared.session_ids, prepared.variant, prepared.user_id)
        report.model = self._source.name
        request = ExtractionRequest(variant=prepared.variant, sessions=prepared.sessions, language=self._language)
        try:
            candidates = list(self._source.extract(request))
        except HindsightError as error:
            return self._failed(report, f"the extractor failed: {error}", started)
        return self._save(prepared, candidates, report, started)

    def _save(
        self,
        prepared: PreparedReflection,
        found: Sequence[ReflectedInsight | DetectedCandidate],
        report: ReflectionReport,
        started: float,
    ) -> ReflectionReport:
        report.candidates = len(found)
        commands: list[tuple[int, WriteCommand]] = []
        planted: dict[str, str | None] = {}  # by session: read once, whatever the number of its candidates
        for index, item in enumerate(found):
            candidate, correction = (
                (item.insight, item.correction) if isinstance(item, DetectedCandidate) else (item, None)
            )
            if index >= self._max_insights:
                report.dropped.append(
                    Dropped(
                        index=index,
                        topic=candidate.topic,
                        reason="over_limit",
                        detail=f"one reflection saves at most {self._max_insights} insights",
                    )
                )
                continue
            repeated = next((i for i in prepared.excluded if same_instruction(candidate.action, i.action)), None)
            if repeated is not None:
                report.dropped.append(
                    Dropped(
                        index=index,
                        topic=candidate.topic,
                        reason="excluded",
                        detail=f"repeats insight {repeated.id}, which a reviewer found faulty",
                    )
                )
                continue
            try:
                quote = verify_quote(candidate.evidence, prepared.sessions)
            except QuoteRejected as rejected:
                report.dropped.append(
                    Dropped(index=index, topic=candidate.topic, reason=rejected.problem.value, detail=rejected.detail)
                )
                continue
            session = quote.session
            if session.session_id not in planted:
                said = [turn.user_message for turn in session.turns]
                planted[session.session_id] = planted_instruction(self._store.screen, said)
            try:
                command = self._command(candidate, quote, prepared.user_id, correction, planted[session.session_id])
                commands.append((index, command))
            except InvalidInput as error:
                report.dropped.append(
                    Dropped(index=index, topic=candidate.topic, reason="invalid_fields", detail=str(error))
                )
        for index, command in commands:
            try:
                placements = write(self._store, command)
            except HindsightError as error:
                saved = len(report.saved_ids)
                return self._failed(
                    report, f"saving insight {index} failed ({error}); {saved} saved before it are kept", started
                )
            for placed in placements:
                report.ids_for(placed.result.status).append(placed.result.id)
        for dropped in report.dropped:
            log.info(
                "reflection on %s dropped %r: %s (%s)",
                report.session_ids,
                dropped.topic,
                dropped.reason,
                dropped.detail,
            )
        report.duration_s = round(time.monotonic() - started, 3)
        log.info("reflection on %s: %s", report.session_ids, report.counts)
        return report

    def _command(
        self,
        candidate: ReflectedInsight,
        quote: VerifiedQuote,
        user_id: str,
        correction: Correction | None,
        planted: str | None,
    ) -> WriteCommand:
        """The candidate as a write. Whose it is, its scope, session and source are ours to set, never the model's:
        only the rule-based detector's finding (`correction`) asks for a scope other than the user's, and `planted`
        (screening.planted_instruction over the quoted session) holds it for a reviewer."""
        content = InsightContent.parse(
            {
                "topic": candidate.topic,
                "kind": candidate.kind,
                "scene": candidate.scene or quote.session.scene,
                "observation": candidate.observation,
                "action": candidate.action,
                "evidence": {"quote": quote.quote, "turn": quote.turn},
                "tags": list(dict.fromkeys(tag.strip() for tag in candidate.tags if tag.strip()))[:MAX_TAGS],
                "condition": candidate.condition or Condition.UNIVERSAL,
                "condition_detail": candidate.condition_detail or None,
                "confidence": candidate.confidence,
            }
        )
        provenance = Provenance(self.source, user_id, quote.session.session_id, correction=correction, planted=planted)
        return WriteCommand(content, provenance)

    def _known_topics(self, user_id: str) -> list[KnownTopic]:
        """This user's topics and the project's, newest first, so that a new insight reuses a slot's name."""
        own = self._store.list_insights(status=InsightStatus.ACTIVE, user_id=user_id, limit=MAX_KNOWN_TOPICS)
        everyone = self._store.list_insights(status=InsightStatus.ACTIVE, limit=MAX_KNOWN_TOPICS * 5)
        project = [insight for insight in everyone if insight.scope is Scope.PROJECT]
        topics = dict.fromkeys(KnownTopic(topic=i.topic, scene=i.scene) for i in [*own, *project])
        return list(topics)[:MAX_KNOWN_TOPICS]

    def _report(
        self, session_ids: list[str], variant: Variant, user_id: str | None, *, via_batch: bool = False
    ) -> ReflectionReport:
        return ReflectionReport(
            session_ids=session_ids, variant=variant, user_id=user_id, source=self.source, via_batch=via_batch
        )

    @staticmethod
    def _count(report: ReflectionReport, answer: LlmAnswer) -> None:
        report.llm_calls += 1
        report.tokens_in += answer.tokens_in
        report.tokens_out += answer.tokens_out
        report.cached_tokens += answer.cached_tokens
        report.cache_write_tokens += answer.cache_write_tokens
        report.model = answer.model

    @staticmethod
    def _failed(report: ReflectionReport, reason: str, started: float) -> ReflectionReport:
        log.warning("reflection on %s failed: %s", report.session_ids, reason)
        report.outcome = "failed"
        report.reason = reason
        report.duration_s = round(time.monotonic() - started, 3)
        return report
