"""Settings: one frozen model per concern, read from the environment once and cached.

Domain code never reads os.environ; handlers and the local CLI build settings here and pass
them down.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

PREFIX_PATTERN = re.compile(r"[a-z0-9_]+")


class SettingsError(ValueError):
    """Missing or contradictory settings, reported at cold start."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def env(*names: str, default: Any, **constraints: Any) -> Any:
    """A setting's field: its default and the environment variables that set it (the first
    that is set and not empty wins), declared once, here."""
    return Field(default=default, json_schema_extra={"env": list(names)}, **constraints)


class DatabaseSettings(_Frozen):
    """One way to connect: a libpq URI (local, tests), a Secrets Manager secret in RDS's shape,
    or an IAM auth token. DB_HOST / DB_PORT / DB_NAME override the secret's host, port and
    dbname (e.g. the RDS Proxy endpoint instead of the cluster's)."""

    #: libpq URI; empty means the embedded local PostgreSQL (or a secret / IAM auth below)
    url: str = env("DATABASE_URL", default="")
    statement_timeout_ms: int = env("DB_STATEMENT_TIMEOUT_MS", default=5000, ge=10, le=600_000)
    #: Secrets Manager secret {"host","port","username","password","dbname"} (RDS's JSON shape)
    secret_arn: str = env("DB_SECRET_ARN", default="")
    #: connect with `rds.generate_db_auth_token` (rds-db:connect) instead of a password
    iam_auth: bool = env("DB_IAM_AUTH", default=False)
    host: str = env("DB_HOST", default="")
    port: int | None = env("DB_PORT", default=None, ge=1, le=65535)
    name: str = env("DB_NAME", default="")
    user: str = env("DB_USER", default="")
    #: TLS for secret / IAM connections (IAM auth and RDS Proxy with require_tls need it)
    sslmode: Literal["require", "verify-ca", "verify-full"] = env("DB_SSLMODE", default="require")
    #: CA bundle for verify-ca / verify-full (e.g. the RDS global bundle shipped in a layer)
    sslrootcert: str = env("DB_SSLROOTCERT", default="")
    #: how long a fetched secret is reused before Secrets Manager is asked again
    secret_max_age_s: int = env("DB_SECRET_MAX_AGE_S", default=300, ge=0, le=86_400)
    connect_timeout_s: int = env("DB_CONNECT_TIMEOUT_S", default=5, ge=1, le=60)

    @property
    def mode(self) -> Literal["url", "secret", "iam", "none"]:
        if self.url:
            return "url"
        if self.secret_arn:
            return "secret"
        return "iam" if self.iam_auth else "none"

    @model_validator(mode="after")
    def _one_way_to_connect(self) -> DatabaseSettings:
        chosen = [
            name
            for name, on in (
                ("DATABASE_URL", bool(self.url)),
                ("DB_SECRET_ARN", bool(self.secret_arn)),
                ("DB_IAM_AUTH", self.iam_auth),
            )
            if on
        ]
        if len(chosen) > 1:
            raise ValueError(f"{' and '.join(chosen)} are both set: choose one way to connect")
        parts = [
            name
            for name, value in (
                ("DB_HOST", self.host),
                ("DB_PORT", self.port),
                ("DB_NAME", self.name),
                ("DB_USER", self.user),
                ("DB_SSLROOTCERT", self.sslrootcert),
            )
            if value
        ]
        if self.url and parts:
            raise ValueError(
                f"{', '.join(parts)} apply only with DB_SECRET_ARN or DB_IAM_AUTH: "
                "DATABASE_URL carries its own host, port, database and user"
            )
        if self.iam_auth:
            missing = [
                n
                for n, v in (("DB_HOST", self.host), ("DB_NAME", self.name), ("DB_USER", self.user))
                if not v
            ]
            if missing:
                raise ValueError(f"DB_IAM_AUTH=true needs {', '.join(missing)}")
        if self.secret_arn and self.user:
            raise ValueError("DB_USER does not apply with DB_SECRET_ARN: the secret's username is used")
        if self.sslmode in ("verify-ca", "verify-full") and not self.sslrootcert:
            raise ValueError(f"DB_SSLMODE={self.sslmode} needs DB_SSLROOTCERT (the RDS CA bundle)")
        return self


#: a Neptune endpoint: a bare host name (the cluster's `Endpoint` attribute, as CDK passes it),
#: `host:port`, or a URL `https://host:port` (`http://127.0.0.1:port` for the local server)
NEPTUNE_ENDPOINT_PATTERN = re.compile(r"(?:(https?)://)?([A-Za-z0-9.-]+)(?::(\d{1,5}))?/?")


class GraphSettings(_Frozen):
    env_prefix: str = env("GRAPH_ENV_PREFIX", default="local")
    #: FalkorDB graph name (local) / unused on Neptune
    graph_name: str = env("FALKOR_GRAPH", default="heirloom")
    #: unix socket of the local FalkorDB; empty means the embedded local stack's
    falkor_socket: str = env("FALKOR_SOCKET", default="")
    #: FalkorDB client timeouts: a hung or stopped server is an error, never a wait without end
    #: (the steps' own deadlines stay shorter; the socket timeout leaves bulk writes room)
    falkor_connect_timeout_s: float = env("FALKOR_CONNECT_TIMEOUT_S", default=1.0, gt=0, le=60)
    falkor_socket_timeout_s: float = env("FALKOR_SOCKET_TIMEOUT_S", default=10.0, gt=0, le=600)
    augmentation_enabled: bool = env("GRAPH_AUGMENTATION_ENABLED", default=True)
    #: `auto`: Neptune when NEPTUNE_ENDPOINT is set, else FalkorDB; `none`: no graph store at all
    #: (a deployment without Neptune: writes are dropped, reads are empty; needs
    #: GRAPH_AUGMENTATION_ENABLED=false, so answers are vector-only and say the graph was skipped)
    provider: Literal["auto", "none"] = env("GRAPH_PROVIDER", default="auto")
    #: Neptune's openCypher endpoint; set, the graph is Neptune (and FALKOR_SOCKET must be empty)
    neptune_endpoint: str = env("NEPTUNE_ENDPOINT", default="")
    #: used when the endpoint names no port
    neptune_port: int = env("NEPTUNE_PORT", default=8182, ge=1, le=65535)
    #: SigV4 signing region (service `neptune-db`)
    neptune_region: str = env("NEPTUNE_REGION", "AWS_REGION", "AWS_DEFAULT_REGION", default="")
    #: sign requests with the container's IAM credentials (clusters with IAM auth enabled)
    neptune_iam_auth: bool = env("NEPTUNE_IAM_AUTH", default=True)
    neptune_connect_timeout_s: float = env("NEPTUNE_CONNECT_TIMEOUT_S", default=1.0, gt=0, le=60)
    neptune_read_timeout_s: float = env("NEPTUNE_READ_TIMEOUT_S", default=3.0, gt=0, le=300)
    #: retries of throttling / concurrent-modification errors and refused connections
    neptune_max_retries: int = env("NEPTUNE_MAX_RETRIES", default=2, ge=0, le=10)

    @field_validator("env_prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        if not PREFIX_PATTERN.fullmatch(value):
            raise ValueError(f"graph prefix {value!r} must match [a-z0-9_]+")
        return value

    @model_validator(mode="after")
    def _no_graph_no_augmentation(self) -> GraphSettings:
        if self.provider == "none" and (
            self.augmentation_enabled or self.neptune_endpoint or self.falkor_socket
        ):
            raise ValueError(
                "GRAPH_PROVIDER=none needs GRAPH_AUGMENTATION_ENABLED=false and no NEPTUNE_ENDPOINT or FALKOR_SOCKET"
            )
        return self

    @field_validator("neptune_endpoint")
    @classmethod
    def _endpoint(cls, value: str) -> str:
        value = value.strip()
        if value and not NEPTUNE_ENDPOINT_PATTERN.fullmatch(value):
            raise ValueError(f"NEPTUNE_ENDPOINT {value!r} must be a host, host:port or http(s)://host:port")
        return value

    @property
    def neptune_url(self) -> str:
        """The endpoint as `scheme://host:port` (https and `neptune_port` unless it says otherwise)."""
        match = NEPTUNE_ENDPOINT_PATTERN.fullmatch(self.neptune_endpoint)
        if not match:
            return ""
        scheme, host, port = match.groups()
        return f"{scheme or 'https'}://{host}:{port or self.neptune_port}"


#: the output sizes Titan Text Embeddings v2 offers
TITAN_DIMENSIONS: tuple[int, ...] = (256, 512, 1024)
#: all-MiniLM-L6-v2, the local embedder
LOCAL_DIMENSION = 384


class EmbeddingSettings(_Frozen):
    provider: Literal["local", "fake", "bedrock"] = env("EMBEDDING_PROVIDER", default="local")
    #: without EMBEDDING_DIM, the provider's own (`_default_dimension`)
    dimension: int = env("EMBEDDING_DIM", default=LOCAL_DIMENSION, ge=8, le=4096)

    @model_validator(mode="before")
    @classmethod
    def _default_dimension(cls, data: Any) -> Any:
        if (
            isinstance(data, dict)
            and data.get("dimension") in (None, "")
            and data.get("provider") == "bedrock"
        ):
            return {**data, "dimension": max(TITAN_DIMENSIONS)}
        return data

    @model_validator(mode="after")
    def _dimension_fits_provider(self) -> EmbeddingSettings:
        if self.provider == "bedrock" and self.dimension not in TITAN_DIMENSIONS:
            raise ValueError(
                f"EMBEDDING_PROVIDER=bedrock (Titan Text Embeddings v2) makes "
                f"{', '.join(map(str, TITAN_DIMENSIONS))}-dimension vectors, not EMBEDDING_DIM={self.dimension}"
            )
        if self.provider == "local" and self.dimension != LOCAL_DIMENSION:
            raise ValueError(
                f"EMBEDDING_PROVIDER=local (all-MiniLM-L6-v2) makes {LOCAL_DIMENSION}-dimension vectors, "
                f"not EMBEDDING_DIM={self.dimension}"
            )
        return self


class ExtractionSettings(_Frozen):
    #: local: spaCy + rules; none: structural graph only; bedrock: Claude Haiku
    provider: Literal["local", "none", "bedrock"] = env("EXTRACTOR_PROVIDER", default="local")


class IntentSettings(_Frozen):
    #: rules: gazetteer + the rule-based classifier, no embedder; auto: the learned classifier
    #: where the layer ships its weights for the configured embedder (model id and dimension),
    #: else the rules (decision 0034; built in the background, the rules answering until it is
    #: ready); embedding: the
    #: learned classifier over the query's embedding (trained from config/intents at first use
    #: unless shipped); bedrock: the embedding classifier, then Claude Haiku with the gazetteer's
    #: matches as hints (falls back to the embedding classifier's result on any failure)
    provider: Literal["auto", "embedding", "rules", "bedrock"] = env("INTENT_PROVIDER", default="auto")
    #: a directory for the learned classifier's weights per embedder model ("": in memory only)
    model_cache_dir: str = env("INTENT_MODEL_CACHE_DIR", default="")


#: The one place naming the Bedrock models (the CDK app grants and configures these too).
#: Claude Haiku 4.5 (AWS model card "Claude Haiku 4.5"); on demand it is invoked through a
#: cross-region inference profile, `<geo>.<model id>`: the settings default to the US one.
HAIKU_MODEL_ID = "anthropic.claude-haiku-4-5-20251001-v1:0"
HAIKU_INFERENCE_PROFILE = f"us.{HAIKU_MODEL_ID}"
TITAN_EMBED_MODEL_ID = "amazon.titan-embed-text-v2:0"
_MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]*")


class BedrockSettings(_Frozen):
    """Bedrock models and the bedrock-runtime client (one per container)."""

    #: empty: the Lambda's AWS_REGION
    region: str = env("BEDROCK_REGION", default="")
    embed_model_id: str = env("BEDROCK_EMBED_MODEL_ID", default=TITAN_EMBED_MODEL_ID)
    intent_model_id: str = env("BEDROCK_INTENT_MODEL_ID", default=HAIKU_INFERENCE_PROFILE)
    extraction_model_id: str = env("BEDROCK_EXTRACTION_MODEL_ID", default=HAIKU_INFERENCE_PROFILE)
    connect_timeout_s: float = env("BEDROCK_CONNECT_TIMEOUT_S", default=2.0, gt=0, le=60)
    #: ingestion calls (embedding chunks, extraction); intent uses INTENT_BUDGET_MS instead
    read_timeout_s: float = env("BEDROCK_READ_TIMEOUT_S", default=30.0, gt=0, le=300)
    #: attempts by botocore's own retry before a Throttled error reaches the workflow
    max_attempts: int = env("BEDROCK_MAX_ATTEMPTS", default=3, ge=1, le=10)
    retry_mode: Literal["standard", "adaptive", "legacy"] = env("BEDROCK_RETRY_MODE", default="standard")
    extraction_max_tokens: int = Field(default=4096, ge=256, le=8192)
    intent_max_tokens: int = Field(default=512, ge=64, le=4096)

    @field_validator("embed_model_id", "intent_model_id", "extraction_model_id")
    @classmethod
    def _model_id(cls, value: str) -> str:
        if not _MODEL_ID.fullmatch(value):
            raise ValueError(f"{value!r} is not a Bedrock model id, inference profile id or ARN")
        return value


#: Amazon Rerank 1.0 (Bedrock's Rerank API); cohere.rerank-v3-5:0 is the other model it offers
RERANK_MODEL_ID = "amazon.rerank-v1:0"


class RerankSettings(_Frozen):
    """The optional reranking stage of RankAssemble (heirloom.domain.rerank, docs/decisions/0013):
    the top candidates scored again against the question, within their own budget."""

    #: off: ranking alone; lexical: BM25 term overlap over the candidates' text, no model;
    #: bedrock: Bedrock's Rerank API with RERANK_MODEL_ID
    reranker: Literal["off", "lexical", "bedrock"] = env("RERANKER", default="off")
    #: how many of the best-ranked stories are scored again (the rest keep their order after them)
    top_n: int = env("RERANK_TOP_N", default=10, ge=2, le=100)
    #: the stage's deadline: slower, it gives up, keeps the order and marks the context degraded;
    #: at most 1500 ms, inside the RankAssemble Task's TimeoutSeconds (2 s)
    budget_ms: int = env("RERANK_BUDGET_MS", default=300, ge=10, le=1500)
    #: the Bedrock reranking model (a foundation model id; the stack grants this one)
    model_id: str = env("RERANK_MODEL_ID", default=RERANK_MODEL_ID)

    @field_validator("model_id")
    @classmethod
    def _model_id(cls, value: str) -> str:
        if not _MODEL_ID.fullmatch(value):
            raise ValueError(f"RERANK_MODEL_ID {value!r} is not a Bedrock model id")
        return value


class ChunkingSettings(_Frozen):
    max_tokens: int = env("CHUNK_MAX_TOKENS", default=500, ge=16, le=8000)


#: default of INTENT_BUDGET_MS (docs/design.md §10), also the intent adapter's own default
INTENT_BUDGET_MS = 500


class ResilienceSettings(_Frozen):
    """Budgets (docs/design.md §10) enforced where the work happens, and the breaker's shared
    state. The vector step and the whole request have no setting of their own: their hard caps
    are the ASL's Task and workflow `TimeoutSeconds`, and the 2 s target is the p95 alarm
    (docs/configuration.md, Budgets)."""

    #: DynamoDB table for the breaker; empty keeps the state in the container (local runs)
    breaker_table: str = env("BREAKER_TABLE", default="")
    breaker_failures: int = env("BREAKER_FAILURES", default=3, ge=1, le=100)
    breaker_cooldown_s: float = env("BREAKER_COOLDOWN_S", default=30.0, ge=0.0, le=3600.0)
    #: the intent model's deadline (adapters.factory.build_intent_classifier)
    intent_budget_ms: int = env("INTENT_BUDGET_MS", default=INTENT_BUDGET_MS, ge=10, le=30_000)
    #: the traversal's deadline (functions/graph_traversal)
    traversal_budget_ms: int = env("TRAVERSAL_BUDGET_MS", default=300, ge=10, le=30_000)
    #: graph queries of one traversal in flight at once (docs/decisions/0019); 1 is sequential
    traversal_concurrency: int = env("TRAVERSAL_CONCURRENCY", default=4, ge=1, le=16)
    vector_k: int = env("VECTOR_K", default=24, ge=1, le=200)
    gazetteer_ttl_s: float = env("GAZETTEER_TTL_S", default=300.0, ge=0.0, le=86_400.0)


class WorkflowSettings(_Frozen):
    #: the Express context-assembly state machine the API runs synchronously
    context_state_machine_arn: str = env("CONTEXT_STATE_MACHINE_ARN", default="")
    #: the Express story_connections state machine (opening connections, enrichment)
    connections_state_machine_arn: str = env("CONNECTIONS_STATE_MACHINE_ARN", default="")
    #: the ingest_story state machine story events start; empty processes stories inline
    ingest_state_machine_arn: str = env("INGEST_STATE_MACHINE_ARN", default="")
    #: EventBridge `source` of story events
    event_source: str = env("EVENT_SOURCE", default="heirloom.stories")


class CurationSettings(_Frozen):
    """Community rebuilds: the graph changes recorded since the last build (impact) that call for
    a partial or a full rebuild (docs/architecture.md#communities)."""

    partial_threshold: int = env("COMMUNITY_PARTIAL_THRESHOLD", default=20, ge=1, le=1_000_000)
    full_threshold: int = env("COMMUNITY_FULL_THRESHOLD", default=100, ge=1, le=1_000_000)
    #: community summaries the `general` intent adds to the context
    context_communities: int = env("COMMUNITY_CONTEXT_MAX", default=3, ge=0, le=20)

    @model_validator(mode="after")
    def _ordered(self) -> CurationSettings:
        if self.partial_threshold > self.full_threshold:
            raise ValueError("COMMUNITY_PARTIAL_THRESHOLD must not exceed COMMUNITY_FULL_THRESHOLD")
        return self


class RetrievalSettings(_Frozen):
    """Ranking choices that are not a persona's (docs/architecture.md#life-and-time-what-a-persona-reaches)."""

    #: recency decay per year of a story's age (since written or last updated), applied when the
    #: question asks for recent material or a recent persona asks an open question
    recency_decay: float = env("RECENCY_DECAY_RATE", default=0.1, ge=0.0, le=5.0)
    #: the requester's own conversation facts (docs/decisions/0018) a context may show
    conversation_facts: int = env("CONVERSATION_FACTS_CONTEXT_MAX", default=5, ge=0, le=20)
    #: bridge evidence (docs/decisions/0022), hybrid mode: the top stories whose specific
    #: entities bridge to other stories (0: off, and the traversal skips the bridge template;
    #: on since the second addendum: no category below vector on three datasets, gains on two)
    bridge_seeds: int = env("BRIDGE_SEEDS", default=2, ge=0, le=5)
    #: the rank the best bridged story is moved up to (0: no reserved slot)
    bridge_slot: int = env("BRIDGE_SLOT", default=0, ge=0, le=20)
    #: score bonus per unit of bridge evidence (1 / the candidates its entity bridges to): meets
    #: decision 0009's criterion in real runs up to 0.23 and adds a multi-hop question from 0.14
    #: (docs/evaluation.md): the middle of that window
    bridge_weight: float = env("BRIDGE_WEIGHT", default=0.18, ge=0.0, le=1.0)
    #: may a story only the graph reached (not embedding search) be bridged
    bridge_graph_only: bool = env("BRIDGE_GRAPH_ONLY", default=False)
    #: distinct top stories that must bridge to a story for it to count
    bridge_agree: int = env("BRIDGE_AGREE", default=2, ge=1, le=5)
    #: topic evidence (docs/decisions/0024), hybrid mode: score bonus for a story whose title
    #: names the entity the question names or describes, divided among the candidates whose
    #: titles name it (0: off)
    topic_weight: float = env("TOPIC_WEIGHT", default=0.0, ge=0.0, le=1.0)


class AmbientSettings(_Frozen):
    """Ambient memory (seed 003): prose lines about the known entities the message names, in
    their own section of the context (docs/architecture.md#ambient-memory)."""

    #: tokens the section may take (at most 5% of the request's budget); 0 turns it off
    token_budget: int = env("AMBIENT_TOKEN_BUDGET", default=200, ge=0, le=1000)
    #: lines at most
    max_lines: int = env("AMBIENT_MAX_LINES", default=5, ge=0, le=20)
    #: a line's support (1.0 a known record; 0.5 per readable story stating it, up to 1.0) must
    #: reach this
    min_score: float = env("AMBIENT_MIN_SCORE", default=0.5, ge=0.0, le=1.0)


class LocalStackSettings(_Frozen):
    #: where the embedded PostgreSQL and FalkorDB keep their data
    home: Path = env("HEIRLOOM_HOME", default=Path(".heirloom/local"))


class Settings(_Frozen):
    database: DatabaseSettings = DatabaseSettings()
    graph: GraphSettings = GraphSettings()
    embedding: EmbeddingSettings = EmbeddingSettings()
    chunking: ChunkingSettings = ChunkingSettings()
    extraction: ExtractionSettings = ExtractionSettings()
    intent: IntentSettings = IntentSettings()
    bedrock: BedrockSettings = BedrockSettings()
    rerank: RerankSettings = RerankSettings()
    resilience: ResilienceSettings = ResilienceSettings()
    workflow: WorkflowSettings = WorkflowSettings()
    curation: CurationSettings = CurationSettings()
    retrieval: RetrievalSettings = RetrievalSettings()
    ambient: AmbientSettings = AmbientSettings()
    local: LocalStackSettings = LocalStackSettings()


def _variables(field: Any) -> list[str]:
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    names = extra.get("env")
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


def _sections() -> dict[str, type[_Frozen]]:
    return {
        name: field.annotation
        for name, field in Settings.model_fields.items()
        if isinstance(field.annotation, type) and issubclass(field.annotation, _Frozen)
    }


def env_names() -> set[str]:
    """Every environment variable a setting reads."""
    return {
        n for section in _sections().values() for f in section.model_fields.values() for n in _variables(f)
    }


def _from_env(section: type[_Frozen], environ: Mapping[str, str]) -> dict[str, str]:
    """The raw values `environ` sets for a section: each field's first variable that is set and
    not empty (pydantic parses them: "true"/"false", numbers, paths)."""
    values: dict[str, str] = {}
    for name, field in section.model_fields.items():
        raw = next((environ[n] for n in _variables(field) if environ.get(n, "") != ""), None)
        if raw is not None:
            values[name] = raw
    return values


def settings_from_env(environ: Mapping[str, str]) -> Settings:
    """Build settings from environment variables: each setting's variable is declared on its
    field (`env(...)`), its default there too (docs/configuration.md lists them)."""
    try:
        return Settings(
            **{name: section(**_from_env(section, environ)) for name, section in _sections().items()}
        )
    except (ValueError, TypeError) as exc:
        raise SettingsError(f"invalid settings: {exc}") from exc


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return settings_from_env(os.environ)
