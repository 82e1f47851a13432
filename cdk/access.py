"""What each function may touch: the one explicit table, keyed by construct id.

A function folder that is not listed here still deploys (discovered from functions/), with its
logs, tracing and nothing else: no VPC, no data store, no model. Grants, environment variables and
network placement are all derived from its row, so a permission cannot be granted without the
matching configuration and vice versa.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Graph(Enum):
    NONE = "none"
    #: openCypher reads (neptune-db:ReadDataViaQuery), reader endpoint
    READ = "read"
    #: reads, MERGE/SET and DELETE (ingestion), writer endpoint
    WRITE = "write"


class Model(Enum):
    """Bedrock models, by what the code does with them."""

    #: embeddings (amazon.titan-embed-text-v2:0)
    EMBED = "embed"
    #: intent classification and entity extraction (Claude 3.5 Haiku)
    CLASSIFY = "classify"
    #: Bedrock's Rerank API with amazon.rerank-v1:0 (bedrock:Rerank, and InvokeModel on the model)
    RERANK = "rerank"


@dataclass(frozen=True)
class Access:
    #: PostgreSQL through RDS Proxy: the database secret and the proxy's security group
    database: bool = False
    graph: Graph = Graph.NONE
    models: frozenset[Model] = frozenset()
    #: the circuit-breaker table (GetItem / PutItem)
    breaker: bool = False
    #: the Powertools idempotency table (no function uses Powertools idempotency yet)
    idempotency: bool = False
    #: read and tag objects under the import prefix
    imports: bool = False
    #: states:StartSyncExecution on the context-assembly workflow (CONTEXT_STATE_MACHINE_ARN)
    start_context: bool = False
    #: states:StartSyncExecution on the story_connections workflow (CONNECTIONS_STATE_MACHINE_ARN)
    start_connections: bool = False
    #: states:StartExecution on the ingest_story workflow (INGEST_STATE_MACHINE_ARN)
    start_ingestion: bool = False
    #: Claude Haiku for intent classification when `heirloom:intentProvider=bedrock` (the grant
    #: and INTENT_PROVIDER come together)
    intent_model: bool = False
    #: the reranking stage: RERANKER from `heirloom:reranker`, and Bedrock's Rerank API granted
    #: when that is `bedrock` (the grant and RERANKER come together)
    rerank_model: bool = False
    #: states:ListExecutions on the backfill workflow (its one-run-at-a-time check)
    list_backfill: bool = False
    #: invoked asynchronously (EventBridge, S3): gets an SQS dead-letter queue
    asynchronous: bool = False
    #: for functions no workflow Task calls; workflow tasks take the Task's TimeoutSeconds
    timeout_s: int = 30
    memory_mb: int = 512

    @property
    def in_vpc(self) -> bool:
        return self.database or self.graph is not Graph.NONE


NO_ACCESS = Access()
EMBED = frozenset({Model.EMBED})
CLASSIFY = frozenset({Model.CLASSIFY})

#: Each row is what the handler's code path calls (heirloom.services / domain), nothing more.
ACCESS: dict[str, Access] = {
    # API Gateway -> runs the Express context and story_connections workflows synchronously; the
    # curation routes read the caller's role and write merges in PostgreSQL and the graph; the
    # conversation routes extract a message's facts (spaCy or Claude Haiku), list and delete the
    # caller's own conversations and facts (PostgreSQL), and start the ingestion of a story made
    # from a conversation
    "Api": Access(
        start_context=True,
        start_connections=True,
        start_ingestion=True,
        database=True,
        graph=Graph.WRITE,
        models=CLASSIFY,
        timeout_s=22,
        memory_mb=1024,
    ),
    # -- context_assembly (Express) --
    # gazetteer: the legacy's persons (PostgreSQL) and graph entities; rule-based classifier
    "IntentAnalysis": Access(database=True, graph=Graph.READ, breaker=True, intent_model=True),
    "VectorSearch": Access(database=True, models=EMBED, memory_mb=1024),
    "GraphTraversal": Access(graph=Graph.READ, breaker=True),
    "AccessFilter": Access(database=True),
    "RankAssemble": Access(rerank_model=True, memory_mb=1024),
    # -- story_connections (Express): IntentAnalysis, GraphTraversal and AccessFilter above, and --
    # the story and the caller's read scope (PostgreSQL)
    "ConnectionsPlan": Access(database=True),
    "ConnectionsAssemble": Access(),
    # -- story events and imports (asynchronous) --
    # records and structural graph nodes, and a leaving member's conversation memory deleted
    # (PostgreSQL); chunking/extraction is the ingest_story workflow's
    "StoryEvents": Access(
        database=True, graph=Graph.WRITE, start_ingestion=True, asynchronous=True, timeout_s=60
    ),
    # ingests inline: store, chunk + embed, extract, graph
    "IngestObject": Access(
        database=True,
        graph=Graph.WRITE,
        models=EMBED | CLASSIFY,
        imports=True,
        asynchronous=True,
        timeout_s=300,
        memory_mb=1024,
    ),
    # -- ingest_story (Express) and backfill (Standard) --
    "ChunkEmbed": Access(database=True, models=EMBED, memory_mb=1024),
    "ExtractEntities": Access(database=True, models=CLASSIFY, memory_mb=1024),
    # re-links the stories that write a name the sync established (decision 0040)
    "GraphSync": Access(database=True, graph=Graph.WRITE, start_ingestion=True),
    "IngestFailed": Access(database=True),
    "BackfillPlan": Access(database=True, list_backfill=True),
    # -- communities (Standard, scheduled): reads the graph, writes summaries in PostgreSQL --
    "CommunitiesRebuild": Access(database=True, graph=Graph.READ, memory_mb=1024),
}


def access_for(construct_id: str) -> Access:
    """The row for a function; unknown functions get no extra permissions."""
    return ACCESS.get(construct_id, NO_ACCESS)
