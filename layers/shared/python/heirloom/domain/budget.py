"""The token budget: its split between the context's sections, and story text cut to fit
(whole passages first, then sentences, then words)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from heirloom.contracts.context import (
    ChunkResult,
)
from heirloom.domain.chunking import sentences
from heirloom.fencing import inline, one_line
from heirloom.ports import Tokenizer

CONNECTIONS_MAX_TOKENS = 200


CONNECTIONS_MAX_SHARE = 0.05


PRIMARY_SHARE = 0.6


GRAPH_SHARE = 0.3


#: a story is not worth including with less excerpt than this (unless it is shorter)
MIN_EXCERPT_TOKENS = 24


ELLIPSIS = "…"


#: every line of a story's excerpt starts with this (a markdown quote)
QUOTE = "> "


#: between two paragraphs (chunks) of one passage
PARAGRAPH_BREAK = "\n>\n> "


#: between two passages of one story that are not consecutive chunks
PASSAGE_GAP = "\n> …\n> "


@dataclass(frozen=True)
class BudgetSplit:
    embedding: int
    graph: int
    metadata: int


def connections_cap(token_budget: int) -> int:
    return min(CONNECTIONS_MAX_TOKENS, int(token_budget * CONNECTIONS_MAX_SHARE))


#: community summaries (the `general` intent) get at most this, after the connections
COMMUNITIES_MAX_TOKENS = 300
COMMUNITIES_MAX_SHARE = 0.08


def communities_cap(token_budget: int) -> int:
    return min(COMMUNITIES_MAX_TOKENS, int(token_budget * COMMUNITIES_MAX_SHARE))


def split_budget(remainder: int) -> BudgetSplit:
    """60% / 30% / 10% of what the connections left; the rounding remainder goes to metadata."""
    remainder = max(0, remainder)
    embedding = int(remainder * PRIMARY_SHARE)
    graph = int(remainder * GRAPH_SHARE)
    return BudgetSplit(embedding=embedding, graph=graph, metadata=remainder - embedding - graph)


def clean_text(text: str) -> str:
    """One line, no tag, no heading: a title, name or fact part cannot open a section."""
    return inline(text)


def _dedupe_key(text: str) -> str:
    return " ".join(text.casefold().split())


def word_cut(text: str, max_tokens: int, tokenizer: Tokenizer) -> str:
    """The longest word-boundary prefix of `text` that, with "…", fits `max_tokens`; "" if none."""
    tokens = tokenizer.encode(text)
    keep = min(len(tokens), max_tokens - 1)
    while keep > 0:
        prefix = tokenizer.decode(tokens[:keep]).rstrip("\ufffd")
        at_boundary = text.startswith(prefix) and (len(prefix) == len(text) or text[len(prefix)].isspace())
        if not at_boundary:
            space = prefix.rfind(" ")
            prefix = prefix[:space] if space > 0 else prefix
        prefix = prefix.rstrip(" ,;:-–—")
        if prefix:
            out = prefix + ELLIPSIS
            if tokenizer.count(out) <= max_tokens:
                return out
        keep -= 1
    return ""


@dataclass(frozen=True)
class Excerpt:
    text: str
    tokens: int
    #: every sentence of the story's passages is in
    complete: bool
    #: the chunks that contributed text, in excerpt order
    chunks: tuple[ChunkResult, ...]


@dataclass(frozen=True)
class _Unit:
    separator: str
    sentence: str
    chunk: ChunkResult


class StoryText:
    """A story's passages as sentence units, cut to a token limit on demand. Sentences are
    counted when a cut first reaches them: a story cut short, or never given room, is not
    tokenized past what was needed."""

    def __init__(self, passages: Sequence[Sequence[ChunkResult]], tokenizer: Tokenizer):
        self._tok = tokenizer
        units: list[_Unit] = []
        for p, passage in enumerate(passages):
            for c, chunk in enumerate(passage):
                for s, sentence in enumerate(sentences(one_line(chunk.text))):
                    if not units:
                        sep = ""
                    elif s == 0 and c == 0 and p > 0:
                        sep = PASSAGE_GAP
                    elif s == 0:
                        sep = PARAGRAPH_BREAK
                    else:
                        sep = " "
                    units.append(_Unit(sep, inline(sentence), chunk))
        self.units = tuple(units)
        #: the UTF-8 size of the whole text (more than its units' tokens could add up to), once needed
        self._bytes: int | None = None
        #: tokens of each unit with its separator, for the units counted so far
        self._costs: list[int] = []
        self._sep_cost: dict[str, int] = {"": 0, " ": 0}

    def _cost(self, i: int) -> int:
        while len(self._costs) <= i:
            unit = self.units[len(self._costs)]
            if unit.separator not in self._sep_cost:
                self._sep_cost[unit.separator] = self._tok.count(unit.separator)
            self._costs.append(self._tok.count(unit.sentence) + self._sep_cost[unit.separator])
        return self._costs[i]

    @property
    def total(self) -> int:
        return sum(self._cost(i) for i in range(len(self.units)))

    def _render(self, n: int) -> str:
        return "".join(u.separator + u.sentence for u in self.units[:n])

    def cut(self, limit: int) -> Excerpt | None:
        """Whole sentences up to `limit` tokens (a word cut only when the first one is too long);
        None when not even a minimal excerpt fits."""
        if not self.units or limit <= 0 or (limit < MIN_EXCERPT_TOKENS and limit < self.total):
            return None
        n, estimate = 0, 0
        if self._bytes is None:
            self._bytes = len(self._render(len(self.units)).encode())
        if limit >= self._bytes:  # every sentence fits whatever each one counts: none is counted
            n = len(self.units)
        for i in range(n, len(self.units)):
            cost = self._cost(i)
            if estimate + cost > limit:
                break
            estimate += cost
            n += 1
        while n > 0:
            text = self._render(n)
            tokens = self._tok.count(text)
            if tokens <= limit:
                used = tuple(dict.fromkeys(u.chunk for u in self.units[:n]))
                return Excerpt(text, tokens, complete=n == len(self.units), chunks=used)
            n -= 1
        first = self.units[0]
        text = word_cut(first.sentence, limit, self._tok)
        if not text:
            return None
        return Excerpt(text, self._tok.count(text), complete=False, chunks=(first.chunk,))


def cut_excerpt(text: str, max_tokens: int, tokenizer: Tokenizer) -> str:
    """`text` cut to `max_tokens` at a sentence boundary (see `StoryText.cut`); "" if nothing fits."""
    chunk = ChunkResult(
        story_id=UUID(int=0),
        legacy_id=UUID(int=0),
        chunk_index=0,
        text=text,
        token_count=0,
        similarity=0.0,
    )
    excerpt = StoryText([[chunk]], tokenizer).cut(max_tokens)
    return excerpt.text if excerpt else ""


def passages(chunks: Sequence[ChunkResult], seen: set[str]) -> list[list[ChunkResult]]:
    """Chunks without repeats (by text, against `seen`, which is updated), consecutive chunk
    indexes merged into one passage; passages ordered by their best chunk's position in
    `chunks` (best hit first, or the access filter's pick for graph-only stories)."""
    by_index: dict[int, ChunkResult] = {}
    position: dict[int, int] = {}
    for pos, chunk in enumerate(chunks):
        key = _dedupe_key(chunk.text)
        if chunk.chunk_index in by_index or not key or key in seen:
            continue
        seen.add(key)
        by_index[chunk.chunk_index] = chunk
        position[chunk.chunk_index] = pos
    runs: list[list[ChunkResult]] = []
    for index in sorted(by_index):
        if runs and runs[-1][-1].chunk_index == index - 1:
            runs[-1].append(by_index[index])
        else:
            runs.append([by_index[index]])
    runs.sort(key=lambda run: min(position[c.chunk_index] for c in run))
    return runs
