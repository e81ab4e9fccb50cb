"""The poisoning battery and the redaction set (bench/data/poisoning.json), per split.

Poisoning: every candidate insight runs through governance.poisoning.screen over its topic, action and observation;
malicious items must all be quarantined, benign look-alikes must pass. Redaction: every listed secret must be gone
from governance.redaction.redact's output, and the texts without secrets (order numbers, prices, dates, hotlines)
must come back unchanged.

The holdout split is the headline; `--errors` lists the tune split's failures only (never the holdout's).

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

from hindsight_insights.detection.poisoning import screen
from hindsight_insights.detection.redaction import redact

DATA = Path(__file__).parent / "data" / "poisoning.json"
SPLITS = ("holdout", "tune")


def load() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    return data


def quarantined(item: dict[str, Any]) -> bool:
    insight = item["insight"]
    return screen(insight["topic"], insight["action"], insight["observation"]).suspect


@dataclass(frozen=True)
class ScreenReport:
    malicious: int
    caught: int
    benign: int
    held: int
    missed_by: dict[str, int]  # category/technique of the malicious items that passed -> count
    held_by: dict[str, int]  # category of the benign items that were held -> count


def evaluate_screen(items: list[dict[str, Any]]) -> ScreenReport:
    missed: Counter[str] = Counter()
    held: Counter[str] = Counter()
    caught = malicious = benign = 0
    for item in items:
        suspect = quarantined(item)
        if item["label"] == "malicious":
            malicious += 1
            caught += suspect
            if not suspect:
                missed[item["category"] if item["category"] != "obfuscated" else f"obfuscated/{item['technique']}"] += 1
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


def evaluate_redaction(items: list[dict[str, Any]]) -> RedactionReport:
    with_secrets = cleaned = secrets = removed = benign = unchanged = 0
    for item in items:
        output = redact(item["text"]).text
        if item["secrets"]:
            with_secrets += 1
            gone = [secret not in output for secret in item["secrets"]]
            secrets += len(gone)
            removed += sum(gone)
            cleaned += all(gone)
        else:
            benign += 1
            unchanged += output == item["text"]
    return RedactionReport(with_secrets, cleaned, secrets, removed, benign, unchanged)


def render(split: str, screened: ScreenReport, redacted: RedactionReport) -> str:
    lines = [
        f"== {split}",
        f"malicious quarantined: {screened.caught}/{screened.malicious}"
        + (f"  missed by technique/category: {screened.missed_by}" if screened.missed_by else ""),
        f"benign held:           {screened.held}/{screened.benign}"
        + (f"  by category: {screened.held_by}" if screened.held_by else ""),
        f"redaction: texts with every secret gone {redacted.cleaned}/{redacted.with_secrets}, "
        f"secrets removed {redacted.removed}/{redacted.secrets}, "
        f"benign numeric texts unchanged {redacted.unchanged}/{redacted.benign}",
    ]
    return "\n".join(lines)


def tune_errors(data: dict[str, Any]) -> list[str]:
    """The tune split's failures, with the reasons the screen gave. Tune only, by design."""
    lines = []
    for item in data["items"]:
        if item["split"] != "tune":
            continue
        insight = item["insight"]
        result = screen(insight["topic"], insight["action"], insight["observation"])
        if result.suspect != (item["label"] == "malicious"):
            lines.append(f"{item['id']} {item['label']} {item['category']}: {result.reasons}")
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
    blocks = []
    for split in SPLITS:
        items = [item for item in data["items"] if item["split"] == split]
        redaction = [item for item in data["redaction"] if item["split"] == split]
        blocks.append(render(split, evaluate_screen(items), evaluate_redaction(redaction)))
    blocks.append(render("all", evaluate_screen(data["items"]), evaluate_redaction(data["redaction"])))
    print("\n\n".join(blocks))
    if args.errors:
        print()
        print("\n".join(tune_errors(data)) or "no tune errors")


if __name__ == "__main__":
    main()
