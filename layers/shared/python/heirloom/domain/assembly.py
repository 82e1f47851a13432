"""RankAssemble: score, dedupe, budget and format the filtered candidates (seed 000 section 8).

Scoring
    embedding score  = the candidate's best cosine similarity
    graph score      = max over its hits of hop_factor(hops) * persona weight(relationship)
                       (+0.2 when the hit came from an entity named in the query)
    combined         = max(embedding, graph) + 0.15 when both found the story, else the one score
`mode="vector"` ignores graph hits and facts; `mode="graph"` ignores the embedding scores (and so
every story the graph did not reach). Ties: score desc, primary legacy first, story id.

Token budget (cl100k_base through the `Tokenizer` port)
    1. "## Known Connections" gets at most min(200, 5% of the budget), whole sentences only.
    2. What remains after the note (if degraded) and the connections used (R) is split 60/30/10%:
       stories found by embedding (alone or with the graph), stories only the graph found, and
       the metadata that frames every story (section headers, "###" headings, story markers,
       provenance lines).
    3. Pass 1 walks the stories in ranked order; a story goes in when its metadata fits the 10%
       share and at least a minimal excerpt fits its category's share (excerpts are cut to fit).
    4. Flow rule: pass 2 pools everything any category left unused (e.g. the 30% graph share of a
       request where the graph found nothing new) and spends it in the same ranked order, first
       lengthening an excerpt pass 1 cut short, else adding a story pass 1 had to skip.
    5. The rendered text is counted once more as a whole; while it exceeds the budget the lowest-
       ranked story is shortened (then dropped), then the last connection sentence is dropped.
       The formatted context therefore never exceeds `request.token_budget`.

Degradation: a source the request wanted that failed, timed out or sat behind an open breaker is
listed in `degraded` (the ones that answered in `sources_used`), and the text opens with a short
"Note:" line saying what is missing; the note counts against the budget like the rest.

Fencing (heirloom.fencing): story text, titles, names and fact parts are rendered as data. Each
story's excerpt sits between `<story-NONCE>` and `</story-NONCE>` (one nonce per request), every
line of it quoted with "> ", `#` escaped and `<`/`>` (and look-alikes) written as entities, so no
story can forge a section, a heading, a provenance line or a tag (docs/architecture.md).

Excerpts keep whole sentences; only a first sentence longer than what is left is cut, on a word
boundary, with "…". Chunks whose text already appears (in this or a higher-ranked story) are
dropped, and consecutive chunks of one story are merged into one passage.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal
from uuid import UUID

from heirloom.contracts.context import (
    AssembledContext,
    Candidate,
    ChunkResult,
    ContextMetadata,
    ContextRequest,
    FilteredContext,
    GraphFact,
    GraphHit,
    RetrievalSource,
    SourceInfo,
)
from heirloom.domain.chunking import sentences
from heirloom.domain.personas import PersonaDefinition, TraversalConfig
from heirloom.fencing import inline, nonce, one_line, quoted_title, story_close, story_open
from heirloom.ports import Tokenizer

Mode = Literal["hybrid", "vector", "graph"]
Category = Literal["embedding", "graph"]

HOP_FACTORS: dict[int, float] = {0: 1.0, 1: 1.0, 2: 0.6}
ENTITY_MATCH_BONUS = 0.2
BOTH_SOURCES_BONUS = 0.15
#: weight of each further distinct graph path to a story, after its best one
OTHER_PATHS_WEIGHT = 0.25
#: graph relevance (up to 1.2 for a 1-hop entity match) mapped onto the calibrated cosine scale,
#: so a graph hit alone does not outrank the best embedding match (docs/decisions/0006)
GRAPH_SCALE = 0.6

#: in hybrid mode, a story only the graph reached, through an entity path (embedding search did
#: not retrieve it at all): the path says the story names that entity, not that it answers the
#: question, so it ranks below what both sources found (docs/evaluation.md)
GRAPH_ONLY_WEIGHT = 0.5

CONNECTIONS_MAX_TOKENS = 200
CONNECTIONS_MAX_SHARE = 0.05
PRIMARY_SHARE = 0.6
GRAPH_SHARE = 0.3
#: the rest (10%) frames the stories: headers, headings, provenance lines

#: a story is not worth including with less excerpt than this (unless it is shorter)
MIN_EXCERPT_TOKENS = 24
ELLIPSIS = "…"
#: every line of a story's excerpt starts with this (a markdown quote)
QUOTE = "> "
#: between two paragraphs (chunks) of one passage
PARAGRAPH_BREAK = "\n>\n> "
#: between two passages of one story that are not consecutive chunks
PASSAGE_GAP = "\n> …\n> "

CONNECTIONS_HEADER = "## Known Connections"
CONNECTED_HEADER = "## Stories from Connected Legacies"

#: how a hit reads in a provenance line, by relationship (or edge) type
RELATIONSHIP_REASONS: dict[str, str] = {
    "FAMILY_OF": "family connection (FAMILY_OF)",
    "KNEW": "acquaintance connection (KNEW)",
    "WORKED_WITH": "work connection (WORKED_WITH)",
    "FRIENDS_WITH": "friendship connection (FRIENDS_WITH)",
    "TOOK_PLACE_AT": "place connection",
    "LIVED_IN": "place connection",
    "WORKED_AT": "place connection",
    "REFERENCES": "event/object connection",
    "PARTICIPATED_IN": "event/object connection",
    "OWNED": "event/object connection",
    "MENTIONS": "person mentioned",
    "LINKED_TO": "cross-legacy traversal",
    "TIME": "time period match",
}
#: templates whose name says more than the edge they followed
TEMPLATE_REASONS: dict[str, str] = {
    "cross_legacy": "cross-legacy traversal",
    "described": "connection described in the question",
}
EMBEDDING_REASON = "embedding similarity"
GRAPH_REASON = "graph connection"

_FACT_VERBS: dict[str, str] = {
    "KNEW": "knew",
    "WORKED_WITH": "worked with",
    "FRIENDS_WITH": "was friends with",
    "LIVED_IN": "lived in",
    "WORKED_AT": "worked at",
    "PARTICIPATED_IN": "took part in",
    "OWNED": "owned",
}


# -- scoring ----------------------------------------------------------------------------------
def hop_factor(hops: int) -> float:
    return HOP_FACTORS.get(hops, HOP_FACTORS[2])


def hit_score(hit: GraphHit, traversal: TraversalConfig) -> float:
    bonus = ENTITY_MATCH_BONUS if hit.entity_match else 0.0
    return round(hop_factor(hit.hops) * traversal.weight(hit.relationship) + bonus, 6)


def graph_score(hits: Iterable[GraphHit], traversal: TraversalConfig) -> float | None:
    """Best hit score, or None when the graph did not reach the story."""
    return max((hit_score(h, traversal) for h in hits), default=None)


def hit_reason(hit: GraphHit) -> str:
    if hit.template in TEMPLATE_REASONS:
        return TEMPLATE_REASONS[hit.template]
    if hit.relationship is None:
        return GRAPH_REASON
    return RELATIONSHIP_REASONS.get(hit.relationship, GRAPH_REASON)


@dataclass(frozen=True)
class ScoredCandidate:
    candidate: Candidate
    score: float
    embedding_score: float | None
    graph_score: float | None
    #: the hits that counted (none in vector mode), best first
    hits: tuple[GraphHit, ...] = ()

    @property
    def category(self) -> Category:
        return "embedding" if self.embedding_score is not None else "graph"

    @property
    def source(self) -> str:
        """ "embedding", "graph:<REL>" or "embedding+graph:<REL>" (REL of the best hit)."""
        if not self.hits:
            return "embedding"
        best = self.hits[0]
        rel = best.relationship or best.template.upper()
        return f"graph:{rel}" if self.embedding_score is None else f"embedding+graph:{rel}"

    @property
    def reasons(self) -> tuple[str, ...]:
        out = [EMBEDDING_REASON] if self.embedding_score is not None else []
        for hit in self.hits:
            reason = hit_reason(hit)
            if reason not in out:
                out.append(reason)
        return tuple(out)


#: templates that choose each story on its own merits rather than through one entity (the
#: legacy's broadest stories): their stories do not share a path
PER_STORY_TEMPLATES = frozenset({"overview"})


def path_key(hit: GraphHit) -> tuple[str, str, str]:
    """The traversal path a hit came by: template, the entity or person it went through, edge."""
    if hit.template in PER_STORY_TEMPLATES:
        return (hit.template, str(hit.story_id), hit.relationship or "")
    return (hit.template, (hit.entity or hit.via or "").casefold(), hit.relationship or "")


def specificity(stories_on_path: int) -> float:
    """Evidence of a path shrinks with the number of stories it reaches (1 story: 1.0, 5: 0.38),
    like inverse document frequency: a place every story mentions says little about any one."""
    return 1.0 / (1.0 + math.log(max(1, stories_on_path)))


def calibrated_graph_score(
    hits: Sequence[GraphHit], traversal: TraversalConfig, path_counts: Mapping[tuple[str, str, str], int]
) -> float | None:
    """Seed 000's hit score scaled by the path's specificity; further distinct paths add a quarter
    of their score (several independent connections are stronger evidence than one); the sum is
    mapped onto the cosine scale with GRAPH_SCALE."""
    best_by_path: dict[tuple[str, str, str], float] = {}
    for hit in hits:
        key = path_key(hit)
        value = hit_score(hit, traversal) * specificity(path_counts.get(key, 1))
        best_by_path[key] = max(value, best_by_path.get(key, 0.0))
    if not best_by_path:
        return None
    values = sorted(best_by_path.values(), reverse=True)
    return GRAPH_SCALE * (values[0] + OTHER_PATHS_WEIGHT * sum(values[1:]))


def score_candidate(
    candidate: Candidate,
    traversal: TraversalConfig,
    mode: Mode,
    *,
    top_similarity: float | None = None,
    path_counts: Mapping[tuple[str, str, str], int] | None = None,
) -> ScoredCandidate | None:
    """The candidate's combined score under `mode`, or None when that mode does not see it.

    Cosine similarity is calibrated against the request's best one (`top_similarity` -> 1.0) so
    both sources share a scale; graph hits are weighted by path specificity (`path_counts`)."""
    similarity = candidate.embedding_score if mode != "graph" else None
    embedding = similarity
    if similarity is not None and top_similarity:
        embedding = min(1.0, similarity / top_similarity)
    hits = candidate.graph_hits if mode != "vector" else ()
    ranked_hits = tuple(
        sorted(hits, key=lambda h: (-hit_score(h, traversal), h.hops, h.template, h.relationship or ""))
    )
    graph = calibrated_graph_score(ranked_hits, traversal, path_counts or {})
    if embedding is None:
        if graph is None:
            return None
        by_path = mode == "hybrid" and ranked_hits[0].template not in PER_STORY_TEMPLATES
        score = graph * GRAPH_ONLY_WEIGHT if by_path else graph
    elif graph is None:
        score = embedding
    else:
        best = max(specificity(path_counts.get(path_key(h), 1)) for h in ranked_hits) if path_counts else 1.0
        score = max(embedding, graph) + BOTH_SOURCES_BONUS * best
    return ScoredCandidate(
        candidate=candidate,
        score=round(score, 6),
        embedding_score=embedding,
        graph_score=graph,
        hits=ranked_hits,
    )


def rank_candidates(
    candidates: Iterable[Candidate], traversal: TraversalConfig, mode: Mode = "hybrid"
) -> list[ScoredCandidate]:
    """Scored candidates, best first: score desc, primary legacy first, then story id."""
    candidates = list(candidates)
    top = max((c.embedding_score for c in candidates if c.embedding_score is not None), default=None)
    stories_by_path: dict[tuple[str, str, str], set[str]] = {}
    for c in candidates:
        for hit in c.graph_hits:
            stories_by_path.setdefault(path_key(hit), set()).add(str(c.story_id))
    counts = {key: len(ids) for key, ids in stories_by_path.items()}
    scored = [
        s
        for s in (
            score_candidate(c, traversal, mode, top_similarity=top, path_counts=counts) for c in candidates
        )
        if s is not None
    ]
    return sorted(scored, key=lambda s: (-s.score, not s.candidate.primary, str(s.candidate.story_id)))


# -- budget -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class BudgetSplit:
    embedding: int
    graph: int
    metadata: int


def connections_cap(token_budget: int) -> int:
    return min(CONNECTIONS_MAX_TOKENS, int(token_budget * CONNECTIONS_MAX_SHARE))


def split_budget(remainder: int) -> BudgetSplit:
    """60% / 30% / 10% of what the connections left; the rounding remainder goes to metadata."""
    remainder = max(0, remainder)
    embedding = int(remainder * PRIMARY_SHARE)
    graph = int(remainder * GRAPH_SHARE)
    return BudgetSplit(embedding=embedding, graph=graph, metadata=remainder - embedding - graph)


# -- text -------------------------------------------------------------------------------------
def _clean(text: str) -> str:
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


# -- facts ------------------------------------------------------------------------------------
def _possessive(name: str) -> str:
    return name if name.endswith(("'s", "’s")) else f"{name}'s"


def _period(since: str | None, until: str | None) -> str | None:
    since, until = (_clean(since) if since else None), (_clean(until) if until else None)
    if since and until:
        return f"from {since} to {until}"
    if since:
        return f"since {since}"
    if until:
        return f"until {until}"
    return None


def fact_sentence(fact: GraphFact) -> str:
    """A fact as one plain sentence. `detail` reads as what the object is to the subject."""
    subject, obj = _clean(fact.subject), _clean(fact.object)
    detail = _clean(fact.detail) if fact.detail and fact.detail.strip() else None
    if fact.predicate == "FAMILY_OF":
        core = f"{_possessive(subject)} {detail} is {obj}" if detail else f"{subject} and {obj} are family"
        extras = [_period(fact.since, fact.until)]
    else:
        verb = _FACT_VERBS.get(fact.predicate)
        core = f"{subject} {verb} {obj}" if verb else f"{subject} is connected to {obj}"
        extras = [detail, _period(fact.since, fact.until)]
    notes = [e for e in extras if e]
    return f"{core} ({', '.join(notes)})." if notes else f"{core}."


def fact_sentences(facts: Iterable[GraphFact]) -> list[str]:
    """One sentence per fact, in the given order; a fact between the same two nodes with the same
    predicate (either direction) is said once."""
    seen_pairs: set[tuple[str, frozenset[str]]] = set()
    out: list[str] = []
    for fact in facts:
        key = (fact.predicate, frozenset({fact.subject_id, fact.object_id}))
        sentence = fact_sentence(fact)
        if key in seen_pairs or sentence in out:
            continue
        seen_pairs.add(key)
        out.append(sentence)
    return out


#: what a persona may tell the family when a source is missing
MISSING: dict[RetrievalSource, str] = {
    "graph": "known connections (the family relationship graph)",
    "vector": "story search by meaning",
}


def source_report(
    request: ContextRequest, filtered: FilteredContext
) -> tuple[tuple[RetrievalSource, ...], tuple[RetrievalSource, ...]]:
    """(sources used, sources degraded). A source the request did not want (vector or graph
    mode, graph augmentation off) is neither; a graph skipped although wanted was behind an
    open breaker."""
    used: list[RetrievalSource] = []
    degraded: list[RetrievalSource] = []
    wanted = {
        "vector": request.mode != "graph",
        "graph": request.mode != "vector" and request.graph_enabled,
    }
    source: RetrievalSource
    for source, status in (("vector", filtered.vector_status), ("graph", filtered.graph_status)):
        if status == "ok":
            used.append(source)
        elif wanted[source] and (status != "skipped" or filtered.intent.breaker_state != "closed"):
            degraded.append(source)
    return tuple(used), tuple(degraded)


def degradation_note(degraded: Sequence[RetrievalSource]) -> str:
    if not degraded:
        return ""
    missing = " and ".join(MISSING[d] for d in degraded)
    verb = "is" if len(degraded) == 1 else "are"
    return f"Note: {missing} {verb} unavailable for this answer, so what follows may be incomplete."


def _connections(sentences_: Sequence[str]) -> str:
    return f"{CONNECTIONS_HEADER}\n{' '.join(sentences_)}" if sentences_ else ""


# -- assembly ---------------------------------------------------------------------------------
def _heading(candidate: Candidate) -> str:
    title = quoted_title(candidate.title)
    if not candidate.primary:
        return f'### "{title}" — from {_clean(candidate.legacy_name)}'
    return f'### "{title}" ({candidate.year})' if candidate.year is not None else f'### "{title}"'


def _provenance(scored: ScoredCandidate) -> list[str]:
    candidate = scored.candidate
    matched = " + ".join(scored.reasons)
    if candidate.primary:
        return [f"Source: Primary legacy, matched by: {matched}"]
    lines = [f"Source: Linked legacy ({_clean(candidate.legacy_name)}), matched by: {matched}"]
    if candidate.shared_via:
        shared = "all stories shared" if candidate.shared_via == "all" else "selected stories shared"
        lines.append(f"Shared via: Legacy link ({shared})")
    return lines


@dataclass
class _Slot:
    scored: ScoredCandidate
    text: StoryText
    #: heading + fence + provenance + the newlines around the excerpt and between blocks
    meta: int
    heading: str
    provenance: list[str]
    fence: str
    excerpt: Excerpt | None = None

    @property
    def primary(self) -> bool:
        return self.scored.candidate.primary

    def block(self) -> str:
        assert self.excerpt is not None
        return "\n".join(
            [
                self.heading,
                story_open(self.fence),
                QUOTE + self.excerpt.text,
                story_close(self.fence),
                *self.provenance,
            ]
        )


def _render(note: str, connections: str, primary_header: str, slots: Sequence[_Slot]) -> str:
    sections = [part for part in (note, connections) if part]
    for header, primary in ((primary_header, True), (CONNECTED_HEADER, False)):
        blocks = [s.block() for s in slots if s.excerpt is not None and s.primary is primary]
        if blocks:
            sections.append(header + "\n" + "\n\n".join(blocks))
    return "\n\n".join(sections)


def assemble(
    request: ContextRequest,
    filtered: FilteredContext,
    persona: PersonaDefinition,
    tokenizer: Tokenizer,
    *,
    fence: str | None = None,
) -> AssembledContext:
    """Rank the readable candidates and format them within `request.token_budget` tokens.
    `fence` is the story blocks' nonce (a fresh one per call unless given)."""
    started = time.perf_counter()
    fence = fence or nonce()
    fence_lines = [story_open(fence), QUOTE.strip(), story_close(fence)]
    budget = request.token_budget
    ranked = rank_candidates(filtered.candidates, persona.traversal, request.mode)

    # 0. what is missing, said first
    sources_used, degraded = source_report(request, filtered)
    note = degradation_note(degraded)
    noted = tokenizer.count(note) + 2 if note else 0

    # 1. known connections, whole sentences under their cap
    facts = fact_sentences(filtered.facts) if request.mode != "vector" else []
    cap = connections_cap(budget)
    kept: list[str] = []
    for sentence in facts:
        joined = _connections([*kept, sentence])
        if len(joined.encode()) > cap and tokenizer.count(joined) > cap:  # fewer bytes: fits uncounted
            break
        kept.append(sentence)
    connections = _connections(kept)
    used = noted + (tokenizer.count(connections) + 2 if connections else 0)

    # 2. slots: each story's deduplicated text and its frame
    seen: set[str] = set()
    slots: list[_Slot] = []
    for scored in ranked:
        text = StoryText(passages(scored.candidate.chunks, seen), tokenizer)
        if not text.units:
            continue
        heading, provenance = _heading(scored.candidate), _provenance(scored)
        meta = tokenizer.count("\n".join([heading, *fence_lines, *provenance])) + 1
        slots.append(_Slot(scored, text, meta, heading, provenance, fence))

    primary_header = f"## Relevant Stories (from {_clean(filtered.legacy_name)})"
    header_cost = {
        True: tokenizer.count(primary_header) + 2,
        False: tokenizer.count(CONNECTED_HEADER) + 2,
    }
    opened: set[bool] = set()

    def frame_cost(slot: _Slot) -> int:
        return slot.meta + (0 if slot.primary in opened else header_cost[slot.primary])

    # 3. pass 1: each category within its share
    split = split_budget(budget - used)
    left: dict[Category, int] = {"embedding": split.embedding, "graph": split.graph}
    meta_left = split.metadata
    for slot in slots:
        need = frame_cost(slot)
        if need > meta_left:
            continue
        excerpt = slot.text.cut(left[slot.scored.category])
        if excerpt is None:
            continue
        slot.excerpt = excerpt
        meta_left -= need
        left[slot.scored.category] -= excerpt.tokens
        opened.add(slot.primary)

    # 4. pass 2: whatever is unused flows, in ranked order
    pool = meta_left + sum(left.values())
    for slot in slots:
        if pool <= 0:
            break
        if slot.excerpt is not None:
            if not slot.excerpt.complete:
                longer = slot.text.cut(slot.excerpt.tokens + pool)
                if longer is not None and longer.tokens > slot.excerpt.tokens:
                    pool -= longer.tokens - slot.excerpt.tokens
                    slot.excerpt = longer
            continue
        need = frame_cost(slot)
        excerpt = slot.text.cut(pool - need) if pool > need else None
        if excerpt is not None:
            slot.excerpt = excerpt
            pool -= need + excerpt.tokens
            opened.add(slot.primary)

    # 5. the whole text, counted exactly; trim from the bottom until it fits
    formatted = _render(note, connections, primary_header, slots)
    total = tokenizer.count(formatted)
    while total > budget:
        victim = next((s for s in reversed(slots) if s.excerpt is not None), None)
        if victim is not None and victim.excerpt is not None:
            shorter = victim.text.cut(victim.excerpt.tokens - (total - budget) - 1)
            if shorter is None or shorter.tokens >= victim.excerpt.tokens:
                victim.excerpt = None
            else:
                victim.excerpt = shorter
        elif kept:
            kept.pop()
            connections = _connections(kept)
        else:  # pragma: no cover - an empty text is 0 tokens
            break
        formatted = _render(note, connections, primary_header, slots)
        total = tokenizer.count(formatted)

    # the stories in the text, in its order (primary section first), with their excerpts
    included = [
        (s, s.excerpt)
        for primary in (True, False)
        for s in slots
        if s.excerpt is not None and s.primary is primary
    ]
    sources = tuple(
        SourceInfo(
            story_id=s.scored.candidate.story_id,
            title=s.scored.candidate.title,
            legacy_id=s.scored.candidate.legacy_id,
            source=s.scored.source,
            score=s.scored.score,
            reasons=s.scored.reasons,
            tokens=excerpt.tokens + s.meta,  # what the budget counted for it
        )
        for s, excerpt in included
    )
    embedding_results = tuple(
        chunk for s, excerpt in included if s.scored.embedding_score is not None for chunk in excerpt.chunks
    )
    graph_results = tuple(hit for s, _ in included for hit in s.scored.hits)
    latency = dict(filtered.latency_ms)
    latency["rank_assemble"] = round((time.perf_counter() - started) * 1000, 2)
    return AssembledContext(
        formatted_context=formatted,
        embedding_results=embedding_results,
        graph_results=graph_results,
        sources_used=sources_used,
        degraded=degraded,
        ranked_story_ids=tuple(
            s.scored.candidate.story_id
            for s in sorted(
                (s for s, _ in included),
                key=lambda s: (
                    -s.scored.score,
                    not s.scored.candidate.primary,
                    str(s.scored.candidate.story_id),
                ),
            )
        ),
        metadata=ContextMetadata(
            intent=filtered.intent,
            sources=sources,
            traversals=filtered.traversals,
            circuit_state=filtered.intent.breaker_state,
            vector_status=filtered.vector_status,
            graph_status=filtered.graph_status,
            token_budget=budget,
            tokens_used=total,
            latency_ms=latency,
        ),
    )
