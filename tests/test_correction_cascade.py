"""The correction detector's workspace-model cascade: a turn the learned detector is unsure of is asked about once.

In process: `detect` with a stand-in second opinion (the verdict settles the type, the rules' quotes kept), and
record_turn through the plugin's runtime path (hindsight_dify.run over a StoreCache) with the tool session's
`model.llm` stood in for by testkit/recording_llm.py's RecordingLlm, against the real Weaviate. The same
through Dify's plugin daemon and the inner-API stand-in: tests/test_plugin_daemon.py (marker `daemon`).
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

import pytest
import weaviate

from hindsight_dify import Context, StoreCache, ToolResult, run
from hindsight_insights.cascade import (
    MAX_OUTPUT_TOKENS,
    PURPOSE_CORRECTION,
    Cascade,
    CorrectionAsker,
    MemoryBudget,
    today,
)
from hindsight_insights.config import Settings
from hindsight_insights.detection.correction_types import GENERAL, Correction, CorrectionType
from hindsight_insights.detection.corrections import SecondOpinion, detect
from hindsight_insights.detection.learned_corrections import LearnedDetector
from hindsight_insights.detector_model import learned_detector
from hindsight_insights.embedder import load_embedder
from hindsight_insights.store import InsightStore
from hindsight_insights.store.budget import WeaviateBudget
from hindsight_insights.store.schema import BUDGET
from hindsight_insights.store.tenancy import project_collection
from testkit.cases import (
    BENIGN_VERDICT,
    MODEL_SELECTOR,
    PREFERENCE_TYPE_VERDICT,
    UNSURE_CORRECTION_TURNS,
    UNSURE_PERCENT_QUOTE,
)
from testkit.recording_llm import RecordingLlm
from tests.test_screen_admission import FixedModel

# The rules read "first … then" as a process; the learned detector leans to a wish about form (a preference) and is
# unsure (P(correction) about 0.8, inside the trained band).
LEAD = "First tell me yes or no, then the background."
BACKGROUND = (
    "Let's look at the background first. The tool was introduced in 2019... In conclusion, yes, you can use it."
)


@pytest.fixture(scope="module")
def detector() -> LearnedDetector:
    settings = Settings(_env_file=None, weaviate_url=None)
    found = learned_detector(load_embedder(settings), settings)
    assert found is not None
    return found


# ---- detect's second opinion ---------------------------------------------------------------------------------------


def test_an_unsure_decision_is_settled_by_the_verdict_and_keeps_the_rules_quotes(detector: LearnedDetector) -> None:
    asked: list[Correction] = []

    def second_opinion(kind: CorrectionType) -> SecondOpinion:
        def answer(message: str, previous: str | None, unsure: Correction) -> CorrectionType:
            asked.append(unsure)
            return kind

        return answer

    # The band widened to the top: the model reads the lead as a preference at about 0.98, above the trained band.
    detector = dataclasses.replace(detector, combination=dataclasses.replace(detector.combination, unsure_high=1.0))
    own = detect(LEAD, BACKGROUND, detector)
    leaning = max((p, kind) for kind, p in own.probabilities.items() if kind != CorrectionType.NONE.value)[1]
    assert own.unsure and leaning == CorrectionType.PREFERENCE.value
    rules = detect(LEAD, BACKGROUND)
    preference = detect(LEAD, BACKGROUND, detector, second_opinion(CorrectionType.PREFERENCE))
    assert preference.type is CorrectionType.PREFERENCE and preference.confidence <= GENERAL
    assert (preference.corrected, preference.topic) == (rules.corrected, rules.topic)  # the patterns' quotes
    assert preference.signals[-1] == "workspace_model:preference" and preference.unsure
    process = detect(LEAD, BACKGROUND, detector, second_opinion(CorrectionType.PROCESS))
    assert (process.type, process.confidence, process.corrected) == (rules.type, rules.confidence, rules.corrected)
    assert detect(LEAD, BACKGROUND, detector, second_opinion(CorrectionType.NONE)).type is CorrectionType.NONE
    assert len(asked) == 3 and all(u.unsure for u in asked)


def test_only_the_model_found_it_quotes_the_message_at_a_general_confidence(detector: LearnedDetector) -> None:
    previous = UNSURE_CORRECTION_TURNS[0]["assistant_message"]
    assert detect(UNSURE_PERCENT_QUOTE, previous).type is CorrectionType.NONE  # no rule fires
    found = detect(UNSURE_PERCENT_QUOTE, previous, detector, lambda *_: CorrectionType.PREFERENCE)
    assert (found.type, found.corrected, found.confidence) == (CorrectionType.PREFERENCE, UNSURE_PERCENT_QUOTE, GENERAL)


def test_a_sure_decision_is_never_asked_about(detector: LearnedDetector) -> None:
    def never(message: str, previous: str | None, unsure: Correction) -> CorrectionType:
        raise AssertionError("asked about a sure decision")

    sure = detect("不对，退货期是30天不是7天", "商品签收后7天内可以申请无理由退货。", detector, never)
    assert sure.type is CorrectionType.FACTUAL and not sure.unsure


@pytest.mark.parametrize(
    ("answer", "outcome", "verdict"),
    [
        (PREFERENCE_TYPE_VERDICT, "answered", CorrectionType.PREFERENCE),
        ('```json\n{"verdict": "none", "reason": "a one-off"}\n```', "answered", CorrectionType.NONE),
        ('{"verdict": "Preference"}', "malformed", None),
        ('{"verdict": "benign"}', "malformed", None),
        ("It is a preference.", "malformed", None),
        (None, "failed", None),
    ],
)
def test_the_asker_takes_only_a_clear_verdict(
    settings: Settings, answer: str | None, outcome: str, verdict: CorrectionType | None
) -> None:
    budget = MemoryBudget()
    now = datetime(2026, 3, 1, 9, tzinfo=UTC)
    asker = CorrectionAsker(Cascade(FixedModel(answer), budget, 5, settings.prompts_dir), now)
    unsure = Correction(CorrectionType.NONE, 0.0, unsure=True)
    assert asker(UNSURE_PERCENT_QUOTE, "转化率为 3.4567%", unsure) is verdict
    assert asker.opinion is not None and (asker.opinion.outcome, asker.opinion.verdict) == (outcome, verdict)
    assert asker.opinion.asked and budget.by_purpose[today(now, "UTC"), PURPOSE_CORRECTION] == 1


def test_a_spent_budget_asks_nothing(settings: Settings) -> None:
    model = FixedModel(PREFERENCE_TYPE_VERDICT)
    budget = MemoryBudget()
    now = datetime(2026, 3, 1, 9, tzinfo=UTC)
    assert budget.take("screen", 1, today(now, "UTC"))  # the screen spent the day's one call
    asker = CorrectionAsker(Cascade(model, budget, 1, settings.prompts_dir), now)
    assert asker(UNSURE_PERCENT_QUOTE, None, Correction(CorrectionType.NONE, 0.0, unsure=True)) is None
    assert asker.opinion is not None and asker.opinion.outcome == "budget" and not asker.opinion.asked
    assert model.asked == 0


# ---- record_turn through the plugin's runtime path ---------------------------------------------------------------


@pytest.fixture
def stores(settings: Settings) -> StoreCache:
    return StoreCache(settings)


def record(stores: StoreCache, credentials: dict[str, Any], llm: RecordingLlm | None, conversation: str) -> ToolResult:
    """UNSURE_CORRECTION_TURNS in one conversation, with the builder's model when `llm` is given; the last result."""
    recorded = None
    for turn in UNSURE_CORRECTION_TURNS:
        parameters = {**turn, **({"model": MODEL_SELECTOR} if llm is not None else {})}
        context = Context(user_id="lao-wang", conversation_id=conversation, llm=llm)
        recorded = run(stores, "record_turn", credentials, parameters, context)
        assert "error" not in recorded.json, recorded.json
    assert recorded is not None
    return recorded


def test_record_turn_without_a_model_keeps_the_detectors_decision(
    stores: StoreCache, plugin_credentials: dict[str, Any], plugin_store: InsightStore
) -> None:
    recorded = record(stores, plugin_credentials, None, "conv-none")
    detector = recorded.json["detector"]
    assert detector["unsure"] and not detector["asked"] and detector["model_verdict"] is None
    assert detector["model_outcome"] is None and recorded.json["correction"]["type"] == "none"
    assert recorded.json["learned"] == [] and plugin_store.count() == (0, 2)


def test_record_turn_applies_the_models_verdict_on_an_unsure_turn(
    stores: StoreCache, plugin_credentials: dict[str, Any], plugin_store: InsightStore
) -> None:
    # The first turn is no correction and sure; the second is asked about; its lesson is then screened, and a
    # screen that is unsure of it asks too (a benign verdict is queued for that).
    llm = RecordingLlm([PREFERENCE_TYPE_VERDICT, BENIGN_VERDICT])
    recorded = record(stores, plugin_credentials, llm, "conv-verdict")
    detector, correction = recorded.json["detector"], recorded.json["correction"]
    assert detector["asked"] and detector["model_verdict"] == "preference" and detector["model_outcome"] == "answered"
    assert "judged it preference" in detector["model_detail"]
    assert (correction["type"], correction["corrected"], correction["confidence"]) == (
        "preference",
        UNSURE_PERCENT_QUOTE,
        GENERAL,
    )
    assert recorded.variables["correction_type"] == "preference"
    first = llm.calls[0]
    assert first["stream"] is False and first["model_config"]["completion_params"]["max_tokens"] == MAX_OUTPUT_TOKENS
    system, user = (message.content for message in first["prompt_messages"])
    assert "factual" in system and "preference" in system and UNSURE_PERCENT_QUOTE in user and "3.4567%" in user
    (learned,) = recorded.json["learned"]
    assert learned["status"] in ("created", "pending_review")


@pytest.mark.parametrize(
    ("reply", "outcome"),
    [('{"verdict": "a preference"}', "malformed"), (RuntimeError("[openai] quota exceeded"), "failed")],
    ids=["malformed", "model-failure"],
)
def test_record_turn_ignores_anything_but_a_clear_verdict(
    stores: StoreCache, plugin_credentials: dict[str, Any], reply: str | Exception, outcome: str
) -> None:
    llm = RecordingLlm([reply])
    recorded = record(stores, plugin_credentials, llm, f"conv-{outcome}")
    detector = recorded.json["detector"]
    assert detector["asked"] and detector["model_verdict"] is None and detector["model_outcome"] == outcome
    assert recorded.json["correction"]["type"] == "none" and recorded.json["learned"] == [] and len(llm.calls) == 1


def test_record_turn_does_not_ask_when_the_days_budget_is_spent(
    stores: StoreCache, plugin_credentials: dict[str, Any], plugin_store: InsightStore, client: weaviate.WeaviateClient
) -> None:
    settings = plugin_store.settings
    budget = WeaviateBudget(project_collection(client, settings.project, BUDGET))
    day = today(datetime.now(UTC), settings.timezone)
    while budget.take("screen", settings.model_calls_per_day, day):
        pass
    llm = RecordingLlm([PREFERENCE_TYPE_VERDICT])
    recorded = record(stores, plugin_credentials, llm, "conv-budget")
    detector = recorded.json["detector"]
    assert not detector["asked"] and detector["model_outcome"] == "budget" and "spent" in detector["model_detail"]
    assert recorded.json["correction"]["type"] == "none" and llm.calls == []
