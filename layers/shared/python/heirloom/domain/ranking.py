"""Ranking: each readable story scored from its embedding similarity and its graph paths
(a path that reaches much of the legacy says little), then ordered."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from heirloom.contracts.context import (
    Candidate,
    GraphHit,
)
from heirloom.domain.named_things import writes
from heirloom.domain.personas import TraversalConfig

Mode = Literal["hybrid", "vector", "graph"]
Category = Literal["embedding", "graph"]


HOP_FACTORS: dict[int, float] = {0: 1.0, 1: 1.0, 2: 0.6}


ENTITY_MATCH_BONUS = 0.2


#: weight of each further distinct graph path to a story, after its best one (graph mode)
OTHER_PATHS_WEIGHT = 0.25


#: graph relevance (up to 1.2 for a 1-hop entity match) mapped onto the calibrated cosine scale
#: (graph mode, and the score shown for a story only the graph reached)
GRAPH_SCALE = 0.6


#: hybrid fusion (docs/decisions/0009): a story's calibrated embedding score plus this weight
#: times its graph evidence (at most 1.0); chosen on three datasets so that hybrid is never below
#: embedding search alone in any category (docs/evaluation.md, "Fusion")
FUSION_WEIGHT = 0.05


#: a path counts as evidence only when it reaches at most this many of the request's candidates
#: (a path to more says little about any one of them: measured at the base rate of gold stories)
MAX_EVIDENCE_STORIES = 3


#: evidence of a story the overview template picked for an open question (one of the legacy's
#: broadest stories; no entity of the question behind it)
OVERVIEW_EVIDENCE = 0.3


#: topic evidence (docs/decisions/0024): a story whose title names the entity the question names
#: or describes is about that entity; it is divided among the candidates whose titles name it and
#: is not subject to MAX_EVIDENCE_STORIES (a side mention of a common entity says little, a story
#: about it says much). The weight is a request setting (`TOPIC_WEIGHT`, 0: off).
TOPIC_TEMPLATES = frozenset({"person_mentions", "described", "entity_focused"})


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
    "TOLD_IN": "told in the days the question names",
    # facts a story told (docs/decisions/0012)
    **{
        rel: f"told fact ({rel})"
        for rel in (
            "MARRIED",
            "SIBLING_OF",
            "PARENT_OF",
            "FRIEND_OF",
            "TAUGHT",
            "MET",
            "GAVE",
            "MADE",
            "KEPT",
            "RECEIVED",
        )
    },
}


#: templates whose name says more than the edge they followed
TEMPLATE_REASONS: dict[str, str] = {
    "bridge": "entity shared with a top story",
    "cross_legacy": "cross-legacy traversal",
    "described": "connection described in the question",
}


EMBEDDING_REASON = "embedding similarity"


GRAPH_REASON = "graph connection"


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
    #: 0: ordered by score; 1: hybrid mode, only the graph found it, so after every story
    #: embedding search found (such stories were almost never the answer, docs/decisions/0009)
    tier: int = 0
    #: scored again by the reranking stage (heirloom.domain.rerank): ahead of the rest of its tier
    reranked: bool = False

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


def entity_key(hit: GraphHit) -> str:
    """The entity or person a hit went through: its node when the hit names it (one owned thing
    is "Dad's piano" in one story and "Relio's piano" in three: one entity), else its name."""
    return hit.entity_id or (hit.entity or hit.via or "").casefold()


def path_key(hit: GraphHit) -> tuple[str, str, str]:
    """The traversal path a hit came by: template, the entity or person it went through, edge."""
    if hit.template in PER_STORY_TEMPLATES:
        return (hit.template, str(hit.story_id), hit.relationship or "")
    return (hit.template, entity_key(hit), hit.relationship or "")


def specificity(stories_on_path: int) -> float:
    """Evidence of a path shrinks with the number of stories it reaches (1 story: 1.0, 5: 0.38),
    like inverse document frequency: a place every story mentions says little about any one."""
    return 1.0 / (1.0 + math.log(max(1, stories_on_path)))


#: templates that reach a story through a place, event or thing the question names: the
#: extractor may have missed that name in a story that writes it (docs/decisions/0042)
NAMED_THING_TEMPLATES = frozenset({"entity_focused", "spatial"})


def writes_name(candidate: Candidate, names: Iterable[str]) -> bool:
    """Does the candidate's title or one of its chunks write one of `names` as written, whole
    words? Only a capitalised name counts: a common noun ("watch", "flood") is also a verb or
    another thing of the same kind."""
    texts = [candidate.title, *(c.text for c in candidate.chunks)]
    return any(name[:1].isupper() and any(writes(t, name) for t in texts) for name in names)


def written_reach(
    candidates: Sequence[Candidate], stories_by_path: Mapping[tuple[str, str, str], set[str]]
) -> dict[tuple[str, str, str], set[str]]:
    """`stories_by_path` with, on each path through a named place, event or thing, the
    candidates whose own words write its name: a path looks specific only when the text agrees
    (docs/decisions/0042)."""
    names: dict[tuple[str, str, str], set[str]] = {}
    for c in candidates:
        for hit in c.graph_hits:
            if hit.template in NAMED_THING_TEMPLATES and hit.entity_match and hit.entity:
                names.setdefault(path_key(hit), set()).add(hit.entity)
    out = {key: set(ids) for key, ids in stories_by_path.items()}
    for key, written in names.items():
        out[key] |= {str(c.story_id) for c in candidates if writes_name(c, written)}
    return out


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


def evidence(
    hits: Sequence[GraphHit], traversal: TraversalConfig, path_counts: Mapping[tuple[str, str, str], int]
) -> float:
    """How strongly the graph says this story answers the question (0..1): its best path that
    went through an entity the question names and reaches at most MAX_EVIDENCE_STORIES
    candidates, weighted by hops and the persona's relationship weight and divided by the number
    of stories it reaches; an overview pick counts OVERVIEW_EVIDENCE."""
    best = 0.0
    for hit in hits:
        if hit.template in PER_STORY_TEMPLATES:
            best = max(best, OVERVIEW_EVIDENCE)
            continue
        reach = path_counts.get(path_key(hit), 1)
        if not hit.entity_match or reach > MAX_EVIDENCE_STORIES:
            continue
        best = max(best, hop_factor(hit.hops) * traversal.weight(hit.relationship) / reach)
    return best


def topic_key(hit: GraphHit) -> tuple[str, str, str] | None:
    """The path of a topic hit, counted among the candidates whose titles name its entity; None
    when the hit is not one (no entity the question names or describes, title silent on it)."""
    if not (hit.topic and hit.entity_match and hit.template in TOPIC_TEMPLATES):
        return None
    return ("topic", *path_key(hit)[1:])


def topic_evidence(
    hits: Sequence[GraphHit], traversal: TraversalConfig, topic_counts: Mapping[tuple[str, str, str], int]
) -> float:
    """How strongly the graph says this story is about an entity the question names or
    describes (0..1): its best topic hit, weighted by the persona's relationship weight and
    divided by the number of candidates whose titles name that entity."""
    best = 0.0
    for hit in hits:
        key = topic_key(hit)
        if key is not None:
            reach = max(1, topic_counts.get(key, 1))
            best = max(best, hop_factor(hit.hops) * min(1.0, traversal.weight(hit.relationship)) / reach)
    return best


def score_candidate(
    candidate: Candidate,
    traversal: TraversalConfig,
    mode: Mode,
    *,
    top_similarity: float | None = None,
    path_counts: Mapping[tuple[str, str, str], int] | None = None,
    topic_weight: float = 0.0,
) -> ScoredCandidate | None:
    """The candidate's score under `mode`, or None when that mode does not see it.

    Cosine similarity is calibrated against the request's best one (`top_similarity` -> 1.0).
    Hybrid: that score plus FUSION_WEIGHT x the graph's `evidence` and `topic_weight` x its
    `topic_evidence`; a story only the graph reached goes after the rest (tier 1) with its graph
    score. Graph mode: the graph score. `path_counts` holds the topic paths' counts too."""
    counts = path_counts or {}
    similarity = candidate.embedding_score if mode != "graph" else None
    embedding = similarity
    if similarity is not None and top_similarity:
        embedding = min(1.0, similarity / top_similarity)
    hits = candidate.graph_hits if mode != "vector" else ()
    ranked_hits = tuple(
        sorted(hits, key=lambda h: (-hit_score(h, traversal), h.hops, h.template, h.relationship or ""))
    )
    graph = calibrated_graph_score(ranked_hits, traversal, counts)
    tier = 0
    if embedding is None:
        if graph is None:
            return None
        score, tier = graph, 1 if mode == "hybrid" else 0
    else:
        score = embedding + FUSION_WEIGHT * evidence(ranked_hits, traversal, counts)
        if topic_weight > 0 and mode == "hybrid":
            score += topic_weight * topic_evidence(ranked_hits, traversal, counts)
    return ScoredCandidate(
        candidate=candidate,
        score=round(score, 6),
        embedding_score=embedding,
        graph_score=graph,
        hits=ranked_hits,
        tier=tier,
    )


#: seconds in a year, for a story's age in years
YEAR_S = 365.25 * 24 * 3600


def recency_factors(candidates: Sequence[Candidate], rate: float) -> dict[str, float]:
    """exp(-rate x years) of each story's age since written or last updated, counted from the
    newest candidate (1.0): the order is the same whatever "now" is. A story without a date keeps
    1.0 (no evidence it is old)."""
    dated = [c.written_at for c in candidates if c.written_at is not None]
    if rate <= 0 or not dated:
        return {}
    newest = max(dated)
    return {
        str(c.story_id): math.exp(-rate * (newest - c.written_at).total_seconds() / YEAR_S)
        for c in candidates
        if c.written_at is not None
    }


def rank_key(scored: ScoredCandidate) -> tuple[int, bool, float, bool, str]:
    """Tier, reranked first, score desc, primary legacy first, then story id."""
    return (
        scored.tier,
        not scored.reranked,
        -scored.score,
        not scored.candidate.primary,
        str(scored.candidate.story_id),
    )


#: the template whose hits are bridge evidence (docs/decisions/0022)
BRIDGE_TEMPLATE = "bridge"


@dataclass(frozen=True)
class BridgeRule:
    """How bridge hits enter a hybrid ranking (docs/decisions/0022): a hit counts only when its
    seed story is one of the `seeds` top stories of the ranking without bridges."""

    #: top stories whose bridge entities count; 0: bridge hits are ignored
    seeds: int = 0
    #: the best bridged story ranked below this rank (1-based) is moved up to it; 0: no slot
    slot: int = 0
    #: score bonus per unit of bridge evidence
    weight: float = 0.0
    #: may a story only the graph reached be bridged (else only stories embedding search found)
    graph_only: bool = False
    #: distinct seeds that must bridge to a story for it to count (an entity the top stories
    #: share is pseudo-relevance feedback; one story's entity alone is often a side detail)
    agree: int = 1

    @property
    def active(self) -> bool:
        return self.seeds > 0 and (self.slot > 0 or self.weight > 0)


def bridge_evidence(hits: Iterable[GraphHit], seeds: set[str], reach: Mapping[str, int]) -> float:
    """1 / the number of candidates the entity bridges to, for the best bridge hit whose seed is
    a top story (0.0 when none is)."""
    return max(
        (
            1.0 / max(1, reach.get(entity_key(h), 1))
            for h in hits
            if h.template == BRIDGE_TEMPLATE and str(h.source_story_id) in seeds
        ),
        default=0.0,
    )


def apply_bridge(
    ranked: list[ScoredCandidate], bridges: Mapping[str, Candidate], rule: BridgeRule, mode: Mode
) -> list[ScoredCandidate]:
    """`ranked` (best first, bridge hits left out) with the bridge rule applied: the seeds are
    its first `rule.seeds` stories embedding search found; a story that entities of at least
    `rule.agree` seeds bridge to (`bridges`: candidates with bridge hits, by id) gains
    `rule.weight` x its evidence, up to just below those seeds, and the best one
    below `rule.slot` is scored just above the story at that rank."""
    if mode != "hybrid" or not rule.active or not bridges:
        return ranked
    seeds = {str(s.candidate.story_id) for s in [s for s in ranked if s.tier == 0][: rule.seeds]}
    # the candidates each entity bridges to: a story two seeds bridge to through one entity is
    # one candidate, not two
    reached: dict[str, set[str]] = {}
    for sid, c in bridges.items():
        for h in c.graph_hits:
            if h.template == BRIDGE_TEMPLATE and str(h.source_story_id) in seeds and sid not in seeds:
                reached.setdefault(entity_key(h), set()).add(sid)
    reach = {key: len(ids) for key, ids in reached.items()}
    by_id = {str(s.candidate.story_id): s for s in ranked}
    boosted: dict[str, float] = {}
    for sid, c in bridges.items():
        agreeing = {str(h.source_story_id) for h in c.graph_hits if h.template == BRIDGE_TEMPLATE} & seeds
        value = bridge_evidence(c.graph_hits, seeds, reach) if sid not in seeds else 0.0
        if len(agreeing) < rule.agree:
            continue
        before = by_id.get(sid)
        if not value or ((before is None or before.tier == 1) and not rule.graph_only):
            continue
        hits = tuple(
            h for h in c.graph_hits if h.template == BRIDGE_TEMPLATE and str(h.source_story_id) in seeds
        )
        if before is None:  # reached by a bridge only: after the stories embedding search found
            before = ScoredCandidate(candidate=c, score=0.0, embedding_score=None, graph_score=None, tier=1)
        # evidence the top stories lend lifts a story up to just below them, never past one
        lent = min(by_id[seed].score for seed in agreeing) - 1e-6
        score = max(before.score, min(before.score + rule.weight * value, lent))
        by_id[sid] = replace(before, score=round(score, 6), hits=before.hits + hits)
        boosted[sid] = value
    out = sorted(by_id.values(), key=rank_key)
    if rule.slot > 0 and len(out) > rule.slot and boosted:
        order = {str(s.candidate.story_id): i for i, s in enumerate(out)}
        best = max(boosted, key=lambda sid: (boosted[sid], -order[sid]))
        if order[best] >= rule.slot:
            anchor = out[rule.slot - 1]
            moved = replace(out[order[best]], score=round(anchor.score + 1e-6, 6), tier=anchor.tier)
            out = [
                *out[: rule.slot - 1],
                moved,
                *(s for s in out[rule.slot - 1 :] if s is not out[order[best]]),
            ]
    return out


def rank_candidates(
    candidates: Iterable[Candidate],
    traversal: TraversalConfig,
    mode: Mode = "hybrid",
    *,
    recency: float = 0.0,
    bridge: BridgeRule | None = None,
    topic_weight: float = 0.0,
) -> list[ScoredCandidate]:
    """Scored candidates, best first (`rank_key`). `recency` > 0: each score decays with the
    story's age at that rate per year (`recency_factors`), for requests that want recent material.
    `topic_weight` > 0 (hybrid): stories about an entity the question names gain topic evidence.
    Bridge hits are left out of the scores; `bridge` says how they then count (`apply_bridge`)."""
    bridges: dict[str, Candidate] = {}
    plain: list[Candidate] = []
    for candidate in candidates:
        if any(h.template == BRIDGE_TEMPLATE for h in candidate.graph_hits):
            bridges[str(candidate.story_id)] = candidate
            rest = tuple(h for h in candidate.graph_hits if h.template != BRIDGE_TEMPLATE)
            if rest or candidate.embedding_score is not None:
                plain.append(candidate.model_copy(update={"graph_hits": rest}))
        else:
            plain.append(candidate)
    candidates = plain
    top = max((c.embedding_score for c in candidates if c.embedding_score is not None), default=None)
    stories_by_path: dict[tuple[str, str, str], set[str]] = {}
    for c in candidates:
        for hit in c.graph_hits:
            stories_by_path.setdefault(path_key(hit), set()).add(str(c.story_id))
            if topic_weight > 0 and (key := topic_key(hit)) is not None and c.embedding_score is not None:
                stories_by_path.setdefault(key, set()).add(str(c.story_id))
    counts = {key: len(ids) for key, ids in written_reach(candidates, stories_by_path).items()}
    scored = [
        s
        for s in (
            score_candidate(
                c, traversal, mode, top_similarity=top, path_counts=counts, topic_weight=topic_weight
            )
            for c in candidates
        )
        if s is not None
    ]
    if factors := recency_factors(candidates, recency):
        scored = [
            replace(s, score=round(s.score * factors.get(str(s.candidate.story_id), 1.0), 6)) for s in scored
        ]
    return apply_bridge(sorted(scored, key=rank_key), bridges, bridge or BridgeRule(), mode)
