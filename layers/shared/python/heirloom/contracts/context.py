"""The context-assembly workflow's edges: each state's output model is the next one's input.

ContextRequest
  -> Parallel[ graph branch: IntentAnalysis -> (Choice) GraphTraversal  => GraphBranch
               vector branch: VectorSearch                              => VectorBranch ]
  -> AccessFilter(AccessFilterInput)  => FilteredContext
  -> RankAssemble(RankAssembleInput)  => AssembledContext
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal
from uuid import UUID

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from heirloom.contracts.records import NonBlankText, Text

MAX_QUERY_CHARS = 2000
MAX_HISTORY_MESSAGES = 20
MAX_HISTORY_CHARS = 4000
MIN_TOKEN_BUDGET = 500
MAX_TOKEN_BUDGET = 16000
#: `as_of` as a request body may write it: an ISO 8601 date and time with its time zone
AS_OF_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})$"


class Persona(StrEnum):
    BIOGRAPHER = "biographer"
    FRIEND = "friend"
    COLLEAGUE = "colleague"
    FAMILY = "family"


class Intent(StrEnum):
    RELATIONAL = "relational"
    TEMPORAL = "temporal"
    SPATIAL = "spatial"
    ENTITY_FOCUSED = "entity_focused"
    GENERAL = "general"
    CROSS_LEGACY = "cross_legacy"


class Edge(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Message(Edge):
    role: Literal["user", "assistant"]
    content: Text = Field(min_length=1, max_length=MAX_HISTORY_CHARS)


class ContextRequest(Edge):
    """The workflow input. `user_id` comes from the caller's verified identity, never a body."""

    legacy_id: UUID
    user_id: UUID
    persona: Persona
    query: NonBlankText = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    history: tuple[Message, ...] = Field(default=(), max_length=MAX_HISTORY_MESSAGES)
    linked_story_id: UUID | None = None
    token_budget: int = Field(default=4000, ge=MIN_TOKEN_BUDGET, le=MAX_TOKEN_BUDGET)
    debug: bool = False
    #: GRAPH_AUGMENTATION_ENABLED as the caller saw it; the Choice state reads it
    graph_enabled: bool = True
    #: hybrid for users; vector / graph alone for evaluation
    mode: Literal["hybrid", "vector", "graph"] = "hybrid"
    #: answer: the context workflow; connections: the story_connections workflow (every entity
    #: the query and history name, traversed to the stories that share it)
    purpose: Literal["answer", "connections"] = "answer"
    #: the conversation is eliciting a story: the context marks one connection to suggest and
    #: carries the graph suggestion directive
    elicitation: bool = False
    #: the stories and graph facts as they stood then: only stories created by then are read
    as_of: AwareDatetime | None = None


# -- intent -----------------------------------------------------------------------------------
class QueryEntities(Edge):
    people: tuple[str, ...] = ()
    places: tuple[str, ...] = ()
    time_periods: tuple[str, ...] = ()
    events: tuple[str, ...] = ()
    objects: tuple[str, ...] = ()


class EntityMatch(Edge):
    """A name of the legacy's graph found in the message (known-entity matching)."""

    mention: str
    node_id: str
    label: Literal["Person", "Place", "Event", "Object"]
    name: str


BreakerState = Literal["closed", "open", "half_open", "unknown"]


class QueryIntent(Edge):
    intent: Intent = Intent.GENERAL
    entities: QueryEntities = QueryEntities()
    matches: tuple[EntityMatch, ...] = ()
    confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    #: rules: the rule-based classifier; model: the learned classifier over the query's
    #: embedding; llm: a language model; fallback: the workflow's default after a failure
    source: Literal["rules", "model", "llm", "fallback"] = "fallback"
    #: the graph breaker as IntentAnalysis read it; the Choice skips traversal when "open"
    breaker_state: BreakerState = "unknown"
    latency_ms: float = 0.0
    #: what the analysis could not decide ("he": two people of the conversation could be him),
    #: in the words the user wrote
    notes: tuple[str, ...] = ()


# -- retrieval --------------------------------------------------------------------------------
class ChunkResult(Edge):
    story_id: UUID
    legacy_id: UUID
    chunk_index: int
    text: str
    token_count: int
    #: cosine similarity of the chunk's embedding to the query's
    similarity: float
    #: lexical match: share of the query's word weight the chunk contains (0..1)
    lexical: float = 0.0


class GraphHit(Edge):
    """A story reached by a traversal, with the path that reached it."""

    story_id: UUID
    template: str
    hops: int = Field(ge=0, le=2)
    #: relationship type that led there (FAMILY_OF, ...), or an edge type such as TOOK_PLACE_AT
    relationship: str | None = None
    #: the query entity this hit came from, when it came from one
    entity: str | None = None
    #: its graph node, when one node goes by several names: an owned or merged thing's edge
    #: carries each story's own words (docs/decisions/0039), and its path is the node's
    entity_id: str | None = None
    entity_match: bool = False
    via: str | None = None
    #: the story whose edge the path went through, when it is not the one reached: a `bridge`
    #: hit's seed (docs/decisions/0022; the hit counts only when that story ranks at the top), a
    #: `fact_neighbours` hit's fact; AccessFilter drops the hit unless the user may read it
    source_story_id: UUID | None = None
    #: the story's title names the entity the hit came through (its edge's `in_title`): the story
    #: is about it (topic evidence, docs/decisions/0024)
    topic: bool = False


class GraphFact(Edge):
    """A relationship fact for "Known Connections", with what supports it."""

    subject_id: str
    subject: str
    predicate: str
    object_id: str
    object: str
    detail: str | None = None
    since: str | None = None
    until: str | None = None
    #: stories whose text supports the fact (extracted facts)
    story_ids: tuple[str, ...] = ()
    #: a known relationship (relationships.jsonl) rather than an extracted one
    known: bool = False
    #: legacies of the two persons, for the known-relationship rule
    legacy_ids: tuple[str, ...] = ()
    #: a fact a story told (docs/decisions/0012): its sentence and its story's title (shown only
    #: when that story, its only `story_ids` entry, is readable), and whether narrators disagree
    sentence: str | None = None
    source_title: str | None = None
    conflicting: bool = False
    #: the titles of `story_ids` (set by AccessFilter, which also keeps only the readable ids)
    titles: tuple[str, ...] = ()
    #: a fact of a user's conversation (docs/decisions/0018): shown to that user alone
    owner_user_id: UUID | None = None
    #: a told fact's narrator (its story's author: user id from the graph, display name set by
    #: the access filter), the years it states ("|1964|") and whether it denies the relation
    narrator_id: str | None = None
    narrator: str | None = None
    years: str = ""
    negated: bool = False


class Account(Edge):
    """One narrator's telling of a disputed fact, credited to its (readable) story."""

    narrator: str
    story_id: UUID
    title: str
    sentence: str


class DifferingAccounts(Edge):
    """Readable stories by different narrators that disagree on one fact, side by side."""

    subject: str
    relation: str
    object: str
    accounts: tuple[Account, ...] = Field(min_length=2)


class TraversalStat(Edge):
    template: str
    results: int
    latency_ms: float


BranchStatus = Literal["ok", "failed", "timeout", "skipped"]
#: a retrieval source: the chunk index (vector) or the knowledge graph
RetrievalSource = Literal["vector", "graph"]


class KnownScope(Edge):
    """What the `facts` template asked for: the known relationships of these persons (the
    subject first), at most `limit` facts. AccessFilter reads those relationships from the
    store (docs/decisions/0030), so a cached neighbourhood never hides a new one."""

    person_ids: tuple[str, ...]
    subject_id: str
    limit: int = Field(ge=0)


class GraphResults(Edge):
    hits: tuple[GraphHit, ...] = ()
    facts: tuple[GraphFact, ...] = ()
    #: set when the `facts` template ran (from the graph or the neighbourhood cache)
    known: KnownScope | None = None
    #: facts about the places, events and objects the message names (ambient memory)
    ambient_facts: tuple[GraphFact, ...] = ()
    traversals: tuple[TraversalStat, ...] = ()
    status: BranchStatus = "ok"
    latency_ms: float = 0.0


class GraphBranch(Edge):
    kind: Literal["graph"] = "graph"
    intent: QueryIntent
    graph: GraphResults


class VectorBranch(Edge):
    kind: Literal["vector"] = "vector"
    hits: tuple[ChunkResult, ...] = ()
    status: BranchStatus = "ok"
    latency_ms: float = 0.0


Branch = Annotated[GraphBranch | VectorBranch, Field(discriminator="kind")]


class IntentAnalysisInput(Edge):
    request: ContextRequest


class VectorSearchInput(Edge):
    request: ContextRequest


class GraphTraversalInput(Edge):
    request: ContextRequest
    intent: QueryIntent


class AccessFilterInput(Edge):
    request: ContextRequest
    branches: tuple[Branch, ...] = Field(min_length=1, max_length=2)


# -- filtered candidates ----------------------------------------------------------------------
class Candidate(Edge):
    """One readable story with everything ranking needs."""

    story_id: UUID
    legacy_id: UUID
    legacy_name: str
    title: str
    year: int | None = None
    #: when the story was written or last updated (for recency), never when its events happened
    written_at: AwareDatetime | None = None
    primary: bool
    #: how the story crossed a link: "all" or "selective"; None for the primary legacy
    shared_via: Literal["all", "selective"] | None = None
    #: vector hits for this story (best first) or, for graph-only stories, its opening chunks
    chunks: tuple[ChunkResult, ...] = ()
    embedding_score: float | None = None
    graph_hits: tuple[GraphHit, ...] = ()


class CommunityNote(Edge):
    """A community summary the user may read, for the `general` intent: every story it was
    built from is readable by the user (the access filter checked them)."""

    summary: str
    story_ids: tuple[UUID, ...]
    titles: tuple[str, ...]


class FilteredContext(Edge):
    intent: QueryIntent
    subject_name: str
    legacy_name: str
    candidates: tuple[Candidate, ...] = ()
    facts: tuple[GraphFact, ...] = ()
    ambient_facts: tuple[GraphFact, ...] = ()
    communities: tuple[CommunityNote, ...] = ()
    traversals: tuple[TraversalStat, ...] = ()
    vector_status: BranchStatus = "ok"
    graph_status: BranchStatus = "ok"
    dropped_stories: int = 0
    dropped_facts: int = 0
    latency_ms: dict[str, float] = Field(default_factory=dict)


class RankAssembleInput(Edge):
    request: ContextRequest
    filtered: FilteredContext


# -- output -----------------------------------------------------------------------------------
class SourceInfo(Edge):
    story_id: UUID
    title: str
    legacy_id: UUID
    source: str
    score: float
    reasons: tuple[str, ...] = ()
    #: what the budget counted for the story's block: its excerpt, heading, provenance and the
    #: newlines around them (within a token or two of the block counted alone)
    tokens: int = 0


#: what made a context less than it could be: a retrieval source that did not answer (its
#: stories are missing) or the reranking stage that gave up (the order is ranking's alone)
Degradation = Literal["vector", "graph", "rerank"]


class RerankReport(Edge):
    """What the reranking stage did (heirloom.domain.rerank); absent when the stage is off."""

    reranker: str
    #: ok: the top `candidates` were reordered; timeout / failed: the order is ranking's alone
    status: Literal["ok", "timeout", "failed"]
    candidates: int = Field(ge=0)
    latency_ms: float = 0.0
    #: why the stage gave up (an error code or the budget), never story text
    reason: str | None = None


class ContextMetadata(Edge):
    intent: QueryIntent
    sources: tuple[SourceInfo, ...] = ()
    traversals: tuple[TraversalStat, ...] = ()
    circuit_state: BreakerState = "unknown"
    vector_status: BranchStatus = "ok"
    graph_status: BranchStatus = "ok"
    token_budget: int
    tokens_used: int
    latency_ms: dict[str, float] = Field(default_factory=dict)
    rerank: RerankReport | None = None


class Suggestion(Edge):
    """The one connection the persona may suggest this turn (elicitation mode)."""

    story_id: UUID
    title: str
    legacy_id: UUID
    #: the entity of the current message that connects it
    entity: str
    sentence: str


class AmbientLine(Edge):
    """One line of ambient memory: a plain sentence about an entity the message named, and where
    it comes from (the family records, or readable stories)."""

    sentence: str
    #: the support that ranked it (1.0 a known record; 0.5 per readable story, up to 1.0)
    score: float
    #: the named node the line is about
    node_id: str
    source: Literal["records", "stories"]
    story_ids: tuple[str, ...] = ()
    titles: tuple[str, ...] = ()


class AssembledContext(Edge):
    formatted_context: str
    embedding_results: tuple[ChunkResult, ...] = ()
    graph_results: tuple[GraphHit, ...] = ()
    #: the stories in the context, best score first (the ranked list eval scores); the text
    #: groups them by legacy, so linked-legacy stories may appear later than their rank
    ranked_story_ids: tuple[UUID, ...] = ()
    #: the sources that answered this request (shown to every caller, not only in debug)
    sources_used: tuple[RetrievalSource, ...] = ()
    #: the sources the request wanted that failed, timed out or sat behind an open breaker: the
    #: context is incomplete and its text says so; "rerank": the reranking stage gave up (the
    #: stories are all there, in ranking's order; `metadata.rerank.reason` says why)
    degraded: tuple[Degradation, ...] = ()
    #: elicitation mode: the single best connection to suggest, or None
    suggestion: Suggestion | None = None
    #: facts readable stories disagree on, each account credited (the "Differing Accounts" text)
    accounts: tuple[DifferingAccounts, ...] = ()
    #: ambient memory: the lines of its section, in the text's order
    ambient: tuple[AmbientLine, ...] = ()
    metadata: ContextMetadata
