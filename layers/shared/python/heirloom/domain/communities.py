"""Communities of a legacy's entity graph and their summaries, per visibility tier.

The graph of one tier holds the legacy's persons, places, events and objects, joined by the
known relationships between its persons and by facts with a story behind them that the tier may
read (tier `public`: public stories; `private`: public and private ones; personal stories never
count, they are their author's alone). Two things a story names together are joined once per
story; a person -> entity fact once per supporting story. The legacy's subject, in nearly every
story, is left out so the groups are the circles around them. Louvain (networkx, seeded, so a
build is repeatable) splits each connected component; a community of three or more gets a
summary written from its own facts, with the stories they come from as its provenance. A user is
shown the summaries of the tier their role reads, after the access filter checks each story.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from uuid import UUID

from heirloom.contracts.access import StoryMeta
from heirloom.contracts.curation import CommunitySummary, Tier
from heirloom.contracts.records import Visibility
from heirloom.ports import GraphStore

TIER_VISIBILITIES: dict[Tier, frozenset[Visibility]] = {
    "public": frozenset({Visibility.PUBLIC}),
    "private": frozenset({Visibility.PUBLIC, Visibility.PRIVATE}),
}
MIN_MEMBERS = 3
#: stories cited as a summary's provenance, at most (the first of its `story_ids`)
MAX_STORIES = 8
#: names of each kind a summary lists, at most
MAX_NAMES = 4
SEED = 7
FACT_VERBS = {
    "OWNED": "owned",
    "LIVED_IN": "lived in",
    "WORKED_AT": "worked at",
    "PARTICIPATED_IN": "took part in",
    "FAMILY_OF": "is family of",
    "KNEW": "knew",
    "WORKED_WITH": "worked with",
    "FRIENDS_WITH": "was friends with",
}

#: what each story names, per label
STORY_THINGS = """
MATCH (s:Story)-[r]->(x:{label})
WHERE s.legacy_id = $legacy AND x.legacy_id = $legacy
RETURN s.id AS sid, x.id AS xid, x.name AS name, coalesce(r.name, x.name) AS used
"""
THING_LABELS = ("Person", "Place", "Event", "Object")
#: how a summary introduces the members of each label
KIND_WORDS = {"Person": "people", "Place": "places", "Event": "events", "Object": "things"}
PERSON_FACTS = """
MATCH (p:Person)-[r]->(e)
WHERE p.legacy_id = $legacy AND e.legacy_id = $legacy AND (e:Place OR e:Event OR e:Object)
RETURN p.id AS pid, p.name AS pname, r.kind AS kind, e.id AS eid, e.name AS ename, r.story_id AS sid,
       coalesce(r.name, e.name) AS used
"""
KNOWN_TIES = """
MATCH (a:Person)-[r]->(b:Person)
WHERE a.legacy_id = $legacy AND b.legacy_id = $legacy AND r.known = true
RETURN a.id AS aid, a.name AS aname, r.kind AS kind, b.id AS bid, b.name AS bname
"""


@dataclass(frozen=True)
class Fact:
    subject: str
    predicate: str
    obj: str
    #: the supporting story; None for a known relationship
    story_id: str | None


@dataclass
class LegacyFacts:
    """What the graph holds for one legacy, before any tier is applied."""

    names: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    #: (story id, thing id) -> the name that story gives the thing (a merged entity's moved
    #: edges keep the name their story used)
    used: dict[tuple[str, str], str] = field(default_factory=dict)
    #: story id -> the things it names
    story_things: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    facts: list[Fact] = field(default_factory=list)


def read_facts(graph: GraphStore, legacy_id: UUID) -> LegacyFacts:
    out = LegacyFacts()
    params = {"legacy": str(legacy_id)}
    for label in THING_LABELS:
        for row in graph.run(STORY_THINGS.format(label=label), params):
            sid, xid = str(row["sid"]), str(row["xid"])
            out.names[xid], out.labels[xid] = str(row["name"]), label
            out.used[(sid, xid)] = str(row["used"])
            out.story_things[sid].add(xid)
    for row in graph.run(PERSON_FACTS, params):
        out.names[str(row["pid"])], out.names[str(row["eid"])] = str(row["pname"]), str(row["ename"])
        out.labels.setdefault(str(row["pid"]), "Person")
        if row.get("sid"):
            sid = str(row["sid"])
            out.used.setdefault((sid, str(row["eid"])), str(row["used"]))
            out.facts.append(Fact(str(row["pid"]), str(row["kind"]), str(row["eid"]), sid))
    for row in graph.run(KNOWN_TIES, params):
        out.names[str(row["aid"])], out.names[str(row["bid"])] = str(row["aname"]), str(row["bname"])
        out.labels[str(row["aid"])] = out.labels[str(row["bid"])] = "Person"
        out.facts.append(Fact(str(row["aid"]), str(row["kind"]), str(row["bid"]), None))
    return out


@dataclass
class TierGraph:
    """The weighted graph of one tier, with the facts and stories behind its edges."""

    weights: Counter[tuple[str, str]]
    facts: list[Fact]
    story_things: dict[str, set[str]]
    names: dict[str, str]
    labels: dict[str, str] = field(default_factory=dict)


def _pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a < b else (b, a)


def tier_graph(facts: LegacyFacts, metas: Sequence[StoryMeta], tier: Tier, exclude: set[str]) -> TierGraph:
    allowed = TIER_VISIBILITIES[tier]
    readable = {str(m.id) for m in metas if m.visibility in allowed}
    weights: Counter[tuple[str, str]] = Counter()
    things = {s: xs - exclude for s, xs in facts.story_things.items() if s in readable}
    for members in things.values():
        ordered = sorted(members)
        for i, a in enumerate(ordered):
            for b in ordered[i + 1 :]:
                weights[_pair(a, b)] += 1
    kept = [
        f
        for f in facts.facts
        if (f.story_id is None or f.story_id in readable) and not {f.subject, f.obj} & exclude
    ]
    for f in kept:
        weights[_pair(f.subject, f.obj)] += 1
    return TierGraph(weights, kept, things, tier_names(facts, readable), facts.labels)


def tier_names(facts: LegacyFacts, readable: set[str]) -> dict[str, str]:
    """Each thing's name as the tier's stories give it: its own name when one of them uses it,
    else a name one of them uses (a merged entity known to the tier only through a story of the
    absorbed one); things no story names (known persons) keep their name."""
    used: dict[str, set[str]] = defaultdict(set)
    for (sid, xid), name in facts.used.items():
        if sid in readable:
            used[xid].add(name)
    return {
        xid: name if not used.get(xid) or name in used[xid] else sorted(used[xid])[0]
        for xid, name in facts.names.items()
    }


def detect_component(sub: object) -> list[set[str]]:
    import networkx as nx

    found = nx.community.louvain_communities(sub, weight="weight", seed=SEED)
    return [set(c) for c in found]


def component_key(weights: Counter[tuple[str, str]], nodes: set[str]) -> str:
    edges = sorted(f"{a}|{b}|{w}" for (a, b), w in weights.items() if a in nodes)
    return hashlib.sha256("\n".join(edges).encode()).hexdigest()[:24]


def summarise(
    tg: TierGraph, members: set[str], *, legacy_id: UUID, tier: Tier, number: int, key: str
) -> CommunitySummary | None:
    """A community in words, from its own facts; None when it is too small or has no story."""
    if len(members) < MIN_MEMBERS:
        return None
    degree: Counter[str] = Counter()
    for (a, b), w in tg.weights.items():
        if a in members and b in members:
            degree[a] += w
            degree[b] += w
    ordered = sorted(members, key=lambda m: (-degree[m], tg.names.get(m, ""), m))
    stories = sorted(
        ((len(xs & members), s) for s, xs in tg.story_things.items() if len(xs & members) >= 2),
        key=lambda t: (-t[0], t[1]),
    )
    facts = [f for f in tg.facts if f.subject in members and f.obj in members]
    sentences = []
    for f in sorted(facts, key=lambda f: (-degree[f.subject], tg.names.get(f.subject, ""), f.predicate)):
        sentence = f"{tg.names.get(f.subject, '?')} {FACT_VERBS.get(f.predicate, 'is connected to')} {tg.names.get(f.obj, '?')}"
        if sentence not in sentences:
            sentences.append(sentence)
    cited = sorted({s for _, s in stories} | {f.story_id for f in facts if f.story_id})[:MAX_STORIES]
    if not cited:
        return None
    # every story that names a member is one it was built from: the access filter checks them
    # all, not only the cited ones (a name may come from a story beyond the first 8)
    rest = sorted({s for s, xs in tg.story_things.items() if xs & members} - set(cited))
    text = f"{members_in_words(tg, ordered)}: together in {len(stories) or len(cited)} stories"
    if sentences:
        text += "; " + "; ".join(sentences[:3])
    return CommunitySummary(
        legacy_id=legacy_id,
        tier=tier,
        number=number,
        component_key=key,
        member_ids=tuple(sorted(members)),
        summary=text + ".",
        story_ids=tuple(UUID(s) for s in (*cited, *rest)),
    )


def members_in_words(tg: TierGraph, ordered: Sequence[str]) -> str:
    """ "people: A, B; places: C, D and 2 more; ...", best connected first within each kind."""
    parts = []
    for label, word in KIND_WORDS.items():
        names = [tg.names.get(m, m) for m in ordered if tg.labels.get(m) == label]
        if names:
            more = f" and {len(names) - MAX_NAMES} more" if len(names) > MAX_NAMES else ""
            parts.append(f"{word}: {', '.join(names[:MAX_NAMES])}{more}")
    return "; ".join(parts)
