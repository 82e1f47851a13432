"""RankAssemble: scores computed by hand, ordering, token budget, excerpts and format."""

import math
from uuid import UUID

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heirloom.adapters.tokenizer import TiktokenTokenizer
from heirloom.contracts.context import (
    Candidate,
    ChunkResult,
    ContextRequest,
    FilteredContext,
    GraphFact,
    GraphHit,
    Persona,
    QueryIntent,
    TraversalStat,
)
from heirloom.domain.assembly import assemble
from heirloom.domain.budget import connections_cap, cut_excerpt, split_budget
from heirloom.domain.format import fact_sentence, fact_sentences
from heirloom.domain.personas import load_personas
from heirloom.domain.ranking import FUSION_WEIGHT, OVERVIEW_EVIDENCE, hit_score, rank_candidates

LEGACY = UUID(int=1)
LINKED = UUID(int=2)
USER = UUID(int=99)


@pytest.fixture(scope="module")
def tok():
    return TiktokenTokenizer()


@pytest.fixture(scope="module")
def personas():
    return load_personas()


def sid(n: int) -> UUID:
    return UUID(int=1000 + n)


def chunk(story: UUID, index: int, text: str, similarity: float = 0.0, legacy: UUID = LEGACY) -> ChunkResult:
    return ChunkResult(
        story_id=story,
        legacy_id=legacy,
        chunk_index=index,
        text=text,
        token_count=len(text.split()),
        similarity=similarity,
    )


def hit(
    story: UUID,
    relationship: str | None,
    hops: int = 1,
    entity_match: bool = False,
    template: str = "t",
    entity: str | None = None,
):
    return GraphHit(
        story_id=story,
        template=template,
        hops=hops,
        relationship=relationship,
        entity=entity,
        entity_match=entity_match,
    )


def cand(
    n: int,
    *,
    text: str = "A plain sentence about the past.",
    embedding: float | None = None,
    hits: tuple[GraphHit, ...] = (),
    primary: bool = True,
    title: str | None = None,
    year: int | None = None,
    shared_via: str | None = None,
    chunks: tuple[ChunkResult, ...] | None = None,
) -> Candidate:
    story = sid(n)
    legacy = LEGACY if primary else LINKED
    return Candidate(
        story_id=story,
        legacy_id=legacy,
        legacy_name="Ada Marsh" if primary else "Ivy Marsh",
        title=title or f"Story {n}",
        year=year,
        primary=primary,
        shared_via=shared_via if not primary else None,
        chunks=chunks if chunks is not None else (chunk(story, 0, text, embedding or 0.0, legacy),),
        embedding_score=embedding,
        graph_hits=tuple(h.model_copy(update={"story_id": story}) for h in hits),
    )


def filtered(*candidates: Candidate, facts: tuple[GraphFact, ...] = (), **kw) -> FilteredContext:
    return FilteredContext(
        intent=kw.pop("intent", QueryIntent()),
        subject_name="Ada Marsh",
        legacy_name="Ada Marsh",
        candidates=candidates,
        facts=facts,
        **kw,
    )


def request(budget: int = 4000, mode: str = "hybrid", persona: Persona = Persona.FAMILY) -> ContextRequest:
    return ContextRequest(
        legacy_id=LEGACY, user_id=USER, persona=persona, query="q", token_budget=budget, mode=mode
    )


def fact(subject: str, predicate: str, obj: str, **kw) -> GraphFact:
    return GraphFact(
        subject_id=subject.lower(),
        subject=subject,
        predicate=predicate,
        object_id=obj.lower(),
        object=obj,
        **kw,
    )


# -- scoring ----------------------------------------------------------------------------------
def test_hit_scores_by_hand(personas):
    family = personas[Persona.FAMILY].traversal
    colleague = personas[Persona.COLLEAGUE].traversal
    s = sid(0)
    assert hit_score(hit(s, "FAMILY_OF", hops=2), family) == 0.6  # 0.6 hop x 1.0 weight
    assert hit_score(hit(s, "FAMILY_OF", hops=1), colleague) == 0.2
    assert hit_score(hit(s, "KNEW", hops=2), family) == 0.18  # 0.6 x 0.3
    assert hit_score(hit(s, "MENTIONS", hops=1, entity_match=True), family) == 1.2  # 1.0 x 1.0 + 0.2
    assert hit_score(hit(s, "FAMILY_OF", hops=2, entity_match=True), family) == 0.8
    assert hit_score(hit(s, None, hops=0), family) == 1.0


def test_combined_scores_and_sources(personas):
    family = personas[Persona.FAMILY].traversal
    both = cand(1, embedding=0.7, hits=(hit(sid(1), "FAMILY_OF", hops=2),))
    emb = cand(2, embedding=0.7)
    graph = cand(3, hits=(hit(sid(3), "FAMILY_OF", hops=2), hit(sid(3), "KNEW", hops=1)))
    by_id = {s.candidate.story_id: s for s in rank_candidates([both, emb, graph], family)}
    # cosine calibrated against the best (0.7 -> 1.0); a path through no entity the question
    # names is no evidence, so the graph changes nothing for a story embedding search found
    assert by_id[sid(1)].score == 1.0 and by_id[sid(1)].tier == 0
    assert by_id[sid(1)].source == "embedding+graph:FAMILY_OF"
    assert by_id[sid(2)].score == 1.0 and by_id[sid(2)].source == "embedding"
    # only the graph reached it: its graph score, the 2-hop FAMILY_OF path reaching two stories
    # (specificity 1 / (1 + ln 2)) plus a quarter of the 1-hop KNEW path, scaled by GRAPH_SCALE
    assert by_id[sid(3)].score == pytest.approx(0.6 * (0.6 / (1 + math.log(2)) + 0.25 * 0.3), abs=1e-6)
    assert by_id[sid(3)].tier == 1
    assert by_id[sid(3)].source == "graph:FAMILY_OF"
    assert by_id[sid(3)].reasons == ("family connection (FAMILY_OF)", "acquaintance connection (KNEW)")


def test_graph_evidence_counts_only_for_a_specific_entity_path(personas):
    family = personas[Persona.FAMILY].traversal
    # a path through a named person reaching one story; a named place reaching two; a named
    # person reaching four (past MAX_EVIDENCE_STORIES); a relationship path naming no entity
    named = cand(1, embedding=0.8, hits=(hit(sid(1), "MENTIONS", entity_match=True, entity="Ada"),))
    place = [
        cand(i, embedding=0.8, hits=(hit(sid(i), "TOOK_PLACE_AT", entity_match=True, entity="Lake"),))
        for i in (2, 3)
    ]
    broad = [
        cand(i, embedding=0.8, hits=(hit(sid(i), "MENTIONS", entity_match=True, entity="Mom"),))
        for i in range(4, 8)
    ]
    unnamed = cand(8, embedding=0.8, hits=(hit(sid(8), "FAMILY_OF"),))
    by_id = {s.candidate.story_id: s for s in rank_candidates([named, *place, *broad, unnamed], family)}
    assert by_id[sid(1)].score == pytest.approx(1.0 + FUSION_WEIGHT, abs=1e-6)
    assert by_id[sid(2)].score == pytest.approx(1.0 + FUSION_WEIGHT / 2, abs=1e-6)
    assert by_id[sid(4)].score == 1.0
    assert by_id[sid(8)].score == 1.0
    # the persona's relationship weight and the hop factor scale the evidence
    colleague = personas[Persona.COLLEAGUE].traversal
    kin = cand(9, embedding=0.8, hits=(hit(sid(9), "FAMILY_OF", hops=2, entity_match=True, entity="Ivy"),))
    (scored,) = rank_candidates([kin], colleague)
    assert scored.score == pytest.approx(1.0 + FUSION_WEIGHT * 0.6 * 0.2, abs=1e-6)


def test_one_node_named_differently_by_each_story_is_one_path(personas):
    """An owned thing's edges carry each story's words (decision 0039): "Dad's piano" in one
    story and "Relio's piano" in three are one node reaching four stories, past
    MAX_EVIDENCE_STORIES, so no story is lifted for using the question's words."""
    family = personas[Persona.FAMILY].traversal

    def piano(i: int, words: str, node: str | None) -> Candidate:
        via = hit(sid(i), "REFERENCES", entity_match=True, template="entity_focused", entity=words)
        return cand(i, embedding=0.8, hits=(via.model_copy(update={"entity_id": node}),))

    one_node = [piano(1, "Dad's piano", "n1"), *(piano(i, "Relio's piano", "n1") for i in (2, 3, 4))]
    assert [s.score for s in rank_candidates(one_node, family)] == [1.0] * 4
    # by their words alone (no node), the one story using the question's words stood apart
    by_words = [piano(1, "Dad's piano", None), *(piano(i, "Relio's piano", None) for i in (2, 3, 4))]
    by_id = {s.candidate.story_id: s for s in rank_candidates(by_words, family)}
    assert by_id[sid(1)].score == pytest.approx(1.0 + FUSION_WEIGHT, abs=1e-6)


def test_the_graph_only_reorders_what_embedding_search_nearly_ties(personas):
    family = personas[Persona.FAMILY].traversal
    # the best possible evidence moves a story past one a little closer to the question, never
    # past one clearly closer
    near = cand(1, embedding=0.78, hits=(hit(sid(1), "MENTIONS", entity_match=True),))
    closer = cand(2, embedding=0.8)
    far = cand(3, embedding=0.7, hits=(hit(sid(3), "TOOK_PLACE_AT", entity_match=True),))
    order = [s.candidate.story_id for s in rank_candidates([far, closer, near], family)]
    assert order == [sid(1), sid(2), sid(3)]


def test_each_overview_story_is_its_own_path(personas):
    family = personas[Persona.FAMILY].traversal
    # the broadest stories are picked one by one, not through one entity: three of them do not
    # dilute each other's specificity as three stories behind one person would
    overview = [cand(i, hits=(hit(sid(i), None, template="overview"),)) for i in range(1, 4)]
    person = [cand(i, hits=(hit(sid(i), None, template="general"),)) for i in range(4, 7)]
    by_id = {s.candidate.story_id: s for s in rank_candidates([*overview, *person], family)}
    assert [by_id[sid(i)].score for i in range(1, 4)] == [0.6] * 3  # 1.0 x specificity 1 x 0.6
    # a path reaching three stories: specificity 1 / (1 + ln 3)
    assert by_id[sid(4)].score == pytest.approx(0.6 / (1 + math.log(3)), abs=1e-6)
    # an overview pick embedding search also found: OVERVIEW_EVIDENCE
    picked = cand(7, embedding=0.5, hits=(hit(sid(7), None, template="overview"),))
    top = cand(8, embedding=1.0)
    by_id = {s.candidate.story_id: s for s in rank_candidates([picked, top], family)}
    assert by_id[sid(7)].score == pytest.approx(0.5 + FUSION_WEIGHT * OVERVIEW_EVIDENCE, abs=1e-6)


def test_a_story_only_the_graph_reached_ranks_after_what_embedding_search_found(personas):
    family = personas[Persona.FAMILY].traversal
    named = hit(sid(1), "MENTIONS", entity_match=True)
    graph_only = cand(1, hits=(named,))
    weak = cand(2, embedding=0.1)  # 0.11 once calibrated to the top
    top = cand(3, embedding=0.9)
    hybrid = rank_candidates([graph_only, weak, top], family)
    assert [s.candidate.story_id for s in hybrid] == [sid(3), sid(2), sid(1)]
    assert hybrid[2].score == pytest.approx(0.6 * 1.2, abs=1e-6) and hybrid[2].tier == 1
    # graph mode ranks graph evidence alone, in one tier
    (alone,) = rank_candidates([graph_only], family, "graph")
    assert alone.score == pytest.approx(0.72, abs=1e-6) and alone.tier == 0


def test_ties_go_to_primary_then_story_id(personas):
    family = personas[Persona.FAMILY].traversal
    linked = cand(1, embedding=0.5, primary=False, shared_via="all")
    b = cand(3, embedding=0.5)
    a = cand(2, embedding=0.5)
    top = cand(4, embedding=0.9)
    order = [s.candidate.story_id for s in rank_candidates([linked, b, a, top], family)]
    assert order == [sid(4), sid(2), sid(3), sid(1)]


def test_mode_vector_ignores_graph_hits_and_facts(tok, personas):
    both = cand(1, embedding=0.4, hits=(hit(sid(1), "MENTIONS", entity_match=True),))
    graph_only = cand(2, hits=(hit(sid(2), "FAMILY_OF"),), text="Only the graph found this one.")
    facts = (fact("Ada Marsh", "FAMILY_OF", "Ivy Marsh", detail="sister"),)
    out = assemble(
        request(mode="vector"), filtered(both, graph_only, facts=facts), personas[Persona.FAMILY], tok
    )
    assert out.ranked_story_ids == (sid(1),)
    assert out.metadata.sources[0].source == "embedding"
    assert out.metadata.sources[0].score == 1.0  # the only cosine, calibrated to the top
    assert out.graph_results == ()
    assert "Known Connections" not in out.formatted_context
    assert "Only the graph" not in out.formatted_context


def test_mode_graph_ignores_embedding(tok, personas):
    both = cand(1, embedding=0.9, hits=(hit(sid(1), "FAMILY_OF", hops=2),))
    emb_only = cand(2, embedding=0.95)
    out = assemble(request(mode="graph"), filtered(both, emb_only), personas[Persona.FAMILY], tok)
    assert out.ranked_story_ids == (sid(1),)
    assert out.metadata.sources[0].source == "graph:FAMILY_OF"
    assert out.metadata.sources[0].score == 0.36  # 0.6 hop x 1.0 weight x 0.6 GRAPH_SCALE
    assert out.embedding_results == ()


# -- format -----------------------------------------------------------------------------------
def test_format_sections_and_provenance(tok, personas):
    lake = cand(
        1,
        embedding=0.8,
        hits=(hit(sid(1), "TOOK_PLACE_AT", entity_match=True),),
        title="Summer at the Lake House",
        year=1985,
        text="We swam every morning. The water was cold.",
    )
    jim = cand(
        2, hits=(hit(sid(2), "FAMILY_OF", hops=2),), title="Meeting Uncle Jim", text="Jim came in 1972."
    )
    college = cand(
        3,
        embedding=0.6,
        primary=False,
        shared_via="selective",
        title="Dad's College Years",
        text="He studied engineering.",
    )
    facts = (
        fact("Ada Marsh", "FAMILY_OF", "Ivy Marsh", detail="sister"),
        fact("Ada Marsh", "WORKED_WITH", "Bo Lund", detail="foreman at the mill"),
    )
    out = assemble(
        request(), filtered(college, jim, lake, facts=facts), personas[Persona.FAMILY], tok, fence="f00d"
    )
    assert out.formatted_context == (
        "## Known Connections\n"
        "- Ada Marsh's sister is Ivy Marsh.\n"
        "- Ada Marsh worked with Bo Lund (foreman at the mill).\n\n"
        '## Relevant Stories (from "Ada Marsh")\n'
        '### "Summer at the Lake House" (1985)\n'
        "<story-f00d>\n"
        "> We swam every morning. The water was cold.\n"
        "</story-f00d>\n"
        "Source: Primary legacy, matched by: embedding similarity + place connection\n\n"
        '### "Meeting Uncle Jim"\n'
        "<story-f00d>\n"
        "> Jim came in 1972.\n"
        "</story-f00d>\n"
        "Source: Primary legacy, matched by: family connection (FAMILY_OF)\n\n"
        "## Stories from Connected Legacies\n"
        '### "Dad\'s College Years" — from "Ivy Marsh"\n'
        "<story-f00d>\n"
        "> He studied engineering.\n"
        "</story-f00d>\n"
        'Source: Linked legacy ("Ivy Marsh"), matched by: embedding similarity\n'
        "Shared via: Legacy link (selected stories shared)"
    )
    # ranked by score (1.05, 0.75), then what only the graph found (0.36); sources follow the
    # text: primary section, then linked
    assert out.ranked_story_ids == (sid(1), sid(3), sid(2))
    assert [s.score for s in out.metadata.sources] == [1.05, 0.36, 0.75]
    assert out.metadata.tokens_used == tok.count(out.formatted_context)
    # a source's tokens are what the budget counted for its block: within a token or two of it
    lake_block = out.formatted_context.split("\n\n")[1].split("\n", 1)[1]  # after the section header
    assert (
        lake_block.startswith('### "Summer')
        and abs(out.metadata.sources[0].tokens - tok.count(lake_block)) <= 3
    )
    assert [c.story_id for c in out.embedding_results] == [sid(1), sid(3)]
    assert [h.story_id for h in out.graph_results] == [sid(1), sid(2)]


def test_empty_sections_are_omitted(tok, personas):
    only = assemble(request(), filtered(cand(1, embedding=0.5)), personas[Persona.FAMILY], tok)
    assert only.formatted_context.startswith('## Relevant Stories (from "Ada Marsh")\n')
    assert "Known Connections" not in only.formatted_context
    assert "Connected Legacies" not in only.formatted_context
    linked = assemble(
        request(),
        filtered(cand(1, embedding=0.5, primary=False, shared_via="all")),
        personas[Persona.FAMILY],
        tok,
    )
    assert linked.formatted_context.startswith("## Stories from Connected Legacies\n")
    assert "Shared via: Legacy link (all stories shared)" in linked.formatted_context
    empty = assemble(request(), filtered(), personas[Persona.FAMILY], tok)
    assert empty.formatted_context == "" and empty.metadata.tokens_used == 0 and empty.ranked_story_ids == ()


def test_metadata_is_copied_from_the_filtered_context(tok, personas):
    intent = QueryIntent(breaker_state="open", source="rules")
    stats = (TraversalStat(template="relational", results=3, latency_ms=4.0),)
    data = filtered(
        cand(1, embedding=0.5),
        intent=intent,
        traversals=stats,
        graph_status="skipped",
        latency_ms={"vector": 12.0},
    )
    meta = assemble(request(budget=1200), data, personas[Persona.FAMILY], tok).metadata
    assert meta.circuit_state == "open" and meta.intent == intent
    assert meta.traversals == stats and meta.graph_status == "skipped" and meta.vector_status == "ok"
    assert (
        meta.token_budget == 1200 and meta.latency_ms["vector"] == 12.0 and "rank_assemble" in meta.latency_ms
    )


def test_fact_sentences_read_as_prose():
    assert fact_sentence(fact("Ada Marsh", "FAMILY_OF", "Ivy Marsh", detail="sister")) == (
        "Ada Marsh's sister is Ivy Marsh."
    )
    assert fact_sentence(fact("Ada Marsh", "FAMILY_OF", "Tom Marsh")) == "Ada Marsh and Tom Marsh are family."
    assert fact_sentence(
        fact("Ada Marsh", "WORKED_WITH", "Bo Lund", detail="foreman at the mill", since="1950", until="1962")
    ) == ("Ada Marsh worked with Bo Lund (foreman at the mill, from 1950 to 1962).")
    assert fact_sentence(fact("Ada Marsh", "KNEW", "Cal Ray", since="college")) == (
        "Ada Marsh knew Cal Ray (since college)."
    )
    assert fact_sentence(fact("Ada Marsh", "LIVED_IN", "Port Elin", until="1970")) == (
        "Ada Marsh lived in Port Elin (until 1970)."
    )
    # the same pair and predicate, in the other direction, is said once
    both_ways = [
        fact("Ada Marsh", "FAMILY_OF", "Ivy Marsh", detail="sister"),
        fact("Ivy Marsh", "FAMILY_OF", "Ada Marsh", detail="sister"),
        fact("Ada Marsh", "KNEW", "Ivy Marsh"),
    ]
    assert fact_sentences(both_ways) == ["Ada Marsh's sister is Ivy Marsh.", "Ada Marsh knew Ivy Marsh."]


def test_titles_and_names_cannot_open_sections(tok, personas):
    sneaky = cand(1, embedding=0.5, title="Nice\n## Known Connections\nfake", text="Body.\n\n## Injected")
    out = assemble(request(), filtered(sneaky), personas[Persona.FAMILY], tok)
    headers = [line for line in out.formatted_context.splitlines() if line.startswith("## ")]
    assert headers == ['## Relevant Stories (from "Ada Marsh")']


# -- dedupe -----------------------------------------------------------------------------------
def test_repeated_text_is_dropped_and_adjacent_chunks_merge(tok, personas):
    s1, s2 = sid(1), sid(2)
    first = cand(
        1,
        embedding=0.9,
        chunks=(
            chunk(s1, 3, "Third paragraph.", 0.9),
            chunk(s1, 1, "First paragraph.", 0.8),
            chunk(s1, 2, "Second paragraph.", 0.7),
            chunk(s1, 7, "A later paragraph.", 0.6),
        ),
    )
    copy = cand(2, embedding=0.8, chunks=(chunk(s2, 0, "first   PARAGRAPH.", 0.8),))
    out = assemble(request(), filtered(first, copy), personas[Persona.FAMILY], tok)
    assert out.ranked_story_ids == (s1,)
    assert "> First paragraph.\n>\n> Second paragraph.\n>\n> Third paragraph.\n> …\n> A later paragraph." in (
        out.formatted_context
    )


# -- excerpts ---------------------------------------------------------------------------------
def test_excerpts_end_at_sentence_boundaries(tok):
    text = " ".join(f"Sentence number {i} tells a little more of the story." for i in range(40))
    cut = cut_excerpt(text, 60, tok)
    assert cut.endswith("story.") and text.startswith(cut)
    assert tok.count(cut) <= 60
    assert cut_excerpt("Short one.", 60, tok) == "Short one."


def test_a_sentence_longer_than_the_room_is_cut_on_a_word(tok):
    long = "and then " * 200 + "the end."
    cut = cut_excerpt(long, 40, tok)
    assert cut.endswith("…") and tok.count(cut) <= 40
    assert long.startswith(cut[:-1]) and long[len(cut) - 1] == " "  # whole words only
    assert cut_excerpt(long, 5, tok) == ""  # below the minimal excerpt


# -- budget -----------------------------------------------------------------------------------
def test_budget_split_numbers():
    assert connections_cap(4000) == 200 and connections_cap(500) == 25 and connections_cap(16000) == 200
    split = split_budget(3800)
    assert (split.embedding, split.graph, split.metadata) == (2280, 1140, 380)


def _story(n: int) -> str:
    return " ".join(f"In year {1900 + i} story {n} saw something worth a sentence or two." for i in range(80))


def test_graph_discovered_stories_keep_their_share(tok, personas):
    big = [cand(i, embedding=0.9 - i / 100, text=_story(i)) for i in range(6)]
    found_by_graph = cand(50, hits=(hit(sid(50), "KNEW", hops=2),), text=_story(50))  # scores 0.18
    out = assemble(request(budget=2000), filtered(*big, found_by_graph), personas[Persona.FAMILY], tok)
    assert sid(50) in out.ranked_story_ids
    graph_tokens = next(s.tokens for s in out.metadata.sources if s.story_id == sid(50))
    assert graph_tokens > 0.2 * 2000
    assert out.metadata.tokens_used <= 2000


def test_unused_shares_flow_to_the_stories_that_need_them(tok, personas):
    # vector mode: nothing graph-only, so the 30% graph share must not be wasted
    stories = [cand(i, embedding=0.9 - i / 100, text=_story(i)) for i in range(3)]
    out = assemble(request(budget=3000, mode="vector"), filtered(*stories), personas[Persona.FAMILY], tok)
    assert out.metadata.tokens_used > 0.9 * 3000
    assert out.metadata.tokens_used <= 3000


_WORDS = [
    "the",
    "mill",
    "Ada",
    "summer",
    "lake",
    "wrote",
    "letters",
    "naïve",
    "café",
    "1962",
    "—",
    "“quoted”",
]
_sentence = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=60).map(
    lambda ws: " ".join(ws).capitalize() + "."
)
_text = st.lists(_sentence, min_size=1, max_size=25).map(" ".join)


@st.composite
def _candidates(draw):
    n = draw(st.integers(0, 12))
    out = []
    for i in range(n):
        primary = draw(st.booleans())
        emb = draw(st.one_of(st.none(), st.floats(0, 1)))
        rels = st.sampled_from(["FAMILY_OF", "KNEW", "MENTIONS", "TOOK_PLACE_AT", "LINKED_TO", None])
        hits = tuple(
            hit(sid(i), draw(rels), hops=draw(st.integers(0, 2)), entity_match=draw(st.booleans()))
            for _ in range(draw(st.integers(0 if emb is not None else 1, 3)))
        )
        story = sid(i)
        legacy = LEGACY if primary else LINKED
        chunks = tuple(
            chunk(story, idx, draw(_text), emb or 0.0, legacy)
            for idx in draw(st.lists(st.integers(0, 6), min_size=1, max_size=4, unique=True))
        )
        out.append(
            cand(
                i,
                embedding=emb,
                hits=hits,
                primary=primary,
                shared_via=draw(st.sampled_from(["all", "selective"])),
                title=draw(st.text(min_size=1, max_size=40)),
                year=draw(st.one_of(st.none(), st.integers(1900, 2020))),
                chunks=chunks,
            )
        )
    return out


_facts = st.lists(
    st.builds(
        fact,
        st.sampled_from(["Ada Marsh", "Ivy Marsh", "Bo Lund"]),
        st.sampled_from(["FAMILY_OF", "KNEW", "WORKED_WITH", "LIVED_IN", "OWNED"]),
        st.sampled_from(["Cal Ray", "Port Elin", "the blue quilt", "Dot Ek"]),
        detail=st.one_of(st.none(), st.sampled_from(["sister", "foreman at the mill", "mother"])),
        since=st.one_of(st.none(), st.sampled_from(["1950", "college"])),
    ),
    max_size=30,
)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    candidates=_candidates(),
    facts=_facts,
    budget=st.integers(500, 3000),
    mode=st.sampled_from(["hybrid", "vector", "graph"]),
    persona=st.sampled_from(list(Persona)),
)
def test_the_budget_is_never_exceeded(tok, personas, candidates, facts, budget, mode, persona):
    out = assemble(
        request(budget=budget, mode=mode, persona=persona),
        filtered(*candidates, facts=tuple(facts)),
        personas[persona],
        tok,
    )
    assert tok.count(out.formatted_context) <= budget
    assert out.metadata.tokens_used == tok.count(out.formatted_context)
    ids = out.ranked_story_ids
    assert len(ids) == len(set(ids)) == len(out.metadata.sources)
    assert {s.story_id for s in out.metadata.sources} == set(ids)
    by_id = {s.story_id: s for s in out.metadata.sources}
    # ranked by score; in hybrid mode what only the graph found comes after the rest
    tiers = [int(mode == "hybrid" and by_id[i].source.startswith("graph")) for i in ids]
    assert tiers == sorted(tiers)
    keys = [(t, -by_id[i].score) for t, i in zip(tiers, ids, strict=True)]
    assert keys == sorted(keys)
    primary = {c.story_id for c in candidates if c.primary}
    # the text (and sources) put the primary section first
    flags = [s.story_id in primary for s in out.metadata.sources]
    assert flags == sorted(flags, reverse=True)


class _SuperAdditive:
    """A tokenizer whose count of a whole text exceeds the sum over its parts, so that only the
    final exact count keeps the context within budget."""

    def __init__(self) -> None:
        self.vocab: list[str] = []
        self.ids: dict[str, int] = {}

    def encode(self, text: str) -> list[int]:
        out = []
        for word in text.split():
            if word not in self.ids:
                self.ids[word] = len(self.vocab)
                self.vocab.append(word)
            out.append(self.ids[word])
        return out

    def decode(self, tokens) -> str:
        return " ".join(self.vocab[t] for t in tokens)

    def count(self, text: str) -> int:
        return len(text.split()) + len(text) ** 2 // 200_000


@pytest.mark.parametrize("budget", [500, 800, 1500])
def test_the_final_exact_count_trims_from_the_bottom(personas, budget):
    fake = _SuperAdditive()
    stories = [cand(i, embedding=0.9 - i / 100, text=_story(i)) for i in range(5)]
    stories.append(cand(9, hits=(hit(sid(9), "KNEW"),), primary=False, shared_via="all", text=_story(9)))
    facts = tuple(fact("Ada Marsh", "KNEW", f"Person {i}", since="1950") for i in range(20))
    out = assemble(request(budget=budget), filtered(*stories, facts=facts), personas[Persona.FAMILY], fake)
    assert fake.count(out.formatted_context) <= budget
    assert out.ranked_story_ids and out.ranked_story_ids[0] == sid(0)


# -- degradation ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "graph_status,vector_status,breaker,graph_enabled,mode,used,degraded",
    [
        ("ok", "ok", "closed", True, "hybrid", ("vector", "graph"), ()),
        ("timeout", "ok", "closed", True, "hybrid", ("vector",), ("graph",)),
        ("failed", "ok", "closed", True, "hybrid", ("vector",), ("graph",)),
        ("skipped", "ok", "open", True, "hybrid", ("vector",), ("graph",)),  # behind the breaker
        ("skipped", "ok", "closed", False, "hybrid", ("vector",), ()),  # augmentation switched off
        ("skipped", "ok", "open", True, "vector", ("vector",), ()),  # vector mode does not want it
        ("ok", "failed", "closed", True, "hybrid", ("graph",), ("vector",)),
        ("failed", "timeout", "closed", True, "hybrid", (), ("vector", "graph")),
    ],
)
def test_every_context_says_which_sources_answered_and_which_are_missing(
    tok, personas, graph_status, vector_status, breaker, graph_enabled, mode, used, degraded
):
    """With the graph hung or down the context was 200 with Known Connections silently missing;
    only admin debug said graph_status=timeout."""
    req = request(mode=mode).model_copy(update={"graph_enabled": graph_enabled})
    data = filtered(
        cand(1, embedding=0.5),
        intent=QueryIntent(breaker_state=breaker),
        graph_status=graph_status,
        vector_status=vector_status,
    )
    out = assemble(req, data, personas[Persona.FAMILY], tok)
    assert (out.sources_used, out.degraded) == (used, degraded)
    first = out.formatted_context.split("\n", 1)[0]
    if degraded:
        assert first.startswith("Note: ") and "unavailable for this answer" in first
        assert ("known connections" in first) is ("graph" in degraded)
        assert ("story search" in first) is ("vector" in degraded)
    else:
        assert not first.startswith("Note:")
    assert out.metadata.tokens_used == tok.count(out.formatted_context) <= req.token_budget


def test_the_note_fits_the_budget_with_everything_else(tok, personas):
    text = " ".join(f"Sentence number {i} tells a little more of the story." for i in range(400))
    data = filtered(cand(1, embedding=0.5, text=text), graph_status="timeout")
    out = assemble(request(budget=500), data, personas[Persona.FAMILY], tok)
    assert out.formatted_context.startswith("Note: known connections")
    assert out.metadata.tokens_used == tok.count(out.formatted_context) <= 500
