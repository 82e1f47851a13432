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

from pydantic import BaseModel, ConfigDict, Field, field_validator

PREFIX_PATTERN = re.compile(r"[a-z0-9_]+")


class SettingsError(ValueError):
    """Missing or contradictory settings, reported at cold start."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DatabaseSettings(_Frozen):
    #: libpq URI; empty means the embedded local PostgreSQL
    url: str = ""
    statement_timeout_ms: int = Field(default=5000, ge=10, le=600_000)


class GraphSettings(_Frozen):
    env_prefix: str = "local"
    #: FalkorDB graph name (local) / unused on Neptune
    graph_name: str = "heirloom"
    #: unix socket of the local FalkorDB; empty means the embedded local stack's
    falkor_socket: str = ""
    augmentation_enabled: bool = True

    @field_validator("env_prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        if not PREFIX_PATTERN.fullmatch(value):
            raise ValueError(f"graph prefix {value!r} must match [a-z0-9_]+")
        return value


class EmbeddingSettings(_Frozen):
    provider: Literal["local", "fake", "bedrock"] = "local"
    dimension: int = Field(default=384, ge=8, le=4096)


class ExtractionSettings(_Frozen):
    #: local: spaCy + rules; none: structural graph only; bedrock: Claude Haiku
    provider: Literal["local", "none", "bedrock"] = "local"


class ChunkingSettings(_Frozen):
    max_tokens: int = Field(default=500, ge=16, le=8000)


class ResilienceSettings(_Frozen):
    """Budgets (seed 000 section 10) and the breaker's shared state."""

    #: DynamoDB table for the breaker; empty keeps the state in the container (local runs)
    breaker_table: str = ""
    breaker_failures: int = Field(default=3, ge=1, le=100)
    breaker_cooldown_s: float = Field(default=30.0, ge=0.0, le=3600.0)
    intent_budget_ms: int = Field(default=500, ge=10, le=30_000)
    vector_budget_ms: int = Field(default=500, ge=10, le=30_000)
    traversal_budget_ms: int = Field(default=300, ge=10, le=30_000)
    total_budget_ms: int = Field(default=2000, ge=100, le=60_000)
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
            ),
            graph=GraphSettings(
                env_prefix=env.get("GRAPH_ENV_PREFIX", "local"),
                graph_name=env.get("FALKOR_GRAPH", "heirloom"),
                falkor_socket=env.get("FALKOR_SOCKET", ""),
                augmentation_enabled=_bool(env.get("GRAPH_AUGMENTATION_ENABLED", "true")),
            ),
            embedding=EmbeddingSettings(
                provider=provider,  # type: ignore[arg-type]
                dimension=int(env.get("EMBEDDING_DIM", str(default_dim))),
            ),
            chunking=ChunkingSettings(max_tokens=int(env.get("CHUNK_MAX_TOKENS", "500"))),
            extraction=ExtractionSettings(provider=env.get("EXTRACTOR_PROVIDER", "local")),  # type: ignore[arg-type]
            resilience=ResilienceSettings(
                breaker_table=env.get("BREAKER_TABLE", ""),
                breaker_failures=int(env.get("BREAKER_FAILURES", "3")),
                breaker_cooldown_s=float(env.get("BREAKER_COOLDOWN_S", "30")),
                intent_budget_ms=int(env.get("INTENT_BUDGET_MS", "500")),
                vector_budget_ms=int(env.get("VECTOR_BUDGET_MS", "500")),
                traversal_budget_ms=int(env.get("TRAVERSAL_BUDGET_MS", "300")),
                total_budget_ms=int(env.get("TOTAL_BUDGET_MS", "2000")),
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
