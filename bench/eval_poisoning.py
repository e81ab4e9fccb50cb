"""The poisoning battery and the redaction set (bench/data/poisoning.json), per split, and the independent
screening set (bench/data/screening_eval_80.json) and set of secrets alone (screening_eval_81.json) when present;
then the redaction sections of the seventy-nine screening sets retired into the screen's training
(training/screening/retired).

Poisoning: every candidate insight runs through detection.poisoning.screen over its topic, action and observation,
twice: the rules alone, and rules + the learned screen (screen_model.py; "held" = suspect or unsure, what admission
holds without a workspace model; "suspect" alone is also shown). Malicious items must all be held, benign look-alikes
must pass. Redaction: every listed secret must be gone from detection.redaction.redact's output, and the texts
without secrets (order numbers, prices, dates, hotlines) must come back unchanged.

screening_eval_80.json is written apart from this code. Its layout: an object with "attacks" and "benign" (insight
items: id, category, lang, topic, action, observation; every attack must be held, every benign item must pass),
"secrets" (id, kind, lang, text, and the "secret" substring that must never be stored) and "clean" (id, lang, text:
no secret, must come back unchanged). The reader also takes the older generic layouts: a list of items, or an
object with "items" (a label attack/malicious or benign, fields under "insight" or at top level, or "text") and
"redaction" (text and a list of "secrets").

The holdout split is the headline; `--errors` prints the tune split alone, its figures and its failures (never the
holdout's, never the screening set's: it does not read them).

    make eval-poisoning    (or: .venv/bin/python -m bench.eval_poisoning [--errors])
"""

from __future__ import annotations

from hindsight_insights.quiet import quiet_dependency_warnings

quiet_dependency_warnings()  # every entry point calls it first (it matters once weaviate-client is imported)

import argparse
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hindsight_insights.detection.poisoning import LearnedScreen, screen
from hindsight_insights.detection.redaction import redact
from scripts.corpora import retired_sets
from scripts.train_screen import RETIRED

DATA = Path(__file__).parent / "data" / "poisoning.json"
SCREENING_EVAL_80 = Path(__file__).parent / "data" / "screening_eval_80.json"  # written after the corpus froze again
# The sets written apart and never tuned on, newest (the headline) first. The others (screening_eval_39 among them,
# a set of secrets measured once) were retired into training once their figures were reported
# (training/screening/retired): their secrets and clean texts still check redaction, reported apart as a regression
# check (the learned address finder was trained on them; the rules were extended after their misses).
SCREENING_EVALS = (SCREENING_EVAL_80,)
# Secrets and clean texts alone, written apart after the freeze (screening_eval_80 has none): redaction's never-tuned
# headline.
REDACTION_EVALS = (Path(__file__).parent / "data" / "screening_eval_81.json",)
RETIRED_SETS = tuple(path for path in retired_sets(RETIRED) if path.name.startswith("screening_eval"))
SPLITS = ("holdout", "tune")
ATTACK_LABELS = {"attack", "malicious", "poison", "poisoning", "suspect"}


def load() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    return data


def insight_texts(item: dict[str, Any]) -> list[str]:
    """The text fields of an insight item, whichever of the accepted layouts it uses."""
    source = item.get("insight", item)
    fields = [str(source[key]) for key in ("topic", "action", "observation") if source.get(key)]
    return fields or [str(source.get("text", ""))]


def load_screening_eval(path: Path = SCREENING_EVAL_80) -> dict[str, list[dict[str, Any]]] | None:
    """The independent screening set in the normal form of poisoning.json ("items" with a label in
    {malicious, benign} and a category; "redaction" with text and secrets), or None when absent."""
    if not path.exists():
        return None
    raw = json.loads(path.read_text(encoding="utf-8"))
    listed = raw if isinstance(raw, list) else list(raw.get("items", []))
    redaction = [] if isinstance(raw, list) else list(raw.get("redaction", []))
    if isinstance(raw, dict):  # the sectioned layout: attacks, benign, secrets, clean
        listed += [{**item, "label": "attack"} for item in raw.get("attacks", [])]
        listed += [{**item, "label": "benign"} for item in raw.get("benign", [])]
        redaction += [{**item, "secrets": _secrets_of(item)} for item in raw.get("secrets", [])]
        redaction += [{**item, "secrets": []} for item in raw.get("clean", [])]
    items = []
    for item in listed:
        if "secrets" in item and "label" not in item:
            redaction.append(item)
            continue
        label = "malicious" if str(item.get("label", "")).lower() in ATTACK_LABELS else "benign"
        texts = insight_texts(item)
        insight = {"topic": texts[0], "action": " ".join(texts[1:2]), "observation": " ".join(texts[2:])}
        items.append({**item, "label": label, "category": item.get("category", "?"), "insight": insight})
    return {
        "items": items,
        "redaction": [
            {"text": r["text"], "secrets": list(r.get("secrets", [])), "kind": r.get("kind", "?")} for r in redaction
        ],
    }


def _secrets_of(item: dict[str, Any]) -> list[str]:
    """A secrets item's secret strings: "secret" (one) or "secrets" (a list)."""
    secrets = item.get("secrets")
    if isinstance(secrets, list):
        return [str(secret) for secret in secrets]
    return [str(item["secret"])] if item.get("secret") else []


def quarantined(item: dict[str, Any], learned: LearnedScreen | None = None, *, unsure_held: bool = True) -> bool:
    """Held: suspect, or (with the learned screen) unsure, which admission holds without a workspace model;
    `unsure_held=False`: suspects only (as if a workspace model cleared every unsure item)."""
    insight = item["insight"]
    result = screen(
        insight["topic"], insight["action"], insight["observation"], learned=learned, instruction=insight["action"]
    )
    return result.held if unsure_held else result.suspect


@dataclass(frozen=True)
class ScreenReport:
    malicious: int
    caught: int
    benign: int
    held: int
    missed_by: dict[str, int]  # category/technique of the malicious items that passed -> count
    held_by: dict[str, int]  # category of the benign items that were held -> count


def evaluate_screen(
    items: list[dict[str, Any]], learned: LearnedScreen | None = None, *, unsure_held: bool = True
) -> ScreenReport:
    missed: Counter[str] = Counter()
    held: Counter[str] = Counter()
    caught = malicious = benign = 0
    for item in items:
        suspect = quarantined(item, learned, unsure_held=unsure_held)
        if item["label"] == "malicious":
            malicious += 1
            caught += suspect
            if not suspect:
                missed[
                    item["category"] if item["category"] != "obfuscated" else f"obfuscated/{item.get('technique')}"
                ] += 1
        else:
            benign += 1
            if suspect:
                held[item["category"]] += 1
    return ScreenReport(malicious, caught, benign, sum(held.values()), dict(missed), dict(held))


@dataclass(frozen=True)
class RedactionReport:
    with_secrets: int
    cleaned: int  # texts whose every listed secret is gone
    secrets: int
    removed: int  # listed secrets no longer in the output
    benign: int
    unchanged: int  # texts without secrets that came back unchanged
    left_by: dict[str, int]  # kind of the secrets still in the output -> count (items with a "kind")


def evaluate_redaction(items: list[dict[str, Any]]) -> RedactionReport:
    with_secrets = cleaned = secrets = removed = benign = unchanged = 0
    left: Counter[str] = Counter()
    for item in items:
        output = redact(item["text"]).text
        if item["secrets"]:
            with_secrets += 1
            gone = [secret not in output for secret in item["secrets"]]
            secrets += len(gone)
            removed += sum(gone)
            cleaned += all(gone)
            left[str(item.get("kind", "?"))] += len(gone) - sum(gone)
        else:
            benign += 1
            unchanged += output == item["text"]
    left_by = {kind: count for kind, count in left.items() if count}
    return RedactionReport(with_secrets, cleaned, secrets, removed, benign, unchanged, left_by)


def render(split: str, screens: dict[str, ScreenReport], redacted: RedactionReport) -> str:
    lines = [f"== {split}"]
    for name, screened in screens.items():
        lines += [
            f"[{name}] malicious held: {screened.caught}/{screened.malicious}"
            + (f"  missed by technique/category: {screened.missed_by}" if screened.missed_by else ""),
            f"[{name}] benign held:    {screened.held}/{screened.benign}"
            + (f"  by category: {screened.held_by}" if screened.held_by else ""),
        ]
    lines.append(
        f"redaction: texts with every secret gone {redacted.cleaned}/{redacted.with_secrets}, "
        f"secrets removed {redacted.removed}/{redacted.secrets} (not redacted: {redacted.secrets - redacted.removed}"
        + (f", by kind: {redacted.left_by}" if redacted.left_by else "")
        + "), "
        f"clean texts unchanged {redacted.unchanged}/{redacted.benign} "
        f"(altered: {redacted.benign - redacted.unchanged})"
    )
    return "\n".join(lines)


def default_learned() -> LearnedScreen | None:
    """The shipped model over the built-in embedder (one BLAS thread: the machine is shared)."""
    from hindsight_insights.embedder import UseM3Embedder
    from hindsight_insights.screen_model import learned_screen

    return learned_screen(UseM3Embedder(threads=1))


def screens(items: list[dict[str, Any]], learned: LearnedScreen | None) -> dict[str, ScreenReport]:
    reports = {"rules": evaluate_screen(items)}
    if learned is not None:
        reports["rules+learned, unsure held"] = evaluate_screen(items, learned)
        reports["rules+learned, suspects only"] = evaluate_screen(items, learned, unsure_held=False)
    return reports


def tune_errors(data: dict[str, Any], learned: LearnedScreen | None = None) -> list[str]:
    """The tune split's failures under the screen admission runs (held: suspect or unsure), with the reasons it
    gave and the patterns it outweighed. Tune only, by design."""
    lines = []
    for item in data["items"]:
        if item["split"] != "tune":
            continue
        insight = item["insight"]
        result = screen(
            insight["topic"], insight["action"], insight["observation"], learned=learned, instruction=insight["action"]
        )
        if result.held != (item["label"] == "malicious"):
            cues = f" (patterns outweighed: {result.cues})" if result.cues else ""
            probability = "" if result.probability is None else f" p={result.probability:.2f}"
            lines.append(f"{item['id']} {item['label']} {item['category']}{probability}: {result.reasons}{cues}")
    for item in data["redaction"]:
        if item["split"] != "tune":
            continue
        output = redact(item["text"]).text
        left = [secret for secret in item["secrets"] if secret in output]
        if left or (not item["secrets"] and output != item["text"]):
            lines.append(f"{item['id']} redaction: left {left}, output {output!r}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--errors", action="store_true", help="list the tune split's failures")
    args = parser.parse_args()
    data = load()
    learned = default_learned()
    if args.errors:  # the tune split alone: its figures and its failures, nothing of the held-out sets
        tune = [item for item in data["items"] if item["split"] == "tune"]
        redaction = [item for item in data["redaction"] if item["split"] == "tune"]
        print(render("poisoning.json tune", screens(tune, learned), evaluate_redaction(redaction)))
        print()
        print("\n".join(tune_errors(data, learned)) or "no tune errors")
        return
    blocks = []
    for split in SPLITS:
        items = [item for item in data["items"] if item["split"] == split]
        redaction = [item for item in data["redaction"] if item["split"] == split]
        blocks.append(render(f"poisoning.json {split}", screens(items, learned), evaluate_redaction(redaction)))
    blocks.append(render("poisoning.json all", screens(data["items"], learned), evaluate_redaction(data["redaction"])))
    for path in SCREENING_EVALS:
        independent = load_screening_eval(path)
        if independent is None:
            blocks.append(f"== {path.name}: not present")
        else:
            redacted = evaluate_redaction(independent["redaction"])
            blocks.append(render(path.name, screens(independent["items"], learned), redacted))
    # Their redaction sections only: a set of secrets alone, and the sets the screen is trained on.
    redaction_only = [(path, "redaction only") for path in REDACTION_EVALS]
    redaction_only += [(path, "retired into training: redaction only") for path in RETIRED_SETS]
    for path, what in redaction_only:
        sections = load_screening_eval(path)
        if sections is not None:
            blocks.append(render(f"{path.name} ({what})", {}, evaluate_redaction(sections["redaction"])))
    print("\n\n".join(blocks))


if __name__ == "__main__":
    main()
