"""RankAssemble: score, dedupe, budget and format the filtered candidates (docs/design.md §8).

Scoring (domain/ranking.py, docs/decisions/0009)
    embedding score  = the candidate's best cosine (+ lexical match), calibrated to the request's best
    hybrid           = embedding score + 0.05 x graph evidence (a specific path through a named
                       entity); a story only the graph reached comes after the rest, by graph score
    graph score      = hop_factor(hops) * persona weight(relationship) (+0.2 for a named entity),
                       scaled by the path's specificity (graph mode, and the graph-only stories)
`mode="vector"` ignores graph hits and facts; `mode="graph"` ignores the embedding scores (and so
every story the graph did not reach). Ties: score desc, primary legacy first, story id.

Token budget (cl100k_base through the `Tokenizer` port)
    1. "## Known Connections" gets at most min(200, 5% of the budget), whole sentences only;
       "## Differing Accounts" (readable narrators who disagree, domain/accounts.py) comes
       first out of that same cap, whole lines only.
       "## Circles in the Stories" (community summaries, the `general` intent) follows with at
       most min(300, 8% of the budget), whole summaries only, then ambient memory
       (domain/ambient.py: facts about what the message named) with at most
       min(AMBIENT_TOKEN_BUDGET, 5% of the budget), whole lines only; all count as R below.
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
       ranked story is shortened (then dropped), then the last ambient line, the last community
       summary, the last connection sentence, then the last differing-accounts line is dropped.
       The formatted context therefore never exceeds `request.token_budget`.

Reranking (domain/rerank.py, optional): the top stories of that ranking are scored again against
the question within the stage's budget; a stage that gives up leaves the order as it was and adds
"rerank" to `degraded` (the text's note is for missing sources only: no story is missing).

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

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from uuid import UUID

from heirloom.contracts.context import (
    AmbientLine,
    AssembledContext,
    CommunityNote,
    ContextMetadata,
    ContextRequest,
    Degradation,
    FilteredContext,
    RerankReport,
    SourceInfo,
)
from heirloom.domain import ambient as ambient_memory
from heirloom.domain.accounts import group_accounts
from heirloom.domain.budget import (
    QUOTE,
    BudgetSplit,
    Excerpt,
    StoryText,
    communities_cap,
    connections_cap,
    passages,
    split_budget,
)
from heirloom.domain.format import (
    CONNECTED_HEADER,
    Slot,
    account_line,
    accounts_block,
    communities_block,
    connections_block,
    degradation_note,
    fact_sentence,
    fact_sentences,
    legacy_label,
    provenance_lines,
    render,
    source_report,
    story_heading,
)
from heirloom.domain.personas import PersonaDefinition
from heirloom.domain.ranking import BridgeRule, Category, ScoredCandidate, rank_candidates, rank_key
from heirloom.domain.rerank import RerankStage
from heirloom.domain.rerank import rerank as rerank_top
from heirloom.domain.suggestion import elicitation_block, pick_suggestion
from heirloom.fencing import nonce, story_close, story_open
from heirloom.ports import Tokenizer
from heirloom.settings import AmbientSettings


@dataclass
class _Layout:
    """The stories' slots in ranked order and what framing them costs (a section's header is paid
    by the first story placed in it)."""

    slots: list[Slot]
    header_cost: dict[bool, int]
    opened: set[bool] = field(default_factory=set)

    def frame_cost(self, slot: Slot) -> int:
        return slot.meta + (0 if slot.primary in self.opened else self.header_cost[slot.primary])

    def place(self, slot: Slot, excerpt: Excerpt) -> None:
        slot.excerpt = excerpt
        self.opened.add(slot.primary)

    def first_pass(self, split: BudgetSplit) -> int:
        """Each category within its share (frames within theirs); returns the tokens left unused."""
        left: dict[Category, int] = {"embedding": split.embedding, "graph": split.graph}
        meta_left = split.metadata
        for slot in self.slots:
            need = self.frame_cost(slot)
            excerpt = slot.text.cut(left[slot.scored.category]) if need <= meta_left else None
            if excerpt is not None:
                self.place(slot, excerpt)
                meta_left -= need
                left[slot.scored.category] -= excerpt.tokens
        return meta_left + sum(left.values())

    def second_pass(self, pool: int) -> None:
        """Whatever is unused flows, in ranked order: a cut excerpt grows, a skipped story goes in."""
        for slot in self.slots:
            if pool <= 0:
                break
            pool -= self._lengthen(slot, pool) if slot.excerpt is not None else self._add(slot, pool)

    def _lengthen(self, slot: Slot, pool: int) -> int:
        assert slot.excerpt is not None
        if slot.excerpt.complete:
            return 0
        longer = slot.text.cut(slot.excerpt.tokens + pool)
        if longer is None or longer.tokens <= slot.excerpt.tokens:
            return 0
        spent = longer.tokens - slot.excerpt.tokens
        slot.excerpt = longer
        return spent

    def _add(self, slot: Slot, pool: int) -> int:
        need = self.frame_cost(slot)
        excerpt = slot.text.cut(pool - need) if pool > need else None
        if excerpt is None:
            return 0
        self.place(slot, excerpt)
        return need + excerpt.tokens

    def shorten_last(self, excess: int) -> bool:
        """Shorten (else drop) the lowest-ranked story in the text; False when none is left."""
        victim = next((s for s in reversed(self.slots) if s.excerpt is not None), None)
        if victim is None or victim.excerpt is None:
            return False
        shorter = victim.text.cut(victim.excerpt.tokens - excess - 1)
        victim.excerpt = None if shorter is None or shorter.tokens >= victim.excerpt.tokens else shorter
        return True

    def included(self) -> list[tuple[Slot, Excerpt]]:
        """The stories in the text, in its order (primary section first), with their excerpts."""
        return [
            (s, s.excerpt)
            for primary in (True, False)
            for s in self.slots
            if s.excerpt is not None and s.primary is primary
        ]


def _within(
    sentences: Sequence[str], cap: int, block: Callable[[Sequence[str]], str], tokenizer: Tokenizer
) -> list[str]:
    """Known connections (or differing accounts): whole sentences, in order, while `block` of
    them stays under `cap` tokens."""
    kept: list[str] = []
    for sentence in sentences:
        joined = block([*kept, sentence])
        if len(joined.encode()) > cap and tokenizer.count(joined) > cap:  # fewer bytes: fits uncounted
            break
        kept.append(sentence)
    return kept


def _community_notes(filtered: FilteredContext, cap: int, tokenizer: Tokenizer) -> list[CommunityNote]:
    """Community summaries (the `general` intent), whole, in order, while under `cap` tokens."""
    kept: list[CommunityNote] = []
    for note in filtered.communities:
        if tokenizer.count(communities_block([*kept, note])) > cap:
            break
        kept.append(note)
    return kept


def _head(
    connections: str,
    disputes: Sequence[str],
    communities: list[CommunityNote],
    ambient: Sequence[AmbientLine] = (),
) -> str:
    parts = (
        connections,
        accounts_block(disputes),
        communities_block(communities),
        ambient_memory.ambient_block(ambient),
    )
    return "\n\n".join(part for part in parts if part)


def _slots(ranked: Sequence[ScoredCandidate], fence: str, tokenizer: Tokenizer) -> list[Slot]:
    """Each story's deduplicated text and its frame (heading, story markers, provenance)."""
    fence_lines = [story_open(fence), QUOTE.strip(), story_close(fence)]
    seen: set[str] = set()
    slots: list[Slot] = []
    for scored in ranked:
        text = StoryText(passages(scored.candidate.chunks, seen), tokenizer)
        if not text.units:
            continue
        heading, provenance = story_heading(scored.candidate), provenance_lines(scored)
        meta = tokenizer.count("\n".join([heading, *fence_lines, *provenance])) + 1
        slots.append(Slot(scored, text, meta, heading, provenance, fence))
    return slots


def rank(
    request: ContextRequest,
    filtered: FilteredContext,
    persona: PersonaDefinition,
    *,
    rerank: RerankStage | None = None,
    recency: float = 0.0,
    bridge: BridgeRule | None = None,
    topic_weight: float = 0.0,
) -> tuple[list[ScoredCandidate], RerankReport | None]:
    """Every candidate the request's mode sees, best first (its top reranked with `rerank`):
    the order the token budget is then cut from."""
    ranked = rank_candidates(
        filtered.candidates,
        persona.traversal,
        request.mode,
        recency=recency,
        bridge=bridge,
        topic_weight=topic_weight,
    )
    if rerank is None:
        return ranked, None
    return rerank_top(request.query, ranked, rerank)


def assemble(
    request: ContextRequest,
    filtered: FilteredContext,
    persona: PersonaDefinition,
    tokenizer: Tokenizer,
    *,
    fence: str | None = None,
    rerank: RerankStage | None = None,
    recency: float = 0.0,
    ambient: AmbientSettings | None = None,
    bridge: BridgeRule | None = None,
    topic_weight: float = 0.0,
) -> AssembledContext:
    """Rank the readable candidates (reranking the top with `rerank`) and format them within
    `request.token_budget` tokens. `fence` is the story blocks' nonce (a fresh one per call
    unless given); `recency`: the decay per year of a story's age, when the request wants recent
    material (else 0); `ambient`: the ambient memory settings (None: no ambient section);
    `bridge`: how bridge hits count (docs/decisions/0022; None: they do not); `topic_weight`:
    the weight of topic evidence (docs/decisions/0024; 0: none)."""
    started = time.perf_counter()
    budget = request.token_budget
    ranked, reranked = rank(
        request, filtered, persona, rerank=rerank, recency=recency, bridge=bridge, topic_weight=topic_weight
    )

    # 0. what is missing, said first; 1. known connections under their cap
    sources_used, missing = source_report(request, filtered)
    note = degradation_note(missing)
    degraded: tuple[Degradation, ...] = (
        *missing,
        *(("rerank",) if reranked and reranked.status != "ok" else ()),
    )
    # readable narrators who disagree: side by side, first within the connections cap
    groups, plain = group_accounts(filtered.facts) if request.mode != "vector" else ([], [])
    cap = connections_cap(budget)
    disputes = _within([account_line(g) for g in groups], cap, accounts_block, tokenizer)
    spent = tokenizer.count(accounts_block(disputes)) + 2 if disputes else 0
    kept = _within(fact_sentences(plain), cap - spent, connections_block, tokenizer)
    circles = _community_notes(filtered, communities_cap(budget), tokenizer)
    # ambient memory repeats neither a connection nor one side of a dispute
    disputed = [fact_sentence(f) for f in filtered.facts if f not in plain]
    mind = _ambient_lines(request, filtered, ambient, [*kept, *disputed], tokenizer)
    connections = _head(connections_block(kept), disputes, circles, mind)
    used = (tokenizer.count(note) + 2 if note else 0) + (
        tokenizer.count(connections) + 2 if connections else 0
    )
    # elicitation: the one suggestion and the directive close the text, paid for first
    suggestion = pick_suggestion(request, ranked) if request.elicitation else None
    if suggestion is not None and tokenizer.count(suggestion.sentence) > connections_cap(budget):
        suggestion = None  # an outsized title or name would crowd the stories out
    closing = elicitation_block(suggestion) if request.elicitation else ""
    used += tokenizer.count(closing) + 2 if closing else 0

    # 2. slots; 3. pass 1, each category within its share; 4. pass 2, the unused flows
    primary_header = f"## Relevant Stories (from {legacy_label(filtered.legacy_name)})"
    layout = _Layout(
        _slots(ranked, fence or nonce(), tokenizer),
        {True: tokenizer.count(primary_header) + 2, False: tokenizer.count(CONNECTED_HEADER) + 2},
    )
    layout.second_pass(layout.first_pass(split_budget(budget - used)))

    # 5. the whole text, counted exactly; trim from the bottom until it fits
    formatted = _closed(render(note, connections, primary_header, layout.slots), closing)
    total = tokenizer.count(formatted)
    while total > budget:
        if not layout.shorten_last(total - budget):
            if kept or disputes or circles or mind:
                (mind or circles or kept or disputes).pop()
                connections = _head(connections_block(kept), disputes, circles, mind)
            elif suggestion is not None:  # the last thing cut: the directive alone stays
                suggestion = None
                closing = elicitation_block(None)
            else:  # pragma: no cover - the note and the directive fit MIN_TOKEN_BUDGET
                break
        formatted = _closed(render(note, connections, primary_header, layout.slots), closing)
        total = tokenizer.count(formatted)

    included = layout.included()
    latency = dict(filtered.latency_ms)
    latency["rank_assemble"] = round((time.perf_counter() - started) * 1000, 2)
    if reranked is not None:
        latency["rerank"] = reranked.latency_ms
    return AssembledContext(
        formatted_context=formatted,
        embedding_results=tuple(
            chunk
            for s, excerpt in included
            if s.scored.embedding_score is not None
            for chunk in excerpt.chunks
        ),
        graph_results=tuple(hit for s, _ in included for hit in s.scored.hits),
        sources_used=sources_used,
        degraded=degraded,
        suggestion=suggestion,
        accounts=tuple(groups[: len(disputes)]),
        ambient=tuple(mind),
        ranked_story_ids=_ranked_ids(included),
        metadata=ContextMetadata(
            intent=filtered.intent,
            sources=tuple(_source(s, excerpt) for s, excerpt in included),
            traversals=filtered.traversals,
            circuit_state=filtered.intent.breaker_state,
            vector_status=filtered.vector_status,
            graph_status=filtered.graph_status,
            token_budget=budget,
            tokens_used=total,
            latency_ms=latency,
            rerank=reranked,
        ),
    )


def _ambient_lines(
    request: ContextRequest,
    filtered: FilteredContext,
    settings: AmbientSettings | None,
    said: Sequence[str],
    tokenizer: Tokenizer,
) -> list[AmbientLine]:
    """Ambient memory within its cap (none without settings or the graph's facts)."""
    if settings is None or request.mode == "vector" or not filtered.intent.matches:
        return []
    cap = ambient_memory.ambient_cap(settings, request.token_budget)
    lines = ambient_memory.candidates(
        filtered.intent, (*filtered.facts, *filtered.ambient_facts), settings, said
    )
    return ambient_memory.fit(lines, settings, cap, tokenizer)


def _closed(text: str, closing: str) -> str:
    return "\n\n".join(part for part in (text, closing) if part)


def _source(slot: Slot, excerpt: Excerpt) -> SourceInfo:
    return SourceInfo(
        story_id=slot.scored.candidate.story_id,
        title=slot.scored.candidate.title,
        legacy_id=slot.scored.candidate.legacy_id,
        source=slot.scored.source,
        score=slot.scored.score,
        reasons=slot.scored.reasons,
        tokens=excerpt.tokens + slot.meta,  # what the budget counted for it
    )


def _ranked_ids(included: Sequence[tuple[Slot, Excerpt]]) -> tuple[UUID, ...]:
    ordered = sorted((s for s, _ in included), key=lambda s: rank_key(s.scored))
    return tuple(s.scored.candidate.story_id for s in ordered)
