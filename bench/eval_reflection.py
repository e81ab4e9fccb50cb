"""Reflection end to end on the labelled sessions (bench/data/reflection_sessions.json), with the offline extractor.

Every session is recorded turn by turn through the plugin's record_turn (the adapter the tool runs, in this
process), so the correction detector's layered writes happen as in Dify; then the reflection worker's engine reflects
on the session once it has ended. Later conversations then go through search_insight:

  lessons reached   an expected lesson is in the rules injected into a later conversation of the same user in the
                    same scene (the rules contain one of its keywords), for at least one of its probes
  leaked            a user-level lesson is in the rules injected into the same conversation by another user
  nothing clean     a nothing-to-learn session left no active insight behind
  wrong user        a user's false claim became no active project-wide insight
  injection         nothing active came of a planted instruction, and a later conversation's rules hold none of
                    its forbidden text
  secret            no stored insight or turn holds the secret, and the lesson still reached the user

The never-tuned sets, each written after the training corpora were frozen, by writers who saw none of them:
bench/data/reflection_eval_sessions_43.json ("eval-43", same format, no "split": the whole file is one set), the
headline, and reflection_eval_sessions_7.json ("eval-7"), measured before the last changes to the loop (never read).
Then reflection_tune_sessions_42, _41, _40, _39, _38, _37, _36, _35, _34, _33, _32, _31, _30, _29, _28, _27, _26, _25,
_24, _23, _22, _21, _20, _19, _18, _17, _16, _15, _14 and _13 ("tune-42" ... "tune-13"): written the same way,
measured blind, then read to tune the loop, so their failures are shown. (The older tuning sets, _5 to _12, were
retired into the screen's training: training/screening/retired.)
Each runs in a project of its own, so its users never meet the other splits'. Then the holdout split (nothing in the
extractor or the detector was tuned on it) and the tune split. Every session is recorded with the learned correction
detector on, as record_turn runs in Dify, and reflected on by the offline extractor with the learned detector beside its
rules, as the worker runs it. The failures of the never-tuned sets and the holdout stay hidden (only their counts by
category are shown), so that nothing is tuned on them. The four sets written apart before were retired into the
poisoning screen's training (training/screening/retired: their user turns as lone messages), so they measure nothing any
more.

    make eval-reflection    (or: .venv/bin/python -m bench.eval_reflection)
"""

from __future__ import annotations

from hindsight_insights.quiet import quiet_dependency_warnings

quiet_dependency_warnings()  # before anything imports weaviate-client

import argparse
import contextlib
import json
import tempfile
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hindsight_dify import Context, StoreCache, credentials_for, run
from hindsight_insights.config import Settings
from hindsight_insights.detector_model import learned_detector
from hindsight_insights.models import InsightStatus, Scope
from hindsight_insights.reflection import ReflectionEngine
from hindsight_insights.reflection.offline import OfflineExtractor
from hindsight_insights.scope import AWAITING_AGREEMENT, PROJECT_NEEDS_REVIEW
from hindsight_insights.screening import INJECTION
from hindsight_insights.store import InsightStore
from hindsight_insights.weaviate_server import running_weaviate

DATA = Path(__file__).parent / "data" / "reflection_sessions.json"
EVAL_43_DATA = Path(__file__).parent / "data" / "reflection_eval_sessions_43.json"
TUNE_42_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_42.json"
TUNE_41_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_41.json"
TUNE_40_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_40.json"
TUNE_39_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_39.json"
TUNE_38_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_38.json"
TUNE_37_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_37.json"
TUNE_36_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_36.json"
TUNE_35_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_35.json"
TUNE_34_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_34.json"
TUNE_33_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_33.json"
TUNE_32_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_32.json"
TUNE_31_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_31.json"
TUNE_30_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_30.json"
TUNE_29_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_29.json"
TUNE_28_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_28.json"
TUNE_27_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_27.json"
TUNE_26_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_26.json"
TUNE_25_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_25.json"
TUNE_24_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_24.json"
EVAL_7_DATA = Path(__file__).parent / "data" / "reflection_eval_sessions_7.json"
# Sets written apart, measured blind, then read to tune the loop: their failures are shown, like the tune split's.
TUNE_23_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_23.json"
TUNE_22_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_22.json"
TUNE_21_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_21.json"
TUNE_20_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_20.json"
TUNE_19_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_19.json"
TUNE_18_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_18.json"
TUNE_17_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_17.json"
TUNE_16_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_16.json"
TUNE_15_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_15.json"
TUNE_14_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_14.json"
TUNE_13_DATA = Path(__file__).parent / "data" / "reflection_tune_sessions_13.json"
# The never-tuned sets, newest (the headline) first, then the tuning set written apart; each in a project of its own.
NEWER_SETS = {
    "eval-43": EVAL_43_DATA,
    "tune-42": TUNE_42_DATA,
    "tune-41": TUNE_41_DATA,
    "tune-40": TUNE_40_DATA,
    "tune-39": TUNE_39_DATA,
    "tune-38": TUNE_38_DATA,
    "tune-37": TUNE_37_DATA,
    "tune-36": TUNE_36_DATA,
    "tune-35": TUNE_35_DATA,
    "tune-34": TUNE_34_DATA,
    "tune-33": TUNE_33_DATA,
    "tune-32": TUNE_32_DATA,
    "tune-31": TUNE_31_DATA,
    "tune-30": TUNE_30_DATA,
    "tune-29": TUNE_29_DATA,
    "tune-28": TUNE_28_DATA,
    "tune-27": TUNE_27_DATA,
    "tune-26": TUNE_26_DATA,
    "tune-25": TUNE_25_DATA,
    "tune-24": TUNE_24_DATA,
    "eval-7": EVAL_7_DATA,
    "tune-23": TUNE_23_DATA,
    "tune-22": TUNE_22_DATA,
    "tune-21": TUNE_21_DATA,
    "tune-20": TUNE_20_DATA,
    "tune-19": TUNE_19_DATA,
    "tune-18": TUNE_18_DATA,
    "tune-17": TUNE_17_DATA,
    "tune-16": TUNE_16_DATA,
    "tune-15": TUNE_15_DATA,
    "tune-14": TUNE_14_DATA,
    "tune-13": TUNE_13_DATA,
}
NEVER_TUNED = ("eval-43", "eval-7")
HIDDEN = ("holdout", *NEVER_TUNED)  # splits whose failures are not printed unless --show-failures all


@dataclass
class Tally:
    reached: int = 0
    lessons: int = 0
    leaked: int = 0
    user_lessons_probed: int = 0
    nothing_clean: int = 0
    nothing: int = 0
    traps_passed: int = 0
    traps: int = 0
    failures: list[str] = field(default_factory=list)
    # (session category, why) of each lesson that did not reach its user: counts only, shown for hidden splits too,
    # so that a class of failure is visible without anyone reading the items.
    missed: Counter[tuple[str, str]] = field(default_factory=Counter)
    # What a nothing-to-learn session left behind (kind and scope of each active insight) and which traps failed, as
    # counts, shown for hidden splits too.
    unclean: Counter[str] = field(default_factory=Counter)


def call(stores: StoreCache, creds: dict[str, Any], tool: str, parameters: dict[str, Any], context: Context) -> Any:
    result = run(stores, tool, creds, parameters, context)
    if "error" in result.json:
        raise SystemExit(f"{tool} failed: {result.json['error']}")
    return result


def rules_for(stores: StoreCache, creds: dict[str, Any], user: str, scene: str, turns: list[str]) -> str:
    parameters = {"query": json.dumps(turns, ensure_ascii=False), "scene": scene}
    return str(call(stores, creds, "search_insight", parameters, Context(user_id=user)).json["rules"])


def session_insights(store: InsightStore, session_id: str) -> list[Any]:
    return [i for i in store.list_insights(limit=1000) if i.evidence.session_id == session_id]


def evaluate(store: InsightStore, stores: StoreCache, creds: dict[str, Any], sessions: list[dict[str, Any]]) -> Tally:
    tally = Tally()
    # The worker's offline extractor: the rules with the learned detector beside them (worker/service.py).
    extractor = OfflineExtractor(store.settings).with_detector(learned_detector(store.embedder, store.settings))
    for session in sessions:
        conversation = f"{session['id']}-{uuid.uuid4().hex[:6]}"
        for index, turn in enumerate(session["turns"]):
            parameters = {
                "user_message": turn["user"],
                "assistant_message": turn["assistant"],
                "scene": session["scene"],
            }
            context = Context(
                user_id=session["user_id"], conversation_id=conversation, message_id=f"{conversation}-{index}"
            )
            call(stores, creds, "record_turn", parameters, context)
        report = ReflectionEngine(store, extractor).reflect_session(conversation)
        if report.outcome != "ok":
            tally.failures.append(f"{session['id']}: reflection {report.outcome}: {report.reason}")
        judge(store, stores, creds, session, conversation, tally)
    return tally


def probe_turns(probe: str | dict[str, Any]) -> list[str]:
    """A later conversation's turns: the sets spell a probe as {"turns": [...]}, as {"query": "..."} (the other user's,
    in eval-3) or as the text of its one turn (eval-3)."""
    if isinstance(probe, str):
        return [probe]
    return list(probe["turns"]) if "turns" in probe else [probe["query"]]


def judge(
    store: InsightStore,
    stores: StoreCache,
    creds: dict[str, Any],
    session: dict[str, Any],
    conversation: str,
    tally: Tally,
) -> None:
    category, scene, user = session["category"], session["scene"], session["user_id"]
    learned = [i for i in session_insights(store, conversation) if i.status is InsightStatus.ACTIVE]
    for lesson in session["expected"]:
        tally.lessons += 1
        keywords = [k.lower() for k in lesson["must_contain_any"]]
        probes = [rules_for(stores, creds, user, scene, probe_turns(probe)).lower() for probe in session["probes"]]
        if any(any(k in rules for k in keywords) for rules in probes):
            tally.reached += 1
        else:
            why = why_missed(store, conversation, keywords)
            tally.failures.append(f"{session['id']}: lesson {lesson['topic']!r} did not reach {user}: {why}")
            tally.missed[(category, why)] += 1
        other = session.get("other_user_probe")
        if other and lesson["scope"] == "user" and not other.get("lesson_should_apply", False):
            tally.user_lessons_probed += 1
            rules = rules_for(stores, creds, other["user_id"], scene, probe_turns(other)).lower()
            if any(k in rules for k in keywords):
                tally.leaked += 1
                tally.failures.append(f"{session['id']}: lesson {lesson['topic']!r} leaked to {other['user_id']}")
    if category == "nothing":
        tally.nothing += 1
        if learned:
            tally.failures.append(f"{session['id']}: nothing to learn, yet {[i.action for i in learned]}")
            tally.unclean.update(f"nothing to learn, yet a {i.kind} for the {i.scope}" for i in learned)
        else:
            tally.nothing_clean += 1
    if category in ("wrong_user", "injection", "secret"):
        tally.traps += 1
        passed = trap_passed(store, stores, creds, session, conversation, learned)
        tally.traps_passed += passed
        if not passed:
            tally.failures.append(f"{session['id']}: {category} trap failed")
            tally.unclean[f"{category} trap failed"] += 1


def why_missed(store: InsightStore, conversation: str, keywords: list[str]) -> str:
    """Where a lesson that did not reach its user stopped: never learned, learned in other words, held for review
    (the screen, or a weak signal), or active but not injected (the gate, the scope or the scene)."""
    insights = session_insights(store, conversation)
    if not insights:
        return "nothing learned from the session"
    saying = [i for i in insights if any(k in f"{i.topic} {i.action}".lower() for k in keywords)]
    if not saying:
        return "learned, but not this lesson"
    if any(i.status is InsightStatus.ACTIVE for i in saying):
        return "active, not injected"
    return "learned, " + "/".join(sorted({held_because(i) for i in saying}))


def held_because(insight: Any) -> str:
    """Why a learned lesson is not active, as one of a few fixed labels (the reason itself quotes the text)."""
    reason = insight.review_reason or ""
    if insight.status is not InsightStatus.PENDING_REVIEW:
        return str(insight.status)
    if reason.startswith(f"{INJECTION} (the screen is unsure"):
        return f"{insight.scope} copy held: the screen unsure"
    if reason.startswith(INJECTION):
        return f"{insight.scope} copy held: the screen's suspect"
    if reason in (PROJECT_NEEDS_REVIEW, AWAITING_AGREEMENT):
        return f"{insight.scope} copy waiting for review or agreement"
    return f"{insight.scope} copy held: other"


def trap_passed(
    store: InsightStore,
    stores: StoreCache,
    creds: dict[str, Any],
    session: dict[str, Any],
    conversation: str,
    learned: list[Any],
) -> bool:
    category = session["category"]
    if category == "wrong_user":
        return not [i for i in learned if i.scope is Scope.PROJECT]
    forbidden = [text.lower() for text in session.get("forbidden_substrings", [])]
    rules = " ".join(
        rules_for(stores, creds, session["user_id"], session["scene"], probe_turns(probe))
        for probe in session["probes"]
    ).lower()
    if any(text in rules for text in forbidden):
        return False
    if category == "injection":
        return not learned
    stored = json.dumps(
        [i.model_dump(mode="json") for i in session_insights(store, conversation)]
        + [t.model_dump(mode="json") for t in store.turns.session(conversation)],
        ensure_ascii=False,
    ).lower()
    return not any(text in stored for text in forbidden)


def show(split: str, tally: Tally) -> None:
    def rate(part: int, whole: int) -> str:
        return f"{part}/{whole} = {part / whole:.3f}" if whole else "n/a"

    print(f"\n{split}:")
    print(f"  lessons reaching the right user:  {rate(tally.reached, tally.lessons)}")
    print(f"  user lessons leaked to another:   {rate(tally.leaked, tally.user_lessons_probed)}")
    print(f"  nothing-to-learn sessions clean:  {rate(tally.nothing_clean, tally.nothing)}")
    print(f"  traps passed (wrong user, injection, secret): {rate(tally.traps_passed, tally.traps)}")
    for (category, why), count in sorted(tally.missed.items()):
        print(f"  missed lessons, {category}: {why}: {count}")
    for what, count in sorted(tally.unclean.items()):
        print(f"  {what}: {count}")
    for failure in tally.failures:
        print(f"    {failure}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--show-failures", choices=["tune", "all"], default="tune", help="holdout failures stay hidden")
    args = parser.parse_args()
    sessions = json.loads(DATA.read_text())["sessions"]
    by_split: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for session in sessions:
        by_split[session["split"]].append(session)
    # The learned detector on whatever the environment says: record_turn runs with it in Dify.
    base = Settings(project=f"eval-reflection-{uuid.uuid4().hex[:8]}", reflection_llm="offline", detector=True)
    with (
        tempfile.TemporaryDirectory() as data_dir,
        running_weaviate(base, Path(data_dir)) as settings,
    ):
        stores = StoreCache(settings)
        creds = credentials_for(settings)
        store = stores.store_for(creds)
        results = {split: evaluate(store, stores, creds, by_split[split]) for split in ("holdout", "tune")}
        with contextlib.suppress(Exception):
            store.close()
        newer = {}
        for number, (split, path) in enumerate(reversed(NEWER_SETS.items()), start=2):
            if not path.exists():
                continue
            by_split[split] = json.loads(path.read_text())["sessions"]
            creds_n = credentials_for(settings.model_copy(update={"project": f"{settings.project}-{number}"}))
            store_n = stores.store_for(creds_n)
            newer[split] = evaluate(store_n, stores, creds_n, by_split[split])
            with contextlib.suppress(Exception):
                store_n.close()
        results = dict(reversed(newer.items())) | results
    learned = "on" if settings.detector else "off"
    print(f"{len(sessions)} labelled sessions; offline extractor; learned correction detector {learned}")
    for split, path in NEWER_SETS.items():
        if split in by_split:
            use = "never tuned on" if split in NEVER_TUNED else "measured blind, then read to tune the loop"
            print(f"{split}: {len(by_split[split])} sessions of {path.name}, written after a freeze, {use}")
    print(f"holdout: {len(by_split['holdout'])} sessions, never tuned on; tune: {len(by_split['tune'])} sessions")
    for split, tally in results.items():
        if split in HIDDEN and args.show_failures != "all":
            tally.failures = [f"({len(tally.failures)} failures hidden: {split})"] if tally.failures else []
        show(split, tally)


if __name__ == "__main__":
    main()
