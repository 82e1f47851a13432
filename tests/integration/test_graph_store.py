"""FalkorDB adapter: prefix isolation, whitelist refusal, normalised results."""

import pytest

from heirloom.adapters.cypher import GraphSchemaError
from tests.support.stack import new_graph


def test_two_prefixes_in_one_graph_do_not_see_each_other(local_stack):
    a, b = new_graph(local_stack), new_graph(local_stack)
    try:
        a.run("MERGE (p:Person {id: $id}) SET p.name = $name", {"id": "p1", "name": "Ada"})
        b.run("MERGE (p:Person {id: $id}) SET p.name = $name", {"id": "p1", "name": "Bea"})
        assert a.run("MATCH (p:Person) RETURN p.name AS name") == [{"name": "Ada"}]
        assert b.run("MATCH (p:Person) RETURN p.name AS name") == [{"name": "Bea"}]
        assert a.count_nodes() == {"Person": 1}
    finally:
        a.delete_all()
        b.delete_all()


def test_unknown_labels_are_refused_before_any_query_is_sent(graph, monkeypatch):
    sent = []
    monkeypatch.setattr(graph, "_raw", lambda q, p=None: sent.append(q) or [])
    with pytest.raises(GraphSchemaError):
        graph.run("MATCH (n:Admin) RETURN n")
    assert sent == []


def test_nodes_and_edges_come_back_as_plain_dicts_with_logical_names(graph):
    graph.run(
        "MERGE (a:Person {id: 'a'}) MERGE (b:Person {id: 'b'}) MERGE (a)-[r:FAMILY_OF]->(b) SET r.detail = $d",
        {"d": "sister"},
    )
    rows = graph.run("MATCH (a:Person {id: 'a'})-[r]->(b) RETURN a, r, b")
    assert rows == [
        {
            "a": {"id": "a", "_labels": ["Person"]},
            "r": {"detail": "sister", "_type": "FAMILY_OF"},
            "b": {"id": "b", "_labels": ["Person"]},
        }
    ]
    assert graph.count_edges() == {"FAMILY_OF": 1}


def test_text_that_looks_like_cypher_stays_data(graph):
    evil = "x'}) MATCH (n) DETACH DELETE n //"
    graph.run("MERGE (s:Story {id: $id}) SET s.title = $t", {"id": "s1", "t": evil})
    graph.run("MERGE (s:Story {id: $id})", {"id": "s2"})
    assert graph.run("MATCH (s:Story {id: 's1'}) RETURN s.title AS t") == [{"t": evil}]
    assert graph.count_nodes() == {"Story": 2}


def test_a_query_the_engine_refuses_is_a_typed_graph_error_that_does_not_quote_it(graph):
    from heirloom.errors import GraphQueryRejected, Rejected, reduce_error

    secret = "Maria's diagnosis"
    with pytest.raises(GraphQueryRejected) as caught:
        graph.run("MATCH (p:Person) WHERE p.name = $n RETURN p.name +", {"n": secret})
    assert "RETURN" not in str(caught.value) and secret not in str(caught.value)
    assert caught.value.detail  # the engine's own message is kept for debugging
    assert isinstance(reduce_error(caught.value), Rejected)  # the workflow does not retry it


def test_one_store_answers_several_threads_each_its_own_rows(graph):
    """A traversal's queries run on a small pool (docs/decisions/0019): one adapter, used first
    from several threads at once, gives each query its own answer."""
    from concurrent.futures import ThreadPoolExecutor

    ids = [f"p{i}" for i in range(24)]
    with ThreadPoolExecutor(8) as pool:  # the first use too: the connection is made under a lock
        list(pool.map(lambda i: graph.run("MERGE (p:Person {id: $id}) SET p.name = $id", {"id": i}), ids))

    def ask(i: str) -> tuple[str, list[dict]]:
        return i, graph.run("MATCH (p:Person {id: $id}) RETURN p.name AS name, p.id AS id", {"id": i})

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(ask, ids * 8))
    assert all(rows == [{"name": i, "id": i}] for i, rows in answers)
    assert len(answers) == 8 * len(ids)
