"""Every graph query of the project through both adapters: FalkorDB directly, and the Neptune
adapter over HTTP to the local openCypher server, each on its own fresh graph, fed the same
writes. A twin store runs each query on both and the rows must be equal; after each write both
graphs must hold the same nodes and edges (so a write the server refuses, or stores differently,
fails at the query that did it).

The workload is what production sends: the structural writes and entity sync of ingestion
(load, edit, delete), every traversal template for every persona and intent, the intent
gazetteer, `heirloom stats`' queries and the counts. Then two checks keep it complete: every
call site of the package that sends a query to a graph (found by reading the source) must have
been reached, and every Cypher constant (module-level strings and dicts of strings in
`heirloom.domain` and the CLI) must have been sent -- a new template or call site fails here
until the workload covers it.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import json
import pkgutil
import re
import string
import sys
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

import heirloom
import heirloom.domain
import heirloom_dev
from heirloom.adapters.embedders import HashingEmbedder
from heirloom.adapters.falkor import FalkorGraphStore
from heirloom.adapters.neptune import NeptuneGraphStore
from heirloom.adapters.postgres import PgDatabase, PgStoryStore, PgVectorIndex
from heirloom.contracts.context import ContextRequest, EntityMatch, Intent, QueryEntities, QueryIntent
from heirloom.contracts.extraction import (
    ExtractedEntities,
    ExtractedFact,
    ExtractedObject,
    ExtractedPerson,
    ExtractedRelationship,
)
from heirloom.contracts.records import LinkStatus, RelationshipType, Role
from heirloom.domain import entity_sync, graph_sync, ingestion, intent_step, life_timeline
from heirloom.domain.connections_graph import traverse_connections
from heirloom.domain.graph_queries import TEMPLATES
from heirloom.domain.graph_rebuild import rebuild_graph
from heirloom.domain.intent_step import build_gazetteer
from heirloom.domain.personas import load_personas
from heirloom.domain.traversal import traverse
from heirloom.domain.year_keys import year_keys
from heirloom_dev import story_commands
from heirloom_dev.loader import load_dataset, read_dataset
from heirloom_dev.neptune_server import LocalNeptuneServer
from tests.integration.test_entity_sync import ILLNESS, ORCHARD, ScriptedExtractor
from tests.support.dataset import MiniDataset
from tests.support.graph_fixture import build_fixture_graph, fid
from tests.support.neptune import CREDENTIALS, READ_TIMEOUT_S, REGION
from tests.support.stack import _with_database

PACKAGE = Path(heirloom.__file__).parent
#: the product package and the dev tooling (whose commands may run against Neptune too)
SCANNED = (PACKAGE, Path(heirloom_dev.__file__).parent)
#: not scanned: the adapters themselves, and `heirloom bench`, which builds its own FalkorDB store
#: (a synthetic benchmark that never runs on Neptune; its traversals are TEMPLATES, covered here)
NOT_SCANNED = ("heirloom/adapters/", "heirloom_dev/neptune_server.py", "heirloom_dev/bench/")
#: call sites the workload reaches through the same query text, not the same line
REACHED_ELSEWHERE = {
    (
        "heirloom_dev/story_commands.py",
        "collect_stats",
    ): "story_commands.EXAMPLE_QUERIES and the counts, run by the workload",
}
_CYPHER = re.compile(r"\s*(OPTIONAL\s+MATCH|MATCH|MERGE|UNWIND|CREATE)\b")
_GRAPH_METHODS = {"run", "count_nodes", "count_edges"}
_WRITE = re.compile(r"\b(CREATE|MERGE|SET|DELETE|REMOVE)\b")


@dataclass
class Call:
    query: str
    file: str
    line: int
    rows: int


@dataclass
class TwinGraph:
    """A GraphStore that runs every query on both adapters and insists on equal rows."""

    direct: FalkorGraphStore
    neptune: NeptuneGraphStore
    calls: list[Call] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)
    #: write queries sent, each followed by a comparison of the whole graphs
    writes: int = 0

    @property
    def prefix(self) -> str:
        return self.direct.prefix

    def _record(self, query: str) -> Call:
        frame = sys._getframe(2)
        call = Call(query, frame.f_code.co_filename, frame.f_lineno, 0)
        self.calls.append(call)  # before running: a caller may give up waiting (a deadline)
        return call

    def _same(self, what: str, direct: Any, over_http: Any) -> None:
        if direct != over_http:
            # callers such as the gazetteer swallow exceptions: keep the evidence
            self.mismatches.append(f"{what}\n  falkordb: {direct!r}\n  neptune:  {over_http!r}")
            raise AssertionError(self.mismatches[-1])

    def run(self, cypher: str, params: Any = None) -> list[dict[str, Any]]:
        call = self._record(cypher)
        direct = self.direct.run(cypher, params)
        self._same(cypher, direct, self.neptune.run(cypher, params))
        call.rows = len(direct)
        if _WRITE.search(cypher):  # a write: the two graphs must hold the same after it, too
            self.writes += 1
            self._same(f"the graphs after: {cypher}", _dump(self.direct), _dump(self.neptune))
        return direct

    def ensure_indexes(self) -> None:
        self.direct.ensure_indexes()
        self.neptune.ensure_indexes()

    def count_nodes(self) -> dict[str, int]:
        call = self._record("count_nodes")
        direct = self.direct.count_nodes()
        self._same("count_nodes", direct, self.neptune.count_nodes())
        call.rows = len(direct)
        return direct

    def count_edges(self) -> dict[str, int]:
        call = self._record("count_edges")
        direct = self.direct.count_edges()
        self._same("count_edges", direct, self.neptune.count_edges())
        call.rows = len(direct)
        return direct


def _dump(store: FalkorGraphStore | NeptuneGraphStore) -> list[str]:
    """Every node and edge of a graph, comparable across the two (engine ids left out)."""
    nodes = store.run("MATCH (n) RETURN n")
    edges = store.run("MATCH (a)-[r]->(b) RETURN a.id AS a, r, b.id AS b")
    return sorted(json.dumps(row, sort_keys=True) for row in nodes + edges)


@pytest.fixture(scope="module")
def twin(local_stack):
    from falkordb import FalkorDB

    socket = local_stack.falkor_socket
    name = uuid.uuid4().hex[:10]
    direct = FalkorGraphStore(socket, f"twin_falkor_{name}", "prod")
    with LocalNeptuneServer(socket, f"twin_neptune_{name}", region=REGION, credentials=CREDENTIALS) as server:
        yield TwinGraph(
            direct, NeptuneGraphStore(server.endpoint, REGION, "prod", read_timeout_s=READ_TIMEOUT_S)
        )
    client = FalkorDB(unix_socket_path=socket)
    for graph in (f"twin_falkor_{name}", f"twin_neptune_{name}"):
        if graph in client.list_graphs():
            client.select_graph(graph).delete()


@pytest.fixture(scope="module")
def module_db(local_stack):
    name = f"twin_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(local_stack.postgres_uri, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    db = PgDatabase(_with_database(local_stack.postgres_uri, name), embedding_dim=64)
    db.migrate()
    yield db
    db.close()
    with psycopg.connect(local_stack.postgres_uri, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _structure_events(ports: ingestion.IngestionPorts, ds: Any) -> None:
    """Relationship, membership and link changes (decision 0016), each undone again so the
    rest of the workload sees the loaded structure."""
    rel = ds.relationships[0].record
    ingestion.update_relationship(ports, rel.model_copy(update={"type": RelationshipType.KNEW}), rel.type)
    ingestion.remove_relationship(ports, rel.from_person_id, rel.to_person_id, RelationshipType.KNEW)
    ingestion.apply_relationship(ports, rel)
    legacy, person, user = ds.legacies[0].record, ds.persons[1].record, ds.users[0].record
    graph_sync.sync_membership(ports.graph, legacy, user.id, person.id, Role.ADMIN)
    moved = ds.persons[2].record.id  # the user's person changed: the edge moves
    graph_sync.sync_membership(ports.graph, legacy, user.id, moved, Role.ADMIN)
    graph_sync.sync_membership(ports.graph, legacy, user.id, moved, None)
    ingestion.sync_membership_edge(ports, legacy.id, user.id)  # back to the stored membership
    link = ds.links[0].record
    graph_sync.sync_link(ports.graph, link.model_copy(update={"status": LinkStatus.REVOKED}))
    graph_sync.sync_link(ports.graph, link)


def _traversals(twin: TwinGraph) -> None:
    fx = build_fixture_graph(twin)
    matches = (
        EntityMatch(mention="Ben", node_id=fx.brother, label="Person", name="Ben Reed"),
        EntityMatch(mention="Ada", node_id=fx.sister_in_law, label="Person", name="Ada Reed"),
        EntityMatch(mention="the flood", node_id=fx.flood, label="Event", name="the flood"),
        EntityMatch(mention="Heron Lake", node_id=fx.lake, label="Place", name="Heron Lake"),
    )
    entities = QueryEntities(
        places=("Heron Lake",), time_periods=("the sixties", "1972"), events=("the flood",)
    )
    for persona, config in sorted(load_personas().items()):
        request = ContextRequest(legacy_id=fx.legacy, user_id=uuid.uuid4(), persona=persona, query="q")
        for kind in Intent:
            for found in ((), matches):
                intent = QueryIntent(intent=kind, matches=found, entities=entities, confidence=0.9)
                # with the bridge template (docs/decisions/0022), from the stories reached
                traverse(twin, request, intent, config.traversal, budget_ms=60_000, bridge=bool(found))
        # story connections: from a story's own entities, from its years, and from names alone
        for seed in (fid("s-watch"), fid("s-lake"), None):
            request = ContextRequest(legacy_id=fx.legacy, user_id=uuid.uuid4(), persona=persona, query="q",
                                     purpose="connections", linked_story_id=seed)  # fmt: skip
            intent = QueryIntent(matches=matches, entities=entities, confidence=0.9)
            traverse_connections(twin, request, intent, config.traversal, budget_ms=60_000)
    # each template once more with the parameters its integration test uses
    both = [fx.legacy, fx.linked]
    for name, params in {
        "legacy_context": {"legacy_id": fx.legacy},
        "relational": {"person_id": fx.subject, "target_ids": [fx.friend], "legacy_ids": both, "limit": 10},
        "relational_2hop": {"person_id": fx.subject, "target_ids": [], "legacy_ids": both, "limit": 10},
        "person_mentions": {"ids": [fx.brother], "legacy_ids": both, "limit": 10},
        "entity_focused": {"ids": [fx.flood, fx.watch], "legacy_ids": both, "limit": 10},
        "spatial": {"ids": [], "names": ["heron"], "legacy_ids": both, "limit": 10},
        "temporal": {"legacy_ids": both, "years": year_keys(1960, 1979), "limit": 10},
        "told_in": {"legacy_ids": both, "start": "2024-01-01", "end": "2024-02-01", "limit": 10},
        "cross_legacy": {"legacy_id": fx.legacy, "ids": [fx.sister_in_law], "limit": 10},
        "general": {"person_id": fx.subject, "limit": 20},
        "facts": {"person_ids": [fx.subject], "subject_id": fx.subject, "limit": 20},
        "bridge": {
            "seed_ids": [fid("s-watch")],
            "ids": [fx.watch],
            "legacy_ids": both,
            "max_reach": 4,
            "limit": 10,
        },
    }.items():
        twin.run(TEMPLATES[name], params)
    assert fid("L") == fx.legacy


ACCORDIONS = ExtractedEntities(
    people=(ExtractedPerson(name="Ada Marsh", confidence=0.95), ExtractedPerson(name="Ivy Marsh", confidence=0.95)),
    objects=tuple(ExtractedObject(name=n, type="other", confidence=0.9) for n in ("accordion", "Papa Sal's accordion")),
    relationships=tuple(ExtractedRelationship(subject="Ada Marsh", predicate="OWNED", object=n, confidence=0.9)
                        for n in ("accordion", "Papa Sal's accordion")),
    facts=(ExtractedFact(source="Ada Marsh", relation="KEPT", target="accordion", verb="kept",
                         sentence="Ada kept the accordion, Papa Sal's accordion.", confidence=0.9),
           ExtractedFact(source="Ada Marsh", relation="TAUGHT", target="Ivy Marsh", verb="taught",
                         sentence="Ada taught Ivy Marsh the accordion.", confidence=0.9)),
)  # fmt: skip
#: the same narrator's later story denies it: the fact resolution supersedes the first telling
DENIED = ExtractedFact(source="Ada Marsh", relation="KEPT", target="accordion", verb="played",
                       sentence="Ada played the accordion.", negated=True, confidence=0.9)  # fmt: skip


def _curation(ports: ingestion.IngestionPorts, mini: MiniDataset, story: Any) -> None:
    """Suggestions, a merge, communities, keep apart and the unmerge, on a story naming two
    accordions."""
    from heirloom.adapters.postgres.curation import PgCurationStore
    from heirloom.contracts.curation import KeepApartBody, MergeBody
    from heirloom.domain import curation_api
    from heirloom.domain.community_rebuild import CommunityPorts, rebuild_legacy

    ports.extractor.table["Papa Sal"] = ACCORDIONS  # type: ignore[union-attr]
    ports.extractor.table["played"] = ACCORDIONS.model_copy(  # type: ignore[union-attr]
        update={
            "objects": ACCORDIONS.objects[:1],
            "relationships": ACCORDIONS.relationships[:1],
            "facts": (DENIED,),
        }
    )
    written = [
        story.model_copy(update={"id": uuid.uuid4(), "content": text})
        for text in ("Ada kept the accordion, Papa Sal's accordion.", "Ada played the accordion.")
    ]
    for extra in written:
        ingestion.apply_story(ports, extra)
    store = PgCurationStore(ports.stories.db)  # type: ignore[attr-defined]
    ports = dataclasses.replace(ports, curation=store)
    cur = curation_api.CurationPorts(ports.graph, ports.stories, store)
    legacy, creator = uuid.UUID(mini.legacy), uuid.UUID(mini.creator)
    found = curation_api.suggestions_for(cur, legacy, creator)
    pair = next(s for s in found if s.b.name == "accordion")
    merged = curation_api.merge_for(
        cur, legacy, creator, MergeBody(survivor_id=pair.a.id, absorbed_id=pair.b.id)
    )
    assert merged.moved_edges  # so the unmerge deletes what the merge added
    curation_api.suggestions_for(cur, legacy, creator)  # the moved edges' names (WRITTEN)
    report = rebuild_legacy(CommunityPorts(ports.graph, ports.stories, store), legacy, force="full")
    assert report.kind == "full"
    # extracted again after the merge: the story's edges go to the survivor, with their name
    later = written[1].updated_at + timedelta(hours=1)
    ingestion.apply_story(
        ports,
        written[1].model_copy(update={"content": "Ada played the accordion twice.", "updated_at": later}),
    )
    curation_api.unmerge_for(cur, legacy, creator, merged.merge_id)
    curation_api.keep_apart_for(cur, legacy, creator, KeepApartBody(entity_a=pair.a.id, entity_b=pair.b.id))


@pytest.fixture(scope="module")
def workload(twin, module_db, tokenizer, tmp_path_factory):
    twin.ensure_indexes()
    embedder = HashingEmbedder(64)
    extractor = ScriptedExtractor({"orchard": ORCHARD, "cider": ORCHARD, "illness": ILLNESS, "sick": ILLNESS})
    stories = PgStoryStore(module_db)
    ports = ingestion.IngestionPorts(
        stories=stories,
        vectors=PgVectorIndex(module_db, model_id=embedder.model_id),
        graph=twin,
        embedder=embedder,
        tokenizer=tokenizer,
        extractor=extractor,
        extractor_version="scripted-1",
    )
    mini = MiniDataset()
    tmp = tmp_path_factory.mktemp("twin")
    load_dataset(ports, mini.write(tmp / "ds"))  # structural writes + entity sync
    with pytest.MonkeyPatch.context() as patch:  # two engines over HTTP may need more than the budget
        patch.setattr(intent_step, "GRAPH_NAMES_BUDGET_S", 30.0, raising=False)
        build_gazetteer(uuid.UUID(mini.legacy), stories, twin)  # the intent step's graph query
    story = next(s.record for s in read_dataset(tmp / "ds").stories if str(s.record.id) == mini.private_story)
    extractor.table["sick"] = ExtractedEntities()  # the edit withdraws the hospital
    edit = {"content": "Ada was sick, nothing more.", "updated_at": story.updated_at + timedelta(hours=1)}
    ingestion.apply_story(ports, story.model_copy(update=edit))
    ingestion.delete_story(ports, uuid.UUID(mini.public_story))  # withdraw + delete the node
    bumped = dataclasses.replace(ports, extractor_version="scripted-2")
    load_dataset(bumped, mini.write(tmp / "again"))  # re-extraction over existing facts
    assert entity_sync.graph_fingerprints(twin)  # the lost-graph repair's reads
    _structure_events(ports, read_dataset(tmp / "ds"))
    rebuild_graph(bumped, [uuid.UUID(mini.legacy), uuid.UUID(mini.other_legacy)])  # drop + rebuild
    _curation(bumped, mini, story)
    assert entity_sync.graph_fingerprints(twin)  # now with fact edges
    told = {"legacy_ids": [mini.legacy], "limit": 10}
    for name, params in {  # the fact templates over the facts the curation stories told
        "story_facts": {**told, "ids": [mini.subject]},
        "fact_neighbours": {**told, "ids": [mini.subject]},
        "fact_sentences": {**told, "ids": [mini.subject], "subject_id": mini.subject},
    }.items():
        assert twin.run(TEMPLATES[name], params), name
    _traversals(twin)
    with pytest.MonkeyPatch.context() as patch:  # the dated events over HTTP, without the budget
        patch.setattr(life_timeline, "ANCHORS_BUDGET_S", 30.0)
        life_timeline.subject_life(uuid.UUID(mini.legacy), stories, twin)
    for query in story_commands.EXAMPLE_QUERIES.values():  # `heirloom stats`
        twin.run(query)
    twin.count_nodes()
    twin.count_edges()
    return twin


def test_every_query_gives_the_same_rows_on_both_adapters(workload):
    assert workload.mismatches == []
    assert workload.writes > 50  # each compared graph against graph, not only by its rows
    assert len(workload.calls) > 300
    assert sum(call.rows for call in workload.calls) > 500  # most of them answered with rows


#: openCypher that FalkorDB runs but Neptune's engine does not: the predicate functions (AWS's
#: migration guide rewrites them as list comprehensions), reduce(), path functions in MATCH,
#: pattern subqueries and datetime()
NEPTUNE_LACKS = re.compile(
    r"\b(?:any|all|none|single|reduce)\s*\(|\b(?:all)?shortestPath\b|\bEXISTS\s*\{|\bdatetime\s*\(",
    re.IGNORECASE,
)


def test_no_query_uses_what_neptune_lacks(workload):
    used = sorted({m.group(0) + " in: " + " ".join(c.query.split())[:120] for c in workload.calls
                   if (m := NEPTUNE_LACKS.search(c.query))})  # fmt: skip
    assert used == []


def test_both_graphs_end_identical(workload):
    direct, over_http = _dump(workload.direct), _dump(workload.neptune)
    assert direct == over_http
    assert len(direct) > 60


# -- completeness -----------------------------------------------------------------------------
@dataclass(frozen=True)
class CallSite:
    file: str
    function: str
    first: int
    last: int


def _graph_receiver(node: ast.expr) -> bool:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name.endswith("graph")


def graph_call_sites() -> list[CallSite]:
    """Every `<...>graph.run / count_nodes / count_edges(...)` in the package outside the adapters."""
    sites: list[CallSite] = []
    for path in sorted(p for root in SCANNED for p in root.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent if PACKAGE in path.parents else SCANNED[1].parent).as_posix()
        if rel.startswith(NOT_SCANNED):
            continue

        class Visitor(ast.NodeVisitor):
            def __init__(self) -> None:
                self.stack: list[str] = []

            def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
                self.stack.append(node.name)
                self.generic_visit(node)
                self.stack.pop()

            visit_AsyncFunctionDef = visit_FunctionDef

            def visit_Call(self, node: ast.Call) -> None:
                func = node.func
                if (
                    isinstance(func, ast.Attribute)
                    and func.attr in _GRAPH_METHODS
                    and _graph_receiver(func.value)
                ):
                    top = self.stack[0] if self.stack else "<module>"
                    sites.append(CallSite(rel, top, node.lineno, node.end_lineno or node.lineno))
                self.generic_visit(node)

        Visitor().visit(ast.parse(path.read_text()))
    return sites


def test_every_graph_call_site_of_the_package_is_exercised(workload):
    sites = graph_call_sites()
    assert len(sites) >= 15
    reached = {(Path(c.file).resolve(), c.line) for c in workload.calls}
    missing = []
    for site in sites:
        if (site.file, site.function) in REACHED_ELSEWHERE:
            continue
        target = next(
            root.parent / site.file for root in SCANNED if site.file.startswith(f"{root.name}/")
        ).resolve()
        if not any(f == target and site.first <= line <= site.last for f, line in reached):
            missing.append(f"{site.file}:{site.first} in {site.function}()")
    assert missing == [], "graph queries the contract workload never sent; add them to `workload`"
    stale = set(REACHED_ELSEWHERE) - {(s.file, s.function) for s in sites}
    assert stale == set(), "REACHED_ELSEWHERE names call sites that no longer exist"


def cypher_constants() -> dict[str, str]:
    """Module-level Cypher strings (and dicts of them) in heirloom.domain and the CLI."""
    modules = [importlib.import_module(m.name) for m in pkgutil.iter_modules(heirloom.domain.__path__,
                                                                               "heirloom.domain.")]  # fmt: skip
    found: dict[str, str] = {}
    for module in [*modules, story_commands]:
        for name, value in vars(module).items():
            values = value.items() if isinstance(value, dict) else [(None, value)]
            for key, text in values:
                if isinstance(text, str) and _CYPHER.match(text):
                    found.setdefault(text, f"{module.__name__}.{name}" + (f"[{key!r}]" if key else ""))
    return found


def _pattern(template: str) -> re.Pattern[str] | None:
    """`template` with its str.format fields as wildcards, or None if it is not a format string."""
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError:
        return None
    return re.compile("".join(re.escape(text) + (r"\w+" if name else "") for text, name, _, _ in parts))


def test_every_cypher_constant_is_sent_and_answers(workload):
    constants = cypher_constants()
    assert {"heirloom.domain.graph_queries.RELATIONAL_1HOP", "heirloom.domain.intent_step.ENTITY_NAMES",
            "heirloom.domain.entity_sync.UPSERT_ENTITIES"} <= set(constants.values())  # fmt: skip
    sent: dict[str, int] = {}
    for call in workload.calls:
        sent[call.query] = max(sent.get(call.query, 0), call.rows)
    missing, empty = [], []
    for text, name in constants.items():
        pattern = _pattern(text)
        hits = [
            rows for query, rows in sent.items() if query == text or (pattern and pattern.fullmatch(query))
        ]
        if not hits:
            missing.append(name)
        elif re.search(r"\bRETURN\b", text) and max(hits) == 0:
            empty.append(name)
    assert missing == [], "Cypher constants the contract workload never sent; add them to `workload`"
    assert empty == [], "queries that never returned a row in the workload: the comparison proves little"
