"""The learned intent classifier: multinomial logistic regression over the query's embedding
and the words of the question.

Trained from the project's own intent set (`config/intents/train.jsonl`: questions written for
the project over the six intents, kin words in several languages, a fixed held-out split), with
the embedder the deployment uses, at first use; the weights are cached per embedder model id and
data files' hash (in memory, and as JSON in a cache directory when one is given). Rules enter only
as features (`intent.model_features`): which kinds of known names the gazetteer finds (a person,
a place, an event or object, a linked legacy's name), whether a year, range or decade is named,
and the rule-based classifier's score for each intent (decision 0032).
Next to the embedding (which says what a question is about), the model weighs the question's
words and word pairs (`ngrams`: "how long", "where did", "own stories"), which say how it asks;
the vocabulary is every word and pair of the training split. The words are read twice: as
written and with known persons' and places' names as "someone" / "that place"
(`intent.name_masked`, decision 0036), so that a question's shape counts the same whatever names
it uses. For training, the names of `config/intents/names.jsonl` stand in for a legacy's graph.
Inference is plain Python (six dot products and a look-up per word), so the Lambda does not
import numpy; training needs numpy.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from itertools import pairwise
from pathlib import Path
from typing import Any

from heirloom.contracts.context import Intent
from heirloom.domain.gazetteer import Gazetteer, GazetteerEntry
from heirloom.domain.intent import ENTITY_FEATURE_NAMES, FEATURE_NAMES, model_features, name_masked
from heirloom.domain.kinship import KIN_LEXICON
from heirloom.ports import Embedder

DATA_RESOURCE = "intents/train.jsonl"
NAMES_RESOURCE = "intents/names.jsonl"
#: the kin words `intent.analyse` reads (heirloom.domain.kinship)
KIN_LEXICON_RESOURCE = f"lexicons/{KIN_LEXICON}"
#: the training gazetteer's legacy ids: its names are of the asked legacy or of a linked one
TRAINING_LEGACY = "primary"
#: the order of the model's outputs
CLASSES: tuple[Intent, ...] = tuple(Intent)
#: L2 penalty, the optimiser's steps and the features' scale next to a unit-length embedding
#: (chosen by 5-fold cross-validation on the training split, never on an evaluation set)
L2 = 1e-3
STEPS = 400
LEARNING_RATE = 2.0
FEATURE_SCALE = 0.3
#: the rule-based scores' scale (decision 0032: the best mean of three 5-fold cross-validations
#: of the training split over 0, 0.15, 0.3, 0.45, 0.6 and 1.0)
RULE_SCALE = 0.45
#: the length of the question's n-gram vector (unit length before scaling)
NGRAM_SCALE = 1.0

_WORDS = re.compile(r"[^\W_]+(?:'[^\W_]+)*")


def scaled(feats: Sequence[float]) -> list[float]:
    """The features as the model weighs them: the named-entity ones by `FEATURE_SCALE`, the
    rule-based scores by `RULE_SCALE` (next to a unit-length embedding)."""
    named = len(ENTITY_FEATURE_NAMES)
    return [(FEATURE_SCALE if i < named else RULE_SCALE) * f for i, f in enumerate(feats)]


def ngrams(text: str) -> set[str]:
    """The lower-cased words of `text` and each pair of neighbouring words, the first word also
    marked as the opening one ("^ where")."""
    words = ["^", *_WORDS.findall(text.replace("’", "'").casefold())]
    return set(words[1:]) | {f"{a} {b}" for a, b in pairwise(words)}


def model_grams(text: str, masked: str = "") -> set[str]:
    """The n-grams the model weighs: those of the question and of its name-masked form."""
    return ngrams(text) | ngrams(masked) if masked else ngrams(text)


@dataclass(frozen=True)
class Example:
    text: str
    intent: Intent
    split: str


def data_path(resource: str = DATA_RESOURCE) -> Path:
    return Path(str(resources.files("heirloom.config").joinpath(resource)))


def training_gazetteer(path: Path | None = None) -> Gazetteer:
    """The names the training questions use, as a legacy's graph would list them."""
    path = path or data_path(NAMES_RESOURCE)
    entries = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            entries.append(
                GazetteerEntry(
                    f"n{number}",
                    row["label"],
                    str(row["name"]),
                    tuple(row.get("aliases", ())),
                    legacy_id=str(row["legacy"]),
                    linked_subject=bool(row.get("linked_subject", False)),
                )
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{number}: not a name entry ({exc})") from exc
    return Gazetteer.build(entries)


def load_examples(path: Path | None = None) -> list[Example]:
    """The intent set; a malformed line is an error naming the line."""
    path = path or data_path()
    out: list[Example] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            out.append(Example(str(row["text"]), Intent(row["intent"]), str(row.get("split", "train"))))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{number}: not an intent example ({exc})") from exc
    return out


@dataclass(frozen=True)
class IntentModel:
    """Weights for one embedder: one row per class over embedding + features + the n-grams of
    `vocabulary` + bias."""

    model_id: str
    data_sha256: str
    weights: tuple[tuple[float, ...], ...]
    vocabulary: tuple[str, ...] = ()

    @cached_property
    def _columns(self) -> dict[str, int]:
        return {gram: i for i, gram in enumerate(self.vocabulary)}

    def width(self, dimension: int) -> int:
        return dimension + len(FEATURE_NAMES) + len(self.vocabulary) + 1

    def probabilities(
        self, vector: Sequence[float], feats: Sequence[float], text: str = "", masked: str = ""
    ) -> dict[Intent, float]:
        dense = [*vector, *scaled(feats)]
        index = self._columns
        known = [len(dense) + index[g] for g in model_grams(text, masked) if g in index]
        value = NGRAM_SCALE / math.sqrt(len(known)) if known else 0.0
        logits = [
            math.fsum(w * v for w, v in zip(row, dense, strict=False))
            + value * math.fsum(row[i] for i in known)
            + row[-1]
            for row in self.weights
        ]
        top = max(logits)
        exps = [math.exp(v - top) for v in logits]
        total = sum(exps)
        return {intent: e / total for intent, e in zip(CLASSES, exps, strict=True)}

    def predict(
        self,
        vector: Sequence[float],
        feats: Sequence[float],
        text: str = "",
        exclude: Collection[Intent] = (),
        masked: str = "",
    ) -> tuple[Intent, float]:
        """The likeliest intent not in `exclude`, with its probability among those left (`masked`:
        the question with known names as neutral words, `intent.name_masked`)."""
        probs = {i: p for i, p in self.probabilities(vector, feats, text, masked).items() if i not in exclude}
        best = max(probs, key=lambda i: probs[i])
        return best, probs[best] / math.fsum(probs.values())

    def to_json(self) -> str:
        return json.dumps(
            {
                "model_id": self.model_id,
                "data_sha256": self.data_sha256,
                "vocabulary": self.vocabulary,
                "weights": self.weights,
            },
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, text: str) -> IntentModel:
        raw = json.loads(text)
        return cls(
            raw["model_id"],
            raw["data_sha256"],
            tuple(tuple(r) for r in raw["weights"]),
            tuple(raw.get("vocabulary", ())),
        )


def vocabulary_of(texts: Sequence[str], masked: Sequence[str] = ()) -> tuple[str, ...]:
    forms = masked or [""] * len(texts)
    return tuple(sorted({g for t, m in zip(texts, forms, strict=True) for g in model_grams(t, m)}))


def fit(
    vectors: Sequence[Sequence[float]],
    feats: Sequence[Sequence[float]],
    labels: Sequence[Intent],
    texts: Sequence[str] = (),
    vocabulary: Sequence[str] = (),
    masked: Sequence[str] = (),
) -> list[list[float]]:
    """Softmax regression by full-batch gradient descent (numpy; build or first use only). The
    n-gram columns are sparse (a dozen of thousands per question), so they are kept as index
    arrays and summed with `bincount`, not kept as a dense matrix."""
    import numpy as np

    index = {g: i for i, g in enumerate(vocabulary)}
    at: list[int] = []  # question of each n-gram entry
    cols: list[int] = []
    vals: list[float] = []
    forms = masked or [""] * len(texts)
    for row, (text, form) in enumerate(zip(texts, forms, strict=True)):
        known = sorted({index[g] for g in model_grams(text, form) if g in index})
        at += [row] * len(known)
        cols += known
        vals += [NGRAM_SCALE / math.sqrt(len(known))] * len(known)
    ia, ic, v = np.array(at, dtype=np.intp), np.array(cols, dtype=np.intp), np.array(vals)
    n, classes = len(labels), range(len(CLASSES))
    dense = np.array(
        [[*e, *scaled(f), 1.0] for e, f in zip(vectors, feats, strict=True)],
        dtype=np.float64,
    )
    y = np.zeros((len(labels), len(CLASSES)))
    y[np.arange(len(labels)), [CLASSES.index(label) for label in labels]] = 1.0
    wd = np.zeros((len(CLASSES), dense.shape[1]))
    wg = np.zeros((len(CLASSES), len(vocabulary)))
    for _ in range(STEPS):
        grams = np.stack([np.bincount(ia, wg[c, ic] * v, minlength=n) for c in classes], axis=1)
        logits = dense @ wd.T + grams
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        d = (p - y) / n
        grad_g = np.stack([np.bincount(ic, d[ia, c] * v, minlength=len(vocabulary)) for c in classes])
        wd -= LEARNING_RATE * (d.T @ dense + L2 * wd)
        wg -= LEARNING_RATE * (grad_g + L2 * wg)
    # the layout of `IntentModel.weights`: embedding, features, n-grams, bias
    rows: list[list[float]] = np.hstack([wd[:, :-1], wg, wd[:, -1:]]).tolist()
    return rows


def rule_sources() -> tuple[Path, ...]:
    """The modules whose scores the model reads as features (`intent.analyse` and its cues), the
    kin lexicon they read, and this module, which builds the features and the n-grams the
    weights are columns of."""
    domain = Path(__file__).parent
    return (domain / "intent.py", domain / "intent_cues.py", data_path(KIN_LEXICON_RESOURCE), Path(__file__))


def data_digest(
    path: Path | None = None, names: Path | None = None, rules: Sequence[Path] | None = None
) -> str:
    """What trained weights depend on besides the embedder: the intent set, the training names and
    the rules whose scores are features (decision 0032), and the code that builds the features."""
    digest = hashlib.sha256()
    files = (path or data_path(), names or data_path(NAMES_RESOURCE), *(rules or rule_sources()))
    for file in files:
        digest.update(file.read_bytes())
    return digest.hexdigest()


def example_features(examples: Sequence[Example], gazetteer: Gazetteer) -> list[tuple[float, ...]]:
    return [model_features(e.text, (), gazetteer, "", TRAINING_LEGACY) for e in examples]


def example_masked(examples: Sequence[Example], gazetteer: Gazetteer) -> list[str]:
    return [name_masked(e.text, gazetteer) for e in examples]


def train(
    embedder: Embedder, path: Path | None = None, split: str = "train", names: Path | None = None
) -> IntentModel:
    """A model from the examples of `split` ("all" for every example)."""
    examples = [e for e in load_examples(path) if split in ("all", e.split)]
    texts = [e.text for e in examples]
    vectors = embedder.embed(texts)
    gazetteer = training_gazetteer(names)
    feats = example_features(examples, gazetteer)
    masked = example_masked(examples, gazetteer)
    vocabulary = vocabulary_of(texts, masked)
    weights = fit(vectors, feats, [e.intent for e in examples], texts, vocabulary, masked)
    # six decimals: the shipped JSON stays small and reads back as the same model
    rounded = tuple(tuple(round(w, 6) for w in r) for r in weights)
    return IntentModel(embedder.model_id, data_digest(path, names), rounded, vocabulary)


def accuracy(model: IntentModel, embedder: Embedder, examples: Sequence[Example]) -> float:
    if not examples:
        return 0.0
    vectors = embedder.embed([e.text for e in examples])
    gazetteer = training_gazetteer()
    feats = example_features(examples, gazetteer)
    masked = example_masked(examples, gazetteer)
    right = sum(
        model.predict(v, f, e.text, masked=m)[0] is e.intent
        for v, f, m, e in zip(vectors, feats, masked, examples, strict=True)
    )
    return right / len(examples)


def cross_validate(embedder: Embedder, folds: int = 5, seed: int = 0) -> float:
    """Mean accuracy of `folds`-fold cross-validation over the training split."""
    examples = [e for e in load_examples() if e.split == "train"]
    order = list(range(len(examples)))
    random.Random(seed).shuffle(order)  # noqa: S311 (a fold assignment, not a secret)
    vectors = embedder.embed([e.text for e in examples])
    gazetteer = training_gazetteer()
    feats = example_features(examples, gazetteer)
    masked = example_masked(examples, gazetteer)
    scores: list[float] = []
    for k in range(folds):
        test = set(order[k::folds])
        train_ix = [i for i in order if i not in test]
        texts = [examples[i].text for i in train_ix]
        forms = [masked[i] for i in train_ix]
        vocabulary = vocabulary_of(texts, forms)
        weights = fit(
            [vectors[i] for i in train_ix],
            [feats[i] for i in train_ix],
            [examples[i].intent for i in train_ix],
            texts,
            vocabulary,
            forms,
        )
        model = IntentModel(embedder.model_id, "", tuple(tuple(r) for r in weights), vocabulary)
        right = sum(
            model.predict(vectors[i], feats[i], examples[i].text, masked=masked[i])[0] is examples[i].intent
            for i in test
        )
        scores.append(right / len(test))
    return sum(scores) / len(scores)


def weights_file(directory: Path, model_id: str, digest: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-._" else "_" for c in model_id)
    return directory / f"intent-{safe}-{digest[:16]}.json"


#: weights a build wrote into the layer (`heirloom intent-model --out`), read only
SHIPPED_RESOURCE = "intents/models"


def model_key(model_id: str, dimension: int) -> str:
    """An embedder's name among the weights: its model id and vector dimension."""
    return f"{model_id}-{dimension}"


def has_shipped_weights(model_id: str, dimension: int) -> bool:
    """Whether the layer ships weights of the current data for this embedder (no training at
    first use; INTENT_PROVIDER=auto, decision 0034)."""
    return weights_file(data_path(SHIPPED_RESOURCE), model_key(model_id, dimension), data_digest()).is_file()


class IntentModelCache:
    """One trained model per embedder (model id and dimension) and data files, trained once per container
    unless the layer ships its weights (`config/intents/models/`); with `directory`, the weights
    are also kept there as JSON for the next cold start."""

    def __init__(self, directory: Path | None = None, path: Path | None = None):
        self.directory = directory
        self.path = path or data_path()
        self._models: dict[str, IntentModel] = {}
        self._lock = threading.Lock()

    def _read(self, file: Path, embedder: Embedder, digest: str) -> IntentModel | None:
        if not file.is_file():
            return None
        try:
            model = IntentModel.from_json(file.read_text())
        except (ValueError, KeyError, TypeError):
            return None
        width = model.width(embedder.dimension)
        fits = all(len(row) == width for row in model.weights) and len(model.weights) == len(CLASSES)
        return model if fits and (model.model_id, model.data_sha256) == (embedder.model_id, digest) else None

    def get(self, embedder: Embedder) -> IntentModel:
        key = model_key(embedder.model_id, embedder.dimension)
        with self._lock:
            hit = self._models.get(key)
            if hit is not None:
                return hit
            digest = data_digest(self.path)
            shipped = weights_file(data_path(SHIPPED_RESOURCE), key, digest)
            file = weights_file(self.directory, key, digest) if self.directory else None
            model = self._read(shipped, embedder, digest)
            if model is None and file is not None:
                model = self._read(file, embedder, digest)
            if model is None:
                model = train(embedder, self.path)
                if file is not None:
                    try:
                        file.parent.mkdir(parents=True, exist_ok=True)
                        tmp = file.with_suffix(".tmp")
                        tmp.write_text(model.to_json())
                        tmp.replace(file)
                    except OSError:
                        pass  # a read-only directory: the in-memory model still serves
            self._models[key] = model
            return model


def summary(embedder: Embedder) -> dict[str, Any]:
    """Held-out and cross-validation accuracy (for docs/evaluation.md)."""
    model = train(embedder)
    heldout = [e for e in load_examples() if e.split == "heldout"]
    return {
        "model_id": embedder.model_id,
        "train": sum(1 for e in load_examples() if e.split == "train"),
        "heldout": len(heldout),
        "heldout_accuracy": round(accuracy(model, embedder, heldout), 3),
        "cv5_accuracy": round(cross_validate(embedder), 3),
    }
