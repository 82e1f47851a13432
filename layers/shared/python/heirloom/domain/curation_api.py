"""The curation API: merge suggestions, merge, keep apart and unmerge; the staging switch, staged
entities and their approval or rejection; the changelog; for a legacy's creator or admins only
(their role in the legacy, from PostgreSQL). Suggestions, staged items and changes show only
entities and stories the caller may read."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from heirloom.contracts.access import ReadScope, StoryMeta
from heirloom.contracts.curation import (
    CHANGE_ID_MAX,
    ChangelogPage,
    DecisionBody,
    GraphChange,
    KeepApartBody,
    MergeBody,
    MergeRecord,
    MergeResult,
    MergeSuggestion,
    StagedItem,
    StagedStatus,
    StagingSetting,
)
from heirloom.domain.access_filter import curator_scope
from heirloom.domain.entity_merge import (
    MergePorts,
    entity_story_ids,
    find_entity,
    merge,
    merge_story_ids,
    unmerge,
)
from heirloom.domain.merge_suggestions import read_entities, suggest
from heirloom.errors import Conflict, InvalidRequest, NotFound
from heirloom.ports import CurationStore, GraphStore, StoryStore


@dataclass(frozen=True)
class CurationPorts:
    graph: GraphStore
    stories: StoryStore
    curation: CurationStore
    #: the version a re-sync marks when the saved extraction names none
    extractor_version: str = ""

    @property
    def merging(self) -> MergePorts:
        return MergePorts(self.graph, self.curation, self.stories)


def require_curator(ports: CurationPorts, legacy_id: UUID, user_id: UUID) -> ReadScope:
    return curator_scope(ports.stories, user_id, legacy_id, to="curate its graph")


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


def _log(
    ports: CurationPorts,
    legacy_id: UUID,
    user_id: UUID,
    action: str,
    story_id: UUID | None = None,
    **detail: object,
) -> None:
    change = GraphChange(
        legacy_id=legacy_id,
        source="person",
        actor_id=user_id,
        story_id=story_id,
        action=action,
        detail=detail,
    )
    ports.curation.record_change(change)


def visible_entity(ports: CurationPorts, scope: ReadScope, legacy_id: UUID, entity: str) -> None:
    """NotFound, as for an entity that does not exist, unless a story the curator may read names
    it: entity ids follow from names, so a merge or keep-apart must not tell a curator what an
    unreadable story (another member's personal one) names, nor change it."""
    label, _ = find_entity(ports.graph, legacy_id, entity)  # NotFound outside the legacy
    stories = {UUID(s) for s in entity_story_ids(ports.graph, label, entity)}
    if not _readable_stories(ports, scope, stories):
        raise NotFound(f"no place, event or object {entity} in legacy {legacy_id}")


def merge_for(ports: CurationPorts, legacy_id: UUID, user_id: UUID, body: MergeBody) -> MergeResult:
    scope = require_curator(ports, legacy_id, user_id)
    for entity in (body.survivor_id, body.absorbed_id):
        visible_entity(ports, scope, legacy_id, entity)
    result = merge(
        ports.merging, legacy_id, body.survivor_id, body.absorbed_id, user_id, _readable_ids(ports, scope)
    )
    _log(ports, legacy_id, user_id, "merge", **result.model_dump(mode="json"))
    return result


def merge_visible(
    ports: CurationPorts, scope: ReadScope, record: MergeRecord, active: Sequence[MergeRecord] | None = None
) -> bool:
    """May the curator know of this merge: does a story they may read name each of its ends
    (as `visible_entity` asks of a merge's two entities)? `active`: the legacy's active merges,
    when the caller has read them."""
    if active is None:
        active = ports.curation.active_merges(record.legacy_id)
    survivor, absorbed = merge_story_ids(ports.graph, record, active)
    return all(_readable_stories(ports, scope, {UUID(s) for s in ids}) for ids in (survivor, absorbed))


def unmerge_for(ports: CurationPorts, legacy_id: UUID, user_id: UUID, merge_id: UUID) -> MergeResult:
    """Undo a merge; NotFound, as for one that does not exist, for a merge of an entity no
    story the curator may read names."""
    scope = require_curator(ports, legacy_id, user_id)
    record = ports.curation.get_merge(merge_id)
    if record is not None and record.legacy_id == legacy_id and not merge_visible(ports, scope, record):
        raise NotFound(f"no merge {merge_id} in legacy {legacy_id}")
    result = unmerge(ports.merging, legacy_id, merge_id, user_id, _readable_ids(ports, scope))
    _log(ports, legacy_id, user_id, "unmerge", **result.model_dump(mode="json"))
    return result


def keep_apart_for(
    ports: CurationPorts, legacy_id: UUID, user_id: UUID, body: KeepApartBody
) -> KeepApartBody:
    scope = require_curator(ports, legacy_id, user_id)
    if body.entity_a == body.entity_b:
        raise InvalidRequest("an entity cannot be kept apart from itself")
    for entity in (body.entity_a, body.entity_b):
        visible_entity(ports, scope, legacy_id, entity)
    ports.curation.keep_apart(legacy_id, body.entity_a, body.entity_b, user_id)
    _log(ports, legacy_id, user_id, "keep_apart", **body.model_dump(mode="json"))
    return body


def staging_for(ports: CurationPorts, legacy_id: UUID, user_id: UUID) -> StagingSetting:
    require_curator(ports, legacy_id, user_id)
    return StagingSetting(enabled=ports.curation.staging_enabled(legacy_id))


def set_staging_for(
    ports: CurationPorts, legacy_id: UUID, user_id: UUID, body: StagingSetting
) -> StagingSetting:
    """Turn staging on or off for stories synced from now on (what is staged stays staged)."""
    require_curator(ports, legacy_id, user_id)
    if ports.curation.staging_enabled(legacy_id) != body.enabled:
        ports.curation.set_staging(legacy_id, body.enabled)
        _log(ports, legacy_id, user_id, "staging_on" if body.enabled else "staging_off")
    return body


def _readable_stories(ports: CurationPorts, scope: ReadScope, story_ids: set[UUID]) -> set[UUID]:
    return {m.id for m in ports.stories.story_meta(story_ids) if scope.allows(m)}


def _readable_ids(ports: CurationPorts, scope: ReadScope) -> Callable[[set[str]], set[str]]:
    """Of a set of story ids (text), those the curator may read: a merge's `moved_edges` counts
    only their edges, so it never tells a curator an unreadable story names the entity."""

    def readable(ids: set[str]) -> set[str]:
        parsed = {UUID(i) for i in ids if _is_uuid(i)}  # an id that is no UUID names no story
        return {str(s) for s in _readable_stories(ports, scope, parsed)} if parsed else set()

    return readable


def _is_uuid(text: str) -> bool:
    try:
        UUID(text)
    except ValueError:
        return False
    return True


def staged_for(
    ports: CurationPorts, legacy_id: UUID, user_id: UUID, status: StagedStatus | None = "pending"
) -> list[StagedItem]:
    """The legacy's staged items (of `status`; None: all) from stories the caller may read."""
    scope = require_curator(ports, legacy_id, user_id)
    items = ports.curation.staged(legacy_id, status)
    readable = _readable_stories(ports, scope, {i.story_id for i in items})
    return [i for i in items if i.story_id in readable]


def decide_for(
    ports: CurationPorts,
    legacy_id: UUID,
    user_id: UUID,
    item_id: UUID,
    approve: bool,
    body: DecisionBody | None = None,
) -> StagedItem:
    """Approve (with an optional edit of name or type) or reject a staged item, record the
    decision and re-sync its story's graph facts."""
    from heirloom.domain.staging import check_edit
    from heirloom.domain.story_graph import resync_story

    scope = require_curator(ports, legacy_id, user_id)
    item = ports.curation.get_staged(item_id)
    if item is None or item.legacy_id != legacy_id or not _readable_stories(ports, scope, {item.story_id}):
        raise NotFound(f"no staged item {item_id} in this legacy")
    saved = ports.curation.extraction(item.story_id)
    if saved is None or saved[0] != item.content_hash:
        raise Conflict(
            "the story's text changed since this item was staged; decide the item of its current text"
        )
    edit = body or DecisionBody()
    if not approve and (edit.name or edit.type):
        raise InvalidRequest("a rejection takes no edit")
    decided = item.model_copy(
        update={
            "status": "approved" if approve else "rejected",
            "final_name": edit.name if approve else None,
            "final_type": edit.type if approve else None,
            "decided_by": user_id,
        }
    )
    if approve:  # the edit must fit the label's contract before anything is stored
        check_edit(decided)
    ports.curation.decide(decided)
    _log(
        ports,
        legacy_id,
        user_id,
        "staged_approved" if approve else "staged_rejected",
        item.story_id,
        item_id=str(item.id),
        label=item.label,
        name=item.name,
        type=item.type,
        final_name=decided.final_name,
        final_type=decided.final_type,
    )
    resync_story(ports, item.story_id)
    return ports.curation.get_staged(item_id) or decided


def changelog_for(
    ports: CurationPorts, legacy_id: UUID, user_id: UUID, before: int | None = None, limit: int = 50
) -> ChangelogPage:
    """The legacy's graph changes, newest first, a page of up to `limit`; a change that names a
    story the caller may not read is left out."""
    scope = require_curator(ports, legacy_id, user_id)
    page = ports.curation.changes(legacy_id, before=before, limit=limit)
    metas = {m.id: m for m in ports.stories.story_meta({c.story_id for c in page if c.story_id})}
    # read once for the page's merges and undos, not once per row
    merges = any(c.action in ("merge", "unmerge") for c in page if not c.story_id)
    active = ports.curation.active_merges(legacy_id) if merges else ()
    shown = tuple(
        c
        for c in page
        if (
            _readable_change(scope, c, metas.get(c.story_id))
            if c.story_id
            else _entities_visible(ports, scope, c, active)
        )
    )
    last = page[-1].id if len(page) == limit and page else None
    return ChangelogPage(changes=shown, next_before=last)


def _entities_visible(
    ports: CurationPorts, scope: ReadScope, change: GraphChange, active: Sequence[MergeRecord]
) -> bool:
    """A change naming no story: a merge or its undo is shown when the curator may know of the
    merge (`active`: the legacy's active merges), a keep-apart when a story they may read names
    each entity now (entity ids follow from names); anything else (the staging switch) always."""
    detail = change.detail
    if change.action in ("merge", "unmerge"):
        try:
            record = ports.curation.get_merge(UUID(str(detail.get("merge_id"))))
        except ValueError:
            return False
        return record is not None and merge_visible(ports, scope, record, active)
    if change.action == "keep_apart":
        for entity in (detail.get("entity_a"), detail.get("entity_b")):
            try:
                visible_entity(ports, scope, change.legacy_id, str(entity))
            except NotFound:
                return False
    return True


def _readable_change(scope: ReadScope, change: GraphChange, meta: StoryMeta | None) -> bool:
    """A change naming a story: shown if the caller may read the story now, or, once it is
    deleted, could read it as the change recorded it (no record of that: not shown)."""
    if meta is not None:
        return scope.allows(meta)
    visibility, author = change.detail.get("visibility"), change.detail.get("author_user_id")
    if change.story_id is None or not visibility or not author:
        return False
    try:
        then = StoryMeta(
            id=change.story_id, legacy_id=change.legacy_id, author_user_id=author, visibility=visibility
        )
    except ValueError:
        return False
    return scope.allows(then)


#: what a curation route answers
CurationAnswer = (
    list[MergeSuggestion]
    | MergeResult
    | KeepApartBody
    | StagingSetting
    | list[StagedItem]
    | StagedItem
    | ChangelogPage
)


class CurationCall(BaseModel):
    """One curation request as the Api step takes it: the route, its inputs, the verified caller."""

    model_config = ConfigDict(frozen=True)

    action: Literal[
        "suggestions",
        "merge",
        "undo",
        "keep_apart",
        "staging",
        "set_staging",
        "staged",
        "approve",
        "reject",
        "changelog",
    ]
    legacy_id: UUID
    user_id: UUID
    merge: MergeBody | None = None
    merge_id: UUID | None = None
    keep_apart: KeepApartBody | None = None
    staging: StagingSetting | None = None
    status: StagedStatus | None = "pending"
    item_id: UUID | None = None
    decision: DecisionBody | None = None
    before: int | None = Field(default=None, ge=1, le=CHANGE_ID_MAX)
    limit: int = Field(default=50, ge=1, le=200)


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
    if call.action == "staging":
        return staging_for(ports, legacy, user)
    if call.action == "set_staging" and call.staging is not None:
        return set_staging_for(ports, legacy, user, call.staging)
    if call.action == "staged":
        return staged_for(ports, legacy, user, call.status)
    if call.action in ("approve", "reject") and call.item_id is not None:
        return decide_for(ports, legacy, user, call.item_id, call.action == "approve", call.decision)
    if call.action == "changelog":
        return changelog_for(ports, legacy, user, call.before, call.limit)
    raise InvalidRequest(f"{call.action}: its input is missing")
