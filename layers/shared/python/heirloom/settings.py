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
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

PREFIX_PATTERN = re.compile(r"[a-z0-9_]+")


class SettingsError(ValueError):
    """Missing or contradictory settings, reported at cold start."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DatabaseSettings(_Frozen):
    """One way to connect: a libpq URI (local, tests), a Secrets Manager secret in RDS's shape,
    or an IAM auth token. DB_HOST / DB_PORT / DB_NAME override the secret's host, port and
    dbname (e.g. the RDS Proxy endpoint instead of the cluster's)."""

    #: libpq URI; empty means the embedded local PostgreSQL (or a secret / IAM auth below)
    url: str = ""
    statement_timeout_ms: int = Field(default=5000, ge=10, le=600_000)
    #: Secrets Manager secret {"host","port","username","password","dbname"} (RDS's JSON shape)
    secret_arn: str = ""
    #: connect with `rds.generate_db_auth_token` (rds-db:connect) instead of a password
    iam_auth: bool = False
    host: str = ""
    port: int | None = Field(default=None, ge=1, le=65535)
    name: str = ""
    user: str = ""
    #: TLS for secret / IAM connections (IAM auth and RDS Proxy with require_tls need it)
    sslmode: Literal["require", "verify-ca", "verify-full"] = "require"
    #: CA bundle for verify-ca / verify-full (e.g. the RDS global bundle shipped in a layer)
    sslrootcert: str = ""
    #: how long a fetched secret is reused before Secrets Manager is asked again
    secret_max_age_s: int = Field(default=300, ge=0, le=86_400)
    connect_timeout_s: int = Field(default=5, ge=1, le=60)

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
    env_prefix: str = "local"
    #: FalkorDB graph name (local) / unused on Neptune
    graph_name: str = "heirloom"
    #: unix socket of the local FalkorDB; empty means the embedded local stack's
    falkor_socket: str = ""
    #: FalkorDB client timeouts: a hung or stopped server is an error, never a wait without end
    #: (the steps' own deadlines stay shorter; the socket timeout leaves bulk writes room)
    falkor_connect_timeout_s: float = Field(default=1.0, gt=0, le=60)
    falkor_socket_timeout_s: float = Field(default=10.0, gt=0, le=600)
    augmentation_enabled: bool = True
    #: `auto`: Neptune when NEPTUNE_ENDPOINT is set, else FalkorDB; `none`: no graph store at all
    #: (a deployment without Neptune: writes are dropped, reads are empty; needs
    #: GRAPH_AUGMENTATION_ENABLED=false, so answers are vector-only and say the graph was skipped)
    provider: Literal["auto", "none"] = "auto"
    #: Neptune's openCypher endpoint; set, the graph is Neptune (and FALKOR_SOCKET must be empty)
    neptune_endpoint: str = ""
    #: used when the endpoint names no port
    neptune_port: int = Field(default=8182, ge=1, le=65535)
    #: SigV4 signing region (service `neptune-db`)
    neptune_region: str = ""
    #: sign requests with the container's IAM credentials (clusters with IAM auth enabled)
    neptune_iam_auth: bool = True
    neptune_connect_timeout_s: float = Field(default=1.0, gt=0, le=60)
    neptune_read_timeout_s: float = Field(default=3.0, gt=0, le=300)
    #: retries of throttling / concurrent-modification errors and refused connections
    neptune_max_retries: int = Field(default=2, ge=0, le=10)

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


class EmbeddingSettings(_Frozen):
    provider: Literal["local", "fake", "bedrock"] = "local"
    dimension: int = Field(default=384, ge=8, le=4096)

    @model_validator(mode="after")
    def _dimension_fits_provider(self) -> EmbeddingSettings:
        if self.provider == "bedrock" and self.dimension not in TITAN_DIMENSIONS:
            raise ValueError(
                f"EMBEDDING_PROVIDER=bedrock (Titan Text Embeddings v2) makes "
                f"{', '.join(map(str, TITAN_DIMENSIONS))}-dimension vectors, not EMBEDDING_DIM={self.dimension}"
            )
        if self.provider == "local" and self.dimension != 384:
            raise ValueError(
                f"EMBEDDING_PROVIDER=local (all-MiniLM-L6-v2) makes 384-dimension vectors, "
                f"not EMBEDDING_DIM={self.dimension}"
            )
        return self


class ExtractionSettings(_Frozen):
    #: local: spaCy + rules; none: structural graph only; bedrock: Claude Haiku
    provider: Literal["local", "none", "bedrock"] = "local"


class IntentSettings(_Frozen):
    #: embedding: gazetteer + the learned classifier over the query's embedding (trained from
    #: config/intents at first use); rules: gazetteer + the rule-based classifier, no embedder;
    #: bedrock: the embedding classifier, then Claude Haiku with the gazetteer's matches as hints
    #: (falls back to the embedding classifier's result on any failure)
    provider: Literal["embedding", "rules", "bedrock"] = "rules"
    #: a directory for the learned classifier's weights per embedder model ("": in memory only)
    model_cache_dir: str = ""


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
    region: str = ""
    embed_model_id: str = TITAN_EMBED_MODEL_ID
    intent_model_id: str = HAIKU_INFERENCE_PROFILE
    extraction_model_id: str = HAIKU_INFERENCE_PROFILE
    connect_timeout_s: float = Field(default=2.0, gt=0, le=60)
    #: ingestion calls (embedding chunks, extraction); intent uses INTENT_BUDGET_MS instead
    read_timeout_s: float = Field(default=30.0, gt=0, le=300)
    #: attempts by botocore's own retry before a Throttled error reaches the workflow
    max_attempts: int = Field(default=3, ge=1, le=10)
    retry_mode: Literal["standard", "adaptive", "legacy"] = "standard"
    extraction_max_tokens: int = Field(default=4096, ge=256, le=8192)
    intent_max_tokens: int = Field(default=512, ge=64, le=4096)

    @field_validator("embed_model_id", "intent_model_id", "extraction_model_id")
    @classmethod
    def _model_id(cls, value: str) -> str:
        if not _MODEL_ID.fullmatch(value):
            raise ValueError(f"{value!r} is not a Bedrock model id, inference profile id or ARN")
        return value


class ChunkingSettings(_Frozen):
    max_tokens: int = Field(default=500, ge=16, le=8000)


#: default of INTENT_BUDGET_MS (docs/design.md §10), also the intent adapter's own default
INTENT_BUDGET_MS = 500


class ResilienceSettings(_Frozen):
    """Budgets (docs/design.md §10) enforced where the work happens, and the breaker's shared
    state. The vector step and the whole request have no setting of their own: their hard caps
    are the ASL's Task and workflow `TimeoutSeconds`, and the 2 s target is the p95 alarm
    (docs/configuration.md, Budgets)."""

    #: DynamoDB table for the breaker; empty keeps the state in the container (local runs)
    breaker_table: str = ""
    breaker_failures: int = Field(default=3, ge=1, le=100)
    breaker_cooldown_s: float = Field(default=30.0, ge=0.0, le=3600.0)
    #: the intent model's deadline (adapters.factory.build_intent_classifier)
    intent_budget_ms: int = Field(default=INTENT_BUDGET_MS, ge=10, le=30_000)
    #: the traversal's deadline (functions/graph_traversal)
    traversal_budget_ms: int = Field(default=300, ge=10, le=30_000)
    vector_k: int = Field(default=24, ge=1, le=200)
    gazetteer_ttl_s: float = Field(default=300.0, ge=0.0, le=86_400.0)


class WorkflowSettings(_Frozen):
    #: the Express context-assembly state machine the API runs synchronously
    context_state_machine_arn: str = ""
    #: the ingest_story state machine story events start; empty processes stories inline
    ingest_state_machine_arn: str = ""
    #: EventBridge `source` of story events
    event_source: str = "heirloom.stories"


class LocalStackSettings(_Frozen):
    #: where the embedded PostgreSQL and FalkorDB keep their data
    home: Path = Path(".heirloom/local")


class Settings(_Frozen):
    database: DatabaseSettings = DatabaseSettings()
    graph: GraphSettings = GraphSettings()
    embedding: EmbeddingSettings = EmbeddingSettings()
    chunking: ChunkingSettings = ChunkingSettings()
    extraction: ExtractionSettings = ExtractionSettings()
    intent: IntentSettings = IntentSettings()
    bedrock: BedrockSettings = BedrockSettings()
    resilience: ResilienceSettings = ResilienceSettings()
    workflow: WorkflowSettings = WorkflowSettings()
    local: LocalStackSettings = LocalStackSettings()


def _bool(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise SettingsError(f"expected a boolean, got {value!r}")


def settings_from_env(env: Mapping[str, str]) -> Settings:
    """Build settings from environment variables (see docs/configuration.md)."""
    try:
        provider = env.get("EMBEDDING_PROVIDER", "local")
        default_dim = {"local": 384, "fake": 384, "bedrock": 1024}.get(provider, 384)
        return Settings(
            database=DatabaseSettings(
                url=env.get("DATABASE_URL", ""),
                statement_timeout_ms=int(env.get("DB_STATEMENT_TIMEOUT_MS", "5000")),
                secret_arn=env.get("DB_SECRET_ARN", ""),
                iam_auth=_bool(env.get("DB_IAM_AUTH", "false")),
                host=env.get("DB_HOST", ""),
                port=int(env["DB_PORT"]) if env.get("DB_PORT") else None,
                name=env.get("DB_NAME", ""),
                user=env.get("DB_USER", ""),
                sslmode=env.get("DB_SSLMODE", "require"),  # type: ignore[arg-type]
                sslrootcert=env.get("DB_SSLROOTCERT", ""),
                secret_max_age_s=int(env.get("DB_SECRET_MAX_AGE_S", "300")),
                connect_timeout_s=int(env.get("DB_CONNECT_TIMEOUT_S", "5")),
            ),
            graph=GraphSettings(
                env_prefix=env.get("GRAPH_ENV_PREFIX", "local"),
                graph_name=env.get("FALKOR_GRAPH", "heirloom"),
                falkor_socket=env.get("FALKOR_SOCKET", ""),
                falkor_connect_timeout_s=float(env.get("FALKOR_CONNECT_TIMEOUT_S", "1")),
                falkor_socket_timeout_s=float(env.get("FALKOR_SOCKET_TIMEOUT_S", "10")),
                augmentation_enabled=_bool(env.get("GRAPH_AUGMENTATION_ENABLED", "true")),
                provider=env.get("GRAPH_PROVIDER", "auto"),  # type: ignore[arg-type]
                neptune_endpoint=env.get("NEPTUNE_ENDPOINT", ""),
                neptune_port=int(env.get("NEPTUNE_PORT") or "8182"),
                neptune_region=env.get("NEPTUNE_REGION")
                or env.get("AWS_REGION")
                or env.get("AWS_DEFAULT_REGION", ""),
                neptune_iam_auth=_bool(env.get("NEPTUNE_IAM_AUTH", "true")),
                neptune_connect_timeout_s=float(env.get("NEPTUNE_CONNECT_TIMEOUT_S", "1")),
                neptune_read_timeout_s=float(env.get("NEPTUNE_READ_TIMEOUT_S", "3")),
                neptune_max_retries=int(env.get("NEPTUNE_MAX_RETRIES", "2")),
            ),
            embedding=EmbeddingSettings(
                provider=provider,  # type: ignore[arg-type]
                dimension=int(env.get("EMBEDDING_DIM", str(default_dim))),
            ),
            chunking=ChunkingSettings(max_tokens=int(env.get("CHUNK_MAX_TOKENS", "500"))),
            extraction=ExtractionSettings(provider=env.get("EXTRACTOR_PROVIDER", "local")),  # type: ignore[arg-type]
            intent=IntentSettings(
                provider=env.get("INTENT_PROVIDER", "rules"),  # type: ignore[arg-type]
                model_cache_dir=env.get("INTENT_MODEL_CACHE_DIR", ""),
            ),
            bedrock=BedrockSettings(
                region=env.get("BEDROCK_REGION", ""),
                embed_model_id=env.get("BEDROCK_EMBED_MODEL_ID", TITAN_EMBED_MODEL_ID),
                intent_model_id=env.get("BEDROCK_INTENT_MODEL_ID", HAIKU_INFERENCE_PROFILE),
                extraction_model_id=env.get("BEDROCK_EXTRACTION_MODEL_ID", HAIKU_INFERENCE_PROFILE),
                connect_timeout_s=float(env.get("BEDROCK_CONNECT_TIMEOUT_S", "2")),
                read_timeout_s=float(env.get("BEDROCK_READ_TIMEOUT_S", "30")),
                max_attempts=int(env.get("BEDROCK_MAX_ATTEMPTS", "3")),
                retry_mode=env.get("BEDROCK_RETRY_MODE", "standard"),  # type: ignore[arg-type]
            ),
            resilience=ResilienceSettings(
                breaker_table=env.get("BREAKER_TABLE", ""),
                breaker_failures=int(env.get("BREAKER_FAILURES", "3")),
                breaker_cooldown_s=float(env.get("BREAKER_COOLDOWN_S", "30")),
                intent_budget_ms=int(env.get("INTENT_BUDGET_MS", str(INTENT_BUDGET_MS))),
                traversal_budget_ms=int(env.get("TRAVERSAL_BUDGET_MS", "300")),
                vector_k=int(env.get("VECTOR_K", "24")),
                gazetteer_ttl_s=float(env.get("GAZETTEER_TTL_S", "300")),
            ),
            workflow=WorkflowSettings(
                context_state_machine_arn=env.get("CONTEXT_STATE_MACHINE_ARN", ""),
                event_source=env.get("EVENT_SOURCE", "heirloom.stories"),
                ingest_state_machine_arn=env.get("INGEST_STATE_MACHINE_ARN", ""),
            ),
            local=LocalStackSettings(home=Path(env.get("HEIRLOOM_HOME", ".heirloom/local"))),
        )
    except (ValueError, TypeError) as exc:
        raise SettingsError(f"invalid settings: {exc}") from exc


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return settings_from_env(os.environ)
