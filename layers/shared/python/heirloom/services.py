"""Ports built once per Lambda container, lazily: `adapters/factory.py` chooses each from the
settings, `Services` only caches what it built. Handlers take an optional
`services=` argument so tests inject local engines or fakes instead.

Each port's modules (adapters, their drivers, the domain types they need) are imported when the
port is first built, so a function imports only what it uses: the graph traversal never loads
psycopg, the rank/assemble step neither psycopg nor a graph client."""

from __future__ import annotations

import threading
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING

from heirloom.observability import trace_library_calls
from heirloom.settings import Settings, get_settings

if TYPE_CHECKING:
    from collections.abc import Callable
    from uuid import UUID

    from heirloom.adapters.postgres import PgDatabase
    from heirloom.domain.breaker import CircuitBreaker
    from heirloom.domain.ingestion import IngestionPorts
    from heirloom.domain.intent_step import GazetteerCache, IntentClassifier
    from heirloom.domain.rerank import RerankStage
    from heirloom.domain.retrieval import SubjectCache
    from heirloom.domain.traversal import NeighbourhoodCache
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
        StoryStore,
        Tokenizer,
        VectorIndex,
    )


class Services:
    def __init__(self, settings: Settings):
        self.settings = settings
        self._embedder_lock = threading.Lock()
        self._built_embedder: Embedder | None = None

    @cached_property
    def db(self) -> PgDatabase:
        from heirloom.adapters import factory

        return factory.build_database(self.settings)

    @cached_property
    def stories(self) -> StoryStore:
        from heirloom.adapters import factory

        return factory.build_story_store(self.db)

    @cached_property
    def curation(self) -> CurationStore:
        from heirloom.adapters import factory

        # beside an injected PostgreSQL story store, on its database
        db = getattr(self.__dict__.get("stories"), "db", None)
        return factory.build_curation_store(db if db is not None else self.db)

    @cached_property
    def conversations(self) -> ConversationStore:
        from heirloom.adapters import factory

        # beside an injected PostgreSQL story store, on its database (as curation)
        db = getattr(self.__dict__.get("stories"), "db", None)
        return factory.build_conversation_store(db if db is not None else self.db)

    @cached_property
    def embedder(self) -> Embedder:
        """Built once even when the intent warm-up thread and a handler ask for it together
        (`cached_property` takes no lock from Python 3.12, the Lambda runtime's version)."""
        from heirloom.adapters import factory

        with self._embedder_lock:
            if self._built_embedder is None:
                self._built_embedder = factory.build_embedder(self.settings)
            return self._built_embedder

    @cached_property
    def vectors(self) -> VectorIndex:
        from heirloom.adapters import factory

        # an embedder already built (or injected) names the model; else the settings do
        embedder = self.__dict__.get("embedder")
        return factory.build_vector_index(
            self.db, embedder if embedder is not None else factory.embedding_model_id(self.settings)
        )

    @cached_property
    def graph(self) -> GraphStore:
        from heirloom.adapters import factory

        return factory.build_graph(self.settings)

    @cached_property
    def tokenizer(self) -> Tokenizer:
        from heirloom.adapters.tokenizer import TiktokenTokenizer

        return TiktokenTokenizer()

    @cached_property
    def rerank(self) -> RerankStage | None:
        """RankAssemble's reranking stage; None when RERANKER=off."""
        from heirloom.adapters import factory

        return factory.build_rerank_stage(self.settings)

    @cached_property
    def breaker_store(self) -> BreakerStore:
        from heirloom.adapters import factory

        return factory.build_breaker_store(self.settings)

    @cached_property
    def breaker(self) -> CircuitBreaker:
        from heirloom.domain.breaker import CircuitBreaker

        r = self.settings.resilience
        return CircuitBreaker(
            self.breaker_store, failure_threshold=r.breaker_failures, cooldown_s=r.breaker_cooldown_s
        )

    @cached_property
    def extractor(self) -> EntityExtractor | None:
        from heirloom.adapters import factory

        return factory.build_extractor(self.settings)

    @cached_property
    def ingestion(self) -> IngestionPorts:
        from heirloom.domain.ingestion import IngestionPorts

        extractor = self.extractor
        return IngestionPorts(
            stories=self.stories,
            vectors=self.vectors,
            graph=self.graph,
            embedder=self.embedder,
            tokenizer=self.tokenizer,
            chunk_max_tokens=self.settings.chunking.max_tokens,
            extractor=extractor,
            extractor_version=str(getattr(extractor, "version", "")) if extractor else "",
            curation=self.curation,
            conversations=self.conversations,
        )

    @cached_property
    def objects(self) -> ObjectStore:
        from heirloom.adapters import factory

        return factory.build_object_store()

    @cached_property
    def start_ingestion(self) -> Callable[[UUID], None] | None:
        from heirloom.adapters import factory

        return factory.build_ingestion_starter(self.settings)

    @cached_property
    def backfill_runs(self) -> BackfillRuns:
        from heirloom.adapters import factory

        return factory.build_backfill_runs()

    @cached_property
    def neighbourhoods(self) -> NeighbourhoodCache:
        from heirloom.domain.traversal import NeighbourhoodCache

        return NeighbourhoodCache(self.settings.resilience.gazetteer_ttl_s)

    @cached_property
    def local_intent_classifier(self) -> IntentClassifier:
        """The learned classifier over the query's embedding, built with the embedder in the
        background from the first call (the rules answer until then); or the rule-based one."""
        from heirloom.adapters import factory
        from heirloom.domain.intent_step import RULES, WarmingIntentClassifier

        if factory.local_intent_provider(self.settings) == "rules":  # no embedder needed
            return RULES
        return WarmingIntentClassifier(
            lambda: factory.build_local_intent_classifier(self.settings, self.embedder)
        )

    @cached_property
    def intent_classifier(self) -> IntentClassifier:
        from heirloom.adapters import factory

        return factory.build_intent_classifier(self.settings, self.local_intent_classifier)

    @cached_property
    def gazetteers(self) -> GazetteerCache:
        from heirloom.domain.intent_step import GazetteerCache

        return GazetteerCache(self.settings.resilience.gazetteer_ttl_s)

    @cached_property
    def subjects(self) -> SubjectCache:
        from heirloom.domain.retrieval import SubjectCache

        return SubjectCache(self.settings.resilience.gazetteer_ttl_s)

    @cached_property
    def context_workflow(self) -> ContextWorkflow:
        from heirloom.adapters import factory

        return factory.build_context_workflow(self.settings)

    @cached_property
    def connections_workflow(self) -> ConnectionsWorkflow:
        from heirloom.adapters import factory

        return factory.build_connections_workflow(self.settings)


@lru_cache(maxsize=1)
def default_services() -> Services:
    trace_library_calls()
    return Services(get_settings())
