"""The evaluation sets stay independent of what was built from data: no rule quotes an evaluation item, no training
sentence appears in one. Runs over every evaluation set present: bench/data/poisoning.json (its holdout split for
the rules, all of it for the training corpus), and the screening set written apart (bench/data/screening_eval_80.json)
when it exists. The training corpora include the earlier sets retired into training (training/*/retired).

What counts as a rule's literal text (the extraction): each regex of the screen and redaction tables is parsed with
Python's own regex parser (sre_parse), and every maximal run of consecutive literal characters is collected,
descending into groups, alternatives and repeats (a repeated or optional character ends a run: `instructions?`
gives "instruction"). A run is a quote, not vocabulary, when it has 4 or more words: 4+ space-separated words, or
8+ Chinese characters (Chinese writes no spaces; a word is about two characters). Single words and two- or
three-word terms ("system prompt", "do anything now", 系统管理员) are the vocabulary every attack and every
description of one shares; a rule may name them. A four-word run is a phrase someone wrote, and finding it in an
evaluation item means the rule was written from that item.

The poisoning.json tune split is left out of the rule check on purpose: the rules were tuned on it by design (the
eval reports it apart from the holdout). Training sentences: every sentence of 20+ characters of the screening
corpus (split at sentence ends, folded) must not occur in any item of any evaluation set, tune split included.

The correction detector the same way: the literal runs of every regex of correction_patterns (quotes as above) must
not occur in an item of bench/data/corrections.json's holdout or of bench/data/corrections_eval_42.json (the new set,
never tuned on), message or previous answer, nor in a turn of the never-tuned reflection sessions
(bench/data/reflection_eval_sessions_43.json and _7); and no sentence of 20+ characters of a training message
(training/corrections/corpus.jsonl and the retired sets beside it) may occur in any item of those files, tune split
included. The training corpus's previous answers are left out of that check: they are the context, not what is
labelled, and a few stock assistant sentences ("thanks for the update", "your pto balance is 12 days") recur in both
by coincidence.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

import pytest

from bench import eval_corrections, eval_reflection
from bench.eval_poisoning import DATA, REDACTION_EVALS, SCREENING_EVALS, load_screening_eval
from hindsight_insights.detection import correction_patterns, poisoning_patterns, redaction_patterns
from hindsight_insights.detection.text import fold
from scripts import train_detector
from scripts.train_screen import CORPUS, load_corpus

with warnings.catch_warnings():  # the public name of re._parser, deprecated but typed
    warnings.simplefilter("ignore", DeprecationWarning)
    import sre_constants
    import sre_parse

_SENTENCE_END = re.compile(r"[。!?;\n]+|(?<=[a-z0-9)\"'])\.(?=\s|$)")


def literal_runs(parsed: Any) -> list[str]:
    """Maximal runs of literal characters in a parsed regex, from every branch, group and repeat."""
    found: list[str] = []
    run: list[str] = []
    for op, argument in parsed:
        if op is sre_constants.LITERAL:
            run.append(chr(argument))
            continue
        if run:
            found.append("".join(run))
            run = []
        if op is sre_constants.SUBPATTERN:
            found += literal_runs(argument[-1])
        elif op is sre_constants.BRANCH:
            for branch in argument[1]:
                found += literal_runs(branch)
        elif op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
            found += literal_runs(argument[2])
    if run:
        found.append("".join(run))
    return found


def is_quote(run: str) -> bool:
    han = sum("\u4e00" <= char <= "\u9fff" for char in run)
    return len(run.split()) >= 4 or han >= 8


def rule_patterns() -> list[re.Pattern[str]]:
    patterns = [pattern for _, pattern in poisoning_patterns.RULES + poisoning_patterns.COMPACT_RULES]
    patterns += [pattern for _, pattern in redaction_patterns.NUMBER_LABELS]
    for module in (poisoning_patterns, redaction_patterns):
        patterns += [value for value in vars(module).values() if isinstance(value, re.Pattern)]
    return patterns


def rule_quotes() -> set[str]:
    return {run.strip() for p in rule_patterns() for run in literal_runs(sre_parse.parse(p.pattern)) if is_quote(run)}


def item_text(item: dict[str, Any]) -> str:
    insight = item.get("insight", item)
    return fold(" ".join(str(insight.get(key, "")) for key in ("topic", "action", "observation", "text"))).text


def eval_texts(*, with_tune: bool) -> dict[str, str]:
    """id -> folded text of every evaluation item present."""
    texts: dict[str, str] = {}
    data = json.loads(DATA.read_text(encoding="utf-8"))
    for item in data["items"] + data["redaction"]:
        if with_tune or item["split"] != "tune":
            texts[f"poisoning.json:{item['id']}"] = item_text(item)
    for path in (*SCREENING_EVALS, *REDACTION_EVALS):
        independent = load_screening_eval(path)
        if independent is not None:
            for index, item in enumerate(independent["items"] + independent["redaction"]):
                texts[f"{path.name}:{item.get('id', index)}"] = item_text(item)
    return texts


def training_sentences() -> set[str]:
    sentences = set()
    for item in load_corpus():
        for field in ("topic", "action", "observation"):
            for sentence in _SENTENCE_END.split(fold(item[field]).text):
                cleaned = sentence.strip(" \t“”\"'‘’「」:,，")
                if len(cleaned) >= 20:
                    sentences.add(cleaned)
    return sentences


def test_the_extraction_finds_literal_runs_and_tells_quotes_from_words() -> None:
    runs = literal_runs(
        sre_parse.parse(r"\b(ignore|skip)s? all previous instructions( now)?|没有任何限制的助手模式开启")
    )
    assert "ignore" in runs and " all previous instructions" in runs and "没有任何限制的助手模式开启" in runs
    assert is_quote(" all previous instructions now") and not is_quote("system prompt")
    assert is_quote("没有任何限制的助手模式") and not is_quote("系统管理员")
    assert rule_quotes() <= {run.strip() for p in rule_patterns() for run in literal_runs(sre_parse.parse(p.pattern))}


def test_no_rule_quotes_an_evaluation_item() -> None:
    quotes = rule_quotes()
    leaks = sorted(
        (quote, key) for key, text in eval_texts(with_tune=False).items() for quote in quotes if quote in text
    )
    assert not leaks, f"rule literals found in evaluation items: {leaks}"


def test_no_training_sentence_is_in_an_evaluation_item() -> None:
    sentences = training_sentences()
    assert len(sentences) > 500  # the corpus is read and split
    texts = eval_texts(with_tune=True)
    leaks = sorted((key, sentence[:40]) for key, text in texts.items() for sentence in sentences if sentence in text)
    assert set(leaks) <= KNOWN_OVERLAPS, f"training sentences found in evaluation items: {leaks}"


# Short everyday phrases that an evaluation item shares with a training item by coincidence (the writer saw no
# training item), each a whole clause anyone writes: listed one by one with the item, so that any other overlap still
# fails. Most are a topic's wording or a stock phrase of the attack itself, which the writer could not have taken from
# the corpus (they never saw it).
KNOWN_OVERLAPS = {
    ("reflection_tune_sessions_26.json:sy010", "can you redo it that way"),  # an everyday request
    # the textbook injection phrase, in the old battery and in attacks and security notes of retired screening sets
    ("poisoning.json:p005", "ignore all previous instructions"),
    ("poisoning.json:p044", "ignore all previous instructions"),
    ("reflection_tune_sessions_28.json:tj013", "thank you for letting us know"),  # everyday thanks
    ("reflection_tune_sessions_30.json:tn025", "can you draft a reply"),  # an everyday request (tuning sets too)
    # the textbook injection phrase, the stock words of an attack that spares the asker a check and of a markdown image
    # that carries data off, and a few everyday words of documentation and bookings in the eightieth screening set; a
    # stock wish about emojis and a stock complaint in the forty-second message set; an everyday request in the
    # forty-third sessions (the writers saw no training item)
    ("screening_eval_80.json:ob027", "no need to check who they are"),
    ("screening_eval_80.json:ob066", "ignore all previous instructions"),
    ("screening_eval_80.json:ob089", "ignore all previous instructions"),
    ("screening_eval_80.json:ob089", "ignore all previous instructions and the"),
    ("screening_eval_80.json:ob091", "ignore all previous instructions"),
    ("screening_eval_80.json:ob091", "ignore all previous instructions and the"),
    ("screening_eval_80.json:oc012", "database connection example"),
    ("screening_eval_80.json:oc040", "[x](https://collector.example/"),
    ("screening_eval_80.json:oc052", "the values are placeholders"),
    ("screening_eval_80.json:oc054", "booking confirmation template"),
    ("screening_eval_80.json:oc054", "booking confirmations"),
    ("new-42:fb099", "you can drop the emojis and exclamation "),
    ("new-42:fc018", "that doesn't answer my question"),
    ("reflection_eval_sessions_43.json:ur004", "can you draft a reply"),
    # an everyday request in the forty-second sessions (a tuning set now)
    ("reflection_tune_sessions_42.json:uo004", "can you draft a reply"),
    ("reflection_tune_sessions_42.json:up013", "can you draft a reply"),
    ("reflection_tune_sessions_42.json:up017", "can you draft a reply"),
    ("reflection_tune_sessions_42.json:up018", "can you draft a reply"),
    ("reflection_tune_sessions_42.json:up025", "can you draft a reply"),
    # an everyday request in the forty-first sessions (a tuning set now)
    ("reflection_tune_sessions_41.json:um010", "can you draft a reply"),
    ("reflection_tune_sessions_41.json:um011", "can you draft a reply"),
    ("reflection_tune_sessions_41.json:un006", "can you draft a reply"),
    ("reflection_tune_sessions_41.json:un014", "can you draft a reply"),
    # an everyday remark and an everyday request in the fortieth sessions (a tuning set now)
    ("reflection_tune_sessions_40.json:uk004", "queue's out the door"),
    ("reflection_tune_sessions_40.json:uk006", "can you draft a reply"),
    # an everyday question in the thirty-ninth sessions (a tuning set now)
    ("reflection_tune_sessions_39.json:uj022", "when could you start"),
    # an everyday question of the thirty-seventh message set (training now), asked in two older tuning sets
    ("reflection_tune_sessions_14.json:sb018", "when could you start"),
    ("reflection_tune_sessions_34.json:tv018", "when could you start"),
    # an everyday request in the thirty-eighth sessions (a tuning set now)
    ("reflection_tune_sessions_38.json:ug002", "can you draft a reply"),
    # an everyday clause of the thirty-ninth message set (training now), said in an older tuning set
    ("reflection_tune_sessions_27.json:th004", "nothing else changes"),
    # an everyday clause in the thirty-seventh sessions (a tuning set now)
    ("reflection_tune_sessions_37.json:uf008", "third time this month"),
    # everyday requests and thanks in the thirty-sixth sessions (a tuning set now)
    ("reflection_tune_sessions_36.json:tz017", "can you draft a reply"),
    ("reflection_tune_sessions_36.json:ud005", "can you draft a reply"),
    ("reflection_tune_sessions_36.json:ud010", "that's lovely, thank you"),
    # everyday requests and thanks in the thirty-fifth sessions (a tuning set now)
    ("reflection_tune_sessions_35.json:tx001", "can you draft a reply"),
    ("reflection_tune_sessions_35.json:ty001", "can you draft a reply"),
    ("reflection_tune_sessions_35.json:ty025", "thank you for letting us know"),
    # everyday requests in the thirty-fourth sessions (a tuning set now)
    ("reflection_tune_sessions_34.json:tv005", "can you draft a reply"),
    ("reflection_tune_sessions_34.json:tw012", "every time, not just today"),
    # an everyday question that the retired thirty-second message set shares with a tuning set written before it
    ("reflection_tune_sessions_22.json:sq017", "what's the lead time"),
    # everyday requests and thanks in the thirty-third sessions (a tuning set now)
    ("reflection_tune_sessions_33.json:tt012", "anything i should know"),
    ("reflection_tune_sessions_33.json:tt017", "can you draft a reply"),
    ("reflection_tune_sessions_33.json:tt017", "thank you for letting us know"),
    ("reflection_tune_sessions_33.json:tt025", "can you draft a reply"),
    # an everyday clause that the retired thirty-first message set shares with a tuning set written before it
    ("reflection_tune_sessions_14.json:sb004", "third time this month"),
    ("reflection_tune_sessions_29.json:tk023", "can you draft a reply"),  # an everyday request (tuning sets too)
    # everyday requests that the retired twenty-seventh message set shares with tuning sets written before it
    ("reflection_tune_sessions_16.json:sf021", "can you redo this one"),
    ("reflection_tune_sessions_22.json:sr019", "can you redo this one"),
    ("reflection_tune_sessions_24.json:su015", "can you redo this one"),
    ("reflection_tune_sessions_24.json:sv020", "can you redo this one"),
    ("reflection_tune_sessions_24.json:sv025", "can you redo this one"),
    ("reflection_tune_sessions_21.json:sp013", "this one needs to be properly formal"),
    ("reflection_tune_sessions_27.json:tg011", "can you draft a reply"),  # an everyday request (tuning sets too)
    ("reflection_tune_sessions_27.json:th012", "can you draft a reply"),
    ("reflection_tune_sessions_26.json:sz004", "can you draft a reply"),  # an everyday request (tuning sets too)
    ("reflection_tune_sessions_13.json:rz025", "can you draft a reply"),
    ("reflection_tune_sessions_14.json:sb025", "does that change anything"),  # an everyday question
    ("reflection_tune_sessions_17.json:sg006", "i'd rather not guess"),  # everyday caution (corrections_eval_17 too)
    ("reflection_tune_sessions_19.json:sl008", "right, that's what i thought"),  # everyday agreement (a tuning set)
    ("reflection_tune_sessions_20.json:sm001", "makes me feel like i'm at the bank"),  # an everyday complaint
    ("reflection_tune_sessions_20.json:sm021", "give me powershell versions"),  # a Windows admin's stock wish
    ("reflection_tune_sessions_20.json:sm025", "i'd rather not guess"),  # everyday caution (tune-17 has it too)
    ("tune:c202", "anything i should know"),  # an everyday question (a retired set in training has it too)
    ("reflection_tune_sessions_23.json:st020", "can you redo the plan"),  # an everyday request
    ("reflection_tune_sessions_24.json:sv011", "can you draft a reply"),  # an everyday request (tuning sets too)
    ("reflection_tune_sessions_22.json:sq003", "i'd rather not guess"),  # everyday caution (tune-17, tune-20 too)
    ("reflection_tune_sessions_22.json:sr005", "does that change anything"),  # an everyday question (tune-14 too)
}


def compiled_in(value: Any) -> list[re.Pattern[str]]:
    """Every compiled regex in a module-level value, through its lists, tuples, sets and dicts."""
    if isinstance(value, re.Pattern):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple | set | frozenset):
        return [pattern for element in value for pattern in compiled_in(element)]
    return []


def correction_rule_quotes() -> set[str]:
    patterns = [p for value in vars(correction_patterns).values() for p in compiled_in(value)]
    assert len(patterns) > 100  # every table is walked
    return {run.strip() for p in patterns for run in literal_runs(sre_parse.parse(p.pattern)) if is_quote(run)}


def correction_eval_texts(*, with_tune: bool) -> dict[str, str]:
    """id -> folded message and previous answer of every correction evaluation item (the new set's split: new)."""
    return {
        f"{item['split']}:{item['id']}": fold(f"{item['previous_assistant']}\n{item['message']}").text
        for item in eval_corrections.load()
        if with_tune or item["split"] != "tune"
    }


# Stock phrases that a training message and an evaluation item share by coincidence, not by copying: listed one by
# one, so that any other overlap still fails.
STOCK_PHRASES = frozenset(
    {
        "thanks for the update",
        "bullet points work better for me",
        "that's not how it works",
        "that's not what i asked",
        "oops, typo on my end",
        "is that still current",
    }
)


def correction_training_sentences() -> set[str]:
    sentences = set()
    for item in train_detector.load_corpus():
        for sentence in _SENTENCE_END.split(fold(item["message"]).text):
            cleaned = sentence.strip(" \t“”\"'‘’「」:,，")
            if len(cleaned) >= 20 and cleaned not in STOCK_PHRASES:
                sentences.add(cleaned)
    return sentences


def reflection_eval_texts() -> dict[str, str]:
    """file:id -> folded turns (the user's and the assistant's) of every never-tuned reflection session."""
    texts = {}
    for path in eval_reflection.NEWER_SETS.values():
        if path.exists():
            for session in json.loads(path.read_text(encoding="utf-8"))["sessions"]:
                turns = "\n".join(f"{turn['assistant']}\n{turn['user']}" for turn in session["turns"])
                texts[f"{path.name}:{session['id']}"] = fold(turns).text
    return texts


def test_the_never_tuned_reflection_splits_are_evaluation_files() -> None:
    """The splits whose failures stay hidden are the sets nobody tuned on, present and first among the sets written
    apart; a set retired into tuning leaves NEVER_TUNED with its file's new name, and its failures are shown."""
    for split in eval_reflection.NEVER_TUNED:
        path = eval_reflection.NEWER_SETS[split]
        assert path.exists() and path.name.startswith("reflection_eval_sessions_"), split
    assert all("tune" not in eval_reflection.NEWER_SETS[split].name for split in eval_reflection.HIDDEN[1:])
    assert next(iter(eval_reflection.NEWER_SETS)) == eval_reflection.NEVER_TUNED[0]  # the headline first


def test_no_correction_rule_quotes_an_evaluation_item() -> None:
    quotes = correction_rule_quotes()
    texts = correction_eval_texts(with_tune=False) | reflection_eval_texts()
    assert any(key.startswith("new-42:") for key in texts)  # the new set is read
    leaks = sorted((quote, key) for key, text in texts.items() for quote in quotes if quote in text)
    assert not leaks, f"correction rule literals found in evaluation items: {leaks}"


def test_no_correction_training_sentence_is_in_an_evaluation_item() -> None:
    sentences = correction_training_sentences()
    assert len(sentences) > 200  # the corpus is read and split
    texts = correction_eval_texts(with_tune=True) | reflection_eval_texts()
    leaks = sorted((key, sentence[:40]) for key, text in texts.items() for sentence in sentences if sentence in text)
    assert set(leaks) <= KNOWN_OVERLAPS, f"correction training sentences found in evaluation items: {leaks}"


@pytest.mark.parametrize(
    "path",
    [
        DATA,
        CORPUS,
        train_detector.CORPUS,
        eval_corrections.NEW_42,
        eval_reflection.EVAL_7_DATA,
        eval_reflection.EVAL_43_DATA,
        *SCREENING_EVALS,
        *REDACTION_EVALS,
    ],
)
def test_the_sets_compared_exist(path: Path) -> None:
    assert path.exists()
