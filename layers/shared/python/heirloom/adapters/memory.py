"""In-memory adapters for every port, for the unit tier: each step runs on them without engines.

`MemoryStoryStore` keeps the records and applies the same ordering rules as the PostgreSQL
store (heirloom.domain.ordering: stamps, the more restrictive state on a tie, final deletes);
`MemoryVectorIndex` (memory_index.py) searches by cosine within a `ReadScope`, as the SQL does. A contract test
(tests/integration/test_store_contract.py) runs the same assertions on both, so neither drifts.
There is no in-memory Cypher engine: `memory_services` uses the no-graph store, which checks
every query against the schema and answers with no rows.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from heirloom.adapters.memory_index import MemoryVectorIndex
from heirloom.contracts.access import KnownRelationship, StoryMeta
from heirloom.contracts.extraction import NamedThing
from heirloom.contracts.ingestion import RunningExecution
from heirloom.contracts.records import (
    Legacy,
    Link,
    Member,
    Person,
    Relationship,
    Role,
    Story,
    User,
    Visibility,
)
from heirloom.domain.chunking import digest_of
from heirloom.domain.ordering import (
    Stamp,
    Verdict,
    lesser_role,
    narrower_link,
    relationship_applies,
    relationship_order,
    same_link_state,
    verdict,
)
from heirloom.errors import NotFound
from heirloom.ports import Change

if TYPE_CHECKING:
    from heirloom.services import Services
    from heirloom.settings import Settings

_VISIBILITY_RANK = {Visibility.PUBLIC: 0, Visibility.PRIVATE: 1, Visibility.PERSONAL: 2}


def _changed(stored: Any, incoming: Any) -> Change:
    if stored is None:
        return Change.CREATED
    return Change.UNCHANGED if stored == incoming else Change.UPDATED


@dataclass
class _Stored:
    """A record and the stamp of its last change (None: a dataset record)."""

    value: Any
    stamp: Stamp | None = None


@dataclass
class _Processing:
    chunks_hash: str | None = None
    embedder: str | None = None
    graph_hash: str | None = None
    extractor_version: str | None = None
    fingerprint: str | None = None
    named_things: tuple[NamedThing, ...] = ()


@dataclass
class MemoryStoryStore:
    """The story store's four parts (record writes, access reads, processing ledger, failures)."""

    legacies: dict[UUID, Legacy] = field(default_factory=dict)
    persons: dict[UUID, _Stored] = field(default_factory=dict)
    users: dict[UUID, User] = field(default_factory=dict)
    members: dict[tuple[UUID, UUID], _Stored] = field(default_factory=dict)
    removals: dict[tuple[UUID, UUID], Stamp] = field(default_factory=dict)
    relationships: dict[tuple[UUID, UUID, str], Relationship] = field(default_factory=dict)
    #: the stamp of each relationship's last change (None: a dataset's), and its removals
    relationship_stamps: dict[tuple[UUID, UUID, str], Stamp | None] = field(default_factory=dict)
    relationship_removals: dict[tuple[UUID, UUID, str], Stamp] = field(default_factory=dict)
    links: dict[UUID, _Stored] = field(default_factory=dict)
    #: story id -> (story, content hash, seq)
    stories: dict[UUID, tuple[Story, str, int | None]] = field(default_factory=dict)
    tombstones: dict[UUID, datetime] = field(default_factory=dict)
    processing: dict[UUID, _Processing] = field(default_factory=dict)
    failures: list[tuple[UUID, str, str]] = field(default_factory=list)
    #: one lock per story's graph writes and per record whose graph write follows its own
    #: (`story_graph_lock`, `relationship_lock`, ...)
    _locks: dict[tuple[Any, ...], threading.Lock] = field(default_factory=dict, repr=False, compare=False)
    _locks_guard: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    #: the vector index whose chunks go with a deleted story (as the foreign key cascades)
    index: MemoryVectorIndex | None = None

    def vector_index(self, model_id: str = "memory") -> MemoryVectorIndex:
        """The index of this store's stories (a deleted story's chunks go with it)."""

        self.index = MemoryVectorIndex(self.stories, model_id=model_id)
        return self.index

    # -- record writes ---------------------------------------------------------------------
    def upsert_legacy(self, legacy: Legacy) -> Change:
        change = _changed(self.legacies.get(legacy.id), legacy)
        self.legacies[legacy.id] = legacy
        return change

    def upsert_user(self, user: User) -> Change:
        change = _changed(self.users.get(user.id), user)
        self.users[user.id] = user
        return change

    def upsert_relationship(
        self, relationship: Relationship, as_of: datetime | None = None, seq: int | None = None
    ) -> Change:
        r, incoming = relationship, Stamp.of(as_of, seq)
        key = (r.from_person_id, r.to_person_id, r.type.value)
        stored, stored_stamp = self.relationships.get(key), self.relationship_stamps.get(key)
        same = stored is not None and relationship_order(stored) == relationship_order(r)
        if not relationship_applies(stored, stored_stamp, self.relationship_removals.get(key), r, incoming):
            return Change.UNCHANGED if same else Change.SKIPPED
        self.relationships[key], self.relationship_stamps[key] = r, incoming
        return Change.CREATED if stored is None else (Change.UNCHANGED if same else Change.UPDATED)

    def remove_relationship(
        self,
        from_person_id: UUID,
        to_person_id: UUID,
        type_: str,
        as_of: datetime | None = None,
        seq: int | None = None,
    ) -> Change:
        key, incoming = (from_person_id, to_person_id, type_), Stamp.of(as_of, seq)
        if incoming is not None:
            known = self.relationship_removals.get(key)
            self.relationship_removals[key] = incoming if known is None else max(known, incoming)
        if key not in self.relationships:
            return Change.UNCHANGED
        stored_stamp = self.relationship_stamps.get(key)
        if incoming is not None and stored_stamp is not None and stored_stamp > incoming:
            return Change.SKIPPED  # added again after this removal
        del self.relationships[key]
        self.relationship_stamps.pop(key, None)
        return Change.DELETED

    def upsert_person(self, person: Person, as_of: datetime | None = None, seq: int | None = None) -> Change:
        stored = self.persons.get(person.id)
        same = stored is not None and _person_key(stored.value) == _person_key(person)
        match verdict(stored.stamp if stored else None, Stamp.of(as_of, seq), exists=stored is not None):
            case Verdict.SKIP:
                return Change.UNCHANGED if same else Change.SKIPPED
            case Verdict.MERGE if (
                stored is not None and not same and _person_key(person) < _person_key(stored.value)
            ):
                return Change.SKIPPED
        self.persons[person.id] = _Stored(person, Stamp.of(as_of, seq))
        return Change.CREATED if stored is None else (Change.UNCHANGED if same else Change.UPDATED)

    def upsert_member(self, member: Member, as_of: datetime | None = None, seq: int | None = None) -> Change:
        key, incoming = (member.legacy_id, member.user_id), Stamp.of(as_of, seq)
        stored = self.members.get(key)
        role = member.role
        kept = Change.UNCHANGED if stored and stored.value == role else Change.SKIPPED
        removal = self.removals.get(key)
        if key in self.removals and (incoming is None or (removal is not None and incoming <= removal)):
            return kept
        match verdict(stored.stamp if stored else None, incoming, exists=stored is not None):
            case Verdict.SKIP:
                return kept
            case Verdict.MERGE:
                role = lesser_role(stored.value, role) if stored else role
        self.members[key] = _Stored(role, incoming)
        return (
            Change.CREATED
            if stored is None
            else (Change.UNCHANGED if stored.value == role else Change.UPDATED)
        )

    def remove_member(
        self, legacy_id: UUID, user_id: UUID, as_of: datetime | None = None, seq: int | None = None
    ) -> Change:
        key, incoming = (legacy_id, user_id), Stamp.of(as_of, seq)
        if incoming is not None:
            known = self.removals.get(key)
            self.removals[key] = incoming if known is None else max(known, incoming)
        stored = self.members.get(key)
        if stored is None:
            return Change.UNCHANGED
        if incoming is not None and stored.stamp is not None and stored.stamp > incoming:
            return Change.SKIPPED  # re-admitted after this removal
        del self.members[key]
        return Change.DELETED

    def upsert_link(self, link: Link, as_of: datetime | None = None, seq: int | None = None) -> Change:
        stored = self.links.get(link.id)
        wanted = _sorted_link(link)
        match verdict(stored.stamp if stored else None, Stamp.of(as_of, seq), exists=stored is not None):
            case Verdict.SKIP:
                return Change.UNCHANGED if stored and same_link_state(stored.value, link) else Change.SKIPPED
            case Verdict.MERGE:
                wanted = _sorted_link(narrower_link(stored.value, link)) if stored else wanted
        self.links[link.id] = _Stored(wanted, Stamp.of(as_of, seq))
        if stored is None:
            return Change.CREATED
        return Change.UNCHANGED if same_link_state(stored.value, wanted) else Change.UPDATED

    def upsert_story(self, story: Story, content_hash: str, seq: int | None = None) -> Change:
        if story.id in self.tombstones:
            return Change.SKIPPED
        stored = self.stories.get(story.id)
        if stored is not None and _story_order(story, content_hash, seq) <= _story_order(*stored):
            old, old_hash, old_seq = stored
            same = (
                old.legacy_id,
                old.author_user_id,
                old.title,
                old.visibility,
                old_hash,
                old.updated_at,
            ) == (
                story.legacy_id,
                story.author_user_id,
                story.title,
                story.visibility,
                content_hash,
                story.updated_at,
            ) and (old_seq if old_seq is not None else -1) == (seq if seq is not None else -1)
            return Change.UNCHANGED if same else Change.SKIPPED
        self.stories[story.id] = (story, content_hash, seq)
        return Change.CREATED if stored is None else Change.UPDATED

    def delete_story(
        self, story_id: UUID, deleted_at: datetime | None = None, legacy_id: UUID | None = None
    ) -> Change:
        stored = self.stories.pop(story_id, None)
        if stored is not None or legacy_id is not None:
            at = deleted_at or datetime.now(UTC)
            self.tombstones[story_id] = max(self.tombstones.get(story_id, at), at)
        if stored is None:
            return Change.UNCHANGED
        self.processing.pop(story_id, None)
        if self.index is not None:
            self.index.chunks.pop(story_id, None)
        return Change.DELETED

    # -- access reads ----------------------------------------------------------------------
    def get_legacy(self, legacy_id: UUID) -> Legacy | None:
        return self.legacies.get(legacy_id)

    def get_person(self, person_id: UUID) -> Person | None:
        stored = self.persons.get(person_id)
        return stored.value if stored else None

    def get_user(self, user_id: UUID) -> User | None:
        return self.users.get(user_id)

    def get_story(self, story_id: UUID) -> Story | None:
        stored = self.stories.get(story_id)
        return stored[0] if stored else None

    def get_story_hash(self, story_id: UUID) -> str | None:
        stored = self.stories.get(story_id)
        return stored[1] if stored else None

    def story_deleted(self, story_id: UUID) -> bool:
        return story_id in self.tombstones

    def role_of(self, user_id: UUID, legacy_id: UUID) -> Role | None:
        stored = self.members.get((legacy_id, user_id))
        return stored.value if stored else None

    def member_legacy_ids(self, user_id: UUID) -> list[UUID]:
        return sorted((legacy for legacy, user in self.members if user == user_id), key=str)

    def member_user_ids(self, legacy_id: UUID) -> list[UUID]:
        return sorted((user for legacy, user in self.members if legacy == legacy_id), key=str)

    def memberships_through(self, person_id: UUID) -> list[tuple[UUID, UUID]]:
        subjects = {lg.id for lg in self.legacies.values() if lg.subject_person_id == person_id}
        users = {u.id for u in self.users.values() if u.person_id == person_id}
        found = [(legacy, user) for legacy, user in self.members if legacy in subjects or user in users]
        return sorted(found, key=lambda key: (str(key[0]), str(key[1])))

    def links_of(self, legacy_id: UUID) -> list[Link]:
        found = [
            s.value for s in self.links.values() if legacy_id in (s.value.legacy_a_id, s.value.legacy_b_id)
        ]
        return sorted(found, key=lambda link: str(link.id))

    def get_link(self, link_id: UUID) -> Link | None:
        stamped = self.links.get(link_id)
        return stamped.value if stamped is not None else None

    def persons_of(self, legacy_ids: Sequence[UUID]) -> list[Person]:
        wanted = set(legacy_ids)
        return sorted(
            (s.value for s in self.persons.values() if s.value.legacy_id in wanted), key=lambda p: str(p.id)
        )

    def relationships_of(self, person_ids: Sequence[UUID]) -> list[Relationship]:
        wanted = set(person_ids)
        return [
            r for r in self.relationships.values() if r.from_person_id in wanted or r.to_person_id in wanted
        ]

    def known_relationships(self, person_ids: Sequence[UUID]) -> list[KnownRelationship]:
        out = []
        for r in sorted(
            self.relationships_of(person_ids), key=lambda r: (r.from_person_id, r.to_person_id, r.type)
        ):
            a, b = self.get_person(r.from_person_id), self.get_person(r.to_person_id)
            if a is None or b is None:
                continue
            out.append(
                KnownRelationship(
                    **r.model_dump(exclude={"type"}),
                    type=r.type.value,
                    from_name=a.name,
                    from_legacy_id=a.legacy_id,
                    to_name=b.name,
                    to_legacy_id=b.legacy_id,
                )
            )
        return out

    def story_meta(self, story_ids: Iterable[UUID]) -> list[StoryMeta]:
        return [
            StoryMeta(
                id=s.id,
                legacy_id=s.legacy_id,
                author_user_id=s.author_user_id,
                visibility=s.visibility,
                title=s.title,
                author_name=user.name if (user := self.users.get(s.author_user_id)) else "",
                updated_at=s.updated_at,
                created_at=s.created_at,
            )
            for sid in story_ids
            if (stored := self.stories.get(sid)) is not None
            for s in (stored[0],)
        ]

    def legacy_ids(self) -> list[UUID]:
        return sorted(self.legacies, key=str)

    def stories_of(self, legacy_id: UUID) -> list[Story]:
        return sorted(
            (s for s, _, _ in self.stories.values() if s.legacy_id == legacy_id), key=lambda s: str(s.id)
        )

    # -- processing ledger and failures ----------------------------------------------------
    def graph_synced(self, story_id: UUID) -> tuple[str, str] | None:
        p = self.processing.get(story_id)
        if p is None or p.graph_hash is None or p.extractor_version is None:
            return None
        return p.graph_hash, p.extractor_version

    def mark_graph_synced(
        self, story_id: UUID, content_hash: str, extractor_version: str, fingerprint: str | None = None
    ) -> None:
        p = self.processing.setdefault(story_id, _Processing())
        p.graph_hash, p.extractor_version, p.fingerprint = content_hash, extractor_version, fingerprint

    def set_named_things(self, story_id: UUID, things: Sequence[NamedThing]) -> None:
        self.processing.setdefault(story_id, _Processing()).named_things = tuple(things)

    def named_things_of(self, legacy_id: UUID) -> dict[UUID, tuple[NamedThing, ...]]:
        return {
            sid: p.named_things
            for sid, p in self.processing.items()
            if p.named_things
            and (stored := self.stories.get(sid)) is not None
            and stored[0].legacy_id == legacy_id
        }

    @contextmanager
    def story_graph_lock(self, story_id: UUID) -> Iterator[None]:
        with self._locked(("story", story_id)):
            yield

    @contextmanager
    def relationship_lock(self, from_person_id: UUID, to_person_id: UUID, type_: str) -> Iterator[None]:
        with self._locked(("relationship", from_person_id, to_person_id, type_)):
            yield

    @contextmanager
    def person_lock(self, person_id: UUID) -> Iterator[None]:
        with self._locked(("person", person_id)):
            yield

    @contextmanager
    def member_lock(self, legacy_id: UUID, user_id: UUID) -> Iterator[None]:
        with self._locked(("member", legacy_id, user_id)):
            yield

    @contextmanager
    def link_lock(self, link_id: UUID) -> Iterator[None]:
        with self._locked(("link", link_id)):
            yield

    @contextmanager
    def _locked(self, key: tuple[Any, ...]) -> Iterator[None]:
        with self._locks_guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            yield

    def graph_synced_count(self) -> int:
        return sum(1 for p in self.processing.values() if p.graph_hash is not None)

    def graph_fingerprints(self) -> dict[UUID, str | None]:
        return {sid: p.fingerprint for sid, p in self.processing.items() if p.graph_hash is not None}

    def forget_graph_synced(self, story_ids: Sequence[UUID] | None = None) -> None:
        for sid, p in self.processing.items():
            if story_ids is None or sid in story_ids:
                p.graph_hash = p.extractor_version = p.fingerprint = None

    def stories_needing_processing(
        self,
        *,
        after: UUID | None,
        limit: int,
        embedder: str,
        extractor_version: str | None,
        chunk_format: str,
    ) -> list[UUID]:
        behind = []
        for sid in sorted(self.stories, key=str):
            if after is not None and str(sid) <= str(after):
                continue
            p = self.processing.get(sid, _Processing())
            indexed = self.index.processing.get(sid) if self.index is not None else None
            story, content_digest, _ = self.stories[sid]
            digest = digest_of(story.title, content_digest)
            chunks_ok = indexed == (f"{digest}:{chunk_format}", embedder)
            graph_ok = extractor_version is None or (p.graph_hash, p.extractor_version) == (
                digest,
                extractor_version,
            )
            if not (chunks_ok and graph_ok):
                behind.append(sid)
        return behind[:limit]

    def counts(self) -> dict[str, int]:
        return {
            "legacies": len(self.legacies),
            "persons": len(self.persons),
            "users": len(self.users),
            "legacy_members": len(self.members),
            "legacy_links": len(self.links),
            "stories": len(self.stories),
            "story_chunks": sum(len(c) for c in self.index.chunks.values()) if self.index else 0,
        }

    def record_ingest_failure(self, story_id: UUID, error: str, cause: str) -> None:
        self.failures.append((story_id, error, cause))


def _person_key(p: Person) -> tuple[Any, ...]:
    return (str(p.legacy_id), p.name, list(p.aliases), p.birth_year, p.death_year)


def _sorted_link(link: Link) -> Link:
    return link.model_copy(update={"shared_story_ids": tuple(sorted(link.shared_story_ids, key=str))})


def _story_order(story: Story, content_hash: str, seq: int | None) -> tuple[Any, ...]:
    """The order versions of a story are applied in: time, then seq, then the more restrictive
    visibility and a fixed order of the other fields (as the PostgreSQL store's upsert)."""
    return (
        story.updated_at,
        -1 if seq is None else seq,
        _VISIBILITY_RANK[story.visibility],
        content_hash,
        story.title,
        str(story.legacy_id),
        str(story.author_user_id),
    )


@dataclass
class MemoryObjectStore:
    """S3 objects by (bucket, key), with their tags."""

    objects: dict[tuple[str, str], bytes] = field(default_factory=dict)
    tags: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)

    def size(self, bucket: str, key: str) -> int:
        return len(self.read(bucket, key))

    def read(self, bucket: str, key: str) -> bytes:
        if (bucket, key) not in self.objects:
            raise NotFound(f"s3://{bucket}/{key} does not exist")
        return self.objects[(bucket, key)]

    def tag(self, bucket: str, key: str, tags: dict[str, str]) -> None:
        self.tags[(bucket, key)] = dict(tags)


@dataclass
class MemoryBackfillRuns:
    """The backfill executions running, as the test sets them."""

    executions: list[RunningExecution] = field(default_factory=list)

    def running(self, state_machine_arn: str) -> Sequence[RunningExecution]:
        return list(self.executions)


def memory_services(settings: Settings | None = None, **overrides: Any) -> Services:
    """Services whose ports are all in memory: the stores above, the hashing embedder, the
    no-graph store, no ingestion workflow (stories are processed inline). `overrides` replace
    any port by name (e.g. `context_workflow=` for the Api step)."""
    from heirloom.adapters.embedders import HashingEmbedder
    from heirloom.adapters.memory_conversations import MemoryConversationStore
    from heirloom.adapters.memory_curation import MemoryCurationStore
    from heirloom.adapters.nograph import NoGraphStore
    from heirloom.services import Services
    from heirloom.settings import Settings

    services = Services(settings or Settings())
    store = MemoryStoryStore()
    embedder = HashingEmbedder(64)
    ports: Mapping[str, Any] = {
        "stories": store,
        "vectors": store.vector_index(embedder.model_id),
        "embedder": embedder,
        "graph": NoGraphStore("memory"),
        "extractor": None,
        "objects": MemoryObjectStore(),
        "start_ingestion": None,
        "backfill_runs": MemoryBackfillRuns(),
        "curation": MemoryCurationStore(),
        "conversations": MemoryConversationStore(),
        **overrides,
    }
    for name, port in ports.items():
        setattr(services, name, port)
    return services
