"""Rerankers (the `Reranker` port, heirloom.domain.rerank).

LexicalReranker: no model. No package on the registries this project installs from ships
cross-encoder weights (docs/decisions/0013), so the local stage scores term overlap: BM25 of the
question's words over the candidates' text, the candidates themselves as the collection.

BedrockReranker: Bedrock's Rerank API (`bedrock-agent-runtime` `rerank`, amazon.rerank-v1:0 or
cohere.rerank-v3-5:0): every document inline, one call, a relevance score per document. Errors
are the typed ones of heirloom.adapters.bedrock (throttling and timeouts are `Throttled`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from heirloom.adapters.bedrock import _malformed, model_error
from heirloom.domain.intent_cues import STOPWORDS

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")

#: BM25's term-frequency saturation and length normalisation (the usual values)
BM25_K1 = 1.2
BM25_B = 0.75


def words(text: str) -> list[str]:
    """Casefolded words of `text` without stopwords (any script; apostrophes kept inside)."""
    return [w for w in (m.group().casefold() for m in _WORD.finditer(text)) if w not in STOPWORDS]


class LexicalReranker:
    """BM25 over the candidates (each one a document, the candidates the collection), scaled so
    the best scores 1.0. Its relevance counts a tenth beside ranking's score: the embedding score
    already holds the best chunk's word match, this adds the whole story's and its title's."""

    name = "lexical"
    weight = 0.1

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        terms = set(words(query))
        bags = [Counter(words(d)) for d in documents]
        if not terms or not bags:
            return [0.0] * len(documents)
        average = sum(sum(b.values()) for b in bags) / len(bags) or 1.0
        df = {t: sum(1 for b in bags if t in b) for t in terms}
        n = len(bags)
        idf = {t: math.log(1.0 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in terms}
        raw = []
        for bag in bags:
            length = sum(bag.values())
            norm = BM25_K1 * (1 - BM25_B + BM25_B * length / average)
            raw.append(sum(idf[t] * bag[t] * (BM25_K1 + 1) / (bag[t] + norm) for t in terms if bag[t]))
        best = max(raw)
        return [r / best if best > 0 else 0.0 for r in raw]


@lru_cache(maxsize=4)
def rerank_client(region: str = "", *, budget_s: float = 0.3) -> Any:
    """One `bedrock-agent-runtime` client per container: no retries and a read timeout of the
    stage's budget (a retry could not finish within it; the stage gives up instead)."""
    import boto3
    from botocore.config import Config

    config = Config(
        connect_timeout=max(budget_s, 0.1),
        read_timeout=max(budget_s, 0.1),
        retries={"mode": "standard", "total_max_attempts": 1},
        tcp_keepalive=True,
    )
    return boto3.client("bedrock-agent-runtime", region_name=region or None, config=config)


def foundation_model_arn(model_id: str, region: str) -> str:
    """The Rerank API names its model by ARN."""
    if model_id.startswith("arn:"):
        return model_id
    return f"arn:aws:bedrock:{region}::foundation-model/{model_id}"


class BedrockReranker:
    """Rerank API with inline text documents; results come back by index, best first, and are
    put back in the documents' order. Relevance scores are 0..1, so the model decides the order
    of what it scored (weight 1.0) and ranking's score only breaks its near-ties."""

    name = "bedrock"
    weight = 1.0

    def __init__(self, client: Any, *, model_id: str, region: str):
        self._client = client
        self.model_id = model_id
        self._arn = foundation_model_arn(model_id, region)

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        if not documents:
            return []
        from botocore.exceptions import BotoCoreError, ClientError

        request = dict(
            queries=[{"type": "TEXT", "textQuery": {"text": query}}],
            sources=[
                {"type": "INLINE", "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": d}}}
                for d in documents
            ],
            rerankingConfiguration={
                "type": "BEDROCK_RERANKING_MODEL",
                "bedrockRerankingConfiguration": {
                    "numberOfResults": len(documents),
                    "modelConfiguration": {"modelArn": self._arn},
                },
            },
        )
        try:
            response: dict[str, Any] = self._client.rerank(**request)
        except (ClientError, BotoCoreError) as exc:
            raise model_error(exc, operation="rerank", model_id=self.model_id) from exc
        scores: list[float | None] = [None] * len(documents)
        for result in response.get("results", []):
            index, value = result.get("index"), result.get("relevanceScore")
            if not isinstance(index, int) or not 0 <= index < len(documents):
                raise _malformed("rerank", self.model_id, f"result index {index!r} out of range")
            if not isinstance(value, int | float) or not math.isfinite(value):
                raise _malformed("rerank", self.model_id, "relevance score is not a number")
            scores[index] = float(value)
        if any(s is None for s in scores):
            raise _malformed("rerank", self.model_id, "not every document was scored")
        return [s or 0.0 for s in scores]
