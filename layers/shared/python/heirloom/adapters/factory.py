"""One factory per port: the implementation is chosen from settings, validated at cold start."""

from __future__ import annotations

from functools import lru_cache

from heirloom.adapters.postgres import PgDatabase, PgStoryStore, PgVectorIndex
from heirloom.domain.extraction import EntityExtractor
from heirloom.ports import Embedder, GraphStore
from heirloom.settings import Settings, SettingsError


def build_embedder(settings: Settings) -> Embedder:
    provider = settings.embedding.provider
    if provider == "local":
        embedder: Embedder = _onnx_embedder()
    elif provider == "fake":
        from heirloom.adapters.embedders import HashingEmbedder

        embedder = HashingEmbedder(settings.embedding.dimension)
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


def build_database(settings: Settings) -> PgDatabase:
    if not settings.database.url:
        raise SettingsError("DATABASE_URL is not set")
    return PgDatabase(
        settings.database.url,
        statement_timeout_ms=settings.database.statement_timeout_ms,
        embedding_dim=settings.embedding.dimension,
    )


def build_story_store(db: PgDatabase) -> PgStoryStore:
    return PgStoryStore(db)


def build_vector_index(db: PgDatabase, embedder: Embedder) -> PgVectorIndex:
    return PgVectorIndex(db, model_id=embedder.model_id)


def build_graph(settings: Settings) -> GraphStore:
    if not settings.graph.falkor_socket:
        raise SettingsError("FALKOR_SOCKET is not set (and no Neptune endpoint is configured)")
    from heirloom.adapters.falkor import FalkorGraphStore

    return FalkorGraphStore(
        settings.graph.falkor_socket, settings.graph.graph_name, settings.graph.env_prefix
    )


def build_extractor(settings: Settings) -> EntityExtractor | None:
    provider = settings.extraction.provider
    if provider == "none":
        return None
    if provider == "local":
        return _spacy_extractor()
    raise SettingsError(f"extractor provider {provider!r} is not available in this build")


@lru_cache(maxsize=1)
def _spacy_extractor() -> EntityExtractor:
    from heirloom.adapters.spacy_extractor import SpacyEntityExtractor

    return SpacyEntityExtractor()
