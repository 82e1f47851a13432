"""GRAPH_PROVIDER=none (CDK heirloom:graph=none): no graph store, checked queries, no rows."""

import pytest

from heirloom.adapters import factory
from heirloom.adapters.cypher import GraphSchemaError
from heirloom.adapters.nograph import NoGraphStore
from heirloom.settings import settings_from_env

NONE = {"GRAPH_PROVIDER": "none", "GRAPH_AUGMENTATION_ENABLED": "false", "GRAPH_ENV_PREFIX": "prod"}


def test_no_graph_needs_augmentation_off_and_no_store():
    for extra in (
        {"GRAPH_AUGMENTATION_ENABLED": "true"},
        {"NEPTUNE_ENDPOINT": "n.example"},
        {"FALKOR_SOCKET": "/s"},
    ):
        with pytest.raises(ValueError, match="GRAPH_PROVIDER=none needs"):
            settings_from_env({**NONE, **extra})


def test_the_factory_builds_a_store_that_checks_queries_and_answers_nothing():
    graph = factory.build_graph(settings_from_env(NONE))
    assert isinstance(graph, NoGraphStore) and graph.prefix == "prod"
    assert graph.run("MERGE (s:Story {id: $id}) RETURN s", {"id": "x"}) == []
    with pytest.raises(GraphSchemaError):
        graph.run("MATCH (n:Secret) RETURN n")
    assert graph.count_nodes() == {} and graph.count_edges() == {}
