"""One factory per port: the implementation is chosen from settings, validated at cold start."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from heirloom.adapters.postgres import PgDatabase, PgStoryStore, PgVectorIndex
from heirloom.domain.intent_step import RULES, IntentClassifier
from heirloom.ports import (
    BackfillRuns,
    BreakerStore,
    ConnectionsWorkflow,
    ContextWorkflow,
    ConversationStore,
    CurationStore,
    Embedder,
    EntityExtractor,
    GraphStore,
    ObjectStore,
)
from heirloom.settings import Settings, SettingsError

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from uuid import UUID

    from heirloom.domain.intent_model import IntentModelCache
    from heirloom.domain.rerank import RerankStage


def build_embedder(settings: Settings) -> Embedder:
    provider = settings.embedding.provider
    if provider == "local":
        embedder: Embedder = _onnx_embedder()
    elif provider == "fake":
        from heirloom.adapters.embedders import HashingEmbedder

        embedder = HashingEmbedder(settings.embedding.dimension)
    elif provider == "bedrock":
        from heirloom.adapters.bedrock import TitanEmbedder

        model_id = settings.bedrock.embed_model_id
        if "titan-embed-text-v2" not in model_id:
            raise SettingsError(
                f"BEDROCK_EMBED_MODEL_ID={model_id!r}: the bedrock embedder speaks Titan Text "
                "Embeddings v2's request body (amazon.titan-embed-text-v2:0)"
            )
        embedder = TitanEmbedder(
            bedrock_runtime(settings), model_id=model_id, dimension=settings.embedding.dimension
        )
    else:
        raise SettingsError(f"embedding provider {provider!r} is not available in this build")
    if embedder.dimension != settings.embedding.dimension:
        raise SettingsError(
            f"EMBEDDING_DIM={settings.embedding.dimension} but {embedder.model_id} makes "
            f"{embedder.dimension}-dimension vectors"
        )
    return embedder


@lru_cache(maxsize=1)
def _onnx_embedder() -> Embedder:
    from heirloom.adapters.embedders import OnnxMiniLmEmbedder

    return OnnxMiniLmEmbedder()


def bedrock_runtime(
    settings: Settings, *, read_timeout_s: float | None = None, max_attempts: int | None = None
) -> Any:
    """The container's bedrock-runtime client for these timeouts (botocore config from settings)."""
    from heirloom.adapters.bedrock import bedrock_client

    b = settings.bedrock
    return bedrock_client(
        b.region,
        connect_timeout_s=b.connect_timeout_s
        if read_timeout_s is None
        else min(b.connect_timeout_s, read_timeout_s),
        read_timeout_s=b.read_timeout_s if read_timeout_s is None else read_timeout_s,
        max_attempts=b.max_attempts if max_attempts is None else max_attempts,
        retry_mode=b.retry_mode,
    )


def build_database(settings: Settings, **sources: Any) -> PgDatabase:
    """A URL (local), the Aurora secret, or IAM auth: exactly one (re-checked here, since
    local wiring fills the URL in with `model_copy`, which skips validation). `sources` passes
    a secrets `provider` or an `rds_client` through, for tests."""
    from pydantic import ValidationError

    from heirloom.adapters.aurora import connection_source
    from heirloom.settings import DatabaseSettings

    try:
        database = DatabaseSettings.model_validate(settings.database.model_dump())
    except ValidationError as exc:
        raise SettingsError(f"invalid database settings: {exc}") from exc
    if database.mode == "none":
        raise SettingsError("DATABASE_URL is not set (nor DB_SECRET_ARN or DB_IAM_AUTH)")
    return PgDatabase(
        connection_source(database, **sources),
        statement_timeout_ms=database.statement_timeout_ms,
        embedding_dim=settings.embedding.dimension,
    )


def build_story_store(db: PgDatabase) -> PgStoryStore:
    return PgStoryStore(db)


def build_curation_store(db: PgDatabase) -> CurationStore:
    from heirloom.adapters.postgres.curation import PgCurationStore

    return PgCurationStore(db)


def build_conversation_store(db: PgDatabase) -> ConversationStore:
    from heirloom.adapters.postgres.conversations import PgConversationStore

    return PgConversationStore(db)


def build_vector_index(db: PgDatabase, embedder: Embedder | str) -> PgVectorIndex:
    """The chunk index of one embedding model (an embedder, or just its model id)."""
    return PgVectorIndex(db, model_id=embedder if isinstance(embedder, str) else embedder.model_id)


def embedding_model_id(settings: Settings) -> str:
    """The model id `build_embedder` would give, without building it: a function that only reads
    the index (AccessFilter's excerpts) never loads a model or a Bedrock client at cold start."""
    provider = settings.embedding.provider
    if provider == "bedrock":  # as TitanEmbedder names its vectors
        return f"{settings.bedrock.embed_model_id}@{settings.embedding.dimension}"
    from heirloom.adapters.embedders import HashingEmbedder, OnnxMiniLmEmbedder

    if provider == "local":
        return OnnxMiniLmEmbedder.model_id
    if provider == "fake":
        return HashingEmbedder.model_id
    return build_embedder(settings).model_id  # anything else: as built


def build_graph(settings: Settings) -> GraphStore:
    """Neptune when NEPTUNE_ENDPOINT is set, the local FalkorDB otherwise, never both; no graph
    store with GRAPH_PROVIDER=none."""
    graph = settings.graph
    if graph.provider == "none":
        from heirloom.adapters.nograph import NoGraphStore

        return NoGraphStore(graph.env_prefix)
    if graph.neptune_endpoint and graph.falkor_socket:
        raise SettingsError(
            "NEPTUNE_ENDPOINT and FALKOR_SOCKET are both set: the graph is either Neptune or FalkorDB"
        )
    if graph.neptune_endpoint:
        if graph.neptune_iam_auth and not graph.neptune_region:
            raise SettingsError("NEPTUNE_ENDPOINT is set but no region: set NEPTUNE_REGION or AWS_REGION")
        from heirloom.adapters.neptune import NeptuneGraphStore

        return NeptuneGraphStore(
            graph.neptune_url,
            graph.neptune_region,
            graph.env_prefix,
            connect_timeout_s=graph.neptune_connect_timeout_s,
            read_timeout_s=graph.neptune_read_timeout_s,
            max_retries=graph.neptune_max_retries,
            iam_auth=graph.neptune_iam_auth,
        )
    if not settings.graph.falkor_socket:
        raise SettingsError("FALKOR_SOCKET is not set (and no Neptune endpoint is configured)")
    from heirloom.adapters.falkor import FalkorGraphStore

    return FalkorGraphStore(
        settings.graph.falkor_socket,
        settings.graph.graph_name,
        settings.graph.env_prefix,
        connect_timeout_s=settings.graph.falkor_connect_timeout_s,
        socket_timeout_s=settings.graph.falkor_socket_timeout_s,
    )


def build_extractor(settings: Settings) -> EntityExtractor | None:
    provider = settings.extraction.provider
    if provider == "none":
        return None
    if provider == "local":
        return _spacy_extractor()
    if provider == "bedrock":
        from heirloom.adapters.bedrock import BedrockEntityExtractor

        return BedrockEntityExtractor(
            bedrock_runtime(settings),
            model_id=settings.bedrock.extraction_model_id,
            max_tokens=settings.bedrock.extraction_max_tokens,
        )
    raise SettingsError(f"extractor provider {provider!r} is not available in this build")


def local_intent_provider(settings: Settings) -> Literal["embedding", "rules"]:
    """The local classifier INTENT_PROVIDER selects: the rule-based one, or the learned one
    (`embedding`). `auto`, and `bedrock` before Haiku, is the learned one where the layer ships
    its weights for the configured embedder, the rules elsewhere (decision 0034): with Titan it
    would be trained at a cold start, hundreds of embedding calls, which IntentAnalysis has no
    grant for."""
    provider = settings.intent.provider
    if provider in ("auto", "bedrock"):
        from heirloom.domain.intent_model import has_shipped_weights

        shipped = has_shipped_weights(embedding_model_id(settings), settings.embedding.dimension)
        return "embedding" if shipped else "rules"
    return "rules" if provider == "rules" else "embedding"


def build_local_intent_classifier(settings: Settings, embedder: Embedder | None) -> IntentClassifier:
    """The learned classifier over `embedder`'s vectors (weights shipped in the layer or trained
    from config/intents at first use, kept per model id), or the rule-based one
    (`local_intent_provider`)."""
    if embedder is None or local_intent_provider(settings) == "rules":
        return RULES
    from pathlib import Path

    from heirloom.domain.intent_step import EmbeddingIntentClassifier

    directory = settings.intent.model_cache_dir
    return EmbeddingIntentClassifier(embedder, _intent_models(Path(directory) if directory else None))


@lru_cache(maxsize=4)
def _intent_models(directory: Path | None) -> IntentModelCache:
    from heirloom.domain.intent_model import IntentModelCache

    return IntentModelCache(directory)


def build_intent_classifier(settings: Settings, local: IntentClassifier = RULES) -> IntentClassifier:
    """The local classifier, or Claude Haiku after it. The intent budget (INTENT_BUDGET_MS, read
    here only) is the model call's deadline and its read timeout, without retries: the local
    classifier's result is the fallback."""
    provider = settings.intent.provider
    if provider in ("auto", "rules", "embedding"):
        return local
    if provider == "bedrock":
        from heirloom.adapters.bedrock import BedrockIntentClassifier

        budget_s = settings.resilience.intent_budget_ms / 1000
        return BedrockIntentClassifier(
            bedrock_runtime(settings, read_timeout_s=budget_s, max_attempts=1),
            model_id=settings.bedrock.intent_model_id,
            max_tokens=settings.bedrock.intent_max_tokens,
            budget_s=budget_s,
        )
    raise SettingsError(f"intent provider {provider!r} is not available in this build")


def build_rerank_stage(settings: Settings) -> RerankStage | None:
    """The reranking stage of RankAssemble, or None when RERANKER=off. Bedrock's client has the
    stage's budget as its timeouts and no retries: the stage gives up instead."""
    r = settings.rerank
    if r.reranker == "off":
        return None
    from heirloom.adapters.rerank import BedrockReranker, LexicalReranker, rerank_client
    from heirloom.domain.rerank import RerankStage
    from heirloom.ports import Reranker

    budget_s = r.budget_ms / 1000
    reranker: Reranker
    if r.reranker == "lexical":
        reranker = LexicalReranker()
    else:
        client = rerank_client(settings.bedrock.region, budget_s=budget_s)
        reranker = BedrockReranker(client, model_id=r.model_id, region=client.meta.region_name or "")
    return RerankStage(reranker, top_n=r.top_n, budget_s=budget_s)


@lru_cache(maxsize=1)
def _spacy_extractor() -> EntityExtractor:
    from heirloom.adapters.spacy.extractor import SpacyEntityExtractor

    return SpacyEntityExtractor()


def build_breaker_store(settings: Settings) -> BreakerStore:
    """The breaker's state: in DynamoDB when BREAKER_TABLE is set (shared by every container),
    else in this process."""
    table = settings.resilience.breaker_table
    if not table:
        from heirloom.domain.breaker import InMemoryBreakerStore

        return InMemoryBreakerStore()
    from heirloom.adapters.dynamodb import DynamoBreakerStore

    return DynamoBreakerStore(table)


def build_object_store() -> ObjectStore:
    from heirloom.adapters.s3 import S3ObjectStore

    return S3ObjectStore()


def build_ingestion_starter(settings: Settings) -> Callable[[UUID], None] | None:
    """Starts the ingestion workflow for a story; None (no INGEST_STATE_MACHINE_ARN): stories are
    processed inline."""
    arn = settings.workflow.ingest_state_machine_arn
    if not arn:
        return None
    from heirloom.adapters.stepfunctions import StepFunctionsIngestionStarter

    return StepFunctionsIngestionStarter(arn)


def build_backfill_runs() -> BackfillRuns:
    from heirloom.adapters.stepfunctions import StepFunctionsBackfillRuns

    return StepFunctionsBackfillRuns()


def build_connections_workflow(settings: Settings) -> ConnectionsWorkflow:
    arn = settings.workflow.connections_state_machine_arn
    if not arn:
        raise SettingsError("CONNECTIONS_STATE_MACHINE_ARN is not set")
    from heirloom.adapters.stepfunctions import StepFunctionsConnectionsWorkflow

    return StepFunctionsConnectionsWorkflow(arn)


def build_context_workflow(settings: Settings) -> ContextWorkflow:
    arn = settings.workflow.context_state_machine_arn
    if not arn:
        raise SettingsError("CONTEXT_STATE_MACHINE_ARN is not set")
    from heirloom.adapters.stepfunctions import StepFunctionsContextWorkflow

    return StepFunctionsContextWorkflow(arn)
