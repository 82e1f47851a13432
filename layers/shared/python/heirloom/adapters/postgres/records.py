"""Record writes: legacies, persons, users, members, relationships, links, stories; every
access-changing write ordered (domain/ordering.py) and serialised by an advisory lock."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from uuid import UUID

from heirloom.adapters.postgres.rows import (
    VISIBILITY_RANK,
    StoreBase,
    advisory_lock,
    change_from_row,
    link_from_row,
    person_order,
    seq_value,
    stamp_of,
)
from heirloom.contracts.records import (
    Legacy,
    Link,
    Member,
    Person,
    Relationship,
    Role,
    Story,
    User,
)
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
from heirloom.ports import Change


class RecordWrites(StoreBase):
    # -- writes -----------------------------------------------------------------------------
    def upsert_legacy(self, legacy: Legacy) -> Change:
        return self._upsert(
            "INSERT INTO legacies (id, name, subject_person_id) VALUES (%s, %s, %s)"
            " ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name,"
            " subject_person_id = EXCLUDED.subject_person_id, updated_at = now()"
            " WHERE (legacies.name, legacies.subject_person_id)"
            " IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.subject_person_id)"
            " RETURNING (xmax = 0) AS inserted",
            (legacy.id, legacy.name, legacy.subject_person_id),
        )

    def upsert_person(self, person: Person, as_of: datetime | None = None, seq: int | None = None) -> Change:
        """Ordered by (`as_of`, `seq`) (heirloom.domain.ordering): a person's legacy decides who
        may see the known relationships it is in, so an older change (a late Person Created
        moving it back) is SKIPPED; at an equal stamp a fixed order of the fields decides.
        Without `as_of` (a dataset record) it applies only where no event has set the person."""
        p = person
        incoming = (str(p.legacy_id), p.name, list(p.aliases), p.birth_year, p.death_year)
        with self.db.transaction() as conn:
            advisory_lock(conn, f"person:{p.id}")
            row = conn.execute(
                "SELECT legacy_id, name, aliases, birth_year, death_year, changed_at, changed_seq"
                " FROM persons WHERE id = %s",
                (p.id,),
            ).fetchone()
            stored = (
                None
                if row is None
                else (
                    str(row["legacy_id"]),
                    row["name"],
                    list(row["aliases"]),
                    row["birth_year"],
                    row["death_year"],
                )
            )
            same = stored == incoming
            match verdict(stamp_of(row["changed_at"], row["changed_seq"]) if row else None, Stamp.of(as_of, seq),
                          exists=row is not None):  # fmt: skip
                case Verdict.SKIP:
                    return Change.UNCHANGED if same else Change.SKIPPED
                case Verdict.MERGE if (
                    not same and stored is not None and person_order(incoming) < person_order(stored)
                ):
                    return Change.SKIPPED
            conn.execute(
                "INSERT INTO persons (id, legacy_id, name, aliases, birth_year, death_year, changed_at, changed_seq)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (id) DO UPDATE SET legacy_id = EXCLUDED.legacy_id, name = EXCLUDED.name,"
                " aliases = EXCLUDED.aliases, birth_year = EXCLUDED.birth_year, death_year = EXCLUDED.death_year,"
                " changed_at = EXCLUDED.changed_at, changed_seq = EXCLUDED.changed_seq",
                (p.id, p.legacy_id, p.name, list(p.aliases), p.birth_year, p.death_year, as_of, seq),
            )
        if row is None:
            return Change.CREATED
        return Change.UNCHANGED if same else Change.UPDATED

    def upsert_user(self, user: User) -> Change:
        return self._upsert(
            "INSERT INTO users (id, name, person_id) VALUES (%s, %s, %s)"
            " ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, person_id = EXCLUDED.person_id"
            " WHERE (users.name, users.person_id) IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.person_id)"
            " RETURNING (xmax = 0) AS inserted",
            (user.id, user.name, user.person_id),
        )

    def upsert_member(self, member: Member, as_of: datetime | None = None, seq: int | None = None) -> Change:
        """Ordered by (`as_of`, `seq`) (heirloom.domain.ordering): a change older than the
        membership's last change or removal is SKIPPED; at an equal stamp the lesser role stays
        and a removal wins. Without `as_of` (a dataset record) it applies only where no event
        has set or removed the membership."""
        m = member
        incoming = Stamp.of(as_of, seq)
        with self.db.transaction() as conn:
            advisory_lock(conn, f"member:{m.legacy_id}:{m.user_id}")
            removal = conn.execute(
                "SELECT removed_at, removed_seq FROM member_removals WHERE legacy_id = %s AND user_id = %s",
                (m.legacy_id, m.user_id),
            ).fetchone()
            stored = conn.execute(
                "SELECT role, changed_at, changed_seq FROM legacy_members WHERE legacy_id = %s AND user_id = %s",
                (m.legacy_id, m.user_id),
            ).fetchone()
            role = m.role
            # not applied: what is stored already says so (UNCHANGED), or it differs (SKIPPED)
            kept = Change.UNCHANGED if stored and stored["role"] == role.value else Change.SKIPPED
            if removal is not None and (
                incoming is None
                or incoming <= Stamp(removal["removed_at"], seq_value(removal["removed_seq"]))
            ):
                return kept
            stored_stamp = stamp_of(stored["changed_at"], stored["changed_seq"]) if stored else None
            match verdict(stored_stamp, incoming, exists=stored is not None):
                case Verdict.SKIP:
                    return kept
                case Verdict.MERGE:
                    role = lesser_role(Role(stored["role"]), role) if stored else role
            conn.execute(
                "INSERT INTO legacy_members (legacy_id, user_id, role, changed_at, changed_seq)"
                " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (legacy_id, user_id) DO UPDATE SET role = EXCLUDED.role,"
                " changed_at = EXCLUDED.changed_at, changed_seq = EXCLUDED.changed_seq",
                (m.legacy_id, m.user_id, role.value, as_of, seq),
            )
        if stored is None:
            return Change.CREATED
        return Change.UNCHANGED if stored["role"] == role.value else Change.UPDATED

    def remove_member(
        self, legacy_id: UUID, user_id: UUID, as_of: datetime | None = None, seq: int | None = None
    ) -> Change:
        """With `as_of` (and `seq`), the removal is remembered (an older or equal-time add
        delivered later is SKIPPED), and a membership changed after it stays."""
        incoming = Stamp.of(as_of, seq)
        with self.db.transaction() as conn:
            advisory_lock(conn, f"member:{legacy_id}:{user_id}")
            if as_of is not None:
                conn.execute(
                    "INSERT INTO member_removals (legacy_id, user_id, removed_at, removed_seq) VALUES (%s, %s, %s, %s)"
                    " ON CONFLICT (legacy_id, user_id) DO UPDATE"
                    " SET removed_at = EXCLUDED.removed_at, removed_seq = EXCLUDED.removed_seq"
                    " WHERE (member_removals.removed_at, coalesce(member_removals.removed_seq, -1))"
                    " < (EXCLUDED.removed_at, coalesce(EXCLUDED.removed_seq, -1))",
                    (legacy_id, user_id, as_of, seq),
                )
            stored = conn.execute(
                "SELECT changed_at, changed_seq FROM legacy_members WHERE legacy_id = %s AND user_id = %s",
                (legacy_id, user_id),
            ).fetchone()
            if stored is None:
                return Change.UNCHANGED
            stored_stamp = stamp_of(stored["changed_at"], stored["changed_seq"])
            if incoming is not None and stored_stamp is not None and stored_stamp > incoming:
                return Change.SKIPPED  # re-admitted after this removal
            conn.execute(
                "DELETE FROM legacy_members WHERE legacy_id = %s AND user_id = %s", (legacy_id, user_id)
            )
            return Change.DELETED

    def upsert_relationship(
        self, relationship: Relationship, as_of: datetime | None = None, seq: int | None = None
    ) -> Change:
        """Ordered by (`as_of`, `seq`) (heirloom.domain.ordering): a change older than the
        relationship's last change or removal is SKIPPED; at an equal stamp a removal wins and
        of two versions the greater stays. Without `as_of` (a dataset record) it applies only
        where no event has set or removed the relationship."""
        r, incoming = relationship, Stamp.of(as_of, seq)
        key = (r.from_person_id, r.to_person_id, r.type.value)
        with self.db.transaction() as conn:
            advisory_lock(conn, "relationship:{}:{}:{}".format(*key))
            removal = conn.execute(
                "SELECT removed_at, removed_seq FROM relationship_removals"
                " WHERE from_person_id = %s AND to_person_id = %s AND type = %s",
                key,
            ).fetchone()
            row = conn.execute(
                "SELECT detail, since, until, changed_at, changed_seq FROM person_relationships"
                " WHERE from_person_id = %s AND to_person_id = %s AND type = %s",
                key,
            ).fetchone()
            stored = (
                None
                if row is None
                else r.model_copy(update={k: row[k] for k in ("detail", "since", "until")})
            )
            same = stored is not None and relationship_order(stored) == relationship_order(r)
            removed = (
                None if removal is None else Stamp(removal["removed_at"], seq_value(removal["removed_seq"]))
            )
            stored_stamp = stamp_of(row["changed_at"], row["changed_seq"]) if row else None
            if not relationship_applies(stored, stored_stamp, removed, r, incoming):
                return Change.UNCHANGED if same else Change.SKIPPED
            conn.execute(
                "INSERT INTO person_relationships"
                " (from_person_id, to_person_id, type, detail, since, until, changed_at, changed_seq)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (from_person_id, to_person_id, type) DO UPDATE SET detail = EXCLUDED.detail,"
                " since = EXCLUDED.since, until = EXCLUDED.until,"
                " changed_at = EXCLUDED.changed_at, changed_seq = EXCLUDED.changed_seq",
                (*key, r.detail, r.since, r.until, as_of, seq),
            )
        if stored is None:
            return Change.CREATED
        return Change.UNCHANGED if same else Change.UPDATED

    @contextmanager
    def person_lock(self, person_id: UUID) -> Iterator[None]:
        with self.db.hold(f"person-node:{person_id}"):
            yield

    @contextmanager
    def member_lock(self, legacy_id: UUID, user_id: UUID) -> Iterator[None]:
        with self.db.hold(f"member-edge:{legacy_id}:{user_id}"):
            yield

    @contextmanager
    def link_lock(self, link_id: UUID) -> Iterator[None]:
        with self.db.hold(f"link-edge:{link_id}"):
            yield

    @contextmanager
    def relationship_lock(self, from_person_id: UUID, to_person_id: UUID, type_: str) -> Iterator[None]:
        """Held on the database's lock connection (another key than the record write's own lock,
        which is taken inside it on the write connection)."""
        with self.db.hold(f"relationship-edge:{from_person_id}:{to_person_id}:{type_}"):
            yield

    def remove_relationship(
        self,
        from_person_id: UUID,
        to_person_id: UUID,
        type_: str,
        as_of: datetime | None = None,
        seq: int | None = None,
    ) -> Change:
        """With `as_of` (and `seq`), the removal is remembered (an older or equal-time add or
        update delivered later is SKIPPED), and a relationship changed after it stays."""
        key, incoming = (from_person_id, to_person_id, type_), Stamp.of(as_of, seq)
        with self.db.transaction() as conn:
            advisory_lock(conn, "relationship:{}:{}:{}".format(*key))
            if as_of is not None:
                conn.execute(
                    "INSERT INTO relationship_removals (from_person_id, to_person_id, type, removed_at, removed_seq)"
                    " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (from_person_id, to_person_id, type) DO UPDATE"
                    " SET removed_at = EXCLUDED.removed_at, removed_seq = EXCLUDED.removed_seq"
                    " WHERE (relationship_removals.removed_at, coalesce(relationship_removals.removed_seq, -1))"
                    " < (EXCLUDED.removed_at, coalesce(EXCLUDED.removed_seq, -1))",
                    (*key, as_of, seq),
                )
            row = conn.execute(
                "SELECT changed_at, changed_seq FROM person_relationships"
                " WHERE from_person_id = %s AND to_person_id = %s AND type = %s",
                key,
            ).fetchone()
            if row is None:
                return Change.UNCHANGED
            stored_stamp = stamp_of(row["changed_at"], row["changed_seq"])
            if incoming is not None and stored_stamp is not None and stored_stamp > incoming:
                return Change.SKIPPED  # added again after this removal
            conn.execute(
                "DELETE FROM person_relationships WHERE from_person_id = %s AND to_person_id = %s AND type = %s",
                key,
            )
            return Change.DELETED

    def upsert_link(self, link: Link, as_of: datetime | None = None, seq: int | None = None) -> Change:
        """Ordered by (`as_of`, `seq`) (heirloom.domain.ordering): a change older than the link's
        last one is SKIPPED; at an equal stamp the more restrictive status and the narrower
        share list stay. Without `as_of` (a dataset record) it applies only where no event has
        set the link."""
        incoming = Stamp.of(as_of, seq)
        with self.db.transaction() as conn:
            advisory_lock(conn, f"link:{link.id}")
            row = conn.execute(
                "SELECT l.id, l.legacy_a_id, l.legacy_b_id, l.status, l.share_mode, l.changed_at, l.changed_seq,"
                " coalesce(array_agg(s.story_id) FILTER (WHERE s.story_id IS NOT NULL), '{}') AS shared_story_ids"
                " FROM legacy_links l LEFT JOIN legacy_link_shares s ON s.link_id = l.id WHERE l.id = %s GROUP BY l.id",
                (link.id,),
            ).fetchone()
            stored = None if row is None else link_from_row(row)
            wanted = link
            match verdict(
                stamp_of(row["changed_at"], row["changed_seq"]) if row else None,
                incoming,
                exists=row is not None,
            ):
                case Verdict.SKIP:
                    return Change.UNCHANGED if stored and same_link_state(stored, link) else Change.SKIPPED
                case Verdict.MERGE:
                    wanted = narrower_link(stored, link) if stored else link
            conn.execute(
                "INSERT INTO legacy_links (id, legacy_a_id, legacy_b_id, status, share_mode, changed_at, changed_seq)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (id) DO UPDATE SET legacy_a_id = EXCLUDED.legacy_a_id,"
                " legacy_b_id = EXCLUDED.legacy_b_id, status = EXCLUDED.status, share_mode = EXCLUDED.share_mode,"
                " changed_at = EXCLUDED.changed_at, changed_seq = EXCLUDED.changed_seq",
                (
                    wanted.id,
                    wanted.legacy_a_id,
                    wanted.legacy_b_id,
                    wanted.status.value,
                    wanted.share_mode.value,
                    as_of,
                    seq,
                ),
            )
            have = set(stored.shared_story_ids) if stored else set()
            shared = set(wanted.shared_story_ids)
            if shared != have:
                conn.execute(
                    "DELETE FROM legacy_link_shares WHERE link_id = %s AND NOT story_id = ANY(%s)",
                    (link.id, list(shared)),
                )
                conn.cursor().executemany(
                    "INSERT INTO legacy_link_shares (link_id, story_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                    [(link.id, sid) for sid in shared - have],
                )
        if stored is None:
            return Change.CREATED
        return Change.UNCHANGED if same_link_state(stored, wanted) else Change.UPDATED

    def upsert_story(self, story: Story, content_hash: str, seq: int | None = None) -> Change:
        """Insert or update in the order of (`updated_at`, `seq`) (heirloom.domain.ordering): an
        older version is SKIPPED; at an equal stamp the more restrictive visibility stays (then
        a fixed order of the other fields, so every delivery order ends the same). A deleted
        story stays deleted (SKIPPED)."""
        s = story
        with self.db.transaction() as conn:
            advisory_lock(conn, f"story:{s.id}")
            if conn.execute("SELECT 1 FROM story_tombstones WHERE story_id = %s", (s.id,)).fetchone():
                return Change.SKIPPED
            row = conn.execute(
                "INSERT INTO stories (id, legacy_id, author_user_id, title, content, visibility, content_hash,"
                " created_at, updated_at, updated_seq) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (id) DO UPDATE SET legacy_id = EXCLUDED.legacy_id,"
                " author_user_id = EXCLUDED.author_user_id, title = EXCLUDED.title, content = EXCLUDED.content,"
                " visibility = EXCLUDED.visibility, content_hash = EXCLUDED.content_hash,"
                " created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at,"
                " updated_seq = EXCLUDED.updated_seq"
                " WHERE (stories.updated_at, coalesce(stories.updated_seq, -1))"
                " < (EXCLUDED.updated_at, coalesce(EXCLUDED.updated_seq, -1))"
                " OR ((stories.updated_at, coalesce(stories.updated_seq, -1))"
                " = (EXCLUDED.updated_at, coalesce(EXCLUDED.updated_seq, -1))"
                f" AND ({VISIBILITY_RANK.format(t='stories')}, stories.content_hash, stories.title,"
                " stories.legacy_id::text, stories.author_user_id::text)"
                f" < ({VISIBILITY_RANK.format(t='EXCLUDED')}, EXCLUDED.content_hash, EXCLUDED.title,"
                " EXCLUDED.legacy_id::text, EXCLUDED.author_user_id::text))"
                " RETURNING (xmax = 0) AS inserted",
                (
                    s.id,
                    s.legacy_id,
                    s.author_user_id,
                    s.title,
                    s.content,
                    s.visibility.value,
                    content_hash,
                    s.created_at,
                    s.updated_at,
                    seq,
                ),
            ).fetchone()
            if row is not None:
                return change_from_row(row)
            same = conn.execute(
                "SELECT 1 FROM stories WHERE id = %s AND (legacy_id, author_user_id, title, visibility, content_hash,"
                " updated_at, coalesce(updated_seq, -1)) = (%s, %s, %s, %s, %s, %s, %s)",
                (
                    s.id,
                    s.legacy_id,
                    s.author_user_id,
                    s.title,
                    s.visibility.value,
                    content_hash,
                    s.updated_at,
                    -1 if seq is None else seq,
                ),
            ).fetchone()
            return Change.UNCHANGED if same else Change.SKIPPED

    def delete_story(
        self, story_id: UUID, deleted_at: datetime | None = None, legacy_id: UUID | None = None
    ) -> Change:
        """Delete and leave a tombstone, final for this id: no create or update of it, older or
        newer, revives the story (heirloom.domain.ordering). A deletion of a story not stored
        (yet) leaves its tombstone when `legacy_id` is given, so a create delivered after its
        delete is skipped as well."""
        with self.db.transaction() as conn:
            advisory_lock(conn, f"story:{story_id}")
            row = conn.execute(
                "SELECT legacy_id FROM stories WHERE id = %s FOR UPDATE", (story_id,)
            ).fetchone()
            owner = row["legacy_id"] if row is not None else legacy_id
            if owner is not None:
                conn.execute(
                    "INSERT INTO story_tombstones (story_id, legacy_id, deleted_at) VALUES (%s, %s, %s)"
                    " ON CONFLICT (story_id) DO UPDATE SET deleted_at = greatest(story_tombstones.deleted_at,"
                    " EXCLUDED.deleted_at)",
                    (story_id, owner, deleted_at or datetime.now(UTC)),
                )
            if row is None:
                return Change.UNCHANGED
            conn.execute("DELETE FROM stories WHERE id = %s", (story_id,))
            return Change.DELETED
