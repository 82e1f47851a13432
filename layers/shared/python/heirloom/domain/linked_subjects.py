"""Questions about a linked legacy's subject (decision 0027): when a question names the subject
of a legacy actively linked to the one asked, by name, alias or the asker's own kin word ("my
mother", "Opa"), that person's own legacy is where the answer is told, so the intent is
`cross_legacy` ahead of the time, place and open-question cues.

Only what every member of the asked legacy may see decides it: the active links (the links
AccessFilter grants), each legacy's subject, the Person records' names and the recorded
relationships. A revoked or pending link counts for nothing, and no story's content is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from heirloom.contracts.context import Intent, QueryIntent
from heirloom.contracts.records import LinkStatus, Person
from heirloom.domain.gazetteer import _keys
from heirloom.ports import StoryStore

#: the intents a linked subject's reference takes precedence over: when, where and who-was-he
#: questions about them are answered in their own legacy
YIELDS_TO_LINKED: frozenset[Intent] = frozenset({Intent.TEMPORAL, Intent.SPATIAL, Intent.GENERAL})
#: through the asker's kin word, relational too: "my mother" is a reference, not a relation cue
#: (a name is masked out of the cue words; a kin word is not)
YIELDS_TO_LINKED_KIN: frozenset[Intent] = YIELDS_TO_LINKED | {Intent.RELATIONAL}
#: the confidence a linked subject's reference gives at least
LINKED_SUBJECT_CONFIDENCE = 0.75


def linked_subjects(store: StoryStore, legacy_id: UUID) -> tuple[Person, ...]:
    """The subjects of the legacies actively linked to `legacy_id`."""
    out: dict[UUID, Person] = {}
    for link in store.links_of(legacy_id):
        if link.status is not LinkStatus.ACTIVE or legacy_id not in (link.legacy_a_id, link.legacy_b_id):
            continue
        other = link.legacy_b_id if link.legacy_a_id == legacy_id else link.legacy_a_id
        legacy = store.get_legacy(other) if other != legacy_id else None
        person = store.get_person(legacy.subject_person_id) if legacy else None
        if person is not None:
            out[person.id] = person
    return tuple(out.values())


def referred_subject(
    person_ids: Sequence[str], person_names: Sequence[str], subjects: Sequence[Person]
) -> Person | None:
    """The linked subject among the people a question refers to: by id, or by the subject's full
    name (the same person as a node of the asked legacy)."""
    ids = {str(p.id): p for p in subjects}
    names = {_keys(p.name): p for p in subjects}
    for pid in person_ids:
        if pid in ids:
            return ids[pid]
    for name in person_names:
        if (hit := names.get(_keys(name))) is not None:
            return hit
    return None


def with_linked_subject(
    intent: QueryIntent, subjects: Sequence[Person], kin_ids: Sequence[str] = ()
) -> QueryIntent:
    """`intent` as `cross_legacy` when its person matches (or `kin_ids`, the people the asker's
    kin words resolved to) include a linked subject and its intent yields to that."""
    if not subjects or intent.intent is Intent.CROSS_LEGACY:
        return intent
    people = [m for m in intent.matches if m.label == "Person"]
    by_kin = referred_subject(kin_ids, (), subjects) is not None
    named = referred_subject([m.node_id for m in people], [m.name for m in people], subjects)
    if not (named or by_kin):
        return intent
    if intent.intent not in (YIELDS_TO_LINKED_KIN if by_kin else YIELDS_TO_LINKED):
        return intent
    return intent.model_copy(
        update={
            "intent": Intent.CROSS_LEGACY,
            "confidence": max(intent.confidence, LINKED_SUBJECT_CONFIDENCE),
        }
    )
