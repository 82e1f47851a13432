"""Persons of one legacy and the FAMILY_OF records between them, for kinship resolution tests."""

import uuid

from heirloom.contracts.records import Person, Relationship, RelationshipType

LEGACY = uuid.uuid4()


def person(name: str, *aliases: str) -> Person:
    return Person(id=uuid.uuid4(), legacy_id=LEGACY, name=name, aliases=aliases)


def family(a: Person, b: Person, detail: str) -> Relationship:
    """`b` is `detail` to `a` (the FAMILY_OF reading used by the records)."""
    return Relationship(
        from_person_id=a.id, to_person_id=b.id, type=RelationshipType.FAMILY_OF, detail=detail
    )
