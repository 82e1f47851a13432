"""Retrieval scores of docs/dataset-format.md, computed from what the context workflow returned.

A leak is detected independently of the access filter: a forbidden story counts as leaked if its
id is among the context's sources, or its title or one of its distinctive sentences appears in
the formatted context, where "distinctive" means no readable text (a readable story, or a known
relationship's detail) contains it.
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from heirloom.fencing import GREATER_THAN, LESS_THAN

_SENTENCE = re.compile(r"(?<=[.!?])[\"'”’)]*\s+")
MIN_SENTENCE_WORDS = 6
MIN_TITLE_CHARS = 12


#: the formatted context's escapes undone (heirloom.fencing): `&lt;`/`&gt;` and the angle look-alikes
#: read as `<`/`>` on both sides, backslashes go with the quotes and hashes
_ANGLES = str.maketrans({c: "<" for c in LESS_THAN} | {c: ">" for c in GREATER_THAN})


def _norm(text: str) -> str:
    text = text.replace("&lt;", "<").replace("&gt;", ">").translate(_ANGLES)
    return " ".join(re.sub(r"[“”\"‘’'`*_#\\]", "", text).lower().split())


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(" ".join(text.split())) if s.strip()]


@dataclass(frozen=True)
class StoryText:
    id: str
    title: str
    content: str


@dataclass(frozen=True)
class QueryOutcome:
    """One query: what was expected and what the context held."""

    query_id: str
    category: str | None
    expected_intent: str | None
    gold: tuple[str, ...]
    forbidden: tuple[str, ...]
    ranked: tuple[str, ...]
    context: str
    intent: str | None
    latency_ms: float


def distinctive_sentences(story: StoryText, readable: Iterable[StoryText]) -> list[str]:
    """Sentences of `story` long enough to identify it and absent from every readable story."""
    shared = {_norm(s) for other in readable for s in sentences(other.content)}
    return [
        _norm(s)
        for s in sentences(story.content)
        if len(s.split()) >= MIN_SENTENCE_WORDS and _norm(s) not in shared
    ]


def leaked(outcome: QueryOutcome, story: StoryText, readable: Iterable[StoryText]) -> bool:
    if story.id in outcome.ranked:
        return True
    context = _norm(outcome.context)
    readable = list(readable)
    title = _norm(story.title)
    if (
        len(title) >= MIN_TITLE_CHARS
        and title in context
        and not any(title in _norm(r.title) or title in _norm(r.content) for r in readable)
    ):
        return True
    return any(sentence in context for sentence in distinctive_sentences(story, readable))


def evidence_found(story: StoryText, context: str) -> bool:
    """Some sentence of the story's text appears in the context."""
    text = _norm(context)
    return any(_norm(s) in text for s in sentences(story.content) if len(s.split()) >= MIN_SENTENCE_WORDS)


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


@dataclass
class Scores:
    ks: tuple[int, ...]
    metrics: dict[str, float] = field(default_factory=dict)


def score(
    outcomes: Sequence[QueryOutcome],
    stories: dict[str, StoryText],
    readable_by_query: dict[str, set[str]],
    ks: Sequence[int] = (1, 3, 5, 10),
) -> dict[str, Any]:
    """Overall, by category and by expected intent."""

    def block(items: Sequence[QueryOutcome]) -> dict[str, float]:
        with_gold = [o for o in items if o.gold]
        out: dict[str, float] = {"queries": float(len(items))}
        for k in ks:
            out[f"recall@{k}"] = (
                statistics.fmean(len(set(o.gold) & set(o.ranked[:k])) / len(o.gold) for o in with_gold)
                if with_gold
                else 0.0
            )
            out[f"all_gold@{k}"] = (
                statistics.fmean(float(set(o.gold) <= set(o.ranked[:k])) for o in with_gold)
                if with_gold
                else 0.0
            )
        reciprocal = []
        for o in with_gold:
            ranks = [i for i, sid in enumerate(o.ranked, start=1) if sid in o.gold]
            reciprocal.append(1.0 / ranks[0] if ranks else 0.0)
        out["mrr"] = statistics.fmean(reciprocal) if reciprocal else 0.0
        pairs = [(o, g) for o in with_gold for g in o.gold]
        out["evidence_in_context"] = (
            statistics.fmean(float(evidence_found(stories[g], o.context)) for o, g in pairs) if pairs else 0.0
        )
        leaks = 0
        for o in items:
            readable = [stories[s] for s in readable_by_query.get(o.query_id, set()) if s in stories]
            leaks += sum(1 for f in o.forbidden if f in stories and leaked(o, stories[f], readable))
        out["leaks"] = float(leaks)
        latencies = [o.latency_ms for o in items]
        out["latency_p50_ms"] = percentile(latencies, 0.5)
        out["latency_p95_ms"] = percentile(latencies, 0.95)
        judged = [o for o in items if o.expected_intent]
        if judged:
            out["intent_accuracy"] = statistics.fmean(float(o.intent == o.expected_intent) for o in judged)
        return out

    by_category: dict[str, list[QueryOutcome]] = defaultdict(list)
    by_intent: dict[str, list[QueryOutcome]] = defaultdict(list)
    for o in outcomes:
        by_category[o.category or "none"].append(o)
        by_intent[o.expected_intent or "none"].append(o)
    return {
        "metrics": block(outcomes),
        "by_category": {k: block(v) for k, v in sorted(by_category.items())},
        "by_intent": {k: block(v) for k, v in sorted(by_intent.items())},
    }
