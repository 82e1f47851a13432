"""The local openCypher server refuses what Neptune refuses, with Neptune's error shape, and the
Neptune adapter turns each refusal into `MalformedGraphQuery` (the error contract's `Rejected`).

One case per rule of `heirloom_dev.neptune_rules` (AWS docs: "openCypher specification
compliance in Amazon Neptune", "Rewriting Cypher queries to run in openCypher on Neptune",
"openCypher data model", "Graph engine error messages and codes"); each runs on FalkorDB
directly, so the server is stricter than the engine behind it. The accepted cases next to them
show the rules do not refuse what Neptune runs.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
import requests

from heirloom.adapters.falkor import FalkorGraphStore
from heirloom.adapters.neptune import NeptuneGraphStore
from heirloom.errors import MalformedGraphQuery, Rejected, reduce_error
from heirloom_dev.neptune_server import LocalNeptuneServer
from heirloom_dev.stack import StackStatus
from tests.support.neptune import GRAPH_NAME

UNSUPPORTED, MALFORMED = "UnsupportedOperationException", "MalformedQueryException"

# fmt: off
#: (rule, query, parameters, Neptune's code)
REFUSED = [
    ("list literal in SET", "MERGE (n:Story {id: 'a'}) SET n.years = [1960, 1961]", {}, MALFORMED),
    ("empty list in SET", "MERGE (n:Story {id: 'a'}) SET n.tags = []", {}, MALFORMED),
    ("list comprehension in SET", "MERGE (n:Story {id: 'a'}) SET n.ids = [x IN $ids WHERE x <> 'b']",
     {"ids": ["a", "b"]}, MALFORMED),
    ("list concatenation in SET", "MERGE (n:Story {id: 'a'}) SET n.ids = coalesce(n.ids, []) + ['b']", {}, MALFORMED),
    ("list from a CASE in SET",
     "MERGE (n:Story {id: 'a'}) SET n.ids = CASE WHEN $s IN coalesce(n.ids, []) THEN n.ids ELSE [$s] END",
     {"s": "b"}, MALFORMED),
    ("list from a function in SET", "MERGE (n:Story {id: 'a'}) SET n.parts = split('a|b', '|')", {}, MALFORMED),
    ("list parameter in SET", "MERGE (n:Story {id: 'a'}) SET n.years = $years", {"years": [1960]}, MALFORMED),
    ("list parameter inside an expression", "MERGE (n:Story {id: 'a'}) SET n.years = coalesce($years, 0)",
     {"years": [1960]}, MALFORMED),
    ("list row field inside an expression",
     "UNWIND $rows AS row MERGE (e:Place {id: row.id}) SET e.years = coalesce(row.years, '')",
     {"rows": [{"id": "x", "years": [1960]}]}, MALFORMED),
    ("list in a SET += map parameter", "MERGE (n:Person {id: $id}) SET n += $props",
     {"id": "p", "props": {"name": "Ada", "aliases": ["Addie"]}}, MALFORMED),
    ("list in a SET += map literal", "MERGE (n:Person {id: 'p'}) SET n += {name: 'Ada', aliases: ['Addie']}", {},
     MALFORMED),
    ("list in ON CREATE SET", "MERGE (n:Story {id: 'a'}) ON CREATE SET n.ids = ['a']", {}, MALFORMED),
    ("list carried by UNWIND rows", "UNWIND $rows AS row MERGE (e:Place {id: row.id}) SET e.years = row.years",
     {"rows": [{"id": "x", "years": [1960]}]}, MALFORMED),
    ("list map carried by UNWIND rows", "UNWIND $rows AS row MERGE (e:Place {id: row.id}) SET e += row.props",
     {"rows": [{"id": "x", "props": {"years": [1960]}}]}, MALFORMED),
    ("list in a CREATE property map", "CREATE (n:Story {id: 'a', years: [1960]})", {}, MALFORMED),
    ("list parameter in a MERGE property map", "MERGE (n:Story {id: 'a', years: $years})", {"years": [1]}, MALFORMED),
    ("list on a relationship", "MERGE (a:Story {id: 'a'}) MERGE (b:Place {id: 'b'})"
     " MERGE (a)-[r:TOOK_PLACE_AT]->(b) SET r.story_ids = [$sid]", {"sid": "a"}, MALFORMED),
    ("map value in SET", "MERGE (n:Story {id: 'a'}) SET n.meta = $meta", {"meta": {"k": 1}}, MALFORMED),
    ("shortestPath", "MATCH (a:Person {id: 'a'}), (b:Person {id: 'b'}) WITH a, b"
     " RETURN shortestPath((a)-[*]->(b)) AS p", {}, UNSUPPORTED),
    ("allShortestPaths", "MATCH (a:Person {id: 'a'}), (b:Person {id: 'b'}) WITH a, b"
     " RETURN allShortestPaths((a)-[*]->(b)) AS p", {}, UNSUPPORTED),
    ("EXISTS subquery", "MATCH (n:Person) WHERE EXISTS { MATCH (n)-[]->() } RETURN n", {}, UNSUPPORTED),
    ("any()", "MATCH (n:Person) WHERE any(x IN [1, 2] WHERE x > 1) RETURN n", {}, UNSUPPORTED),
    ("all()", "MATCH (n:Person) WHERE all(x IN [1, 2] WHERE x > 0) RETURN n", {}, UNSUPPORTED),
    ("none()", "MATCH (n:Person) WHERE none(x IN [1, 2] WHERE x > 5) RETURN n", {}, UNSUPPORTED),
    ("single()", "MATCH (n:Person) WHERE single(x IN [1, 2] WHERE x > 1) RETURN n", {}, UNSUPPORTED),
    ("reduce()", "RETURN reduce(t = 0, x IN [1, 2] | t + x) AS total", {}, UNSUPPORTED),
    ("datetime()", "RETURN datetime() AS now", {}, UNSUPPORTED),
    ("date()", "RETURN date('2020-01-01') AS d", {}, UNSUPPORTED),
    ("duration()", "RETURN duration('P1D') AS d", {}, UNSUPPORTED),
    ("^ operator", "RETURN 2 ^ 3 AS x", {}, UNSUPPORTED),
    ("APOC function", "RETURN apoc.coll.sort([2, 1]) AS xs", {}, UNSUPPORTED),
    ("MANDATORY MATCH", "MANDATORY MATCH (n:Person) RETURN n", {}, UNSUPPORTED),
    ("LIMIT expression", "MATCH (n:Person) RETURN n LIMIT toInteger(1 + 1)", {}, UNSUPPORTED),
    ("SKIP expression", "MATCH (n:Person) RETURN n SKIP 1 + 1", {}, UNSUPPORTED),
    ("WITH ... LIMIT expression", "MATCH (n:Person) WITH n LIMIT size([1]) RETURN count(n) AS c", {}, UNSUPPORTED),
    ("CALL procedure", "CALL db.labels() YIELD label RETURN label", {}, UNSUPPORTED),
    ("UNION with a write", "MERGE (n:Story {id: 'a'}) RETURN n.id AS id UNION MATCH (m:Person) RETURN m.id AS id",
     {}, UNSUPPORTED),
    ("CREATE INDEX", "CREATE INDEX FOR (n:Person) ON (n.id)", {}, UNSUPPORTED),
]
#: what Neptune runs, near the refused forms: none of it may be refused
ACCEPTED = [
    ("scalar SET", "MERGE (n:Story {id: 'a'}) SET n.title = $t, n.year = 1960, n.known = true", {"t": "x"}),
    ("scalar SET += map", "MERGE (n:Person {id: $id}) SET n += $props", {"id": "p", "props": {"name": "Ada"}}),
    ("scalar UNWIND rows", "UNWIND $rows AS row MERGE (e:Place {id: row.id}) SET e.name = row.name",
     {"rows": [{"id": "x", "name": "Lisbon"}]}),
    ("a list only tested against", "MERGE (n:Story {id: 'a'}) SET n.flag = $s IN ['a', 'b']", {"s": "a"}),
    ("a list only counted", "MERGE (n:Story {id: 'a'}) SET n.n = size([1, 2]), n.first = head(['x'])", {}),
    ("a list condition in CASE", "MERGE (n:Story {id: 'a'}) SET n.k = CASE WHEN 1 IN [1] THEN 'y' ELSE 'n' END", {}),
    ("an indexed list", "MERGE (n:Story {id: 'a'}) SET n.y = $years[0]", {"years": [1960]}),
    ("scalar parameters inside expressions", "UNWIND $rows AS row MERGE (e:Place {id: row.id})"
     " SET e.name = coalesce(row.name, $default) + '!', e.n = size($years) + row.n",
     {"rows": [{"id": "x", "name": None, "n": 1}], "default": "Lisbon", "years": [1, 2]}),
    ("lists in RETURN", "MATCH (n:Person) RETURN collect(n.id) AS ids, [x IN [1, 2] WHERE x > 1] AS xs", {}),
    ("LIMIT parameter", "MATCH (n:Person) RETURN n.id AS id ORDER BY id SKIP $skip LIMIT $limit",
     {"skip": 0, "limit": 5}),
    ("LIMIT literal", "MATCH (n:Person) WITH n LIMIT 3 RETURN count(n) AS c", {}),
    ("exists() on a property", "MATCH (n:Person) WHERE exists(n.name) RETURN n.id AS id", {}),
    ("read-only UNION", "MATCH (n:Person) RETURN n.id AS id UNION ALL MATCH (m:Story) RETURN m.id AS id", {}),
    ("names that look like rules", "MATCH (n:Person) WHERE n.all = 'any(' OR n.skip = 1 RETURN n.limit AS limit", {}),
    ("a property named like a function", "MATCH (n:Person) WHERE n.date = '2020' RETURN n.time AS t, '2 ^ 3' AS s", {}),
    ("rules in a comment", "MATCH (n:Person) // shortestPath( SET n.x = [1]\nRETURN n.id AS id", {}),
]
# fmt: on


@pytest.fixture(scope="module")
def open_server(local_stack: StackStatus) -> Iterator[LocalNeptuneServer]:
    """The server without SigV4 (NEPTUNE_IAM_AUTH=false), for raw HTTP."""
    assert local_stack.falkor_socket
    with LocalNeptuneServer(local_stack.falkor_socket, GRAPH_NAME, require_auth=False) as server:
        yield server


@pytest.fixture
def falkor(local_stack: StackStatus) -> Iterator[FalkorGraphStore]:
    """FalkorDB itself on a private prefix, also in the Neptune pass (where `graph` is the
    Neptune adapter): what the server refuses, the engine behind it would store."""
    assert local_stack.falkor_socket
    store = FalkorGraphStore(local_stack.falkor_socket, GRAPH_NAME, f"t{uuid.uuid4().hex[:10]}")
    yield store
    store.delete_all()


def _post(server: LocalNeptuneServer, query: str, params: dict[str, object]) -> requests.Response:
    data = {"query": query, **({"parameters": json.dumps(params)} if params else {})}
    return requests.post(server.endpoint + "/openCypher", data=data, timeout=10)


@pytest.mark.parametrize(("rule", "query", "params", "code"), REFUSED, ids=[r[0] for r in REFUSED])
def test_each_rule_is_refused_with_neptunes_error_shape(open_server, rule, query, params, code):
    response = _post(open_server, query, params)
    assert response.status_code == 400, response.text
    assert response.headers["Content-Type"].startswith("application/x-amz-json-1.0")
    body = response.json()
    assert set(body) == {"requestId", "code", "detailedMessage"}
    assert body["code"] == code and body["detailedMessage"] and uuid.UUID(body["requestId"])


@pytest.mark.parametrize(("rule", "query", "params", "code"), REFUSED, ids=[r[0] for r in REFUSED])
def test_the_adapter_maps_each_refusal_and_nothing_is_written(
    neptune_graph: NeptuneGraphStore, falkor: FalkorGraphStore, rule, query, params, code
):
    """Through the Neptune adapter (SigV4, prefixing): `MalformedGraphQuery` with Neptune's code,
    which leaves a Lambda as `Rejected`; the graph is untouched. FalkorDB itself stores the
    list and map values the server refused."""
    with pytest.raises(MalformedGraphQuery) as caught:
        neptune_graph.run(query, params)
    assert caught.value.code == code and caught.value.status == 400
    assert isinstance(reduce_error(caught.value), Rejected)
    assert neptune_graph.count_nodes() == {}
    if code == MALFORMED and "$meta" not in query:  # FalkorDB has no map properties either
        falkor.run(query, params)
        assert falkor.count_nodes()


@pytest.mark.parametrize(("rule", "query", "params"), ACCEPTED, ids=[r[0] for r in ACCEPTED])
def test_what_neptune_runs_is_not_refused(neptune_graph: NeptuneGraphStore, rule, query, params):
    neptune_graph.run(query, params)
