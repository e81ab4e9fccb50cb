"""A small calibrated linear text classifier, pure: arrays in, probabilities out (no I/O, no scikit-learn at run time).

Features of a text, three blocks side by side, each scaled by a block weight stored with the model:

  1. the sentence embedding (an `embed` callable passed in, e.g. the built-in USE-multilingual embedder): meaning,
     across languages;
  2. character n-grams of the folded text (text.fold), TF-IDF with sublinear term frequency, L2-normalised: works
     for Chinese without word segmentation, and for spacing, pinyin and leetspeak that an embedding smooths over;
  3. the rule families that fired (0/1 each): what the precise rules already know;
  4. optionally (the poisoning screen), character n-grams of the instruction alone (an insight's action; a message is
     all instruction), fitted on instructions: the same words weigh differently as a command than in the text around
     it (a report that quotes an attack, a course that explains one).

A linear model (logistic regression, trained by scripts/train_screen.py with scikit-learn) scores them; its scores are
calibrated on held-out folds (Platt scaling for two classes, a temperature for more), so a probability means what it
says and the thresholds are chosen on it. Two classes (the poisoning screen: benign, attack) or several (the
correction detector's five types) use the same class.

A model is a set of plain arrays and one JSON string (`to_arrays` / `from_arrays`), saved with numpy's .npz without
pickle: loading it runs no code.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from hindsight_insights.detection.text import fold

FloatArray = npt.NDArray[np.float32]
EmbedFn = Callable[[Sequence[str]], FloatArray]
_SPACES = re.compile(r"\s+")


def char_ngrams(text: str, n_min: int, n_max: int) -> Counter[str]:
    """Character n-grams of the folded text with runs of spaces collapsed, padded by a space at each end."""
    folded = " " + _SPACES.sub(" ", fold(text).text).strip() + " "
    counts: Counter[str] = Counter()
    for n in range(n_min, n_max + 1):
        counts.update(folded[i : i + n] for i in range(len(folded) - n + 1))
    return counts


@dataclass(frozen=True)
class CharNgrams:
    """A fitted char n-gram TF-IDF: vocabulary (n-gram -> column) and the smoothed idf of each column."""

    vocabulary: Mapping[str, int]
    idf: FloatArray
    n_min: int
    n_max: int

    def row(self, text: str) -> tuple[npt.NDArray[np.int64], FloatArray]:
        """One text as a sparse row: the columns present and their values (1 + ln tf) · idf, L2-normalised."""
        counts = char_ngrams(text, self.n_min, self.n_max)
        present = [(column, n) for gram, n in counts.items() if (column := self.vocabulary.get(gram)) is not None]
        index = np.array([column for column, _ in present], dtype=np.int64)
        if not present:
            return index, np.zeros(0, dtype=np.float32)
        tf = np.array([1.0 + math.log(n) for _, n in present], dtype=np.float32)
        values = tf * self.idf[index]
        return index, (values / max(float(np.linalg.norm(values)), 1e-12)).astype(np.float32)


def fit_ngrams(texts: Sequence[str], n_min: int, n_max: int, min_df: int, max_features: int) -> CharNgrams:
    """The vocabulary of n-grams in at least `min_df` texts, the `max_features` most frequent (ties by n-gram, so
    the result never depends on dict order), with sklearn's smoothed idf ln((1+n)/(1+df)) + 1."""
    df: Counter[str] = Counter()
    for text in texts:
        df.update(set(char_ngrams(text, n_min, n_max)))
    kept = sorted((gram for gram, count in df.items() if count >= min_df), key=lambda g: (-df[g], g))[:max_features]
    kept.sort()
    idf = np.array([math.log((1 + len(texts)) / (1 + df[gram])) + 1.0 for gram in kept], dtype=np.float32)
    return CharNgrams({gram: i for i, gram in enumerate(kept)}, idf, n_min, n_max)


@dataclass(frozen=True)
class Blocks:
    """The three feature blocks of some texts, unweighted: dense embeddings, sparse n-gram rows, rule flags."""

    embeddings: FloatArray
    ngrams: list[tuple[npt.NDArray[np.int64], FloatArray]]
    rules: FloatArray
    instruction: list[tuple[npt.NDArray[np.int64], FloatArray]] | None = None  # the instruction's n-gram rows


def blocks(
    texts: Sequence[str],
    embed: EmbedFn,
    ngrams: CharNgrams,
    families: Sequence[str],
    fired: Sequence[Collection[str]],
    instruction_ngrams: CharNgrams | None = None,
    instructions: Sequence[str] | None = None,
) -> Blocks:
    """The blocks of `texts`; with `instruction_ngrams`, the fourth block over `instructions` (default: the texts)."""
    vectors = np.asarray(embed(texts), dtype=np.float32).reshape(len(texts), -1)
    flags = np.array([[1.0 if family in found else 0.0 for family in families] for found in fired], dtype=np.float32)
    instruction = None
    if instruction_ngrams is not None:
        instruction = [instruction_ngrams.row(text) for text in (texts if instructions is None else instructions)]
    rows = [ngrams.row(text) for text in texts]
    return Blocks(vectors, rows, flags.reshape(len(texts), len(families)), instruction)


@dataclass(frozen=True)
class LinearTextModel:
    classes: tuple[str, ...]
    ngrams: CharNgrams
    families: tuple[str, ...]  # rule families, in the order of the rule block's columns
    embedder_id: str  # the embedder the model was trained with; another one's vectors mean nothing to it
    scales: tuple[float, float, float]  # block weights: embedding, n-grams, rules
    weights: FloatArray  # (outputs, embedding dim + vocabulary + families); one output for two classes
    bias: FloatArray  # (outputs,)
    calibration: tuple[float, float]  # two classes: Platt (a, b), p = 1/(1+exp(a·s+b)); more: (temperature, 0)
    settings: Mapping[str, Any]  # what the training chose (thresholds, C, …), for the caller and the record
    instruction_ngrams: CharNgrams | None = None  # the fourth block's n-grams, when the model has one
    instruction_scale: float = 0.0  # its block weight

    @property
    def embedding_dim(self) -> int:
        extra = 0 if self.instruction_ngrams is None else len(self.instruction_ngrams.vocabulary)
        return int(self.weights.shape[1]) - len(self.ngrams.vocabulary) - len(self.families) - extra

    def scores(self, features: Blocks) -> FloatArray:
        """Raw linear scores, (texts, outputs)."""
        dim, vocab = self.embedding_dim, len(self.ngrams.vocabulary)
        emb_w = self.weights[:, :dim]
        ngram_w = self.weights[:, dim : dim + vocab]
        rule_w = self.weights[:, dim + vocab : dim + vocab + len(self.families)]
        instruction_w = self.weights[:, dim + vocab + len(self.families) :]
        out = self.scales[0] * features.embeddings @ emb_w.T + self.scales[2] * features.rules @ rule_w.T
        for i, (index, values) in enumerate(features.ngrams):
            if len(index):
                out[i] += self.scales[1] * (ngram_w[:, index] @ values)
        if self.instruction_ngrams is not None:
            if features.instruction is None:
                raise ValueError("this model reads the instruction apart: build the blocks with its instruction_ngrams")
            for i, (index, values) in enumerate(features.instruction):
                if len(index):
                    out[i] += self.instruction_scale * (instruction_w[:, index] @ values)
        return (out + self.bias).astype(np.float32)

    def probabilities(self, features: Blocks) -> FloatArray:
        """Calibrated class probabilities, (texts, classes)."""
        raw = self.scores(features)
        if len(self.classes) == 2:
            a, b = self.calibration
            positive = 1.0 / (1.0 + np.exp(a * raw[:, 0] + b))
            return np.stack([1.0 - positive, positive], axis=1).astype(np.float32)
        scaled = raw / self.calibration[0]
        scaled -= scaled.max(axis=1, keepdims=True)
        exp = np.exp(scaled)
        return (exp / exp.sum(axis=1, keepdims=True)).astype(np.float32)

    def predict(
        self,
        texts: Sequence[str],
        embed: EmbedFn,
        fired: Sequence[Collection[str]] | None = None,
        instructions: Sequence[str] | None = None,
    ) -> FloatArray:
        """Calibrated probabilities of `texts`; `fired`: the rule families that fired on each (none when omitted);
        `instructions`: the instruction of each, for a model that reads it apart (default: the whole text)."""
        found = fired if fired is not None else [() for _ in texts]
        features = blocks(texts, embed, self.ngrams, self.families, found, self.instruction_ngrams, instructions)
        return self.probabilities(features)

    def to_arrays(self) -> dict[str, npt.NDArray[Any]]:
        vocabulary = sorted(self.ngrams.vocabulary, key=self.ngrams.vocabulary.__getitem__)
        meta: dict[str, Any] = {
            "classes": list(self.classes),
            "families": list(self.families),
            "embedder_id": self.embedder_id,
            "scales": list(self.scales),
            "calibration": list(self.calibration),
            "ngram_range": [self.ngrams.n_min, self.ngrams.n_max],
            "settings": dict(self.settings),
        }
        arrays = {
            "vocabulary": np.array(vocabulary, dtype=str),
            "idf": self.ngrams.idf.astype(np.float32),
            "weights": self.weights.astype(np.float32),
            "bias": self.bias.astype(np.float32),
        }
        if self.instruction_ngrams is not None:
            grams = self.instruction_ngrams
            meta["instruction_scale"] = self.instruction_scale
            meta["instruction_ngram_range"] = [grams.n_min, grams.n_max]
            arrays["instruction_vocabulary"] = np.array(sorted(grams.vocabulary, key=grams.vocabulary.__getitem__), str)
            arrays["instruction_idf"] = grams.idf.astype(np.float32)
        return {"meta": np.array(json.dumps(meta, ensure_ascii=False, sort_keys=True)), **arrays}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, npt.NDArray[Any]]) -> LinearTextModel:
        meta = json.loads(str(arrays["meta"]))
        vocabulary = {str(gram): i for i, gram in enumerate(arrays["vocabulary"].tolist())}
        n_min, n_max = meta["ngram_range"]
        a, b = meta["calibration"]
        s1, s2, s3 = meta["scales"]
        instruction = None
        if "instruction_vocabulary" in arrays:
            i_min, i_max = meta["instruction_ngram_range"]
            instruction = CharNgrams(
                {str(gram): i for i, gram in enumerate(arrays["instruction_vocabulary"].tolist())},
                np.asarray(arrays["instruction_idf"], dtype=np.float32),
                int(i_min),
                int(i_max),
            )
        return cls(
            classes=tuple(meta["classes"]),
            ngrams=CharNgrams(vocabulary, np.asarray(arrays["idf"], dtype=np.float32), int(n_min), int(n_max)),
            families=tuple(meta["families"]),
            embedder_id=str(meta["embedder_id"]),
            scales=(float(s1), float(s2), float(s3)),
            weights=np.asarray(arrays["weights"], dtype=np.float32),
            bias=np.asarray(arrays["bias"], dtype=np.float32),
            calibration=(float(a), float(b)),
            settings=meta["settings"],
            instruction_ngrams=instruction,
            instruction_scale=float(meta.get("instruction_scale", 0.0)),
        )
