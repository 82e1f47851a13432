"""Community rebuilds, triggered by recorded impact: every graph change an ingestion, a merge or
an unmerge makes adds to its legacy's impact; at `partial` (20) a partial rebuild runs, at
`full` (100) a full one (the thresholds of docs/design.md §13). A partial rebuild runs Louvain
again only in the connected components whose nodes, names or edges changed (each community
keeps the key of its component) and keeps the others' summaries; a full one redoes them all.
A build spends the impact it saw; what came in meanwhile counts toward the next."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from heirloom.contracts.curation import CommunitySummary, RebuildKind, Tier
from heirloom.domain.communities import (
    TierGraph,
    component_key,
    detect_component,
    read_facts,
    summarise,
    tier_graph,
)
from heirloom.ports import AccessReads, CurationStore, GraphStore

TIERS: tuple[Tier, ...] = ("public", "private")


def rebuild_kind(impact: int, *, partial: int = 20, full: int = 100) -> RebuildKind:
    if impact >= full:
        return "full"
    return "partial" if impact >= partial else "none"


@dataclass(frozen=True)
class CommunityPorts:
    graph: GraphStore
    records: AccessReads
    curation: CurationStore


@dataclass(frozen=True)
class RebuildReport:
    legacy_id: UUID
    kind: RebuildKind
    impact: int
    communities: dict[str, int]
    #: components whose communities a partial rebuild kept as they were
    kept_components: int = 0


def rebuild_legacy(
    ports: CommunityPorts,
    legacy_id: UUID,
    *,
    partial: int = 20,
    full: int = 100,
    force: RebuildKind | None = None,
) -> RebuildReport:
    """Rebuild the legacy's communities if its impact calls for it (or as `force` says)."""
    state = ports.curation.impact(legacy_id)
    kind = force or rebuild_kind(state.impact, partial=partial, full=full)
    if kind == "none":
        return RebuildReport(legacy_id, kind, state.impact, {})
    legacy = ports.records.get_legacy(legacy_id)
    if legacy is None:
        return RebuildReport(legacy_id, "none", state.impact, {})
    facts = read_facts(ports.graph, legacy_id)
    story_ids = set(facts.story_things) | {f.story_id for f in facts.facts if f.story_id}
    metas = [m for m in ports.records.story_meta(UUID(s) for s in story_ids) if m.legacy_id == legacy_id]
    counts: dict[str, int] = {}
    kept = 0
    for tier in TIERS:
        tg = tier_graph(facts, metas, tier, exclude={str(legacy.subject_person_id)})
        previous = ports.curation.communities(legacy_id, tier) if kind == "partial" else []
        built, reused = build_tier(tg, legacy_id, tier, previous)
        ports.curation.save_communities(legacy_id, tier, built)
        counts[tier], kept = len(built), kept + reused
    ports.curation.spend_impact(legacy_id, state.impact, kind)
    return RebuildReport(legacy_id, kind, state.impact, counts, kept)


def build_tier(
    tg: TierGraph, legacy_id: UUID, tier: Tier, previous: list[CommunitySummary]
) -> tuple[list[CommunitySummary], int]:
    """The tier's communities; a component whose key a previous community carries keeps it."""
    import networkx as nx

    graph = nx.Graph()
    for (a, b), w in sorted(tg.weights.items()):
        graph.add_edge(a, b, weight=w)
    by_key: dict[str, list[CommunitySummary]] = {}
    for c in previous:
        by_key.setdefault(c.component_key, []).append(c)
    out: list[CommunitySummary] = []
    reused = 0
    for component in sorted(nx.connected_components(graph), key=lambda c: sorted(c)[0]):
        key = component_key(tg.weights, component) + _names_key(tg, component)
        if key in by_key:
            out += [c.model_copy(update={"number": len(out) + i}) for i, c in enumerate(by_key[key])]
            reused += 1
            continue
        for members in sorted(detect_component(graph.subgraph(component)), key=lambda m: sorted(m)[0]):
            summary = summarise(tg, members, legacy_id=legacy_id, tier=tier, number=len(out), key=key)
            if summary is not None:
                out.append(summary)
    return out, reused


def _names_key(tg: TierGraph, nodes: set[str]) -> str:
    import hashlib

    text = "\n".join(f"{n}|{tg.names.get(n, '')}" for n in sorted(nodes))
    return hashlib.sha256(text.encode()).hexdigest()[:8]
