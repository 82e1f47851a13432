"""The curation API: merge suggestions, merge, keep apart and unmerge, for a legacy's creator or
admins only (their role in the legacy, from PostgreSQL). Suggestions show only entities and
stories the caller may read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from heirloom.contracts.access import ReadScope
from heirloom.contracts.curation import KeepApartBody, MergeBody, MergeResult, MergeSuggestion
from heirloom.contracts.records import Role
from heirloom.domain.access_filter import scope_for
from heirloom.domain.entity_merge import MergePorts, find_entity, merge, unmerge
from heirloom.domain.merge_suggestions import read_entities, suggest
from heirloom.errors import AccessDenied, InvalidRequest
from heirloom.ports import CurationStore, GraphStore, StoryStore

CURATORS = frozenset({Role.CREATOR, Role.ADMIN})


@dataclass(frozen=True)
class CurationPorts:
    graph: GraphStore
    stories: StoryStore
    curation: CurationStore

    @property
    def merging(self) -> MergePorts:
        return MergePorts(self.graph, self.curation, self.stories)


def require_curator(ports: CurationPorts, legacy_id: UUID, user_id: UUID) -> ReadScope:
    scope = scope_for(ports.stories, user_id, legacy_id)  # NotFound, AccessDenied (not a member)
    if scope.role not in CURATORS:
        raise AccessDenied("only the legacy's creator or an admin may curate its graph")
    return scope


def suggestions_for(
    ports: CurationPorts, legacy_id: UUID, user_id: UUID, limit: int = 50
) -> list[MergeSuggestion]:
    scope = require_curator(ports, legacy_id, user_id)
    entities = read_entities(ports.graph, legacy_id)
    ids = {UUID(s) for e in entities for s in e.stories}
    readable = {str(m.id) for m in ports.stories.story_meta(ids) if scope.allows(m)}
    return suggest(
        entities,
        legacy_id=legacy_id,
        readable=readable.__contains__,
        kept_apart=ports.curation.kept_apart(legacy_id),
        limit=limit,
    )


def merge_for(ports: CurationPorts, legacy_id: UUID, user_id: UUID, body: MergeBody) -> MergeResult:
    require_curator(ports, legacy_id, user_id)
    return merge(ports.merging, legacy_id, body.survivor_id, body.absorbed_id, user_id)


def unmerge_for(ports: CurationPorts, legacy_id: UUID, user_id: UUID, merge_id: UUID) -> MergeResult:
    require_curator(ports, legacy_id, user_id)
    return unmerge(ports.merging, legacy_id, merge_id, user_id)


def keep_apart_for(
    ports: CurationPorts, legacy_id: UUID, user_id: UUID, body: KeepApartBody
) -> KeepApartBody:
    require_curator(ports, legacy_id, user_id)
    if body.entity_a == body.entity_b:
        raise InvalidRequest("an entity cannot be kept apart from itself")
    for entity in (body.entity_a, body.entity_b):
        find_entity(ports.graph, legacy_id, entity)  # NotFound outside the legacy
    ports.curation.keep_apart(legacy_id, body.entity_a, body.entity_b, user_id)
    return body


#: what a curation route answers
CurationAnswer = list[MergeSuggestion] | MergeResult | KeepApartBody


class CurationCall(BaseModel):
    """One curation request as the Api step takes it: the route, its inputs, the verified caller."""

    model_config = ConfigDict(frozen=True)

    action: Literal["suggestions", "merge", "undo", "keep_apart"]
    legacy_id: UUID
    user_id: UUID
    merge: MergeBody | None = None
    merge_id: UUID | None = None
    keep_apart: KeepApartBody | None = None


def curate(call: CurationCall, ports: CurationPorts) -> CurationAnswer:
    legacy, user = call.legacy_id, call.user_id
    if call.action == "suggestions":
        return suggestions_for(ports, legacy, user)
    if call.action == "merge" and call.merge is not None:
        return merge_for(ports, legacy, user, call.merge)
    if call.action == "undo" and call.merge_id is not None:
        return unmerge_for(ports, legacy, user, call.merge_id)
    if call.action == "keep_apart" and call.keep_apart is not None:
        return keep_apart_for(ports, legacy, user, call.keep_apart)
    raise InvalidRequest(f"{call.action}: its input is missing")
