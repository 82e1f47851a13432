"""Property tests of docs/dataset-format.md's visibility rules over random worlds, on the real engines.

Each example generates 2-4 legacies with persons, users in every role (or none), stories of
every visibility, links in every status and share mode, known relationships, and an entity graph
built by the production ingestion path from the stories' text (then some stories rewritten or
deleted, links changed, members removed). Random users then ask every persona questions of
every intent, and everything they receive is checked against `tests.support.oracle`, by id and
by the tokens planted in each story and entity (`tests.support.leaks`). Each world is curated
first: the first legacy's stories are extracted again with staging on and a third of the staged
entities approved (a third rejected, a third left pending: none of those may reach the graph),
then in each legacy two entities of one label are merged (a merge moves facts of every
visibility onto one node) and the communities are built, so the approved entities, the
`general` intent's community summaries and the merged entities' facts face the same checks.

Default: 25 worlds in process + 3 through moto's interpreter and the API handler (~30 s).
`HEIRLOOM_LONG=1` runs many more (see `tests/conftest.py`).
"""

from __future__ import annotations

import collections
import dataclasses
import json
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heirloom.adapters.embedders import HashingEmbedder
from heirloom.adapters.postgres import PgDatabase, PgStoryStore, PgVectorIndex
from heirloom.adapters.postgres.curation import PgCurationStore
from heirloom.contracts.context import ContextRequest, Intent, Persona
from heirloom.domain.ingestion import IngestionPorts
from heirloom.domain.personas import load_personas
from heirloom.errors import AccessDenied
from heirloom.services import Services
from heirloom_dev.functions import LambdaContext, load_handler
from heirloom_dev.workflow import LocalContextWorkflow, LocalWorkflows
from tests.support import oracle, pipeline
from tests.support.fuzz import examples, tables
from tests.support.leaks import connection_sentences, violations
from tests.support.services import services_with
from tests.support.stack import _with_database, new_graph
from tests.support.worlds import (
    DETAILS,
    EVENTS,
    LABEL_OF,
    OBJECTS,
    PLACES,
    T0,
    YEARS,
    ScriptedExtractor,
    World,
    ingest,
    story_token,
    worlds,
)

pytestmark = pytest.mark.integration

EXAMPLES = examples(25, 400)
MOTO_EXAMPLES = examples(3, 25)
QUERIES_PER_WORLD = 4
#: what the runs covered, printed at the end of the module (run with -s to see it)
STATS: collections.Counter[str] = collections.Counter()


class Engines:
    def __init__(self, db: PgDatabase, graph: Any):
        self.db = db
        self.graph = graph
        self.embedder = HashingEmbedder(64)
        from heirloom.adapters.tokenizer import TiktokenTokenizer

        self.tokenizer = TiktokenTokenizer()

    def fresh(self, world: World, *, curated: bool = True) -> tuple[IngestionPorts, Services]:
        """Empty tables and graph (cheaper than a new database per example), then the world;
        `curated`: its first legacy staged, then merges and communities (`stage`, `curate`)."""
        with self.db.transaction() as conn:
            conn.execute(f"TRUNCATE {', '.join(t for t in tables(self.db) if t != 'index_meta')} CASCADE")
        self.graph.delete_all()
        extractor = ScriptedExtractor([p["name"] for p in world.persons])
        ports = IngestionPorts(
            stories=PgStoryStore(self.db),
            vectors=PgVectorIndex(self.db, model_id=self.embedder.model_id),
            graph=self.graph,
            embedder=self.embedder,
            tokenizer=self.tokenizer,
            extractor=extractor,
            extractor_version=extractor.version,
        )
        ingest(ports, world)
        self.check_stored(world)
        if curated:
            stage(ports, PgCurationStore(self.db), world)
            curate(ports, PgCurationStore(self.db), world)
        services = services_with(
            # bridge evidence on (docs/decisions/0022): its seeds and paths face the same checks
            {"TRAVERSAL_BUDGET_MS": "10000", "BRIDGE_SEEDS": "2", "BRIDGE_GRAPH_ONLY": "true"},
            stories=ports.stories,
            vectors=ports.vectors,
            graph=ports.graph,
            embedder=ports.embedder,
            tokenizer=ports.tokenizer,
            ingestion=ports,
            curation=PgCurationStore(self.db),
        )
        return ports, services

    def check_stored(self, world: World) -> None:
        """PostgreSQL holds exactly the world's final state: the ordering rules gave the same
        memberships, links and stories as their second, simple reading in the test, whatever
        the delivery order (not only nothing more than allowed: nothing less either)."""
        conn = self.db.connection()
        members = {(r["l"], r["u"], r["role"]) for r in conn.execute(
            "SELECT legacy_id::text AS l, user_id::text AS u, role FROM legacy_members").fetchall()}  # fmt: skip
        assert members == {(m["legacy_id"], m["user_id"], m["role"]) for m in world.members}
        links = {r["id"]: (r["status"], r["share_mode"], sorted(r["shared"])) for r in conn.execute(
            "SELECT l.id::text AS id, l.status, l.share_mode, coalesce(array_agg(s.story_id::text)"
            " FILTER (WHERE s.story_id IS NOT NULL), '{}') AS shared"
            " FROM legacy_links l LEFT JOIN legacy_link_shares s ON s.link_id = l.id GROUP BY l.id").fetchall()}  # fmt: skip
        assert links == {
            x["id"]: (x["status"], x["share_mode"], sorted(x["shared_story_ids"])) for x in world.links
        }
        stories = {(r["id"], r["l"], r["visibility"], r["title"]) for r in conn.execute(
            "SELECT id::text AS id, legacy_id::text AS l, visibility, title FROM stories").fetchall()}  # fmt: skip
        assert stories == {(s["id"], s["legacy_id"], s["visibility"], s["title"]) for s in world.stories}


def stage(ports: IngestionPorts, curation: PgCurationStore, world: World) -> None:
    """The first legacy's stories extracted again with its staging on; of the staged entities a
    third approved, a third rejected, a third left pending. Only the approved ones (or the
    same entity approved from another story) may be in the graph."""
    from heirloom.domain.chunking import story_digest
    from heirloom.domain.entity_sync import entity_id
    from heirloom.domain.names import name_key
    from heirloom.domain.story_graph import enrich_story, resync_story

    legacy_id = uuid.UUID(world.legacies[0]["id"])
    staged_ports = dataclasses.replace(ports, curation=curation)
    curation.set_staging(legacy_id, True)
    stories = ports.stories.stories_of(legacy_id)
    ports.stories.forget_graph_synced([s.id for s in stories])
    for story in stories:
        enrich_story(staged_ports, story, story_digest(story.title, story.content))
    items = curation.staged(legacy_id)
    for n, item in enumerate(items):
        if n % 3 < 2:
            status = "approved" if n % 3 == 0 else "rejected"
            curation.decide(item.model_copy(update={"status": status, "decided_by": uuid.UUID(int=1)}))
    for story_id in {i.story_id for i in items}:
        resync_story(staged_ports, story_id)
    approved = {(i.label, name_key(i.name)) for i in curation.staged(legacy_id, "approved")}
    held = {
        str(r["id"])
        for r in ports.graph.run("MATCH (e) WHERE e:Place OR e:Event OR e:Object RETURN e.id AS id")
    }
    for item in items:
        if (item.label, name_key(item.name)) not in approved:
            assert entity_id(str(legacy_id), item.label, item.name) not in held, item
    STATS["staged"] += len(items)
    STATS["staged_approved"] += len(approved)


def curate(ports: IngestionPorts, curation: PgCurationStore, world: World) -> None:
    """In each legacy, the first two entities of one label merged, then its communities built."""
    from heirloom.domain.community_rebuild import CommunityPorts, rebuild_legacy
    from heirloom.domain.entity_merge import MergePorts, merge
    from heirloom.domain.merge_suggestions import read_entities

    for legacy in world.legacies:
        legacy_id = uuid.UUID(legacy["id"])
        by_label: dict[str, list[str]] = collections.defaultdict(list)
        for entity in read_entities(ports.graph, legacy_id):
            by_label[entity.ref.label].append(entity.ref.id)
        pair = next((sorted(ids)[:2] for _, ids in sorted(by_label.items()) if len(ids) > 1), None)
        if pair:
            merge(
                MergePorts(ports.graph, curation, ports.stories),
                legacy_id,
                pair[0],
                pair[1],
                uuid.UUID(int=1),
            )
            STATS["merges"] += 1
        report = rebuild_legacy(CommunityPorts(ports.graph, ports.stories, curation), legacy_id, force="full")
        STATS["communities"] += sum(report.communities.values())


@pytest.fixture(scope="module")
def engines(local_stack) -> Iterator[Engines]:
    name = f"props_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(local_stack.postgres_uri, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    db = PgDatabase(_with_database(local_stack.postgres_uri, name), embedding_dim=64)
    db.migrate()
    graph = new_graph(local_stack)
    yield Engines(db, graph)
    graph.delete_all()
    db.close()
    if STATS:
        print("\naccess properties:", json.dumps(dict(sorted(STATS.items()))))


# -- questions --------------------------------------------------------------------------------
@st.composite
def questions(draw: st.DrawFn, world: World) -> dict[str, Any]:
    """One request: a user (sometimes a stranger), a legacy, a persona, a question of an intent."""
    legacy = draw(st.sampled_from(world.legacies))
    members = [m["user_id"] for m in world.data()["members"] if m["legacy_id"] == legacy["id"]]
    # mostly members of the legacy (each role), sometimes anyone, a stranger now and then
    users = members * 4 + [u["id"] for u in world.users] + [str(uuid.UUID(int=7))]
    subject = next(p["name"] for p in world.persons if p["id"] == legacy["subject_person_id"])
    person = draw(st.sampled_from([p["name"] for p in world.persons]))
    intent = draw(st.sampled_from(list(Intent)))
    year = YEARS[draw(st.sampled_from(EVENTS))]
    texts = {
        Intent.RELATIONAL: [f"How was {subject} related to {person}?", f"Who were {subject}'s family and friends?",
                            f"What do the stories say about {subject}'s {draw(st.sampled_from(DETAILS))}?"],
        Intent.TEMPORAL: [f"What happened in {year}?", f"What was life like in the {year // 10 * 10}s?"],
        Intent.SPATIAL: [f"What happened at {draw(st.sampled_from(PLACES))}?",
                         f"Where did {person} live and work?"],
        Intent.ENTITY_FOCUSED: [f"Tell me about the {draw(st.sampled_from(OBJECTS + EVENTS))}.",
                                f"What did {person} own?"],
        Intent.GENERAL: [f"Tell me about {subject}'s life.", "What should I know?"],
        Intent.CROSS_LEGACY: [f"What do the linked legacies say about {person}?",
                              f"What do other families remember of {draw(st.sampled_from(list(LABEL_OF)))}?"],
    }  # fmt: skip
    return {
        "user": draw(st.sampled_from(users)),
        "legacy": legacy["id"],
        "persona": draw(st.sampled_from(list(Persona))),
        "query": draw(st.sampled_from(texts[intent])),
        "intent": intent,
        "force": draw(st.booleans()),
        "mode": draw(st.sampled_from(["hybrid", "hybrid", "hybrid", "vector", "graph"])),
        "budget": draw(st.sampled_from([500, 1200, 4000])),
        # now and then "as of" a day before every story was written: no story may show
        "before_all": draw(st.sampled_from([False, False, False, True])),
    }


def request_of(q: dict[str, Any]) -> ContextRequest:
    as_of = T0 - timedelta(days=1) if q.get("before_all") else None
    return ContextRequest(legacy_id=q["legacy"], user_id=q["user"], persona=q["persona"], query=q["query"],
                          mode=q["mode"], token_budget=q["budget"], as_of=as_of)  # fmt: skip


def count(world: World, q: dict[str, Any]) -> None:
    data = world.data()
    role = next(
        (m["role"] for m in data["members"] if m["user_id"] == q["user"] and m["legacy_id"] == q["legacy"]),
        "none",
    )
    STATS["requests"] += 1
    STATS[f"role:{role}"] += 1
    STATS[f"intent:{q['intent'].value}{'(forced)' if q['force'] else ''}"] += 1
    STATS[f"persona:{q['persona']}"] += 1
    for link in data["links"]:
        if q["legacy"] in (link["legacy_a_id"], link["legacy_b_id"]):
            STATS[f"link:{link['status']}/{link['share_mode']}"] += 1


def count_events(world: World) -> None:
    """What the world's story events exercised: ties, redeliveries, reloads, moves."""
    STATS["events"] += len(world.events)
    STATS["deliveries"] += len(world.deliveries)
    STATS["redeliveries"] += len(world.deliveries) - len(world.events)
    STATS["reloads"] += world.reload_at is not None
    for e in world.events:
        STATS[f"event:{e.kind}"] += 1
    stamps = collections.Counter(
        (e.kind in ("member", "unmember"), json.dumps([e.value.get("id"), e.value.get("legacy_id"),
                                                       e.value.get("user_id")]), e.at)
        for e in world.events if e.kind in ("link", "member", "unmember")
    )  # fmt: skip
    STATS["events_in_a_tie"] += sum(n for n in stamps.values() if n > 1)


def check(world: World, q: dict[str, Any], run: Any) -> None:
    """Run one request with `run(request, force)` and hold what comes back to the oracle."""
    count(world, q)
    request = request_of(q)
    member = q["legacy"] in oracle.member_of(world.data(), q["user"])
    if not member:
        with pytest.raises(AccessDenied):
            run(request, q["intent"] if q["force"] else None)
        STATS["refused"] += 1
        return
    out = run(request, q["intent"] if q["force"] else None)
    problems = violations(world, q["user"], q["legacy"], out)
    assert not problems, f"{q['query']!r} as {q['user']} on {q['legacy']}:\n" + "\n".join(problems)
    if not load_personas()[q["persona"]].traversal.include_cross_legacy:  # the persona stays home
        legacy_of = {st["id"]: st["legacy_id"] for st in world.data()["stories"]}
        away = [sid for sid in out["ranked_story_ids"] if legacy_of.get(str(sid)) != q["legacy"]]
        assert not away, f"{q['query']!r} as {q['persona']}: linked-legacy stories {away}"
        STATS["stayed_home"] += 1
    if q.get("before_all"):  # as of before every story: nothing any story says
        STATS["as_of_before_all"] += 1
        assert out["ranked_story_ids"] == []
        shown = [t for t in world.tokens.values() if t in out["formatted_context"]]
        assert not shown, f"as of before every story, yet {shown} shown"
    STATS["stories_shown"] += len(out["ranked_story_ids"])
    STATS["connections_shown"] += len(connection_sentences(out["formatted_context"]))
    STATS["ambient_lines_shown"] += len(out.get("ambient", []))


# -- the properties ---------------------------------------------------------------------------
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(world=worlds(), data=st.data())
def test_no_context_holds_anything_format_md_forbids(engines, world, data):
    _ports, services = engines.fresh(world)
    STATS["worlds"] += 1
    count_events(world)
    STATS["facts_in_world"] += len(world.facts())
    for _ in range(QUERIES_PER_WORLD):
        q = data.draw(questions(world))
        check(world, q, lambda request, force: pipeline.assemble(services, request, force))


@pytest.fixture(scope="module")
def moto(engines) -> Iterator[dict[str, Any]]:
    """The real ASL in moto's interpreter; the ports of `engines` stay the same objects across
    examples (tables and graph are emptied in place), so one moto account serves them all."""
    holder: dict[str, Any] = {}

    class Current:
        """Stands for the Services of the current example."""

        def __getattr__(self, name: str) -> Any:
            return getattr(holder["services"], name)

    with LocalWorkflows(services=Current()).start() as workflows:
        holder["runner"] = LocalContextWorkflow(workflows)
        yield holder


def api_call(
    runner: Any, services: Services, q: dict[str, Any], *, debug: bool = False
) -> tuple[int, dict[str, Any]]:
    event = json.loads((Path(__file__).parents[2] / "events" / "api.json").read_text())
    event["path"] = f"/legacies/{q['legacy']}/context"
    event["pathParameters"] = {"legacy_id": q["legacy"]}
    event["requestContext"]["authorizer"]["claims"]["sub"] = q["user"]
    event["queryStringParameters"] = {"debug": "true"} if debug else None
    body = {"query": q["query"], "persona": q["persona"], "token_budget": q["budget"]}
    if q.get("before_all"):
        body["as_of"] = (T0 - timedelta(days=1)).isoformat()
    event["body"] = json.dumps(body)
    response = load_handler("api")(event, LambdaContext("Api"), services=services, workflow=runner)
    return response["statusCode"], json.loads(response["body"])


@settings(max_examples=MOTO_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(world=worlds(max_stories=6), data=st.data())
def test_the_workflow_and_the_api_hold_the_same_rules(engines, moto, world, data):
    _ports, services = engines.fresh(world)
    moto["services"] = services
    runner = moto["runner"]
    STATS["moto_worlds"] += 1
    for _ in range(2):
        q = {**data.draw(questions(world)), "force": False, "mode": "hybrid"}
        check(world, q, lambda request, _force: runner.run(request).model_dump(mode="json"))
        status, body = api_call(runner, services, q)
        member = q["legacy"] in oracle.member_of(world.data(), q["user"])
        assert status == (200 if member else 403), body
        if member:
            assert body["debug"] is None
            out = {"formatted_context": body["context"], "ranked_story_ids": [s["story_id"] for s in body["sources"]],
                   "embedding_results": [], "graph_results": [],
                   "metadata": {"sources": body["sources"]}}  # fmt: skip
            assert not violations(world, q["user"], q["legacy"], out)
            assert not (q.get("before_all") and body["sources"])
        # debug metadata (intent matches, traversal counts) is for administrators only
        assert api_call(runner, services, q, debug=True)[0] == 403
        STATS["api_requests"] += 2


# -- the oracle can fail ----------------------------------------------------------------------
def _ignore_visibility(self, story):  # every story of a granted legacy
    return any(g.legacy_id == story.legacy_id for g in self.grants)


def _every_fact(fact, readable, scope):
    return True


def _links_ignore_status(**kw):
    from heirloom.contracts.records import LinkStatus

    kw["links"] = [link.model_copy(update={"status": LinkStatus.ACTIVE}) for link in kw["links"]]
    return ORIGINAL_RESOLVE(**kw)


from heirloom.domain import access as _access  # noqa: E402
from heirloom.domain import access_filter as _access_filter  # noqa: E402

ORIGINAL_RESOLVE = _access_filter.resolve_scope
BREAKAGES = {
    "visibility ignored": (_access.ReadScope, "allows", _ignore_visibility),
    "every fact kept": (_access_filter, "fact_allowed", _every_fact),
    "link status ignored": (_access_filter, "resolve_scope", _links_ignore_status),
}


def fixed_world() -> World:
    """One small world in which each breakage above leaks something: an admirer of L, a private
    story of L stating a fact about L's subject, a public story of M behind a revoked link."""
    L, M, admirer, author = (str(uuid.UUID(int=i)) for i in (1, 2, 3, 4))
    abel, brisa = str(uuid.UUID(int=11)), str(uuid.UUID(int=12))
    w = World()
    w.legacies = [
        {"id": L, "name": "Abel Ashgrove", "subject_person_id": abel},
        {"id": M, "name": "Brisa Blackwood", "subject_person_id": brisa},
    ]
    w.persons = [
        {"id": abel, "legacy_id": L, "name": "Abel Ashgrove", "aliases": []},
        {"id": brisa, "legacy_id": M, "name": "Brisa Blackwood", "aliases": []},
    ]
    w.users = [
        {"id": admirer, "name": "Kay", "person_id": None},
        {"id": author, "name": "Tom", "person_id": None},
    ]
    w.members = [
        {"legacy_id": L, "user_id": admirer, "role": "admirer"},
        {"legacy_id": L, "user_id": author, "role": "creator"},
        {"legacy_id": M, "user_id": author, "role": "creator"},
    ]
    w.links = [
        {
            "id": str(uuid.UUID(int=21)),
            "legacy_a_id": L,
            "legacy_b_id": M,
            "status": "revoked",
            "share_mode": "all",
            "shared_story_ids": [],
        }
    ]
    texts = [
        (L, "private", "Abel Ashgrove lived in Brackenford."),
        (L, "public", "Abel Ashgrove was there that day."),
        (M, "public", "Brisa Blackwood owned Samovar."),
    ]
    for i, (legacy, visibility, text) in enumerate(texts):
        sid, token = str(uuid.UUID(int=31 + i)), story_token(i)
        w.tokens[sid] = token
        w.stories.append(
            {
                "id": sid,
                "legacy_id": legacy,
                "author_user_id": author,
                "title": f"{token} days",
                "content": f"This is the {token} memory. {text}",
                "visibility": visibility,
                "created_at": T0.isoformat(),
                "updated_at": T0.isoformat(),
            }
        )
    w.initial = w.data()
    return w


@pytest.mark.parametrize("breakage", sorted(BREAKAGES))
def test_a_deliberately_broken_filter_is_caught(engines, monkeypatch, breakage):
    world = fixed_world()
    _ports, services = engines.fresh(world)
    L, admirer = world.legacies[0]["id"], world.users[0]["id"]
    asks = [("What happened at Brackenford?", Intent.SPATIAL), ("Tell me about Abel Ashgrove's life.", Intent.GENERAL),
            ("What do the linked legacies say about Samovar?", Intent.CROSS_LEGACY)]  # fmt: skip
    qs = [{"user": admirer, "legacy": L, "persona": "biographer", "query": text, "intent": intent, "force": True,
           "mode": "hybrid", "budget": 4000} for text, intent in asks]  # fmt: skip
    for q in qs:  # the real filter passes
        check(world, q, lambda request, force: pipeline.assemble(services, request, force))
    target, attribute, replacement = BREAKAGES[breakage]
    monkeypatch.setattr(target, attribute, replacement)
    caught = []
    for q in qs:
        try:
            check(world, q, lambda request, force: pipeline.assemble(services, request, force))
        except AssertionError as exc:
            caught.append(str(exc))
    assert caught, f"{breakage}: the oracle did not notice"


def test_ambient_memory_names_only_what_the_user_may_read(engines, unhurried_names):
    """Asked about Samovar in L: the admirer's ambient memory holds what L's public story says
    (a person of L who is not the subject, so Known Connections does not say it), never the
    private story's fact nor M's (behind a revoked link), nor any unreadable story as a source;
    the creator also reads the private one."""
    world = fixed_world()
    L = world.legacies[0]["id"]
    cato, private_fact = str(uuid.UUID(int=13)), str(uuid.UUID(int=41))
    world.persons.append({"id": cato, "legacy_id": L, "name": "Cato Crane", "aliases": []})
    for i, (sid, visibility, text) in enumerate(
        [
            (str(uuid.UUID(int=40)), "public", "Cato Crane owned Samovar."),
            (private_fact, "private", "Abel Ashgrove owned Samovar."),
        ]
    ):
        token = story_token(10 + i)
        world.tokens[sid] = token
        world.stories.append({"id": sid, "legacy_id": L, "author_user_id": world.users[1]["id"],
                              "title": f"{token} days", "content": f"This is the {token} memory. {text}",
                              "visibility": visibility, "created_at": T0.isoformat(), "updated_at": T0.isoformat()})  # fmt: skip
    world.initial = world.data()
    _ports, services = engines.fresh(world, curated=False)  # staging would hold Samovar back
    admirer, creator = world.users[0]["id"], world.users[1]["id"]
    seen = {}
    for user in (admirer, creator):
        q = {"user": user, "legacy": L, "persona": "biographer", "query": "Tell me about the Samovar.",
             "intent": Intent.ENTITY_FOCUSED, "force": True, "mode": "hybrid", "budget": 4000}  # fmt: skip
        out = pipeline.assemble(services, request_of(q), q["intent"])
        assert not violations(world, user, L, out)
        seen[user] = {line["sentence"] for line in out["ambient"]}
        assert "Brisa Blackwood owned Samovar." not in out["formatted_context"]
    assert seen[admirer] == {"Cato Crane owned Samovar."}
    assert "Cato Crane owned Samovar." in seen[creator]
