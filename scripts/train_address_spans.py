"""Train the learned address finder (hindsight_insights/detection/address_spans.py) and choose its threshold.

Data, all of it apart from every evaluation set in bench/data:
  - the secrets and clean texts of the screening sets retired into training (training/screening/retired): a token is
    an address token when it lies inside the "secret" of an address item (kind name_address_*, home_address); every
    other token, of every item, is not;
  - the texts of the two training corpora and the sets retired beside them (training/corrections: messages and the
    answers before them; training/screening: topics, actions, observations, and the turns of whole sessions but the
    secret sessions'): every token is not an address. They are how people write to a chat app (amounts, counts,
    rooms, lists of numbers), and an address finder must leave them alone.

The threshold is chosen out of fold (retired sets grouped so a set's items are never scored by a model that saw them,
corpus texts in folds of their own): among the thresholds at which at most MAX_ALTERED_CORPUS of the corpus texts
and MAX_ALTERED_CLEAN of the clean texts would lose a span, the highest that leaves as few address secrets whole
(after the rules and the model) as any. It prints the out-of-fold figures: address secrets left
by the rules alone and by rules and model together, and texts altered.

    make train-address-spans    (or: .venv/bin/python -m scripts.train_address_spans)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression

from hindsight_insights.address_model import MODEL_PATH
from hindsight_insights.detection.address_spans import (
    HASH_BITS,
    AddressSpans,
    Token,
    columns,
    grown,
    token_features,
    tokens,
)
from hindsight_insights.detection.redaction import personal_addresses, redact
from scripts.corpora import retired_sets
from scripts.train_screen import corpus_digest, save_arrays

ROOT = Path(__file__).resolve().parent.parent
RETIRED = ROOT / "training" / "screening" / "retired"
CORRECTIONS_RETIRED = ROOT / "training" / "corrections" / "retired"
CORPORA = (ROOT / "training" / "corrections" / "corpus.jsonl", ROOT / "training" / "screening" / "corpus.jsonl")
ADDRESS_KINDS = ("address",)  # a kind naming an address: name_address_en, name_address_zh, home_address
FOLDS = 5
C = 1.0
# (0.001 let the fifteenth retraining choose 0.2, which took spans out of wine lists, chess tie-break orders and CSV
# rows of the tuning sessions: 1 in 10,000 keeps the finder to what looks like an address)
MAX_ALTERED_CORPUS = 0.0001
MAX_ALTERED_CLEAN = 0.02
PRUNE_BELOW = 0.01
THRESHOLDS = tuple(round(0.15 + 0.05 * i, 2) for i in range(17))


@dataclass(frozen=True)
class Text:
    group: str  # the fold key: a retired set's name, or a corpus line's fold
    text: str
    secrets: tuple[str, ...]  # address substrings (none: the text has no address)
    kind: str  # "address", "other secret", "clean" or "corpus"


def data_digest() -> str:
    """What the model was trained on: the screening corpus with its retired sets, and the detector's corpus."""
    return corpus_digest(CORPORA[1], RETIRED) + ":" + corpus_digest(CORPORA[0], CORRECTIONS_RETIRED)


def is_address(kind: str) -> bool:
    return any(word in kind for word in ADDRESS_KINDS)


def load_texts() -> list[Text]:
    texts: list[Text] = []
    for source in retired_sets(RETIRED):
        data = json.loads(source.read_text(encoding="utf-8"))
        for item in data.get("secrets", []) or []:
            kind = str(item.get("kind", ""))
            secrets = item.get("secrets") or [item["secret"]]
            address = is_address(kind)
            texts.append(Text(source.stem, item["text"], tuple(secrets) if address else (), kind))
        texts += [Text(source.stem, item["text"], (), "clean") for item in data.get("clean", []) or []]
    records = [
        json.loads(line) for corpus in CORPORA for line in corpus.read_text("utf-8").splitlines() if line.strip()
    ]
    for source in retired_sets(CORRECTIONS_RETIRED):
        records += json.loads(source.read_text(encoding="utf-8"))["items"]
    for source in retired_sets(RETIRED):
        data = json.loads(source.read_text(encoding="utf-8"))
        records += data.get("attacks", []) or []
        records += data.get("benign", []) or []
        # every turn of a session, but a secret session's (its addresses are not marked)
        records += [
            {"message": turn["user"], "previous_assistant": turn["assistant"]}
            for session in data.get("sessions", []) or []
            if session.get("category") != "secret"
            for turn in session["turns"]
        ]
    for number, record in enumerate(records):
        for name in ("message", "previous_assistant", "topic", "action", "observation"):
            if isinstance(record.get(name), str) and record[name]:
                texts.append(Text(f"corpus-{number % FOLDS}", record[name], (), "corpus"))
    return texts


def labels(text: Text) -> list[int]:
    inside = np.zeros(len(text.text), dtype=bool)
    for secret in text.secrets:
        start = text.text.find(secret)
        while start >= 0:
            inside[start : start + len(secret)] = True
            start = text.text.find(secret, start + 1)
    return [int(inside[t.start : t.end].any()) for t in tokens(text.text)]


def design(texts: list[Text]) -> tuple[sp.csr_matrix, np.ndarray]:
    rows: list[list[int]] = []
    ys: list[int] = []
    for text in texts:
        rows += columns(token_features(tokens(text.text)))
        ys += labels(text)
    indptr = np.cumsum([0] + [len(r) for r in rows])
    indices = np.fromiter((c for r in rows for c in r), dtype=np.int64, count=int(indptr[-1]))
    data = np.ones(len(indices), dtype=np.float32)
    matrix = sp.csr_matrix((data, indices, indptr), shape=(len(rows), 1 << HASH_BITS))
    matrix.sum_duplicates()
    return matrix, np.array(ys, dtype=np.int8)


def fit(texts: list[Text]) -> AddressSpans:
    matrix, ys = design(texts)
    model = LogisticRegression(C=C, max_iter=2000, solver="liblinear", class_weight={0: 1.0, 1: 2.0}, random_state=0)
    model.fit(matrix, ys)
    return AddressSpans(model.coef_[0].astype(np.float32), float(model.intercept_[0]), 0.5, {"C": C})


def folds(texts: list[Text]) -> Iterator[tuple[list[Text], list[Text]]]:
    groups = sorted({t.group for t in texts if not t.group.startswith("corpus-")})
    for k in range(FOLDS):
        held = {g for i, g in enumerate(groups) if i % FOLDS == k} | {f"corpus-{k}"}
        yield [t for t in texts if t.group not in held], [t for t in texts if t.group in held]


def left(text: str, secret: str, spans: list[tuple[int, int]]) -> bool:
    """The secret still whole in the text once the spans are cut out."""
    kept = "".join(ch if not any(a <= i < b for a, b in spans) else "\0" for i, ch in enumerate(text))
    return secret in kept


@dataclass(frozen=True)
class Scored:
    """A text's tokens with their out-of-fold probabilities, and what the rules alone leave of it."""

    text: Text
    items: list[Token]
    probabilities: npt.NDArray[np.float32]
    by_rules: str

    def spans(self, threshold: float) -> list[tuple[int, int]]:
        """The spans redact would take at `threshold`: none said to be a business place's."""
        if not self.items:
            return []
        marked = grown(self.probabilities, threshold, self.items)
        return personal_addresses(self.text.text, AddressSpans.spans(self.items, marked))


def out_of_fold(texts: list[Text]) -> list[Scored]:
    scored: list[Scored] = []
    for k, (train, held) in enumerate(folds(texts)):
        model = fit(train)
        for text in held:
            items = tokens(text.text)
            probabilities = model.token_probabilities(items) if items else np.zeros(0, dtype=np.float32)
            by_rules = redact(text.text, learned=False).text if text.secrets else text.text
            scored.append(Scored(text, items, probabilities, by_rules))
        print(f"fold {k + 1}/{FOLDS} done")
    return scored


def evaluate(scored: list[Scored], threshold: float) -> dict[str, float]:
    addresses = rules_left = model_left = both_left = clean_altered = clean = corpus_altered = corpus = 0
    for one in scored:
        spans = one.spans(threshold)
        if one.text.secrets:
            for secret in one.text.secrets:
                addresses += 1
                by_rules = secret in one.by_rules
                by_model = left(one.text.text, secret, spans)
                rules_left += by_rules
                model_left += by_model
                both_left += by_rules and by_model
        elif one.text.kind == "clean":
            clean += 1
            clean_altered += bool(spans)
        elif one.text.kind == "corpus":
            corpus += 1
            corpus_altered += bool(spans)
    return {
        "addresses": addresses,
        "left by rules": rules_left,
        "left by the model": model_left,
        "left by rules and model": both_left,
        "clean altered": round(clean_altered / max(clean, 1), 4),
        "corpus altered": round(corpus_altered / max(corpus, 1), 5),
    }


def main() -> None:
    texts = load_texts()
    print(f"{len(texts)} texts: {sum(bool(t.secrets) for t in texts)} with an address")
    scored = out_of_fold(texts)
    reports = {threshold: evaluate(scored, threshold) for threshold in THRESHOLDS}
    for threshold, report in reports.items():
        print(f"threshold {threshold:.2f}: {report}")
    within = [
        threshold
        for threshold, report in reports.items()
        if report["corpus altered"] <= MAX_ALTERED_CORPUS and report["clean altered"] <= MAX_ALTERED_CLEAN
    ]
    # The fewest addresses left within the limits, at the highest threshold that leaves no more: out of fold the
    # corpus texts are the training corpora's own kind of text, and other text (answers with lot numbers, bookings)
    # alters more often at a lower one.
    fewest = min((reports[threshold]["left by rules and model"] for threshold in within), default=0)
    chosen = max((t for t in within if reports[t]["left by rules and model"] == fewest), default=THRESHOLDS[-1])
    final = fit(texts)
    # Weights too small to move a score are dropped: the file ships in the plugin package.
    weights = np.where(np.abs(final.weights) >= PRUNE_BELOW, final.weights, 0.0).astype(np.float32)
    settings = {"C": C, "threshold": chosen, "data_sha256": data_digest(), "out_of_fold": reports[chosen]}
    save_arrays(MODEL_PATH, AddressSpans(weights, final.bias, chosen, settings).to_arrays())
    print(f"threshold {chosen}; saved {MODEL_PATH.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
