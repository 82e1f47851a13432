"""The functions' environment, read by the runtime's own settings: every database, Bedrock and model
variable the stack sets is one `heirloom.settings` reads, and together they are valid settings."""

from __future__ import annotations

import re

import pytest

from cdk.access import ACCESS, Model
from cdk.config import DB_STATEMENT_TIMEOUT_MS, EMBEDDING_DIM
from cdk.naming import function_folders, state_name
from heirloom.settings import HAIKU_MODEL_ID, TITAN_EMBED_MODEL_ID, env_names, settings_from_env

FUNCTIONS = [state_name(f) for f in function_folders()]
#: the concerns of the production adapters (database, graph, Bedrock, embedding, extraction, intent)
OURS = re.compile(r"(DATABASE_|DB_|GRAPH_|NEPTUNE_|BEDROCK_|EMBEDDING_|EXTRACTOR_|INTENT_)")
READ = env_names()


def environment(built, construct_id):
    props = built.resources[built.logical_id(built.stack.node.find_child(construct_id))]["Properties"]
    return props["Environment"]["Variables"]


def as_strings(env):
    """Deploy-time values (Ref, GetAtt) stand in as placeholder text."""
    return {
        k: v if isinstance(v, str) else f"resolved-{k.lower()}".replace("_", "-")
        for k, v in env.items()
        if OURS.match(k)
    }


@pytest.mark.parametrize("construct_id", FUNCTIONS)
def test_every_adapter_variable_is_read_by_the_settings(built, construct_id):
    unknown = {name for name in environment(built, construct_id) if OURS.match(name)} - READ
    assert not unknown, f"{construct_id} sets {unknown}, which heirloom.settings never reads"


@pytest.mark.parametrize("construct_id", FUNCTIONS)
def test_each_function_environment_is_valid_settings(built, construct_id):
    settings = settings_from_env(as_strings(environment(built, construct_id)))
    access = ACCESS.get(construct_id)
    assert settings.embedding.provider == "bedrock" and settings.embedding.dimension == EMBEDDING_DIM
    assert settings.extraction.provider == "bedrock"
    if access and access.database:
        assert settings.database.mode == "secret"
        assert settings.database.sslmode == "require"
        assert settings.database.statement_timeout_ms == DB_STATEMENT_TIMEOUT_MS
    else:
        assert settings.database.mode == "none"
    models = access.models if access else frozenset()
    if Model.EMBED in models:
        assert settings.bedrock.embed_model_id == TITAN_EMBED_MODEL_ID
    if Model.CLASSIFY in models:
        assert settings.bedrock.extraction_model_id.endswith(HAIKU_MODEL_ID)
        assert settings.bedrock.intent_model_id.endswith(HAIKU_MODEL_ID)


@pytest.mark.parametrize("construct_id", FUNCTIONS)
def test_a_function_without_graph_access_builds_its_ports_without_a_graph(built, construct_id):
    """ChunkEmbed, ExtractEntities and BackfillPlan failed on every call in AWS: their ingestion
    ports built a graph client from an endpoint they are not given (found by an operator
    audit). A function without graph access says so; one with it names its endpoint."""
    from cdk.access import Graph
    from heirloom.services import Services

    settings = settings_from_env(as_strings(environment(built, construct_id)))
    access = ACCESS.get(construct_id)
    if access is None or access.graph is Graph.NONE:
        assert settings.graph.provider == "none" and not settings.graph.augmentation_enabled
        if access is not None and access.database:  # the ingestion ports: built, no endpoint asked for
            assert Services(settings).ingestion.graph is not None
    else:
        assert settings.graph.provider == "auto" and settings.graph.neptune_endpoint


def test_database_functions_reach_the_proxy_with_the_cluster_secret(built):
    data = built.stack.data
    secret = {"Ref": built.logical_id(data.secret)}
    proxy = {"Fn::GetAtt": [built.logical_id(data.proxy), "Endpoint"]}
    for cid in FUNCTIONS:
        env = environment(built, cid)
        assert "DATABASE_URL" not in env and "DB_USER" not in env, cid
        if ACCESS.get(cid) and ACCESS[cid].database:
            assert env["DB_SECRET_ARN"] == secret, cid
            assert env["DB_HOST"] == proxy, cid
        else:
            assert "DB_SECRET_ARN" not in env and "DB_HOST" not in env, cid


def test_the_proxy_sets_the_statement_timeout_the_functions_do_not(built, resources):
    (group,) = [r for r in resources.values() if r["Type"] == "AWS::RDS::DBProxyTargetGroup"]
    pool = group["Properties"]["ConnectionPoolConfigurationInfo"]
    assert pool["InitQuery"] == f"SET statement_timeout = {DB_STATEMENT_TIMEOUT_MS}"


def test_every_function_names_the_same_extractor_version_in_any_region(variant):
    """Outside the US profile, the functions that may not call Haiku (BackfillPlan,
    StoryEvents) named the `us.` model in their extractor version: every story looked behind
    to the nightly backfill (found by an operator audit)."""
    built = variant(
        **{"heirloom:inferenceProfilePrefix": "eu", "heirloom:inferenceProfileRegions": "eu-west-1"}
    )
    ids = {
        cid: settings_from_env(as_strings(environment(built, cid))).bedrock.extraction_model_id
        for cid in FUNCTIONS
    }
    assert set(ids.values()) == {f"eu.{HAIKU_MODEL_ID}"}, ids
