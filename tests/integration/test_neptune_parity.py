"""The graph adapter's integration tests (every traversal template on the fixture graph, entity
sync with provenance, normalised results, whitelist refusal) collected again here with the
`graph` fixture -- and `ports`, which takes it -- replaced by the Neptune adapter talking HTTP to
the local openCypher server. Same assertions, so both adapters give the same answers; a test
added to those modules runs on Neptune too."""

import inspect

import pytest
from _pytest.fixtures import FixtureFunctionDefinition

from tests.integration import test_entity_sync, test_fact_edges, test_graph_store, test_traversal_templates
from tests.support.neptune import new_neptune_graph

#: fixtures of those modules that stand on the graph
_GRAPH_FIXTURES = {"graph", "ports", "fx", "loaded"}


@pytest.fixture
def graph(neptune_server):
    neptune_server.clear_faults()
    store = new_neptune_graph(neptune_server)
    yield store
    store.delete_all()


def _adopt(module) -> list[str]:
    adopted = []
    for name, value in vars(module).items():
        if isinstance(value, FixtureFunctionDefinition) and name not in globals():
            globals()[name] = value
        elif (
            name.startswith("test_")
            and callable(value)
            and _GRAPH_FIXTURES & set(inspect.signature(value).parameters)
        ):
            globals()[name] = value
            adopted.append(name)
    return adopted


ADOPTED = [name for module in (test_traversal_templates, test_entity_sync, test_graph_store, test_fact_edges)
           for name in _adopt(module)]  # fmt: skip


def test_the_adapter_under_test_is_neptune(graph):
    from heirloom.adapters.neptune import NeptuneGraphStore

    assert isinstance(graph, NeptuneGraphStore)
    assert len(ADOPTED) >= 20  # the templates, entity sync and adapter tests all came along
