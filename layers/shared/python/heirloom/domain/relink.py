"""Re-resolution: the stories a person, alias or relationship added after them (or a relationship
changed or removed, or a link that starts or stops being active) may change. `story_graph.relink`
re-links them (their people resolved again and the graph rewritten) without re-embedding: their
graph marks are forgotten and they go through ingestion again, whose chunk step finds the index
up to date."""

from __future__ import annotations

from uuid import UUID

from heirloom.contracts.records import Person, Relationship, Story
from heirloom.domain.gazetteer import Gazetteer
from heirloom.domain.ingestion import IngestionPorts
from heirloom.domain.linked_subjects import linked_legacies
from heirloom.domain.speakers import KnownPersons, speaker_persons
from heirloom.domain.story_graph import named_people, people_gazetteer


def stories_naming(ports: IngestionPorts, person: Person) -> list[Story]:
    """The stories of the person's legacy, and of the legacies actively linked to it (their
    extraction reads the person's names too: `story_graph.linked_persons`), whose text or title
    names them by name or alias."""
    names = people_gazetteer([person])
    legacies = [person.legacy_id, *linked_legacies(ports.stories, person.legacy_id)]
    return [s for legacy_id in legacies for s in ports.stories.stories_of(legacy_id) if _names(s, names)]


def stories_naming_across(ports: IngestionPorts, legacy_a: UUID, legacy_b: UUID) -> list[Story]:
    """The stories of each of two legacies that name a person of the other: a link between them
    that starts or stops being active changes what their extraction reads."""
    out: list[Story] = []
    for here, there in ((legacy_a, legacy_b), (legacy_b, legacy_a)):
        if persons := ports.stories.persons_of([there]):
            names = people_gazetteer(persons)
            out += [s for s in ports.stories.stories_of(here) if _names(s, names)]
    return out


def _names(story: Story, names: Gazetteer) -> bool:
    return bool(named_people(story.content, names) or named_people(story.title, names))


def stories_narrated_by(ports: IngestionPorts, rel: Relationship) -> list[Story]:
    """Stories whose author (or a transcript speaker) is one of the two persons: "my dad" in
    them may now resolve."""
    return stories_narrated_by_either(ports, rel.from_person_id, rel.to_person_id)


def stories_narrated_by_either(ports: IngestionPorts, *person_ids: UUID) -> list[Story]:
    """Stories whose author, or a speaker of whose transcript turns (heirloom.domain.speakers),
    is one of these persons (their kin words resolve through them)."""
    persons = [p for p in (ports.stories.get_person(i) for i in person_ids) if p]
    ids = {p.id for p in persons}
    authors: dict[UUID, bool] = {}
    out: list[Story] = []
    for legacy_id in dict.fromkeys(p.legacy_id for p in persons):
        known = KnownPersons.of(ports.stories.persons_of([legacy_id]))  # once, not once a story
        for story in ports.stories.stories_of(legacy_id):
            if story.author_user_id not in authors:
                user = ports.stories.get_user(story.author_user_id)
                authors[story.author_user_id] = user is not None and user.person_id in ids
            if authors[story.author_user_id] or ids & speaker_persons(story.content, known):
                out.append(story)
    return out
