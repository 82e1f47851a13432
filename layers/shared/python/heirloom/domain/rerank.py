"""The optional reranking stage of RankAssemble (docs/decisions/0013).

The `top_n` best-ranked stories are scored again against the question by a `Reranker` (a
cross-encoder such as Bedrock's Rerank API, or term overlap), each from its title and the chunks
the request found for it. A reranked story's score is ranking's score plus the reranker's
`weight` x its relevance (0..1); the reranked stories keep the top places of their tier
(`rank_key`), in their new order, and the rest follow unchanged. Reranking only reorders what
the access filter kept: it never adds, drops or reads another story.

The stage has its own deadline (`budget_s`, RERANK_BUDGET_MS). A reranker that does not answer
in time, or fails (throttled, refused, malformed), leaves ranking's order as it was and the
report says why; the context is then marked degraded ("rerank").
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from heirloom.contracts.context import Candidate, RerankReport
from heirloom.domain.deadline import DeadlineExceeded, call_within
from heirloom.domain.ranking import ScoredCandidate, rank_key
from heirloom.errors import ModelError
from heirloom.ports import Reranker

#: a story's text as the reranker reads it (title and its chunks), at most this many characters:
#: rerank models read a few hundred tokens of each document
MAX_DOCUMENT_CHARS = 4000


@dataclass(frozen=True)
class RerankStage:
    reranker: Reranker
    top_n: int
    budget_s: float


def document_text(candidate: Candidate) -> str:
    """The title, then the candidate's chunks in story order, cut to MAX_DOCUMENT_CHARS."""
    chunks = sorted(candidate.chunks, key=lambda c: c.chunk_index)
    text = "\n".join([candidate.title, *(c.text for c in chunks)])
    return text[:MAX_DOCUMENT_CHARS]


def rerank(
    query: str, ranked: Sequence[ScoredCandidate], stage: RerankStage
) -> tuple[list[ScoredCandidate], RerankReport]:
    """`ranked` (best first) with its top `stage.top_n` reordered by the reranker, and what the
    stage did. On timeout or failure the order is `ranked`'s."""
    head, tail = list(ranked[: stage.top_n]), list(ranked[stage.top_n :])
    name = stage.reranker.name
    started = time.perf_counter()

    def report(status: Literal["ok", "timeout", "failed"], reason: str | None = None) -> RerankReport:
        return RerankReport(
            reranker=name,
            status=status,
            candidates=len(head) if status == "ok" else 0,
            latency_ms=round((time.perf_counter() - started) * 1000, 2),
            reason=reason,
        )

    if len(head) < 2:
        return list(ranked), report("ok")
    documents = [document_text(s.candidate) for s in head]
    try:
        scores = call_within(
            stage.budget_s, lambda: stage.reranker.score(query, documents), name=f"rerank-{name}"
        )
    except DeadlineExceeded:
        return list(ranked), report("timeout", f"over its budget of {stage.budget_s * 1000:.0f} ms")
    except ModelError as exc:
        return list(ranked), report("failed", f"{type(exc).__name__}: {exc.code or 'no code'}")
    if len(scores) != len(head):
        return list(ranked), report("failed", f"{len(scores)} scores for {len(head)} stories")
    weight = stage.reranker.weight
    rescored = [
        replace(s, score=round(s.score + weight * min(1.0, max(0.0, r)), 6), reranked=True)
        for s, r in zip(head, scores, strict=True)
    ]
    return sorted([*rescored, *tail], key=rank_key), report("ok")
