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

import time

from heirloom.contracts.context import (
    AssembledContext,
    ContextMetadata,
    ContextRequest,
    FilteredContext,
    SourceInfo,
)
from heirloom.domain.budget import QUOTE, StoryText, clean_text, connections_cap, passages, split_budget
from heirloom.domain.format import (
    CONNECTED_HEADER,
    Slot,
    connections_block,
    degradation_note,
    fact_sentences,
    provenance_lines,
    render,
    source_report,
    story_heading,
)
from heirloom.domain.personas import PersonaDefinition
from heirloom.domain.ranking import Category, rank_candidates
from heirloom.fencing import nonce, story_close, story_open
from heirloom.ports import Tokenizer

#: the rest (10%) frames the stories: headers, headings, provenance lines


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
        joined = connections_block([*kept, sentence])
        if len(joined.encode()) > cap and tokenizer.count(joined) > cap:  # fewer bytes: fits uncounted
            break
        kept.append(sentence)
    connections = connections_block(kept)
    used = noted + (tokenizer.count(connections) + 2 if connections else 0)

    # 2. slots: each story's deduplicated text and its frame
    seen: set[str] = set()
    slots: list[Slot] = []
    for scored in ranked:
        text = StoryText(passages(scored.candidate.chunks, seen), tokenizer)
        if not text.units:
            continue
        heading, provenance = story_heading(scored.candidate), provenance_lines(scored)
        meta = tokenizer.count("\n".join([heading, *fence_lines, *provenance])) + 1
        slots.append(Slot(scored, text, meta, heading, provenance, fence))

    primary_header = f"## Relevant Stories (from {clean_text(filtered.legacy_name)})"
    header_cost = {
        True: tokenizer.count(primary_header) + 2,
        False: tokenizer.count(CONNECTED_HEADER) + 2,
    }
    opened: set[bool] = set()

    def frame_cost(slot: Slot) -> int:
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
    formatted = render(note, connections, primary_header, slots)
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
            connections = connections_block(kept)
        else:  # pragma: no cover - an empty text is 0 tokens
            break
        formatted = render(note, connections, primary_header, slots)
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
