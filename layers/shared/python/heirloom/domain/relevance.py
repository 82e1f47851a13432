"""How one retrieved chunk's dense and lexical evidence combine (shared by search and filter)."""

from __future__ import annotations

from heirloom.contracts.context import ChunkResult

#: weight of the lexical match next to cosine similarity in a chunk's retrieval score
LEXICAL_WEIGHT = 0.5


def retrieval_score(chunk: ChunkResult) -> float:
    """Dense and lexical evidence of one chunk, on the cosine scale."""
    return chunk.similarity + LEXICAL_WEIGHT * chunk.lexical
