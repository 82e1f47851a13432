"""Production adapter settings: Bedrock, intent, Aurora. Missing or contradictory settings fail
at cold start with a SettingsError that names the variables; the factories pick the adapters."""

from __future__ import annotations

import pytest

from heirloom.adapters import factory
from heirloom.adapters.aurora import IamSource, SecretSource, UrlSource
from heirloom.adapters.bedrock import BedrockEntityExtractor, BedrockIntentClassifier, TitanEmbedder
from heirloom.domain.intent_step import RULES
from heirloom.settings import SettingsError, settings_from_env

AWS = {"BEDROCK_REGION": "us-east-1"}
SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:heirloom-db-AbCdEf"


@pytest.fixture(autouse=True)
def _fake_credentials(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


@pytest.mark.parametrize(
    ("env", "names"),
    [
        (
            {"EMBEDDING_PROVIDER": "bedrock", "EMBEDDING_DIM": "384"},
            ["EMBEDDING_PROVIDER=bedrock", "EMBEDDING_DIM=384"],
        ),
        (
            {"EMBEDDING_PROVIDER": "local", "EMBEDDING_DIM": "1024"},
            ["EMBEDDING_PROVIDER=local", "EMBEDDING_DIM=1024"],
        ),
        ({"DATABASE_URL": "postgresql:///x", "DB_SECRET_ARN": SECRET}, ["DATABASE_URL", "DB_SECRET_ARN"]),
        ({"DATABASE_URL": "postgresql:///x", "DB_IAM_AUTH": "true"}, ["DATABASE_URL", "DB_IAM_AUTH"]),
        ({"DB_SECRET_ARN": SECRET, "DB_IAM_AUTH": "true"}, ["DB_SECRET_ARN", "DB_IAM_AUTH"]),
        ({"DATABASE_URL": "postgresql:///x", "DB_HOST": "proxy.example"}, ["DB_HOST", "DATABASE_URL"]),
        ({"DB_IAM_AUTH": "true", "DB_HOST": "proxy.example"}, ["DB_NAME", "DB_USER"]),
        ({"DB_SECRET_ARN": SECRET, "DB_USER": "heirloom"}, ["DB_USER"]),
        ({"DB_SECRET_ARN": SECRET, "DB_SSLMODE": "verify-full"}, ["DB_SSLROOTCERT"]),
        ({"DB_SECRET_ARN": SECRET, "DB_SSLMODE": "disable"}, ["sslmode"]),
        ({"DB_PORT": "0", "DB_SECRET_ARN": SECRET}, ["port"]),
        ({"DB_IAM_AUTH": "perhaps"}, ["boolean"]),
        ({"INTENT_PROVIDER": "oracle"}, ["provider"]),
        ({"BEDROCK_RETRY_MODE": "eager"}, ["retry_mode"]),
        ({"BEDROCK_READ_TIMEOUT_S": "0"}, ["read_timeout_s"]),
        ({"BEDROCK_INTENT_MODEL_ID": "claude haiku please"}, ["not a Bedrock model id"]),
    ],
)
def test_contradictory_or_invalid_settings_fail_at_cold_start(env, names):
    with pytest.raises(SettingsError) as raised:
        settings_from_env(env)
    for name in names:
        assert name in str(raised.value)


def test_bedrock_defaults_and_overrides():
    s = settings_from_env({"EMBEDDING_PROVIDER": "bedrock"})
    assert s.embedding.dimension == 1024
    assert s.bedrock.embed_model_id == "amazon.titan-embed-text-v2:0"
    assert (
        s.bedrock.intent_model_id
        == s.bedrock.extraction_model_id
        == "us.anthropic.claude-haiku-4-5-20251001-v1:0"
    )
    assert s.intent.provider == "auto"
    assert factory.local_intent_provider(s) == "rules"  # no weights shipped for Titan
    s = settings_from_env(
        {
            "EMBEDDING_PROVIDER": "bedrock",
            "EMBEDDING_DIM": "256",
            "BEDROCK_EXTRACTION_MODEL_ID": "us.anthropic.claude-3-5-haiku-20241022-v1:0",
            "BEDROCK_READ_TIMEOUT_S": "12.5",
            "BEDROCK_MAX_ATTEMPTS": "5",
            "BEDROCK_RETRY_MODE": "adaptive",
        }
    )
    assert s.embedding.dimension == 256
    assert s.bedrock.extraction_model_id.startswith("us.anthropic")
    assert (s.bedrock.read_timeout_s, s.bedrock.max_attempts, s.bedrock.retry_mode) == (12.5, 5, "adaptive")


def test_each_factory_picks_the_bedrock_adapter_and_one_client_per_container():
    s = settings_from_env(
        {**AWS, "EMBEDDING_PROVIDER": "bedrock", "EMBEDDING_DIM": "512", "EXTRACTOR_PROVIDER": "bedrock"}
    )
    embedder = factory.build_embedder(s)
    extractor = factory.build_extractor(s)
    assert isinstance(embedder, TitanEmbedder) and embedder.dimension == 512
    assert isinstance(extractor, BedrockEntityExtractor)
    assert embedder._client is extractor._client  # same configuration, same client
    config = embedder._client.meta.config
    assert (config.connect_timeout, config.read_timeout) == (2.0, 30.0)
    assert config.retries == {"mode": "standard", "total_max_attempts": 3}


def test_the_intent_model_gets_the_intent_budget_and_no_retries():
    assert factory.build_intent_classifier(settings_from_env({})) is RULES
    s = settings_from_env({**AWS, "INTENT_PROVIDER": "bedrock", "INTENT_BUDGET_MS": "800"})
    classifier = factory.build_intent_classifier(s)
    assert isinstance(classifier, BedrockIntentClassifier)
    config = classifier._client.meta.config
    assert config.read_timeout == 0.8 and config.connect_timeout == 0.8
    assert classifier.budget_s == 0.8  # the call's deadline in analyse_intent, from the same setting
    assert config.retries["total_max_attempts"] == 1


AUTO = {"INTENT_PROVIDER": "auto"}


@pytest.mark.parametrize(
    ("env", "local"),
    [
        # auto: the learned classifier where the layer ships its weights for the configured
        # embedder (all-MiniLM-L6-v2, 384), the rules elsewhere (decision 0034)
        (AUTO, "embedding"),
        ({**AUTO, "EMBEDDING_PROVIDER": "local", "EMBEDDING_DIM": "384"}, "embedding"),
        ({**AUTO, "EMBEDDING_PROVIDER": "fake"}, "rules"),
        ({**AUTO, **AWS, "EMBEDDING_PROVIDER": "bedrock"}, "rules"),
        ({}, "embedding"),  # auto is the default (decision 0034 addendum)
        # explicit values are honoured whatever is shipped
        ({"INTENT_PROVIDER": "rules"}, "rules"),
        ({"EMBEDDING_PROVIDER": "fake", "INTENT_PROVIDER": "embedding"}, "embedding"),
        ({**AWS, "EMBEDDING_PROVIDER": "bedrock", "INTENT_PROVIDER": "embedding"}, "embedding"),
        # Haiku after what auto would choose: a deployment with Titan gets the rules first
        ({**AWS, "EMBEDDING_PROVIDER": "bedrock", "INTENT_PROVIDER": "bedrock"}, "rules"),
        ({"INTENT_PROVIDER": "bedrock"}, "embedding"),
    ],
)
def test_auto_picks_the_learned_classifier_only_where_its_weights_are_shipped(env, local):
    assert factory.local_intent_provider(settings_from_env(env)) == local


def test_auto_without_shipped_weights_builds_the_rules_and_no_model_call():
    s = settings_from_env({**AUTO, "EMBEDDING_PROVIDER": "fake"})
    assert factory.build_local_intent_classifier(s, factory.build_embedder(s)) is RULES
    assert factory.build_intent_classifier(s) is RULES


def test_auto_with_shipped_weights_builds_the_learned_classifier():
    from heirloom.adapters.embedders import HashingEmbedder
    from heirloom.domain.intent_step import EmbeddingIntentClassifier

    s = settings_from_env(AUTO)
    local = factory.build_local_intent_classifier(s, HashingEmbedder())  # not called here
    assert isinstance(local, EmbeddingIntentClassifier)
    assert factory.build_intent_classifier(s, local) is local


def test_the_bedrock_embedder_speaks_titan_v2_only():
    s = settings_from_env(
        {**AWS, "EMBEDDING_PROVIDER": "bedrock", "BEDROCK_EMBED_MODEL_ID": "cohere.embed-english-v3"}
    )
    with pytest.raises(SettingsError, match="BEDROCK_EMBED_MODEL_ID"):
        factory.build_embedder(s)


def test_build_database_needs_one_way_to_connect():
    with pytest.raises(SettingsError, match="DATABASE_URL is not set"):
        factory.build_database(settings_from_env({}))
    # local wiring fills the URL in with model_copy (no validation): the factory checks again
    s = settings_from_env({"DB_SECRET_ARN": SECRET})
    s = s.model_copy(update={"database": s.database.model_copy(update={"url": "postgresql:///x"})})
    with pytest.raises(SettingsError, match="DATABASE_URL and DB_SECRET_ARN"):
        factory.build_database(s)


def test_build_database_picks_the_connection_source():
    url = factory.build_database(
        settings_from_env({"DATABASE_URL": "postgresql://u:hunter2@db.example/heirloom"})
    )
    assert isinstance(url.source, UrlSource) and not url.pooled
    assert "hunter2" not in url.source.description
    secret = factory.build_database(settings_from_env({"DB_SECRET_ARN": SECRET, "DB_HOST": "proxy.example"}))
    assert isinstance(secret.source, SecretSource) and secret.pooled
    assert secret.url == f"secret {SECRET}"
    iam = factory.build_database(
        settings_from_env(
            {"DB_IAM_AUTH": "true", "DB_HOST": "proxy.example", "DB_NAME": "heirloom", "DB_USER": "app"}
        )
    )
    assert isinstance(iam.source, IamSource) and iam.pooled
    assert iam.url == "iam app@proxy.example:5432/heirloom"


@pytest.mark.parametrize(
    ("env", "model_id"),
    [
        ({}, "all-MiniLM-L6-v2-onnx-int8"),
        ({"EMBEDDING_PROVIDER": "fake", "EMBEDDING_DIM": "64"}, "hashing-bow"),
        (
            {**AWS, "EMBEDDING_PROVIDER": "bedrock", "EMBEDDING_DIM": "1024"},
            "amazon.titan-embed-text-v2:0@1024",
        ),
    ],
)
def test_reading_the_index_builds_no_embedder(env, model_id):
    """AccessFilter reads excerpts only: its cold start loads no model and no Bedrock client."""
    from heirloom.services import Services

    services = Services(settings_from_env(env))
    services.__dict__["db"] = object()  # never connected here
    assert services.vectors.model_id == model_id
    assert "embedder" not in services.__dict__
    assert factory.embedding_model_id(services.settings) == factory.build_embedder(services.settings).model_id
