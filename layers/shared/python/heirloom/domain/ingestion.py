"""Ingestion of records: the one path that story events, S3 imports and `heirloom load` share.

Each function writes PostgreSQL first (the source of truth), then the graph (idempotent MERGEs,
always re-applied so a failed graph write is repaired by the next delivery), and for stories
re-chunks, re-embeds and re-extracts only when the story's digest (title and content,
`story_digest`) recorded for its index or graph is behind. The graph gets each record
as stored, written under a lock keyed by what it writes (a story, person, membership,
relationship or link: decision 0020), so the last writer writes the current state. A story's
chunk index is `story_index`'s, its part of the graph `story_graph`'s; `process_story` runs both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING
from uuid import UUID

from heirloom.contracts.curation import GraphChange
from heirloom.contracts.extraction import ExtractedEntities, NamedThing
from heirloom.contracts.records import (
    Legacy,
    Link,
    LinkStatus,
    Member,
    Person,
    Relationship,
    RelationshipType,
    Role,
    ShareMode,
    Story,
    User,
    Visibility,
)
from heirloom.domain import graph_sync
from heirloom.domain.access import CREATES
from heirloom.domain.chunking import content_hash, digest_of, story_digest
from heirloom.domain.entity_sync import withdraw_story
from heirloom.domain.story_graph import (
    extract_story,
    names_given,
    relink,
    relink_named,
    resolve_mentions,
    write_entities,
    writing_names,
)
from heirloom.domain.story_index import PendingEmbedding, index_key, start_embedding
from heirloom.ports import (
    Change,
    ConversationStore,
    CurationStore,
    Embedder,
    GraphStore,
    StoryStore,
    Tokenizer,
    VectorIndex,
)

if TYPE_CHECKING:
    from heirloom.ports import EntityExtractor


class UnknownReference(LookupError):
    """A record names a legacy, person, user or story that does not exist."""

    def __init__(self, field: str, value: UUID, kind: str):
        super().__init__(f"{field}: unknown {kind} {value}")
        self.field = field
        self.value = value
        self.kind = kind


class StoryOfAnotherLegacy(ValueError):
    """A record names, by its id, a story another legacy holds: only a story event (our own
    producer, which checks who may move what) may move a story; an import or dataset record
    may not (docs/architecture.md, Security)."""

    def __init__(self, story_id: UUID):
        super().__init__(
            f"id: story {story_id} belongs to another legacy; only a story event may move a story"
        )
        self.story_id = story_id


class AuthorNotAllowed(ValueError):
    """An S3 import names an author it may not: one who is not a member of the story's legacy
    (an unknown user reads alike), whose role may not give a story that visibility, or another
    author than the stored story's; or it is a personal story. Story events trust their
    producer, datasets only warn (decision 0028)."""


@dataclass(frozen=True)
class IngestionPorts:
    stories: StoryStore
    vectors: VectorIndex
    graph: GraphStore
    embedder: Embedder
    tokenizer: Tokenizer
    chunk_max_tokens: int = 500
    #: None skips entity extraction (structural graph only)
    extractor: EntityExtractor | None = None
    extractor_version: str = ""
    #: where graph changes count toward community rebuilds (None: not counted)
    curation: CurationStore | None = None
    #: members' conversation memory, forgotten when they leave a legacy (None: not kept here)
    conversations: ConversationStore | None = None


def _require_legacy(ports: IngestionPorts, field: str, legacy_id: UUID) -> None:
    if ports.stories.get_legacy(legacy_id) is None:
        raise UnknownReference(field, legacy_id, "legacy")


def _require_person(ports: IngestionPorts, field: str, person_id: UUID) -> Person:
    person = ports.stories.get_person(person_id)
    if person is None:
        raise UnknownReference(field, person_id, "person")
    return person


def _require_user(ports: IngestionPorts, field: str, user_id: UUID) -> None:
    if ports.stories.get_user(user_id) is None:
        raise UnknownReference(field, user_id, "user")


def _log_record(
    ports: IngestionPorts, change: Change, legacy_ids: Sequence[UUID], action: str, **detail: str
) -> None:
    """A known record's graph change (person, relationship, link) in the legacies' changelogs."""
    if ports.curation is None or change not in (Change.CREATED, Change.UPDATED):
        return
    for legacy_id in dict.fromkeys(legacy_ids):
        ports.curation.record_change(
            GraphChange(
                legacy_id=legacy_id, source="event", action=action, detail={**detail, "change": change.value}
            )
        )


def apply_legacy(ports: IngestionPorts, legacy: Legacy) -> Change:
    """Its members' social edges follow its subject as stored."""
    change = ports.stories.upsert_legacy(legacy)
    graph_sync.sync_legacy(ports.graph, legacy)
    resync_memberships(ports, [(legacy.id, u) for u in ports.stories.member_user_ids(legacy.id)])
    return change


def apply_person(
    ports: IngestionPorts, person: Person, as_of: datetime | None = None, seq: int | None = None
) -> Change:
    """`as_of`, `seq`: when the change happened (story events), ordered as
    heirloom.domain.ordering says (a late event never moves a person back). The graph gets the
    person as stored, never a stale event's, under the person's lock."""
    _require_legacy(ports, "legacy_id", person.legacy_id)
    with ports.stories.person_lock(person.id):
        change = ports.stories.upsert_person(person, as_of, seq)
        stored = ports.stories.get_person(person.id) or person
        graph_sync.sync_person(ports.graph, stored)
    # after the node: a membership stored meanwhile either is listed here or finds the node
    resync_memberships(ports, ports.stories.memberships_through(person.id))
    _log_record(ports, change, [stored.legacy_id], "person_synced", person_id=str(person.id))
    return change


def apply_user(ports: IngestionPorts, user: User) -> Change:
    """The user's social edges follow their person as stored."""
    if user.person_id is not None:
        _require_person(ports, "person_id", user.person_id)
    change = ports.stories.upsert_user(user)
    resync_memberships(ports, [(lg, user.id) for lg in ports.stories.member_legacy_ids(user.id)])
    return change


def apply_member(
    ports: IngestionPorts, member: Member, as_of: datetime | None = None, seq: int | None = None
) -> Change:
    """`as_of`, `seq`: when the change happened (story events), ordered as
    heirloom.domain.ordering says: a late or redelivered event never re-admits a removed member
    nor raises a role lowered at the same time or later. Without them (a dataset record), only
    where no event has set or removed the membership."""
    _require_legacy(ports, "legacy_id", member.legacy_id)
    _require_user(ports, "user_id", member.user_id)
    with ports.stories.member_lock(member.legacy_id, member.user_id):
        change = ports.stories.upsert_member(member, as_of, seq)
        sync_membership_edge(ports, member.legacy_id, member.user_id)
    return change


def remove_member(
    ports: IngestionPorts,
    legacy_id: UUID,
    user_id: UUID,
    as_of: datetime | None = None,
    seq: int | None = None,
) -> Change:
    """The membership removed in order; once the user is no member of the legacy (as stored:
    a late removal that was skipped forgets nothing), their conversation memory of it is
    deleted (docs/decisions/0021). Under the membership's lock, so a concurrent re-admission
    neither loses its edge nor its memory to this removal."""
    with ports.stories.member_lock(legacy_id, user_id):
        change = ports.stories.remove_member(legacy_id, user_id, as_of, seq)
        sync_membership_edge(ports, legacy_id, user_id)
        if ports.conversations is not None and ports.stories.role_of(user_id, legacy_id) is None:
            ports.conversations.forget_member(legacy_id, user_id)
    return change


def sync_membership_edge(ports: IngestionPorts, legacy_id: UUID, user_id: UUID) -> None:
    """The member's social edge to the subject, as the membership is stored (a skipped late
    event rewrites the stored state, never its own); the caller holds the membership's lock."""
    legacy, user = ports.stories.get_legacy(legacy_id), ports.stories.get_user(user_id)
    if legacy is not None and user is not None:
        graph_sync.sync_membership(
            ports.graph, legacy, user_id, user.person_id, ports.stories.role_of(user_id, legacy_id)
        )


def resync_memberships(ports: IngestionPorts, memberships: Sequence[tuple[UUID, UUID]]) -> None:
    """The social edges of these (legacy, user) memberships written again, each under its lock
    from what is stored then: a person, user or legacy they depend on has changed or arrived
    after the membership (decision 0020, "Since")."""
    for legacy_id, user_id in memberships:
        with ports.stories.member_lock(legacy_id, user_id):
            sync_membership_edge(ports, legacy_id, user_id)


def apply_relationship(
    ports: IngestionPorts, rel: Relationship, as_of: datetime | None = None, seq: int | None = None
) -> Change:
    """`as_of`, `seq`: when the change happened (story events), ordered as
    heirloom.domain.ordering says: a late or redelivered event never brings back a relationship
    removed at the same time or later, nor overwrites a newer change. Without them (a dataset
    record), only where no event has set or removed it. The graph gets the stored state, under
    the relationship's lock (a concurrent change of it waits)."""
    _require_person(ports, "from_person_id", rel.from_person_id)
    _require_person(ports, "to_person_id", rel.to_person_id)
    with ports.stories.relationship_lock(rel.from_person_id, rel.to_person_id, rel.type.value):
        change = ports.stories.upsert_relationship(rel, as_of, seq)
        sync_relationship_edge(ports, rel.from_person_id, rel.to_person_id, rel.type)
    legacies = [p.legacy_id for p in (ports.stories.get_person(rel.from_person_id),) if p is not None]
    ids = {"from_person_id": str(rel.from_person_id), "to_person_id": str(rel.to_person_id)}
    _log_record(ports, change, legacies, "relationship_synced", type=rel.type.value, **ids)
    return change


def update_relationship(
    ports: IngestionPorts,
    rel: Relationship,
    previous_type: RelationshipType | None = None,
    as_of: datetime | None = None,
    seq: int | None = None,
) -> Change:
    """The relationship's new state; a changed type is the removal of the old one and the add
    of the new one, both ordered at this change's stamp."""
    if previous_type is None or previous_type is rel.type:
        return apply_relationship(ports, rel, as_of, seq)
    _require_person(ports, "from_person_id", rel.from_person_id)
    _require_person(ports, "to_person_id", rel.to_person_id)
    gone = remove_relationship(ports, rel.from_person_id, rel.to_person_id, previous_type, as_of, seq)
    added = apply_relationship(ports, rel, as_of, seq)
    if Change.UPDATED in (gone, added) or Change.CREATED in (gone, added) or Change.DELETED in (gone, added):
        return Change.UPDATED
    return Change.SKIPPED if Change.SKIPPED in (gone, added) else Change.UNCHANGED


def remove_relationship(
    ports: IngestionPorts,
    from_person_id: UUID,
    to_person_id: UUID,
    type_: RelationshipType,
    as_of: datetime | None = None,
    seq: int | None = None,
) -> Change:
    """Remembered with its stamp (a late older add or update cannot bring it back); a
    relationship added again after it stays."""
    with ports.stories.relationship_lock(from_person_id, to_person_id, type_.value):
        change = ports.stories.remove_relationship(from_person_id, to_person_id, type_.value, as_of, seq)
        sync_relationship_edge(ports, from_person_id, to_person_id, type_)
    return change


def sync_relationship_edge(
    ports: IngestionPorts, from_person_id: UUID, to_person_id: UUID, type_: RelationshipType
) -> None:
    """The known edge as the relationship is stored (a skipped late event rewrites the stored
    state, never its own): written when there is one, dropped when not; the caller holds the
    relationship's lock."""
    stored = next(
        (
            r
            for r in ports.stories.relationships_of([from_person_id])
            if (r.from_person_id, r.to_person_id, r.type) == (from_person_id, to_person_id, type_)
        ),
        None,
    )
    if stored is None:
        graph_sync.drop_relationship(ports.graph, from_person_id, to_person_id, type_)
    else:
        graph_sync.sync_relationship(ports.graph, stored)


def apply_link(
    ports: IngestionPorts, link: Link, as_of: datetime | None = None, seq: int | None = None
) -> Change:
    """`as_of`, `seq`: when the change happened (story events), ordered as
    heirloom.domain.ordering says (an older change is skipped; at the same stamp the more
    restrictive state stays). The graph gets the link as stored, never a stale event's, under
    the link's lock."""
    _require_legacy(ports, "legacy_a_id", link.legacy_a_id)
    _require_legacy(ports, "legacy_b_id", link.legacy_b_id)
    with ports.stories.link_lock(link.id):
        change = ports.stories.upsert_link(link, as_of, seq)
        stored = ports.stories.get_link(link.id) or link
        graph_sync.sync_link(ports.graph, stored)
    ends = [stored.legacy_a_id, stored.legacy_b_id]
    _log_record(ports, change, ends, "link_synced", link_id=str(link.id), status=stored.status.value)
    return change


def remove_link(
    ports: IngestionPorts,
    link_id: UUID,
    legacy_a_id: UUID,
    legacy_b_id: UUID,
    as_of: datetime | None = None,
    seq: int | None = None,
) -> Change:
    """The link kept as revoked with nothing shared (ordered like any link change, so a late
    create or update cannot revive it) and its edge dropped."""
    ended = Link(
        id=link_id,
        legacy_a_id=legacy_a_id,
        legacy_b_id=legacy_b_id,
        status=LinkStatus.REVOKED,
        share_mode=ShareMode.SELECTIVE,
    )
    return apply_link(ports, ended, as_of, seq)


def process_story(
    ports: IngestionPorts, story: Story, digest: str, started: PendingEmbedding | None = None
) -> None:
    """`index_story` then `enrich_story`, with their two model calls running side by side, as
    the ingestion workflow's Parallel state runs them: the chunks are embedded in the model
    thread (`started` by the caller before the story's own writes, or now) while this thread
    extracts the entities and reads what resolving them needs. The writes keep their order:
    the chunk index first (also when the extraction fails, as before), then the graph; an
    embedding error is raised before any of them."""
    pending = (
        started
        if started is not None and started.of(story, digest, ports.chunk_max_tokens)
        else start_embedding(ports, story, digest)
    )
    resolved: tuple[ExtractedEntities, dict[str, str], list[str]] | None = None
    try:
        if ports.extractor is not None and ports.stories.graph_synced(story.id) != (
            digest,
            ports.extractor_version,
        ):
            known = ports.stories.persons_of([story.legacy_id])
            entities = extract_story(ports, story, known)
            resolved = (entities, *resolve_mentions(ports, story, entities, known))
    except Exception:
        if pending is not None:
            pending.store(ports, story)
        raise
    if pending is not None:
        pending.store(ports, story)
    if resolved is not None:
        report = write_entities(ports, story, resolved[0], digest, resolved[1], resolved[2])
        relink_named(ports, story, report.names_changed)


def apply_story(
    ports: IngestionPorts,
    story: Story,
    *,
    process: bool = True,
    seq: int | None = None,
    may_move: bool = False,
    start_ingestion: Callable[[UUID], None] | None = None,
) -> Change:
    """Store `story` (stale versions are no-ops) and bring the index and graph in step with what
    PostgreSQL now holds, which may be a newer version than the one delivered. With
    `process=False` only the record and its Story node are written; the ingestion workflow
    (chunk + embed, extraction, graph sync) does the rest. The delivered content's embedding
    starts before the story's writes (they overlap it) and is used if it is what is stored.
    A moved story's names (decision 0040) leave the legacy it left, whose stories that write
    them are re-linked (`relink_named`, with `start_ingestion`), and are given anew in its new
    legacy at its next sync.
    `seq`: the source's sequence number, after `updated_at` in heirloom.domain.ordering.
    `may_move`: story events only; for any other source a version of a story another legacy
    holds is SKIPPED when older than the stored one (as ordering would; a dataset loaded again
    after an event moved its story), else StoryOfAnotherLegacy, before anything is written."""
    _require_legacy(ports, "legacy_id", story.legacy_id)
    _require_user(ports, "author_user_id", story.author_user_id)
    before = ports.stories.get_story(story.id)
    if before is not None and before.legacy_id != story.legacy_id and not may_move:
        if story.updated_at < before.updated_at:
            return Change.SKIPPED
        raise StoryOfAnotherLegacy(story.id)
    delivered = content_hash(story.content)
    started = start_embedding(ports, story, digest_of(story.title, delivered)) if process else None
    # the legacy a moved story left, and the names it gave there
    left: Story | None = None
    names: Sequence[NamedThing] = ()
    if before is not None and before.legacy_id != story.legacy_id:
        # a move: its entities are scoped by legacy, so they are built again (unmarked before
        # the row moves, so a crash in between cannot leave the old scoping marked as done);
        # its names are forgotten with the mark, so its next sync gives them in the new legacy
        left, names = before, names_given(ports, before)
        ports.stories.forget_graph_synced([story.id])
        ports.stories.set_named_things(story.id, ())
    # which established names a story may link, and which stories its own names reach, follow
    # from visibilities (decision 0040): on a change the story and the stories writing its names
    # are unmarked before the row changes, so a failure after the write leaves them behind (for
    # a retry's workflow or the backfill), never marked as done
    reread: list[Story] = []
    seen_anew = False
    if before is not None and left is None and before.visibility != story.visibility:
        seen_anew = True
        reread = writing_names(ports, before, names_given(ports, before))
        ports.stories.forget_graph_synced([story.id, *(s.id for s in reread)])
    change = ports.stories.upsert_story(story, delivered, seq)
    if left is not None or seen_anew:
        # a sync that read the story before this write may have marked it meanwhile
        ports.stories.forget_graph_synced([story.id])
    if left is not None:
        relink_named(ports, left, names, start_ingestion)
    elif change is Change.UPDATED and reread:
        relink(ports, reread, start_ingestion)
    # the graph gets the story as stored (its times as PostgreSQL gives them back), never the
    # event's copy: two deliveries of one version write the same values
    current = ports.stories.get_story(story.id)
    if current is None:  # deleted (before or after this version was written): nothing to index
        return change if change is Change.SKIPPED else Change.UNCHANGED
    digest = story_digest(current.title, current.content)
    try:
        with ports.stories.story_graph_lock(current.id):
            graph_sync.sync_story(ports.graph, current)
        if process:
            process_story(ports, current, digest, started)
    except Exception:
        if not deleted_meanwhile(ports, story.id):
            raise
        return change  # the row vanished under these writes; they are undone
    deleted_meanwhile(ports, story.id)
    return change


def require_author(ports: IngestionPorts, story: Story) -> None:
    """AuthorNotAllowed unless an S3 import may name its author (decision 0028): a current
    member of the story's legacy whose role may give a story that visibility
    (domain/access.CREATES), the stored story's own author if it exists in that legacy, and
    neither a personal record nor a stored personal story. A record the store would not write
    (deleted for good, older than the stored story, or the same) passes, so an import sent
    again after its author left changes nothing and fails nothing. Checked before anything is
    written."""
    _require_legacy(ports, "legacy_id", story.legacy_id)
    if ports.stories.story_deleted(story.id):
        return  # the store skips it: a delete is final
    mine = ports.stories.get_story(story.id)
    if mine is not None and (mine.legacy_id != story.legacy_id or story.updated_at < mine.updated_at):
        return  # the store skips an older version; apply_story refuses a move
    if Visibility.PERSONAL in (story.visibility, mine.visibility if mine else None):
        raise AuthorNotAllowed(
            "visibility: an import may not write a personal story; only its author adds one"
        )
    if mine is not None and mine.author_user_id != story.author_user_id:
        raise AuthorNotAllowed(
            f"author_user_id: story {story.id} has another author; a record may not change it"
        )
    if mine is not None and (mine.title, mine.content, mine.visibility, mine.updated_at) == (
        story.title,
        story.content,
        story.visibility,
        story.updated_at,
    ):
        return  # the same version: unchanged
    why = author_refusal(story, ports.stories.role_of(story.author_user_id, story.legacy_id))
    if why is not None:
        raise AuthorNotAllowed(why)


def author_refusal(story: Story, role: Role | None) -> str | None:
    """Why an author with `role` in the story's legacy (None: not a member) may not write
    `story`, or None if they may."""
    if role is None:  # an unknown user reads alike (decision 0025)
        return f"author_user_id: user {story.author_user_id} is not a member of legacy {story.legacy_id}"
    if story.visibility not in CREATES[role]:
        allowed = ", ".join(sorted(v.value for v in CREATES[role]))
        return (
            f"visibility: the author is the legacy's {role.value}, who may not write a"
            f" {story.visibility.value} story; choose {allowed}"
        )
    return None


def import_story(ports: IngestionPorts, story: Story) -> Change:
    """`apply_story` for an S3 import: its author checked first (`require_author`), so a refused
    record writes nothing."""
    require_author(ports, story)
    return apply_story(ports, story)


def story_behind(ports: IngestionPorts, story_id: UUID) -> bool:
    """Is the stored story's chunk index or graph not built from its current content (a
    hand-over to the ingestion workflow that never started, or an execution that failed)? Its
    title counts as its content does (`story_digest`)."""
    story = ports.stories.get_story(story_id)
    if story is None:
        return False
    digest = story_digest(story.title, story.content)
    if ports.vectors.indexed_hash(story_id) != index_key(digest, ports.chunk_max_tokens):
        return True
    return ports.extractor is not None and ports.stories.graph_synced(story_id) != (
        digest,
        ports.extractor_version,
    )


def deleted_meanwhile(ports: IngestionPorts, story_id: UUID) -> bool:
    """After writing a story's index or graph data: if a delete removed its row meanwhile, that
    delete may have cleaned up before some of these writes landed, so clean up again (idempotent).
    True if the story is gone."""
    if ports.stories.get_story(story_id) is not None:
        return False
    remove_derived(ports, story_id)
    return True


def remove_derived(ports: IngestionPorts, story_id: UUID) -> None:
    """Everything built from a story outside its row: chunks, graph contributions, its node."""
    ports.vectors.delete_chunks(story_id)
    with ports.stories.story_graph_lock(story_id):
        withdraw_story(ports.graph, str(story_id))
        graph_sync.delete_story_node(ports.graph, str(story_id))


def delete_story(
    ports: IngestionPorts,
    story_id: UUID,
    deleted_at: datetime | None = None,
    legacy_id: UUID | None = None,
    start_ingestion: Callable[[UUID], None] | None = None,
) -> Change:
    """Delete the story everywhere, for good: no later create or update of this id revives it
    (heirloom.domain.ordering). With `legacy_id` (story events carry it), a delete that arrives
    before the story's create is remembered, so the late create is skipped. The stories that
    write a name this one gave an animal or a work are re-linked (`relink_named`)."""
    # chunks go with the row (ON DELETE CASCADE)
    before = ports.stories.get_story(story_id)
    names = names_given(ports, before) if before is not None else ()
    change = ports.stories.delete_story(story_id, deleted_at, legacy_id)
    remove_derived(ports, story_id)
    if before is not None:
        relink_named(ports, before, names, start_ingestion)
    if ports.curation is not None and before is not None:
        ports.curation.record_change(
            GraphChange(
                legacy_id=before.legacy_id,
                source="event",
                story_id=story_id,
                action="story_deleted",
                detail={
                    "created_at": before.created_at.isoformat(),
                    "visibility": before.visibility.value,
                    "author_user_id": str(before.author_user_id),
                },
            )
        )
    return change
