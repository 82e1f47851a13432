"""Chunking: one chunk per paragraph, split at sentence boundaries when over the token limit."""

from __future__ import annotations

import hashlib
import re

from heirloom.ports import Chunk, Tokenizer

_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+")


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def story_digest(title: str, content: str) -> str:
    """What a story's chunk index and graph are built from: its title and its content (chunks
    embed the title; extraction reads it). Recorded in both ledgers (decision 0029)."""
    return digest_of(title, content_hash(content))


def digest_of(title: str, content_digest: str) -> str:
    """`story_digest` from the stored content hash; the backfill planner's SQL computes the same
    (adapters/postgres/ledger.py)."""
    return hashlib.sha256(f"{content_hash(title)}:{content_digest}".encode()).hexdigest()


def paragraphs(content: str) -> list[str]:
    return [" ".join(p.split()) for p in _PARAGRAPH_BREAK.split(content.replace("\r\n", "\n")) if p.strip()]


def sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(text) if s.strip()]


def _split_long(text: str, tokenizer: Tokenizer, max_tokens: int) -> list[str]:
    pieces: list[str] = []
    current: list[str] = []
    current_tokens = 0
    for sentence in sentences(text):
        n = tokenizer.count(sentence)
        if n > max_tokens:  # one sentence over the limit: cut it by tokens
            if current:
                pieces.append(" ".join(current))
                current, current_tokens = [], 0
            tokens = tokenizer.encode(sentence)
            pieces.extend(
                tokenizer.decode(tokens[i : i + max_tokens]).strip()
                for i in range(0, len(tokens), max_tokens)
            )
            continue
        if current and current_tokens + n + 1 > max_tokens:
            pieces.append(" ".join(current))
            current, current_tokens = [], 0
        current.append(sentence)
        current_tokens += n + 1
    if current:
        pieces.append(" ".join(current))
    return [p for p in pieces if p]


def chunk_story(content: str, tokenizer: Tokenizer, max_tokens: int = 500) -> list[Chunk]:
    texts: list[str] = []
    for paragraph in paragraphs(content):
        if tokenizer.count(paragraph) <= max_tokens:
            texts.append(paragraph)
        else:
            texts.extend(_split_long(paragraph, tokenizer, max_tokens))
    chunks = []
    for i, raw in enumerate(texts):
        text = raw
        n = tokenizer.count(text)
        if n > max_tokens:  # joining sentences can add a token or two; trim to the limit
            text = tokenizer.decode(tokenizer.encode(text)[:max_tokens]).strip()
            n = tokenizer.count(text)
        chunks.append(Chunk(index=i, text=text, token_count=n))
    return chunks
