"""StoryEvents: an EventBridge story, link, membership, person or relationship event applied to
the records in order (domain/ordering.py), and ingestion started for a story whose content
changed, or whose people a new person or alias, or a changed relationship, may resolve
differently (domain/relink.py)."""

from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

from heirloom.contracts.events import (
    DETAIL_TYPES,
    LegacyCreated,
    LinkCreated,
    LinkRemoved,
    LinkUpdated,
    MemberAdded,
    MemberRemoved,
    PersonCreated,
    RelationshipAdded,
    RelationshipRemoved,
    RelationshipUpdated,
    StoryCreated,
    StoryDeleted,
    StoryEvent,
    StoryEventDetail,
    StoryUpdated,
    UserCreated,
)
from heirloom.contracts.ingestion import StoryEventApplied
from heirloom.contracts.records import Link, LinkStatus
from heirloom.domain import ingestion, story_graph
from heirloom.domain.ingestion import IngestionPorts, UnknownReference
from heirloom.domain.relink import (
    stories_naming,
    stories_naming_across,
    stories_narrated_by,
    stories_narrated_by_either,
)
from heirloom.domain.story_events import parse_detail
from heirloom.errors import InvalidRequest, NotFound
from heirloom.ports import Change
from heirloom.services import Services


def run(event: StoryEvent, services: Services) -> StoryEventApplied:
    change = handle_story_event(
        services.ingestion,
        event,
        source=services.settings.workflow.event_source,
        start_ingestion=services.start_ingestion,
    )
    return StoryEventApplied(detail_type=event.detail_type, change=change.value)


def handle_story_event(
    ports: IngestionPorts,
    event: StoryEvent,
    *,
    source: str,
    start_ingestion: Callable[[UUID], None] | None = None,
) -> Change:
    """Apply one event; raises InvalidRequest (bad event) or NotFound (dangling reference).
    With `start_ingestion`, story content is processed by the ingestion workflow, else inline."""
    if event.source != source:
        raise InvalidRequest(f"source {event.source!r} is not {source!r}")
    if event.detail_type not in DETAIL_TYPES:
        raise InvalidRequest(f"unknown detail-type {event.detail_type!r}")
    detail = parse_detail(event)
    try:
        if isinstance(detail, StoryCreated | StoryUpdated):
            return _apply_story(ports, detail, start_ingestion)
        # a link's state before the event: only a change of what is actively linked re-links
        link_id = _link_id(detail)
        before = ports.stories.get_link(link_id) if link_id else None
        change = _apply_record(ports, detail, event, start_ingestion)
        if change in (Change.CREATED, Change.UPDATED, Change.DELETED):
            _relink_after(ports, detail, start_ingestion, before)
        return change
    except UnknownReference as exc:
        raise NotFound(str(exc)) from exc


def _apply_story(
    ports: IngestionPorts, detail: StoryCreated | StoryUpdated, start_ingestion: Callable[[UUID], None] | None
) -> Change:
    # our own producer checks who may move a story between legacies (docs/architecture.md, Security)
    change = ingestion.apply_story(
        ports,
        detail.story,
        process=start_ingestion is None,
        seq=detail.sequence,
        may_move=True,
        start_ingestion=start_ingestion,
    )
    # a redelivered event restarts a hand-over that failed: the record is stored (UNCHANGED now)
    # but its index or graph is still behind
    if start_ingestion is not None and (
        change in (Change.CREATED, Change.UPDATED) or ingestion.story_behind(ports, detail.story.id)
    ):
        start_ingestion(detail.story.id)
    return change


def _link_id(detail: StoryEventDetail) -> UUID | None:
    match detail:
        case LinkCreated() | LinkUpdated():
            return detail.link.id
        case LinkRemoved():
            return detail.link_id
        case _:
            return None


def _active_ends(link: Link | None) -> frozenset[UUID]:
    """The two legacies a link actively links (none when it is not active or not known)."""
    if link is None or link.status is not LinkStatus.ACTIVE:
        return frozenset()
    return frozenset((link.legacy_a_id, link.legacy_b_id))


def _relink_links(
    ports: IngestionPorts,
    before: Link | None,
    after: Link | None,
    start_ingestion: Callable[[UUID], None] | None,
) -> None:
    """A link that starts or stops actively linking two legacies changes which names their
    stories' extraction reads: the stories of either side naming a person of the other are
    re-linked. A change of what is shared, or of a pending link, re-links nothing."""
    was, now = _active_ends(before), _active_ends(after)
    for ends in {e for e in (was, now) if e and was != now}:
        a, b = sorted(ends)
        story_graph.relink(ports, stories_naming_across(ports, a, b), start_ingestion)


def _relink_after(
    ports: IngestionPorts,
    detail: StoryEventDetail,
    start_ingestion: Callable[[UUID], None] | None,
    link_before: Link | None = None,
) -> None:
    """A person (or alias) or relationship added, a relationship changed or removed, or a link
    made active or no longer active, after the stories it concerns: those stories are re-linked
    (domain/relink.py)."""
    match detail:
        case PersonCreated():
            stored = ports.stories.get_person(detail.person.id)
            if stored is not None:
                story_graph.relink(ports, stories_naming(ports, stored), start_ingestion)
        case RelationshipAdded() | RelationshipUpdated():
            story_graph.relink(ports, stories_narrated_by(ports, detail.relationship), start_ingestion)
        case RelationshipRemoved():
            story_graph.relink(
                ports,
                stories_narrated_by_either(ports, detail.from_person_id, detail.to_person_id),
                start_ingestion,
            )
        case LinkCreated() | LinkUpdated() | LinkRemoved():
            link_id = _link_id(detail)
            after = ports.stories.get_link(link_id) if link_id else None
            _relink_links(ports, link_before, after, start_ingestion)
        case _:
            pass


def _apply_record(
    ports: IngestionPorts,
    detail: StoryEventDetail,
    event: StoryEvent,
    start_ingestion: Callable[[UUID], None] | None,
) -> Change:
    """Every event but a story's content: applied to the records, in order (domain/ordering.py)."""
    match detail:
        case StoryDeleted():
            return ingestion.delete_story(
                ports, detail.story_id, detail.deleted_at, detail.legacy_id, start_ingestion
            )
        case LegacyCreated():
            return ingestion.apply_legacy(ports, detail.legacy)
        case PersonCreated():
            return ingestion.apply_person(ports, detail.person, event.time, detail.sequence)
        case UserCreated():
            return ingestion.apply_user(ports, detail.user)
        case RelationshipAdded():
            return ingestion.apply_relationship(ports, detail.relationship, event.time, detail.sequence)
        case RelationshipUpdated():
            return ingestion.update_relationship(
                ports, detail.relationship, detail.previous_type, event.time, detail.sequence
            )
        case RelationshipRemoved():
            return ingestion.remove_relationship(
                ports, detail.from_person_id, detail.to_person_id, detail.type, event.time, detail.sequence
            )
        case MemberAdded():
            return ingestion.apply_member(ports, detail.member, event.time, detail.sequence)
        case MemberRemoved():
            return ingestion.remove_member(
                ports, detail.legacy_id, detail.user_id, event.time, detail.sequence
            )
        case LinkCreated() | LinkUpdated():
            return ingestion.apply_link(ports, detail.link, event.time, detail.sequence)
        case LinkRemoved():
            return ingestion.remove_link(
                ports, detail.link_id, detail.legacy_a_id, detail.legacy_b_id, event.time, detail.sequence
            )
        case _:  # pragma: no cover - every detail type has a case
            raise InvalidRequest(f"unhandled detail-type {event.detail_type!r}")
