"""Names and settings of the deployment. Environment-agnostic: no lookups, no account ids.

Override any field with CDK context, e.g. `cdk synth -c heirloom:auroraReaders=0`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from constructs import Node

STACK_NAME = "Heirloom"
#: the stage (CDK context `stage`) whose stack is called plain STACK_NAME; any other stage `s`
#: deploys `Heirloom-s` (dev and prod side by side in one account)
PROD_STAGE = "prod"
STAGE_PATTERN = re.compile(r"[a-z][a-z0-9-]{0,19}")


def stack_name(stage: str = PROD_STAGE) -> str:
    if not STAGE_PATTERN.fullmatch(stage):
        raise ValueError(f"stage {stage!r} must match {STAGE_PATTERN.pattern} (it names the stack)")
    return STACK_NAME if stage == PROD_STAGE else f"{STACK_NAME}-{stage}"


#: Titan v2 vector size; the pgvector column is created with it by the migrations
EMBEDDING_DIM = 1024

#: CloudWatch namespace and metric of the graph circuit breaker (Powertools Metrics, service dim)
METRICS_NAMESPACE = "Heirloom"
POWERTOOLS_SERVICE = "heirloom"
BREAKER_OPEN_METRIC = "GraphCircuitOpen"
#: emitted by IngestFailed for each story whose ingestion failed
INGESTION_FAILURES_METRIC = "IngestionFailures"

#: where the tiktoken layer puts the cl100k_base BPE file (make build)
TIKTOKEN_DIR = "/opt/tiktoken"
TIKTOKEN_FILE = "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"

#: S3 keys under this prefix are imported as stories
IMPORT_PREFIX = "imports/"

DATABASE_NAME = "heirloom"
DATABASE_USER = "heirloom"
DATABASE_PORT = 5432
#: DB_STATEMENT_TIMEOUT_MS of the functions; RDS Proxy's init query sets the same for single
#: statements (the functions set no session state, which would pin proxy connections)
DB_STATEMENT_TIMEOUT_MS = 5000
NEPTUNE_PORT = 8182

#: the workflow the Api function runs synchronously
CONTEXT_WORKFLOW = "context_assembly"
#: the workflow the Api function runs synchronously for opening connections and enrichment
CONNECTIONS_WORKFLOW = "story_connections"
#: the workflow StoryEvents starts for each new or changed story
INGEST_WORKFLOW = "ingest_story"
#: workflows that are STANDARD; every other ASL file is an EXPRESS workflow
STANDARD_WORKFLOWS = frozenset({"backfill", "communities"})
BACKFILL_WORKFLOW = "backfill"
COMMUNITIES_WORKFLOW = "communities"


@dataclass(frozen=True)
class HeirloomConfig:
    #: label prefix of this deployment's graph (GRAPH_ENV_PREFIX), [a-z0-9_]+
    graph_prefix: str = "prod"
    aurora_min_acu: float = 0.5
    aurora_max_acu: float = 8.0
    #: Serverless v2 readers in another AZ (failover target); 0 halves the idle cost
    aurora_readers: int = 1
    #: `neptune`, or `none`: no Neptune cluster, answers are vector-only (the workflow's
    #: GraphSkipped route) and ingestion extracts no entities (GRAPH_PROVIDER=none)
    graph: str = "neptune"
    neptune_min_ncu: float = 1.0
    neptune_max_ncu: float = 8.0
    #: one of 7, 14, 30, 90, 180, 365
    log_retention_days: int = 30
    #: IntentAnalysis: `rules` (gazetteer + rule-based classifier), `auto` (the learned classifier
    #: where the layer ships weights for Titan, which it does not: the rules) or `bedrock` (then
    #: Claude Haiku within INTENT_BUDGET_MS; the grant and INTENT_PROVIDER follow this)
    intent_provider: str = "rules"
    #: RankAssemble's reranking stage (RERANKER): `off`, `lexical` (no model) or `bedrock` (the
    #: Rerank API with amazon.rerank-v1:0; the grant follows this)
    reranker: str = "off"
    #: cross-region inference profile for Claude Haiku and the regions it routes to
    inference_profile_prefix: str = "us"
    inference_profile_regions: tuple[str, ...] = ("us-east-1", "us-east-2", "us-west-2")
    #: EventBridge schedule of the backfill workflow (when statemachines/backfill.asl.json exists)
    backfill_schedule: str = "cron(0 3 * * ? *)"
    backfill_page_size: int = 50
    #: EventBridge schedule of the communities workflow (rebuilds where impact crossed a threshold)
    communities_schedule: str = "rate(1 hour)"
    #: stories one backfill execution ingests before it continues as a new one (at most 600)
    backfill_stories_per_execution: int = 500
    backfill_pace_seconds: int = 2
    #: alarm thresholds
    context_p95_ms: int = 2000
    context_failures_per_5min: int = 5
    #: fail synth instead of using the placeholder layers when `make build` has not run
    require_built_layers: bool = False
    api_rate_limit: int = 50
    api_burst_limit: int = 100
    #: RDS Proxy in front of Aurora (connection pooling, failover); without it the functions
    #: connect to the writer endpoint (family traffic never nears Aurora's connection limit)
    rds_proxy: bool = True
    #: minutes of idleness before an Aurora at `aurora_min_acu=0` pauses (5 to 1440)
    aurora_auto_pause_minutes: int = 10
    #: the interface endpoints in one AZ (subnet) instead of every AZ of the VPC
    single_az_endpoints: bool = False
    #: the CloudWatch Logs interface endpoint (Lambda's own logs do not use it; nothing else does)
    logs_endpoint: bool = True
    #: deletion protection of Aurora, Neptune and the user pool; default on for the prod stage,
    #: off for the others (`from_context`)
    deletion_protection: bool = True
    #: provisioned concurrency of each context-workflow function (an alias `live` per function,
    #: invoked by the workflow); 0 (default) leaves every function on demand
    provisioned_concurrency: int = 0
    #: Express workflows log every event with its input and output (users' questions, chat
    #: history, story text) instead of only errors without execution data
    debug_logging: bool = False

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z0-9_]+", self.graph_prefix):
            raise ValueError(f"graph_prefix {self.graph_prefix!r} must match [a-z0-9_]+ (GRAPH_ENV_PREFIX)")
        if self.graph not in {"neptune", "none"}:
            raise ValueError(f"graph {self.graph!r} is not neptune or none")
        if self.intent_provider not in {"rules", "auto", "bedrock"}:
            raise ValueError(f"intent_provider {self.intent_provider!r} is not rules, auto or bedrock")
        if self.reranker not in {"off", "lexical", "bedrock"}:
            raise ValueError(f"reranker {self.reranker!r} is not off, lexical or bedrock")
        if not 5 <= self.aurora_auto_pause_minutes <= 1440:
            raise ValueError(f"aurora_auto_pause_minutes {self.aurora_auto_pause_minutes} must be 5 to 1440")
        if not 0 <= self.provisioned_concurrency <= 100:
            raise ValueError(f"provisioned_concurrency {self.provisioned_concurrency} must be 0 (off) to 100")
        if self.log_retention_days not in {7, 14, 30, 90, 180, 365}:
            raise ValueError(
                f"log_retention_days {self.log_retention_days} is not one of 7, 14, 30, 90, 180, 365"
            )

    @classmethod
    def from_context(cls, node: Node) -> HeirloomConfig:
        """Each field can be set as context `heirloom:<camelCaseName>`; `heirloom:preset` (see
        `PRESETS`) sets several at once, and a field set on its own wins over the preset."""
        preset = node.try_get_context("heirloom:preset") or "production"
        if preset not in PRESETS:
            raise ValueError(f"heirloom:preset {preset!r} is not one of {', '.join(sorted(PRESETS))}")
        values: dict[str, Any] = dict(PRESETS[preset])
        if (node.try_get_context("stage") or PROD_STAGE) != PROD_STAGE:
            values["deletion_protection"] = False
        for f in fields(cls):
            head, *rest = f.name.split("_")
            raw = node.try_get_context("heirloom:" + head + "".join(p.capitalize() for p in rest))
            if raw is None:
                continue
            default = getattr(cls, f.name)
            if isinstance(default, bool):
                values[f.name] = raw if isinstance(raw, bool) else str(raw).lower() in {"1", "true", "yes"}
            elif isinstance(default, tuple):
                values[f.name] = tuple(raw if isinstance(raw, list) else str(raw).split(","))
            else:
                values[f.name] = type(default)(raw)
        return cls(**values)


#: cost presets (docs/deploy.md, Presets and costs). `production`: the defaults above (HA reader,
#: RDS Proxy, endpoints in both AZs). `family`: one family's traffic (~3,000 questions a month):
#: Aurora pauses when idle (the first request after a pause waits while it resumes), no reader,
#: no proxy, endpoints in one AZ, no Logs endpoint.
PRESETS: dict[str, dict[str, Any]] = {
    "production": {},
    "family": {
        "aurora_min_acu": 0.0,
        "aurora_max_acu": 4.0,
        "aurora_readers": 0,
        "rds_proxy": False,
        "single_az_endpoints": True,
        "logs_endpoint": False,
        "neptune_max_ncu": 4.0,
    },
}
