"""Train the learned poisoning screen on training/screening (corpus.jsonl and the evaluation sets retired beside it,
load_corpus), deterministically (`make train-screen`).

Features (detection/classifier.py): the built-in USE-multilingual embedding of topic, action and observation (one a
line), char 1-5-gram TF-IDF of the same text, the rule families that fire on it (detection/poisoning.py), and char
1-4-gram TF-IDF of the action alone (the instruction; at run time a user's message is all instruction), so that the
words of a command weigh apart from the context that quotes, reports or explains them. Both n-gram settings were
chosen on the corpus's folds (out-of-fold log loss 0.266 with 1-4-grams of the whole text alone, 0.259 with 1-5-grams,
0.248 with the action's block beside them; the grid below chooses the block's weight, 0 being without it).
Model: scikit-learn's logistic regression (lbfgs, deterministic), calibrated by Platt scaling on out-of-fold scores.
Out of fold, each fold fits its n-gram vocabularies and idf on its own training items (`folds`), so a held-out item's
n-grams are read as the shipped model reads an unseen text.

Model selection uses the TRAINING corpus only, split by scenario: the README warns that zh and en items often
rewrite the same scenario, so a split by line would score a translation of a training item. Scenarios are
approximated as connected components of same-category items whose embeddings are close (cosine >= SCENARIO_COSINE;
USE-multilingual puts a sentence and its translation close together), then GroupKFold. The grid picks C and the
embedding block's weight by out-of-fold log loss; the band comes from the out-of-fold probabilities:

  suspect_at  0.5 (the calibrated probability: even odds);
  unsure_at,  chosen together by choose_band under the screen's own policy (poisoning.verdict: a pattern holds
  rule_at     only when the learned screen agrees, p >= rule_at): the fewest benign items held while no more
              attacks pass than MAX_ATTACKS_PASSED, nor than under the rules-first policy before it, out of fold.
              scripts/screen_oof.py prints these figures per category, and the reliability of the calibrated
              probability.

The model is written without pickle (an .npz of plain arrays and a JSON string, fixed zip timestamps so the same
corpus gives the same bytes) to hindsight_insights/data/screen_model.npz, which ships in the plugin package.

    .venv/bin/python -m scripts.train_screen [--out PATH]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import sparse
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss, roc_auc_score
from sklearn.model_selection import GroupKFold

from hindsight_insights.detection.classifier import Blocks, CharNgrams, LinearTextModel, blocks, fit_ngrams
from hindsight_insights.detection.poisoning import ATTACK, Band, rule_families, verdict
from hindsight_insights.detection.poisoning_patterns import DATA, OVERRIDE, PRIVILEGE, PROMPT, ROLE
from hindsight_insights.embedder import UseM3Embedder
from hindsight_insights.screen_model import MODEL_PATH
from scripts.corpora import correction_rows, retired_sets

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "training" / "screening" / "corpus.jsonl"
# Evaluation sets retired into training once their figures were reported and a newer set was written after a freeze
# (training/screening/README.md). A screening set's attacks and benign items are training items; its secrets and
# clean texts are not the screen's (they train redaction's address finder, scripts/train_address_spans.py). A set of
# whole sessions gives every user turn as a lone message, the shape the screen reads for a lesson learned from a
# user's own words (admission): an attack where it carries the planted instruction of an injection session, else
# benign.
RETIRED = ROOT / "training" / "screening" / "retired"
# The correction detector's corpus and the sets retired beside it: the wishes and rules users state in their own
# words (its preference and process messages) are what the screen reads for a detector lesson, and the commonest
# benign text it held (a standing "always tell me whether a wine is vegan" read as an instruction); they are benign.
USER_WISHES = (ROOT / "training" / "corrections" / "corpus.jsonl", ROOT / "training" / "corrections" / "retired")
WISH_LABELS = ("preference", "process")
FAMILIES = (OVERRIDE, ROLE, PROMPT, DATA, PRIVILEGE)
NGRAMS = {"n_min": 1, "n_max": 5, "min_df": 2, "max_features": 80000}
INSTRUCTION_NGRAMS = {"n_min": 1, "n_max": 4, "min_df": 2, "max_features": 40000}
SCENARIO_COSINE = 0.6  # a zh item and its en rewrite: median best same-category cosine 0.63
FOLDS = 5
GRID_C = (10.0, 30.0, 100.0, 300.0)  # below 10 never came close on this corpus
GRID_EMBEDDING_WEIGHT = (0.25, 0.5)  # 1.0 was the worst at every C (1,104 and 1,382 items)
GRID_INSTRUCTION_WEIGHT = (0.0, 0.5, 1.0)  # 0: without the instruction's block
# Choices whose out-of-fold log loss is within this of the best are tied (folds and seeds move it more), and among
# them the one that passes the fewest attacks out of fold wins. At the seventeenth retirement the best loss (0.1042,
# without the instruction's block) passed 2.8% of the attacks and one with it (0.1044) 2.6%; the first also held
# genuine lessons of the tuning sessions that the second let through (14 against 7 on tune-11 to tune-13 and tune-15
# to tune-18).
LOSS_TIE = 0.001
# Out of fold, at most this share of attacks passes (neither suspect nor unsure). The aim was 3% with at most 5% of
# benign items held; on this corpus no band reaches both (3% passed costs about 25% benign held, scripts/screen_oof),
# so the band passes no more attacks than the rules-first policy did and holds as few benign items as it can.
MAX_ATTACKS_PASSED = 0.05
SUSPECT_AT = 0.5
RULES_FIRST = Band(SUSPECT_AT, 0.3, 0.0)  # the policy before issue 18: every pattern held whatever the probability


def load_corpus(
    path: Path = CORPUS, retired: Path | None = RETIRED, wishes: tuple[Path, Path] | None = USER_WISHES
) -> list[dict[str, str]]:
    """The corpus's items, then the retired sets' items in the corpus's shape: a session set's user turns, a screening
    set's attacks and benign items; then the users' own wishes and rules (`wishes`: USER_WISHES)."""
    items = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for source in retired_sets(retired):
        data = json.loads(source.read_text(encoding="utf-8"))
        items += [
            {
                "id": f"{source.stem}:{session['id']}:{number}",
                "label": ATTACK if planted_in(turn["user"], session) else "benign",
                "category": "session_turn",
                "lang": session["lang"],
                "style": "user_message",
                "topic": "",
                "action": turn["user"],
                "observation": "",
            }
            for session in data.get("sessions", [])
            for number, turn in enumerate(session["turns"])
        ]
        for section, label in (("attacks", ATTACK), ("benign", "benign")):
            items += [
                {
                    "id": f"{source.stem}:{item['id']}",
                    "label": label,
                    "category": item["category"],
                    "lang": item["lang"],
                    "style": "retired",
                    "topic": item["topic"],
                    "action": item["action"],
                    "observation": item["observation"],
                }
                for item in data.get(section, [])
            ]
    return items + (users_wishes(*wishes) if wishes is not None else [])


def users_wishes(corpus: Path, retired: Path) -> list[dict[str, str]]:
    """The preference and process messages of the correction detector's corpus and its retired sets, each a benign
    user_message item (the message alone, as a lesson's evidence reads)."""
    return [
        {
            "id": f"wish:{row['id']}",
            "label": "benign",
            "category": "user_wish",
            "lang": row["lang"],
            "style": "user_message",
            "topic": "",
            "action": row["message"],
            "observation": "",
        }
        for row in correction_rows(corpus, retired)
        if row["label"] in WISH_LABELS
    ]


def planted_in(message: str, session: dict[str, Any]) -> bool:
    """Whether a user turn of a retired session carries its planted instruction (an injection session's forbidden
    strings are the planted payload's)."""
    return session["category"] == "injection" and any(text in message for text in session["forbidden_substrings"])


def corpus_digest(path: Path, retired: Path | None, wishes: tuple[Path, Path] | None = None) -> str:
    """sha256 over the corpus and every retired set (name and bytes, in name order), and the users' wishes' corpus
    and its retired sets when given: what a model was trained on."""
    digest = hashlib.sha256(path.read_bytes())
    for source in retired_sets(retired):
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    if wishes is not None:
        digest.update(b"\0wishes\0" + corpus_digest(*wishes).encode())
    return digest.hexdigest()


def item_text(item: dict[str, str]) -> str:
    """The fields joined one a line, as the screen joins what it reads; an empty field is left out, so a user_message
    item (the message alone in `action`) reads exactly as a lesson's evidence does at run time."""
    return "\n".join(item[field] for field in ("topic", "action", "observation") if item[field])


def scenario_groups(vectors: npt.NDArray[np.float32], categories: list[str]) -> npt.NDArray[np.int64]:
    """Connected components of same-category items closer than SCENARIO_COSINE (union-find, in index order)."""
    parent = list(range(len(categories)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    similarity = vectors @ vectors.T
    for i in range(len(categories)):
        for j in range(i + 1, len(categories)):
            if categories[i] == categories[j] and similarity[i, j] >= SCENARIO_COSINE:
                parent[max(root(i), root(j))] = min(root(i), root(j))
    return np.array([root(i) for i in range(len(categories))], dtype=np.int64)


def sparse_rows(rows_of: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]], width: int) -> sparse.csr_matrix:
    rows, cols, vals = [], [], []
    for i, (index, values) in enumerate(rows_of):
        rows.extend([i] * len(index))
        cols.extend(index.tolist())
        vals.extend(values.tolist())
    return sparse.csr_matrix((vals, (rows, cols)), shape=(len(rows_of), width), dtype=np.float64)


def design(
    features: Blocks,
    vocabulary: int,
    weights: tuple[float, float, float],
    instruction_vocabulary: int = 0,
    instruction_weight: float = 0.0,
) -> sparse.csr_matrix:
    """The design matrix, blocks side by side as LinearTextModel.scores reads them; the instruction's block when
    the features have one."""
    parts = [
        sparse.csr_matrix(weights[0] * features.embeddings.astype(np.float64)),
        weights[1] * sparse_rows(features.ngrams, vocabulary),
        sparse.csr_matrix(weights[2] * features.rules.astype(np.float64)),
    ]
    if features.instruction is not None:
        parts.append(instruction_weight * sparse_rows(features.instruction, instruction_vocabulary))
    return sparse.hstack(parts, format="csr")


def platt(scores: npt.NDArray[np.float64], labels: npt.NDArray[np.int64]) -> tuple[float, float]:
    """(a, b) of p = 1 / (1 + exp(a·s + b)), fitted on out-of-fold scores."""
    fit = LogisticRegression(C=1e6, max_iter=1000).fit(scores.reshape(-1, 1), labels)
    return -float(fit.coef_[0, 0]), -float(fit.intercept_[0])


@dataclass(frozen=True)
class Fold:
    """One fold of GroupKFold with its own n-gram vocabularies, fitted on its training items alone: a held-out item's
    n-grams weigh nothing that only it (or its scenario) brought into the vocabulary or its idf, so the out-of-fold
    figures are those of a corpus that never saw it."""

    train: npt.NDArray[np.int64]
    test: npt.NDArray[np.int64]
    features: Blocks  # every item, read with this fold's vocabularies
    widths: tuple[int, int]


def folds(corpus: CorpusFeatures) -> list[Fold]:
    texts = [item_text(item) for item in corpus.items]
    instructions = [item["action"] for item in corpus.items]
    made = []
    for train, test in GroupKFold(n_splits=FOLDS).split(texts, corpus.labels, corpus.groups):
        ngrams = fit_ngrams([texts[i] for i in train], **NGRAMS)
        instruction_ngrams = fit_ngrams([instructions[i] for i in train], **INSTRUCTION_NGRAMS)
        features = Blocks(
            corpus.features.embeddings,
            [ngrams.row(text) for text in texts],
            corpus.features.rules,
            [instruction_ngrams.row(text) for text in instructions],
        )
        made.append(Fold(train, test, features, (len(ngrams.vocabulary), len(instruction_ngrams.vocabulary))))
    return made


def out_of_fold(
    fold_list: list[Fold],
    labels: npt.NDArray[np.int64],
    c: float,
    embedding_weight: float,
    instruction_weight: float,
) -> npt.NDArray[np.float64]:
    scores = np.zeros(len(labels))
    for fold in fold_list:
        matrix = design(fold.features, fold.widths[0], (embedding_weight, 1.0, 1.0), fold.widths[1], instruction_weight)
        model = LogisticRegression(C=c, max_iter=5000).fit(matrix[fold.train], labels[fold.train])
        scores[fold.test] = model.decision_function(matrix[fold.test])
    return scores


def decisions(
    probabilities: npt.NDArray[np.float64], fired: list[frozenset[str]], band: Band
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """(suspect, held) of every item under `band`, by poisoning.verdict (the policy the screen runs)."""
    verdicts = [verdict(float(p), bool(families), band) for p, families in zip(probabilities, fired, strict=True)]
    suspect = np.array([v[0] for v in verdicts], dtype=bool)
    return suspect, suspect | np.array([v[1] for v in verdicts], dtype=bool)


def rates(
    probabilities: npt.NDArray[np.float64], labels: npt.NDArray[np.int64], fired: list[frozenset[str]], band: Band
) -> tuple[float, float]:
    """(benign held, attacks passed) under `band`: held is what admission holds without a workspace model."""
    _, held = decisions(probabilities, fired, band)
    return float(np.mean(held[labels == 0])), float(np.mean(~held[labels == 1]))


def choose_band(
    probabilities: npt.NDArray[np.float64], labels: npt.NDArray[np.int64], fired: list[frozenset[str]]
) -> Band:
    """The band from out-of-fold probabilities (suspect_at fixed): the fewest benign items held while no more attacks
    pass than MAX_ATTACKS_PASSED, nor than under RULES_FIRST (every pattern a hold: the screen never trades attacks
    for benign items); none such: the fewest attacks passed. Ties: the higher unsure_at, then rule_at nearest it."""
    limit = min(MAX_ATTACKS_PASSED, rates(probabilities, labels, fired, RULES_FIRST)[1])
    grid = np.round(np.arange(0.05, SUSPECT_AT + 1e-9, 0.01), 2)
    candidates = []
    for unsure_at in grid:
        for rule_at in grid:
            band = Band(SUSPECT_AT, float(unsure_at), float(rule_at))
            benign_held, attacks_passed = rates(probabilities, labels, fired, band)
            feasible = attacks_passed <= limit + 1e-12
            key = (not feasible, benign_held if feasible else attacks_passed, attacks_passed)
            candidates.append((key, -unsure_at, abs(rule_at - unsure_at), band))
    return min(candidates, key=lambda c: c[:3])[3]


def attacks_passed(probabilities: npt.NDArray[np.float64], corpus: CorpusFeatures) -> float:
    """The share of attacks that pass out of fold (neither suspect nor unsure) under the band chosen for them."""
    band = choose_band(probabilities, corpus.labels, corpus.fired)
    return figures(probabilities, corpus, band)[0]["attacks_passed"]


def figures(
    probabilities: npt.NDArray[np.float64], corpus: CorpusFeatures, band: Band
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Out-of-fold figures under `band`: overall, and per category the share held (benign: held by mistake;
    attacks: 1 - passed) and the share suspect."""
    suspect, held = decisions(probabilities, corpus.fired, band)
    attacks, benign = corpus.labels == 1, corpus.labels == 0
    overall = {
        "benign_held": round(float(np.mean(held[benign])), 4),
        "benign_suspect": round(float(np.mean(suspect[benign])), 4),
        "attacks_passed": round(float(np.mean(~held[attacks])), 4),
        "attacks_not_suspect": round(float(np.mean(~suspect[attacks])), 4),
    }
    per_category = {
        category: {
            "held": round(float(np.mean(held[corpus.categories == category])), 3),
            "suspect": round(float(np.mean(suspect[corpus.categories == category])), 3),
        }
        for category in sorted(set(corpus.categories.tolist()))
    }
    return overall, per_category


def save_arrays(path: Path, arrays: dict[str, npt.NDArray[Any]]) -> None:
    """An .npz numpy can load with allow_pickle=False, byte-for-byte the same for the same arrays."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(arrays):
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.asarray(arrays[name]), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, buffer.getvalue())


@dataclass(frozen=True)
class CorpusFeatures:
    """The corpus read as the model reads it: what training and the out-of-fold report (scripts/screen_oof.py)
    share."""

    items: list[dict[str, str]]
    labels: npt.NDArray[np.int64]
    categories: npt.NDArray[np.str_]
    groups: npt.NDArray[np.int64]
    fired: list[frozenset[str]]
    features: Blocks
    ngrams: CharNgrams
    instruction_ngrams: CharNgrams
    embedder_id: str

    @property
    def widths(self) -> tuple[int, int]:
        return len(self.ngrams.vocabulary), len(self.instruction_ngrams.vocabulary)

    def matrix(self, embedding_weight: float, instruction_weight: float) -> sparse.csr_matrix:
        weights = (embedding_weight, 1.0, 1.0)
        return design(self.features, self.widths[0], weights, self.widths[1], instruction_weight)


def corpus_features(items: list[dict[str, str]]) -> CorpusFeatures:
    texts = [item_text(item) for item in items]
    labels = np.array([1 if item["label"] == ATTACK else 0 for item in items], dtype=np.int64)
    embedder = UseM3Embedder(threads=1)
    vectors = embedder.embed(texts)
    fired = [rule_families(item["topic"], item["action"], item["observation"]) for item in items]
    groups = scenario_groups(vectors, [item["category"] for item in items])
    ngrams = fit_ngrams(texts, **NGRAMS)
    instructions = [item["action"] for item in items]
    instruction_ngrams = fit_ngrams(instructions, **INSTRUCTION_NGRAMS)
    features = blocks(texts, lambda _: vectors, ngrams, FAMILIES, fired, instruction_ngrams, instructions)
    categories = np.array([item["category"] for item in items])
    return CorpusFeatures(items, labels, categories, groups, fired, features, ngrams, instruction_ngrams, embedder.id)


def calibrated(scores: npt.NDArray[np.float64], calibration: tuple[float, float]) -> npt.NDArray[np.float64]:
    return np.asarray(1.0 / (1.0 + np.exp(calibration[0] * scores + calibration[1])), dtype=np.float64)


def train(out: Path) -> dict[str, Any]:
    corpus = corpus_features(load_corpus())
    labels, groups, features, widths = corpus.labels, corpus.groups, corpus.features, corpus.widths
    ngrams, instruction_ngrams = corpus.ngrams, corpus.instruction_ngrams

    fold_list = folds(corpus)
    results = []
    for embedding_weight in GRID_EMBEDDING_WEIGHT:
        for instruction_weight in GRID_INSTRUCTION_WEIGHT:
            for c in GRID_C:
                scores = out_of_fold(fold_list, labels, c, embedding_weight, instruction_weight)
                a, b = platt(scores, labels)
                probabilities = calibrated(scores, (a, b))
                loss = float(log_loss(labels, probabilities))
                results.append((loss, c, embedding_weight, instruction_weight, scores, (a, b)))
                print(
                    f"C={c:<5} embedding weight={embedding_weight} instruction weight={instruction_weight}: "
                    f"out-of-fold log loss {loss:.4f}, AUC {roc_auc_score(labels, scores):.4f}",
                    flush=True,
                )
    best = min(result[0] for result in results)
    tied = [result for result in results if result[0] <= best + LOSS_TIE]
    loss, c, embedding_weight, instruction_weight, scores, calibration = min(
        tied, key=lambda r: (attacks_passed(calibrated(r[4], r[5]), corpus), r[0], r[1], r[2], r[3])
    )
    probabilities = calibrated(scores, calibration)
    band = choose_band(probabilities, corpus.labels, corpus.fired)
    weights = (embedding_weight, 1.0, 1.0)
    matrix = design(features, widths[0], weights, widths[1], instruction_weight)
    final = LogisticRegression(C=c, max_iter=5000).fit(matrix, labels)
    overall, per_category = figures(probabilities, corpus, band)
    settings = {
        "C": c,
        "instruction_weight": instruction_weight,
        "band": {"suspect_at": band.suspect_at, "unsure_at": band.unsure_at, "rule_at": band.agrees_at},
        "corpus_sha256": corpus_digest(CORPUS, RETIRED, USER_WISHES),
        "scenario_groups": len(set(groups.tolist())),
        "out_of_fold": {"log_loss": round(loss, 4), **overall},
        "out_of_fold_by_category": per_category,
    }
    model = LinearTextModel(
        classes=("benign", ATTACK),
        ngrams=ngrams,
        families=FAMILIES,
        embedder_id=corpus.embedder_id,
        scales=weights,
        weights=final.coef_.astype(np.float32),
        bias=final.intercept_.astype(np.float32),
        calibration=calibration,
        settings=settings,
        instruction_ngrams=instruction_ngrams if instruction_weight else None,
        instruction_scale=instruction_weight,
    )
    if not instruction_weight:  # chosen without the block: its zero weights are not shipped
        model = LinearTextModel(
            **{**model.__dict__, "weights": model.weights[:, : model.weights.shape[1] - widths[1]].copy()}
        )
    save_arrays(out, model.to_arrays())
    return settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=MODEL_PATH)
    args = parser.parse_args()
    settings = train(args.out)
    size = args.out.stat().st_size
    print(json.dumps(settings, indent=2))
    print(f"wrote {args.out} ({size / 1024:.0f} KiB, sha256 {hashlib.sha256(args.out.read_bytes()).hexdigest()[:16]})")


if __name__ == "__main__":
    main()
