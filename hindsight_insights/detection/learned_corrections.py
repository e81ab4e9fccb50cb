"""The learned correction detector beside the rules, pure: a calibrated five-class model (classifier.LinearTextModel)
over the user's message and the answer before it, and how its probabilities combine with the rules' finding.

Why both: the rules (correction_patterns, steps 2-5 of corrections.py) are precise where they fire and quote the
corrected value, the original and the condition, but on conversations written apart from them they miss half of the
corrections. The model (trained by scripts/train_detector.py on training/corrections/corpus.jsonl) reads the
message's embedding, its character n-grams and the rule families that fired, so it generalises past the rules'
wording while still knowing what they found.

The combination (its parameters chosen on the training corpus's out-of-fold predictions, stored with the model):

  * a rule outcome in `firm` (e.g. a preference the rules found) keeps the rules' type: they hold firmly there;
  * otherwise the model decides: a correction when P(correction) = 1 - P(none) reaches `correction_at`, of the
    correction class it finds likeliest; else none. `correction_at` is set for at most 1.5% out-of-fold false
    corrections on `none` (scripts/train_detector.py; docs/architecture.md has the figures), and the rule block
    weighs little in the model, so a rule firing on topic words alone does not carry a plain message over it;
  * a fact put right needs P(correction) ≥ `factual_at` (at least `correction_at`), set for at most 0.5% of the none
    messages of the sets written apart and retired into training read as facts: most false corrections on
    unseen sets were facts read into a number or a name about another thing. Between the two it is none and unsure,
    unless the rules found the fact with an explicit verdict ("Wrong, …", "不对，…"): then P(correction) ≥
    VERDICT_AT is enough.

The rules' quotes (corrected, original, topic, condition) are kept whatever the type; a correction the rules did
not see quotes the whole message. `unsure` marks a decision the rules did not hold and whose P(correction) falls in
the band [unsure_low, unsure_high): the caller may ask a workspace model about it (cascade.CorrectionAsker), and a
clear verdict settles the type (`settle`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from hindsight_insights.detection import correction_patterns as patterns
from hindsight_insights.detection.classifier import EmbedFn, LinearTextModel
from hindsight_insights.detection.correction_types import GENERAL, Correction, CorrectionType
from hindsight_insights.detection.text import fold, sentences

NONE = CorrectionType.NONE.value
NEGATIVE = CorrectionType.NEGATIVE.value
# The classes that say an answer was wrong: a message with no answer before it is none of them.
_NEEDS_AN_ANSWER = frozenset({CorrectionType.FACTUAL.value, CorrectionType.NEGATIVE.value})
SELF_FIX = "self_fix"  # the rules' none because the user fixed their own typo: an outcome of its own
_LANGUAGE_SUFFIX = re.compile(r"_(zh|en)$")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_WISH_OR_RULE = frozenset({CorrectionType.PREFERENCE, CorrectionType.PROCESS})
_QUESTION_END = re.compile(r"[?？]\s*$")
# The rules' rejections precise enough for VERDICT_AT (correction_patterns.ADVICE_FAILED, NOT_THERE, the off-topic
# verdicts).
_REJECTIONS = ("verdict:advice_failed", "verdict:not_there", "verdict:off_topic")
# What a fact the rules found with an explicit verdict and a new value ("错了，是15号", "That's wrong — it's with Dr
# Whitlock") needs from the model: that it reads a fact and leans to a correction. Out of fold (8,406 training
# messages), the 6 such messages between this and 0.88 are 5 facts and one none (a relative's claim about a family
# tree).
VERDICT_AT = 0.5


@dataclass(frozen=True)
class Combination:
    """How the rules and the model combine (module docstring); `unsure_*` may be overridden by Settings."""

    firm: frozenset[str]  # rule outcomes (a type, or SELF_FIX) the model does not overrule
    correction_at: float
    unsure_low: float
    unsure_high: float
    # What a fact put right needs at least (never less than correction_at): most false corrections are facts read
    # into a number or a name about something else.
    factual_at: float = 0.0


@dataclass(frozen=True)
class LearnedDetector:
    """The trained model, the embedder it was trained with (a callable: detection does no I/O), the combination."""

    model: LinearTextModel
    embed: EmbedFn
    combination: Combination

    def probabilities(self, message: str, previous_assistant: str | None, families: frozenset[str]) -> dict[str, float]:
        return self.likeliest_reading([(message, families)], previous_assistant)

    def likeliest_reading(
        self, readings: Sequence[tuple[str, frozenset[str]]], previous_assistant: str | None
    ) -> dict[str, float]:
        """The probabilities of the reading most likely to be a correction (the lowest P(none)): the first of
        `readings_by_likelihood`."""
        return self.readings_by_likelihood(readings, previous_assistant)[0]

    def readings_by_likelihood(
        self, readings: Sequence[tuple[str, frozenset[str]]], previous_assistant: str | None
    ) -> list[dict[str, float]]:
        """The probabilities of each reading, the one most likely to be a correction (the lowest P(none)) first. The
        first reading is the whole message, any others its sentences, each with the rule families that fired on it. A
        sentence alone may state a fact, a wish or a rule, but a rejection is judged on the whole message: "that's not
        a problem, skip it" rejects nothing, and alone its sentence reads as a rejection."""
        # The embedding block is a reading's vector and the previous answer's side by side; all in one call.
        vectors = np.asarray(self.embed([*(text for text, _ in readings), previous_assistant or ""]), dtype=np.float32)
        pairs = np.hstack([vectors[:-1], np.repeat(vectors[-1:], len(readings), axis=0)])
        rows = self.model.predict([text for text, _ in readings], lambda _: pairs, [found for _, found in readings])
        candidates = [
            self._answered(
                {kind: float(p) for kind, p in zip(self.model.classes, row, strict=True)}, found, previous_assistant
            )
            for row, (_, found) in zip(rows, readings, strict=True)
        ]
        candidates[1:] = [no_rejection(probabilities) for probabilities in candidates[1:]]
        # (a stable sort: on a tie the whole message comes first)
        return sorted(candidates, key=lambda probabilities: probabilities.get(NONE, 0.0))

    @staticmethod
    def _answered(
        found: dict[str, float], families: frozenset[str], previous_assistant: str | None
    ) -> dict[str, float]:
        if (previous_assistant or "").strip() or any(family.startswith("verdict:") for family in families):
            return found  # an answer came before, or the message says outright that something was wrong
        return nothing_to_correct(found)


def nothing_to_correct(probabilities: Mapping[str, float]) -> dict[str, float]:
    """The probabilities of a message no answer came before (a conversation's opening request) and that says nothing
    was wrong (no verdict such as 不对 or "that's wrong": a turn recorded first may still answer an earlier, unrecorded
    reply): it can state a standing wish or a rule of the work, but it cannot correct an answer, so the factual and
    negative classes' share is the none class's. The model was trained on pairs only and reads an opening request
    that describes the user's own situation ("docker compose 部署的 1.9.1, uploads stay queued") as a correction of a
    fact."""
    moved = {kind: 0.0 if kind in _NEEDS_AN_ANSWER else p for kind, p in probabilities.items()}
    moved[NONE] = probabilities.get(NONE, 0.0) + sum(probabilities.get(kind, 0.0) for kind in _NEEDS_AN_ANSWER)
    return moved


def no_rejection(probabilities: Mapping[str, float]) -> dict[str, float]:
    """A sentence's probabilities with the negative class's share moved to none (LearnedDetector.likeliest_reading)."""
    moved = {kind: 0.0 if kind == NEGATIVE else p for kind, p in probabilities.items()}
    moved[NONE] = probabilities.get(NONE, 0.0) + probabilities.get(NEGATIVE, 0.0)
    return moved


def family_of(signal: str) -> str:
    """A signal's family: its first two parts without the language suffix (process:order_first_then_zh ->
    process:order_first_then); the rule block of the model has one column per family."""
    return _LANGUAGE_SUFFIX.sub("", ":".join(signal.split(":")[:2]))


def rule_outcome(found: Correction) -> str:
    if found.is_correction:
        return found.type.value
    return SELF_FIX if any(signal.startswith("guard:self_typo") for signal in found.signals) else NONE


def families(found: Correction, previous_assistant: str | None, message: str) -> frozenset[str]:
    """What the rules know about a turn, as the model's rule-block flags: the families of every signal, the rules'
    outcome, and facts about the pair the message alone does not show (the assistant had asked a question, so a short
    reply is likely an answer; it answered in generalities, so the user's own setup after it is likely context; the
    message repeats or changes a number the assistant gave; it states something, then asks).

    The last one is a conjunction the linear model cannot form from the n-grams: a statement followed by a question
    is how a fact is most often put right without a trigger word ("It's a baby grand, a 1962 Kessler. Can you still
    do Thursday?" after a price for an upright), and the same words without the question, or a question alone, are
    far more often none."""
    flags = {family_of(signal) for signal in found.signals} | {f"outcome:{rule_outcome(found)}"}
    previous = fold(previous_assistant).text if previous_assistant else ""
    if previous and _QUESTION_END.search(previous):
        flags.add("pair:assistant_asked")
    if previous and patterns.closes_with_an_offer(previous):
        flags.add("pair:assistant_offered")  # (its answer takes or declines the offer: 208 of 218 training ones none)
    folded = fold(message).text
    if previous and patterns.GENERIC_ANSWER.search(previous) and not patterns.ABOUT_THE_USER.search(previous):
        flags.add("pair:generic_answer")
        if patterns.OWN_SETUP.search(folded):
            flags.add("pair:own_setup_after_generic")
    numbers, before = set(_NUMBER.findall(folded)), set(_NUMBER.findall(previous))
    if numbers & before:
        flags.add("pair:number_repeated")
    if numbers - before and before:
        flags.add("pair:number_changed")
    if previous and _states_then_asks(folded):
        flags.add("pair:statement_then_question")
    return frozenset(flags)


def _states_then_asks(folded: str) -> bool:
    """The folded message has two sentences or more, the first a statement and the last a question."""
    found = sentences(folded)
    return len(found) >= 2 and not _QUESTION_END.search(found[0].text) and bool(_QUESTION_END.search(found[-1].text))


def decide(found: Correction, probabilities: Mapping[str, float], combination: Combination) -> tuple[str, bool]:
    """The type chosen and whether the decision is unsure (module docstring)."""
    outcome = rule_outcome(found)
    if outcome in combination.firm:
        return (found.type.value, False)
    correction = 1.0 - probabilities.get(NONE, 0.0)
    unsure = combination.unsure_low <= correction < combination.unsure_high
    kinds = [kind for kind in probabilities if kind != NONE]
    chosen = max(kinds, key=lambda kind: (probabilities[kind], kind))
    if correction < combination.correction_at:
        # (a verdict the model reads the same way, a fact or a rejection, if only leaning to a correction: VERDICT_AT)
        verdict = chosen == found.type.value and _rules_verdict(found) and correction >= VERDICT_AT
        return (chosen if verdict else NONE, unsure)
    if chosen == CorrectionType.FACTUAL.value and correction < combination.factual_at and not _says_wrong(found):
        # Likely a correction, but a fact only at factual_at: unsure, for a workspace model to settle.
        return (NONE, True)
    return (chosen, unsure)


def _rules_verdict(found: Correction) -> bool:
    """The rules found a fact put right with a verdict ("Wrong, …", "不对，…"), or a rejection by the advice followed
    and failed ("Did the runner's loop … still lifting") or by an answer that missed the question ("Mine was whether
    …"). Not a rejection by a verdict word alone: "离谱", "无语" and "wrong" vent or quote as often as they reject."""
    if found.type is CorrectionType.FACTUAL:
        return _says_wrong(found)
    return found.type is CorrectionType.NEGATIVE and any(signal.startswith(_REJECTIONS) for signal in found.signals)


def _says_wrong(found: Correction) -> bool:
    """The rules found a fact put right with an explicit verdict ("Wrong, …", "不对，…"): VERDICT_AT is enough."""
    return found.type is CorrectionType.FACTUAL and any(signal.startswith("verdict:") for signal in found.signals)


def combine(
    found: Correction, message: str, probabilities: Mapping[str, float], combination: Combination
) -> Correction:
    """The rules' finding with the type the combination decides, the probabilities and the unsure flag."""
    chosen, unsure = decide(found, probabilities, combination)
    kind = CorrectionType(chosen)
    rounded = {name: round(p, 4) for name, p in probabilities.items()}
    signals = (*found.signals, f"learned:{chosen}:{probabilities.get(chosen, 0.0):.2f}")
    if kind is found.type:
        confidence = found.confidence
        if (
            kind is CorrectionType.FACTUAL
            and confidence < GENERAL
            and probabilities[chosen] >= combination.correction_at
        ):
            # The rules' implicit value (0.6: a different value, no trigger word) may be about another thing; a model
            # that would have called the correction on its own says it is not, so it holds like a general one: for
            # the user beyond the session (scope.py), never for the project.
            confidence = GENERAL
        return dataclasses.replace(found, confidence=confidence, signals=signals, probabilities=rounded, unsure=unsure)
    if kind is CorrectionType.NONE:
        return Correction(CorrectionType.NONE, 0.0, signals=signals, probabilities=rounded, unsure=unsure)
    # The model found a correction the rules typed otherwise or not at all: the confidence is never above a general
    # correction's (no value was extracted by the model), so a weak one holds narrowly (scope.py).
    confidence = round(min(probabilities[chosen], GENERAL), 2)
    if found.is_correction:
        confidence = min(confidence, found.confidence) if kind is CorrectionType.FACTUAL else confidence
    return _retyped(found, kind, confidence, message, signals, rounded, unsure)


def settle(found: Correction, combined: Correction, message: str, kind: CorrectionType) -> Correction:
    """An unsure `combined` decision settled by a workspace model's clear verdict `kind`; `found` is the rules'
    finding. The type the detector chose keeps its result; the rules' type gets the rules' finding back; a type only
    the model found is held at a general correction's confidence at most, like the learned model's own."""
    signals = (*combined.signals, f"workspace_model:{kind.value}")
    probabilities, unsure = combined.probabilities, combined.unsure
    if kind is combined.type:
        return dataclasses.replace(combined, signals=signals)
    if kind is CorrectionType.NONE:
        return Correction(CorrectionType.NONE, 0.0, signals=signals, probabilities=probabilities, unsure=unsure)
    if kind is found.type:
        return dataclasses.replace(found, signals=signals, probabilities=probabilities, unsure=unsure)
    confidence = min(found.confidence, GENERAL) if found.is_correction else GENERAL
    return _retyped(found, kind, confidence, message, signals, probabilities, unsure)


def _retyped(
    found: Correction,
    kind: CorrectionType,
    confidence: float,
    message: str,
    signals: tuple[str, ...],
    probabilities: Mapping[str, float],
    unsure: bool,
) -> Correction:
    """The rules' finding under a type a model chose: the rules' quotes stay (a clause of the message they read), the
    whole message otherwise; a rejection replaces nothing, so it quotes no original. A fact put right that the rules
    read as a wish or a rule quotes the whole message too: their clause is the wish's or the rule's, not the value's
    ("包邮门槛不是 500 了，改成 800。这个 policy 是我定的，回复就按这个来" quoted only its last sentence); and so does a
    wish or a rule that the rules read as a value put right: their clause is the value's ("So whenever you draft a
    letter to a client from me: every debt on its own line … I'm sending the creditor letters Friday 12 March" quoted
    only the date)."""
    crossed = (kind is CorrectionType.FACTUAL and found.type in _WISH_OR_RULE) or (
        kind in _WISH_OR_RULE and found.type is CorrectionType.FACTUAL
    )
    kept = None if crossed else found.corrected
    return dataclasses.replace(
        found,
        type=kind,
        confidence=confidence,
        corrected=kept or message.strip() or None,
        original=found.original if kind is not CorrectionType.NEGATIVE else None,
        signals=signals,
        probabilities=probabilities,
        unsure=unsure,
    )
