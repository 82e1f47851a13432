"""Neptune settings, the graph factory's choice, and the normalisation of Neptune's JSON."""

import pytest

from heirloom.adapters import factory
from heirloom.adapters.neptune import NeptuneGraphStore, normalise_value
from heirloom.settings import SettingsError, settings_from_env


def test_a_bare_cluster_host_as_cdk_passes_it_becomes_an_https_url():
    env = {"NEPTUNE_ENDPOINT": "db.cluster-abc.eu-west-1.neptune.amazonaws.com", "NEPTUNE_PORT": "8182",
           "AWS_REGION": "eu-west-1"}  # fmt: skip
    graph = settings_from_env(env).graph
    assert graph.neptune_url == "https://db.cluster-abc.eu-west-1.neptune.amazonaws.com:8182"
    assert graph.neptune_region == "eu-west-1" and graph.neptune_iam_auth
    assert (graph.neptune_connect_timeout_s, graph.neptune_read_timeout_s, graph.neptune_max_retries) == (
        1,
        3,
        2,
    )


def test_urls_regions_timeouts_and_retries_are_read():
    env = {"NEPTUNE_ENDPOINT": "http://127.0.0.1:40123/", "NEPTUNE_REGION": "us-west-2", "AWS_REGION": "us-east-1",
           "NEPTUNE_CONNECT_TIMEOUT_S": "0.5", "NEPTUNE_READ_TIMEOUT_S": "0.25", "NEPTUNE_MAX_RETRIES": "0"}  # fmt: skip
    graph = settings_from_env(env).graph
    assert graph.neptune_url == "http://127.0.0.1:40123" and graph.neptune_region == "us-west-2"
    assert (graph.neptune_connect_timeout_s, graph.neptune_read_timeout_s, graph.neptune_max_retries) == (
        0.5,
        0.25,
        0,
    )


@pytest.mark.parametrize(
    "env",
    [{"NEPTUNE_ENDPOINT": "ftp://db:8182"}, {"NEPTUNE_ENDPOINT": "https://db:8182/openCypher"},
     {"NEPTUNE_READ_TIMEOUT_S": "0"}, {"NEPTUNE_MAX_RETRIES": "-1"}, {"NEPTUNE_IAM_AUTH": "maybe"}],
)  # fmt: skip
def test_invalid_neptune_settings_fail_at_cold_start(env):
    with pytest.raises(SettingsError):
        settings_from_env(env)


def test_the_factory_builds_neptune_when_an_endpoint_is_set():
    env = {"NEPTUNE_ENDPOINT": "db.example", "AWS_REGION": "eu-west-1", "GRAPH_ENV_PREFIX": "prod",
           "NEPTUNE_READ_TIMEOUT_S": "2.5"}  # fmt: skip
    graph = factory.build_graph(settings_from_env(env))
    assert isinstance(graph, NeptuneGraphStore)
    assert graph.url == "https://db.example:8182/openCypher" and graph.prefix == "prod"
    assert graph.timeout == (1.0, 2.5) and graph.region == "eu-west-1"


@pytest.mark.parametrize(
    "env,reason",
    [({"NEPTUNE_ENDPOINT": "db.example", "FALKOR_SOCKET": "/tmp/f.sock", "AWS_REGION": "x"}, "both set"),
     ({"NEPTUNE_ENDPOINT": "db.example"}, "no region"),
     ({}, "FALKOR_SOCKET is not set")],
)  # fmt: skip
def test_contradictory_or_missing_graph_settings_are_refused(env, reason):
    with pytest.raises(SettingsError, match=reason):
        factory.build_graph(settings_from_env(env))


def test_neptune_entities_normalise_to_the_falkordb_adapters_shape():
    node = {"~id": "7", "~entityType": "node", "~labels": ["prod-Person", "other-Person"],
            "~properties": {"id": "p1", "aliases": ["Nana"]}}  # fmt: skip
    rel = {"~id": "9", "~entityType": "relationship", "~start": "7", "~end": "8", "~type": "prod-FAMILY_OF",
           "~properties": {"kind": "FAMILY_OF"}}  # fmt: skip
    row = {"n": node, "r": rel, "both": [node, {"m": rel}], "x": 1.5, "none": None, "plain": {"a": [1, "b"]}}
    assert normalise_value(row, "prod") == {
        "n": {"id": "p1", "aliases": ["Nana"], "_labels": ["Person"]},
        "r": {"kind": "FAMILY_OF", "_type": "FAMILY_OF"},
        "both": [{"id": "p1", "aliases": ["Nana"], "_labels": ["Person"]}, {"m": {"kind": "FAMILY_OF", "_type": "FAMILY_OF"}}],
        "x": 1.5,
        "none": None,
        "plain": {"a": [1, "b"]},
    }  # fmt: skip
