"""Curation's values: merge suggestions with their evidence, merges and what they changed,
keep-apart decisions, and community summaries per visibility tier."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, StrictBool

#: entities a merge may join (persons are known records, curated in PostgreSQL)
EntityLabel = Literal["Place", "Event", "Object"]
#: what a community build may read: public stories and known records, or private ones as well
Tier = Literal["public", "private"]
RebuildKind = Literal["none", "partial", "full"]

#: an entity id as entity_sync makes them (a uuid5), or any id the graph holds
EntityId = Field(min_length=1, max_length=64, pattern=r"^[0-9A-Za-z_-]+$")


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EntityRef(Frozen):
    id: str
    label: EntityLabel
    name: str
    aliases: tuple[str, ...] = ()


class MergeSuggestion(Frozen):
    """Two entities of one legacy that are likely one, best first by `score`."""

    legacy_id: UUID
    a: EntityRef
    b: EntityRef
    score: float
    #: why, in words ("name contained: ...", "shared stories: ...")
    evidence: tuple[str, ...]
    #: readable stories that mention both
    shared_story_ids: tuple[UUID, ...] = ()


class MergeBody(Frozen):
    """POST /legacies/{legacy_id}/merges: `absorbed_id` goes into `survivor_id`."""

    survivor_id: str = EntityId
    absorbed_id: str = EntityId


class KeepApartBody(Frozen):
    """POST /legacies/{legacy_id}/keep-apart: never suggest this pair again."""

    entity_a: str = EntityId
    entity_b: str = EntityId


class EdgeRecord(Frozen):
    """One edge as a merge found or wrote it: its logical type, the other end and its properties
    (single values only: Neptune's openCypher has no list or map property)."""

    type: str
    #: "in": other -> entity; "out": entity -> other
    direction: Literal["in", "out"]
    other_id: str
    other_label: str
    props: dict[str, Any]


class MergeChanges(Frozen):
    """What a merge changed in the graph, enough to restore it exactly."""

    absorbed_label: EntityLabel
    absorbed_props: dict[str, Any]
    survivor_props_before: dict[str, Any]
    #: the absorbed node's edges (deleted with it)
    absorbed_edges: tuple[EdgeRecord, ...]
    #: edges the merge created on the survivor (an edge it already had is not among them)
    added_edges: tuple[EdgeRecord, ...]


class MergeRecord(Frozen):
    id: UUID
    legacy_id: UUID
    label: EntityLabel
    survivor_id: str
    absorbed_id: str
    changes: MergeChanges
    merged_by: UUID
    merged_at: datetime | None = None
    unmerged_at: datetime | None = None


class MergeResult(Frozen):
    merge_id: UUID
    survivor_id: str
    absorbed_id: str
    moved_edges: int
    unmerged: bool = False


class CommunitySummary(Frozen):
    """One community of a legacy's entity graph, summarised from the facts of one tier."""

    legacy_id: UUID
    tier: Tier
    number: int
    component_key: str
    member_ids: tuple[str, ...]
    summary: str
    #: every story of the tier that names a member or states a fact of it (all checked before a
    #: user is shown the summary); the first `communities.MAX_STORIES` are cited as provenance
    story_ids: tuple[UUID, ...]


class ImpactState(Frozen):
    legacy_id: UUID
    impact: int = 0
    last_build: RebuildKind | None = None


class CommunitiesRebuildInput(Frozen):
    """The communities workflow's input: which legacies (none: every one), and whether to
    rebuild whatever the recorded impact (`force`)."""

    legacy_ids: tuple[UUID, ...] = Field(default=(), max_length=1000)
    force: Literal["partial", "full"] | None = None


class LegacyRebuild(Frozen):
    legacy_id: UUID
    kind: RebuildKind
    impact: int
    communities: dict[str, int]
    kept_components: int = 0


class CommunitiesRebuildOutput(Frozen):
    rebuilt: tuple[LegacyRebuild, ...]


#: a staged entity's state: awaiting a curator, approved into the graph, or rejected for good
StagedStatus = Literal["pending", "approved", "rejected"]
#: who changed the graph: a story's extraction, a story event (a delete), a curator
ChangeSource = Literal["story", "event", "person"]


class StagingSetting(Frozen):
    """GET/POST /legacies/{legacy_id}/staging: whether extracted entities wait for approval."""

    enabled: StrictBool  # "off", "yes" or 0 are refused, not read as a switch


class StagedItem(Frozen):
    """An entity one story's extraction named while its legacy had staging on: in no retrieval
    until approved (with the curator's edit of its name or type, if any)."""

    id: UUID
    legacy_id: UUID
    story_id: UUID
    content_hash: str
    label: EntityLabel
    name: str
    type: str
    #: the story's sentences that name it
    sentences: tuple[str, ...] = ()
    status: StagedStatus = "pending"
    final_name: str | None = None
    final_type: str | None = None
    decided_by: UUID | None = None
    decided_at: datetime | None = None


class DecisionBody(Frozen):
    """POST .../staged/{item_id}/approve (an optional edit of the name or type) and .../reject."""

    name: str | None = Field(default=None, min_length=1, max_length=200)
    type: str | None = Field(default=None, min_length=1, max_length=40)


class GraphChange(Frozen):
    """One change to a legacy's graph: what changed it (`source`), which story or person, what."""

    id: int | None = None
    legacy_id: UUID
    at: datetime | None = None
    source: ChangeSource
    story_id: UUID | None = None
    actor_id: UUID | None = None
    #: e.g. "story_synced", "story_deleted", "merge", "unmerge", "keep_apart", "staging_on",
    #: "staged_approved", "staged_rejected"
    action: str
    detail: dict[str, Any] = Field(default_factory=dict)


#: the largest change id the store holds (`graph_changes.id bigserial`)
CHANGE_ID_MAX = 2**63 - 1


class ChangelogPage(Frozen):
    """GET /legacies/{legacy_id}/changelog: newest first; `next_before` pages on (None: the end)."""

    changes: tuple[GraphChange, ...]
    next_before: int | None = None
