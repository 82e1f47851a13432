"""Record and permission reads: what a user's role, memberships and links let them read."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from uuid import UUID

from heirloom.adapters.postgres.rows import (
    StoreBase,
)
from heirloom.contracts.access import KnownRelationship, StoryMeta
from heirloom.contracts.records import (
    Legacy,
    Link,
    LinkStatus,
    Person,
    Relationship,
    RelationshipType,
    Role,
    ShareMode,
    Story,
    User,
    Visibility,
)


class AccessReads(StoreBase):
    def get_legacy(self, legacy_id: UUID) -> Legacy | None:
        row = self._one("SELECT id, name, subject_person_id FROM legacies WHERE id = %s", (legacy_id,))
        return Legacy(**row) if row else None

    def get_person(self, person_id: UUID) -> Person | None:
        row = self._one(
            "SELECT id, legacy_id, name, aliases, birth_year, death_year FROM persons WHERE id = %s",
            (person_id,),
        )
        return Person(**{**row, "aliases": tuple(row["aliases"])}) if row else None

    def get_user(self, user_id: UUID) -> User | None:
        row = self._one("SELECT id, name, person_id FROM users WHERE id = %s", (user_id,))
        return User(**row) if row else None

    def get_story(self, story_id: UUID) -> Story | None:
        row = self._one(
            "SELECT id, legacy_id, author_user_id, title, content, visibility, created_at, updated_at"
            " FROM stories WHERE id = %s",
            (story_id,),
        )
        return Story(**row) if row else None

    def get_story_hash(self, story_id: UUID) -> str | None:
        row = self._one("SELECT content_hash FROM stories WHERE id = %s", (story_id,))
        return str(row["content_hash"]) if row else None

    def story_deleted(self, story_id: UUID) -> bool:
        return self._one("SELECT 1 FROM story_tombstones WHERE story_id = %s", (story_id,)) is not None

    def role_of(self, user_id: UUID, legacy_id: UUID) -> Role | None:
        row = self._one(
            "SELECT role FROM legacy_members WHERE user_id = %s AND legacy_id = %s", (user_id, legacy_id)
        )
        return Role(row["role"]) if row else None

    def member_legacy_ids(self, user_id: UUID) -> list[UUID]:
        rows = (
            self.db.connection()
            .execute("SELECT legacy_id FROM legacy_members WHERE user_id = %s ORDER BY legacy_id", (user_id,))
            .fetchall()
        )
        return [r["legacy_id"] for r in rows]

    def member_user_ids(self, legacy_id: UUID) -> list[UUID]:
        rows = (
            self.db.connection()
            .execute("SELECT user_id FROM legacy_members WHERE legacy_id = %s ORDER BY user_id", (legacy_id,))
            .fetchall()
        )
        return [r["user_id"] for r in rows]

    def memberships_through(self, person_id: UUID) -> list[tuple[UUID, UUID]]:
        rows = (
            self.db.connection()
            .execute(
                "SELECT m.legacy_id, m.user_id FROM legacy_members m"
                " JOIN legacies l ON l.id = m.legacy_id WHERE l.subject_person_id = %s"
                " UNION SELECT m.legacy_id, m.user_id FROM legacy_members m"
                " JOIN users u ON u.id = m.user_id WHERE u.person_id = %s"
                " ORDER BY legacy_id, user_id",
                (person_id, person_id),
            )
            .fetchall()
        )
        return [(r["legacy_id"], r["user_id"]) for r in rows]

    def links_of(self, legacy_id: UUID) -> list[Link]:
        return self._links("l.legacy_a_id = %s OR l.legacy_b_id = %s", (legacy_id, legacy_id))

    def get_link(self, link_id: UUID) -> Link | None:
        return next(iter(self._links("l.id = %s", (link_id,))), None)

    def _links(self, where: str, params: tuple[UUID, ...]) -> list[Link]:
        rows = (
            self.db.connection()
            .execute(
                "SELECT l.id, l.legacy_a_id, l.legacy_b_id, l.status, l.share_mode,"
                " coalesce(array_agg(s.story_id ORDER BY s.story_id) FILTER (WHERE s.story_id IS NOT NULL), '{}')"
                " AS shared_story_ids"
                " FROM legacy_links l LEFT JOIN legacy_link_shares s ON s.link_id = l.id"
                f" WHERE {where} GROUP BY l.id ORDER BY l.id",
                params,
            )
            .fetchall()
        )
        return [
            Link(
                id=r["id"],
                legacy_a_id=r["legacy_a_id"],
                legacy_b_id=r["legacy_b_id"],
                status=LinkStatus(r["status"]),
                share_mode=ShareMode(r["share_mode"]),
                shared_story_ids=tuple(r["shared_story_ids"]),
            )
            for r in rows
        ]

    def persons_of(self, legacy_ids: Sequence[UUID]) -> list[Person]:
        rows = (
            self.db.connection()
            .execute(
                "SELECT id, legacy_id, name, aliases, birth_year, death_year FROM persons"
                " WHERE legacy_id = ANY(%s) ORDER BY name, id",
                (list(legacy_ids),),
            )
            .fetchall()
        )
        return [Person(**{**r, "aliases": tuple(r["aliases"])}) for r in rows]

    def relationships_of(self, person_ids: Sequence[UUID]) -> list[Relationship]:
        ids = list(person_ids)
        rows = (
            self.db.connection()
            .execute(
                "SELECT from_person_id, to_person_id, type, detail, since, until FROM person_relationships"
                " WHERE from_person_id = ANY(%s) OR to_person_id = ANY(%s)"
                " ORDER BY from_person_id, to_person_id, type",
                (ids, ids),
            )
            .fetchall()
        )
        return [Relationship(**{**r, "type": RelationshipType(r["type"])}) for r in rows]

    def known_relationships(self, person_ids: Sequence[UUID]) -> list[KnownRelationship]:
        ids = list(person_ids)
        if not ids:
            return []
        rows = (
            self.db.connection()
            .execute(
                "SELECT r.from_person_id, r.to_person_id, r.type, r.detail, r.since, r.until,"
                " a.name AS from_name, a.legacy_id AS from_legacy_id,"
                " b.name AS to_name, b.legacy_id AS to_legacy_id"
                " FROM person_relationships r"
                " JOIN persons a ON a.id = r.from_person_id JOIN persons b ON b.id = r.to_person_id"
                " WHERE r.from_person_id = ANY(%s) OR r.to_person_id = ANY(%s)"
                " ORDER BY r.from_person_id, r.to_person_id, r.type",
                (ids, ids),
            )
            .fetchall()
        )
        return [KnownRelationship(**r) for r in rows]

    def story_meta(self, story_ids: Iterable[UUID]) -> list[StoryMeta]:
        rows = (
            self.db.connection()
            .execute(
                "SELECT s.id, s.legacy_id, s.author_user_id, s.visibility, s.title, s.updated_at,"
                " s.created_at, coalesce(u.name, '') AS author_name"
                " FROM stories s LEFT JOIN users u ON u.id = s.author_user_id WHERE s.id = ANY(%s)",
                (list(story_ids),),
            )
            .fetchall()
        )
        return [StoryMeta(**{**r, "visibility": Visibility(r["visibility"])}) for r in rows]

    def legacy_ids(self) -> list[UUID]:
        rows = self.db.connection().execute("SELECT id FROM legacies ORDER BY id").fetchall()
        return [r["id"] for r in rows]

    def stories_of(self, legacy_id: UUID) -> list[Story]:
        rows = (
            self.db.connection()
            .execute(
                "SELECT id, legacy_id, author_user_id, title, content, visibility, created_at, updated_at"
                " FROM stories WHERE legacy_id = %s ORDER BY created_at, id",
                (legacy_id,),
            )
            .fetchall()
        )
        return [Story(**r) for r in rows]
