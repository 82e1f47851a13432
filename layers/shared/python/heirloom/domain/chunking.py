"""Chunking: one chunk per paragraph; one over the token limit or the embedder's window is split at
line breaks, then at sentence boundaries."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

from heirloom.ports import Chunk, Tokenizer

_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
#: a speaker's turn: a list mark or quote mark maybe, a name of up to five words (bracketed or
#: bold too), maybe a note in brackets ("Bea (10:05)", "Luc [on the phone]"), and a colon
_TURN = re.compile(
    r"(?:[-*>•] )?(?:\*\*|\[)?([^\W\d_][\w.'’-]*(?: [\w.'’-]+){0,4})(?:\*\*|\])?"
    r"(?: [(\[][^)\]\n]{1,30}[)\]])?:(?:\*\*)?\s"
)
#: the lower-case words a name may hold ("Anna van der Berg")
_NAME_PARTICLES = frozenset(
    {"de", "da", "di", "del", "der", "den", "van", "von", "la", "le", "du", "dos", "bin", "al"}
)
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+")


#: the shortest piece a sentence is cut into (a window too small for that is a configuration
#: error, not a reason to embed a story token by token)
MIN_CUT_TOKENS = 16


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
    return [" ".join(p.split()) for p in _blocks(content)]


def _blocks(content: str) -> list[str]:
    """The content's paragraphs as written (blank lines between them), line breaks kept."""
    return [p for p in _PARAGRAPH_BREAK.split(content.replace("\r\n", "\n")) if p.strip()]


def is_transcript(blocks: list[str]) -> bool:
    """Are most of these paragraphs speaker turns ("Bea: ...", "**Luc:** ...")?"""
    turns = sum(1 for block in blocks if is_turn(block))
    return turns >= 2 and 2 * turns >= len(blocks)


def is_turn(block: str) -> bool:
    """Does the paragraph open with a speaker's name and a colon ("Bea: ...", "Dr. Roy: ...")?"""
    label = _TURN.match(block.lstrip())
    return label is not None and all(w[0].isupper() or w in _NAME_PARTICLES for w in label[1].split())


def sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(text) if s.strip()]


def _cut(text: str, tokenizer: Tokenizer, fits: Callable[[str], bool], max_tokens: int) -> list[str]:
    """One sentence too long for a chunk, cut by tokens into pieces that fit."""
    tokens = tokenizer.encode(text)
    step = max_tokens
    while True:
        pieces = [tokenizer.decode(tokens[i : i + step]).strip() for i in range(0, len(tokens), step)]
        if step <= MIN_CUT_TOKENS or all(fits(p) for p in pieces):
            return [p for p in pieces if p]
        step = max(MIN_CUT_TOKENS, step * 3 // 4)


def _pack(units: list[str], fits: Callable[[str], bool], sep: str = " ") -> list[str]:
    """Neighbouring units joined into as few pieces as fit, in order (each unit fits alone)."""
    pieces: list[str] = []
    current = ""
    for unit in units:
        joined = f"{current}{sep}{unit}" if current else unit
        if current and not fits(joined):
            pieces.append(current)
            joined = unit
        current = joined
    return [*pieces, current] if current else pieces


def _split(block: str, tokenizer: Tokenizer, fits: Callable[[str], bool], max_tokens: int) -> list[str]:
    """A paragraph as chunks that fit: whole when it fits; else its lines (a transcript's
    turns, a poem's lines), then its sentences, packed together; a sentence too long alone is
    cut by tokens."""
    text = " ".join(block.split())
    if fits(text):
        return [text]
    lines = [line for line in block.split("\n") if line.strip()]
    if len(lines) > 1:
        units = [piece for line in lines for piece in _split(line, tokenizer, fits, max_tokens)]
        return _pack(units, fits, "\n")
    units = []
    for sentence in sentences(text):
        units.extend([sentence] if fits(sentence) else _cut(sentence, tokenizer, fits, max_tokens))
    return _pack(units, fits)


def chunk_story(
    content: str,
    tokenizer: Tokenizer,
    max_tokens: int = 500,
    fits: Callable[[str], bool] | None = None,
) -> list[Chunk]:
    """One chunk per paragraph; a paragraph over `max_tokens`, or one the embedder would not read
    whole (`fits`: False when the model would cut the text), is split (`_split`). The turns of a
    transcript (`is_transcript`) are packed: as many neighbouring turns to a chunk as fit, since
    a turn alone rarely says what it answers (decision 0038)."""

    def fit(text: str) -> bool:
        return tokenizer.count(text) <= max_tokens and (fits is None or fits(text))

    blocks = _blocks(content)
    texts = [piece for block in blocks for piece in _split(block, tokenizer, fit, max_tokens)]
    if is_transcript(blocks):
        texts = _pack(texts, fit, "\n")
    return [Chunk(index=i, text=text, token_count=tokenizer.count(text)) for i, text in enumerate(texts)]
