"""A story's part of the graph: its entities extracted, the people it names resolved against the
legacy's persons, and its facts written (under the story's graph lock, decision 0020); a story
re-linked when what it or another story names changes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Protocol
from uuid import UUID

from heirloom.contracts.curation import GraphChange
from heirloom.contracts.extraction import ExtractedEntities, NamedThing
from heirloom.contracts.records import Person, Story
from heirloom.domain import named_things
from heirloom.domain.chunking import story_digest
from heirloom.domain.entity_sync import SyncReport, sync_story_entities
from heirloom.domain.gazetteer import Gazetteer, GazetteerEntry
from heirloom.domain.linked_subjects import linked_legacies
from heirloom.ports import CurationStore, GraphStore, StoryStore

if TYPE_CHECKING:
    from heirloom.ports import EntityExtractor


class GraphWrites(Protocol):
    """What writing a story's extracted entities needs (IngestionPorts, or the curation API's
    ports when a staging decision re-syncs a story)."""

    @property
    def graph(self) -> GraphStore: ...
    @property
    def stories(self) -> StoryStore: ...
    @property
    def curation(self) -> CurationStore | None: ...
    @property
    def extractor_version(self) -> str: ...


class StoryGraphPorts(GraphWrites, Protocol):
    """What extracting a story and re-linking stories need (`ingestion.IngestionPorts` has it)."""

    @property
    def extractor(self) -> EntityExtractor | None: ...


def extract_story(
    ports: StoryGraphPorts, story: Story, known: Sequence[Person] | None = None
) -> ExtractedEntities:
    """Entities of `story` after the shared rules (threshold, limits, names, no PII). `known`:
    the legacy's persons, when the caller has already read them. Extraction is given their names
    and those of the persons of the legacies actively linked to it (`linked_persons`)."""
    if ports.extractor is None:
        return ExtractedEntities()
    if known is None:
        known = ports.stories.persons_of([story.legacy_id])
    from heirloom.domain.extraction import extract_entities

    people = [*known, *linked_persons(ports.stories, story.legacy_id)]
    names = list(dict.fromkeys(n for p in people for n in (p.name, *p.aliases)))
    return extract_entities(ports.extractor, story.content, known_names=names, title=story.title)


def linked_persons(stories: StoryStore, legacy_id: UUID) -> list[Person]:
    """The persons of the legacies actively linked to `legacy_id`. A linked family names its
    people in each other's stories ("Sofia came for the summer", Sofia's record in her
    grandmother's legacy): extraction takes these names as people's, not as the places the NER
    model may read. Names only: mentions still resolve within the story's own legacy. A link
    event re-links the stories it concerns (`relink.stories_naming_across`)."""
    others = linked_legacies(stories, legacy_id)
    return stories.persons_of(others) if others else []


def people_gazetteer(known: Sequence[Person]) -> Gazetteer:
    """The gazetteer of `known`'s names and aliases (built once for many texts)."""
    return Gazetteer.build(
        GazetteerEntry(str(p.id), "Person", p.name, tuple(p.aliases), str(p.legacy_id)) for p in known
    )


def named_people(text: str, known: Sequence[Person] | Gazetteer) -> dict[str, str]:
    """Known persons the text names by name or alias (known-entity matching, docs/design.md §11, at write
    time): mention as written -> person id, for names that point at one person only. The NER
    model misses nicknames ("Frannie"); the gazetteer does not. `known`: the persons, or their
    `people_gazetteer`."""
    gazetteer = known if isinstance(known, Gazetteer) else people_gazetteer(known)
    found: dict[str, str] = {}
    for mention in gazetteer.find(text):
        ids = {e.node_id for e in mention.entries}
        if len(ids) == 1:
            found.setdefault(mention.text, ids.pop())
    return found


def resolve_mentions(
    ports: GraphWrites, story: Story, entities: ExtractedEntities, known: Sequence[Person]
) -> tuple[dict[str, str], list[str]]:
    """The people `entities` name, resolved against the legacy's `known` persons (mention as
    written -> person id), and the names left unresolved; a kin phrase through the author's
    relationships, or in a transcript the turn's speaker's (heirloom.domain.speakers). Reads only."""
    from heirloom.domain.speakers import resolve_spoken_people

    relationships = ports.stories.relationships_of([p.id for p in known])
    user = ports.stories.get_user(story.author_user_id)
    # the author's own Person (read only for a transcript turn no known person speaks) names
    # the author speaking under their own name, in whatever legacy it is
    resolved, unresolved = resolve_spoken_people(
        [p.name for p in entities.people],
        story.content,
        known,
        relationships,
        user.person_id if user else None,
        ports.stories.get_person,
    )
    mentions = {r.mention: str(r.person_id) for r in resolved}
    for written, person_id in named_people(story.content, known).items():
        if person_id not in mentions.values():
            mentions[written] = person_id
    # the names the title uses (a nickname the text may not): the story's MENTIONS edge to that
    # person is then `in_title` (topic evidence, docs/decisions/0024)
    for written, person_id in named_people(story.title, known).items():
        mentions.setdefault(written, person_id)
    return mentions, [u for u in unresolved if u not in mentions]


def write_entities(
    ports: GraphWrites,
    story: Story,
    entities: ExtractedEntities,
    digest: str,
    mentions: dict[str, str],
    unresolved: Sequence[str],
) -> SyncReport:
    """Replace the story's graph facts, then mark the graph synced with this title and content
    (`digest`, `story_digest`). With its legacy's staging on, only the approved places, events
    and objects (heirloom.domain.staging)."""
    version = entities.extractor_version or ports.extractor_version
    named = ports.stories.named_things_of(story.legacy_id)
    given = [sid for sid in named if sid != story.id]
    sources = {m.id: m for m in ports.stories.story_meta(given)} if given else {}
    own, others = named_things.established(entities), named_things.others_of(named, sources, story)
    entities, unresolved = named_things.recall(
        entities, f"{story.title}\n{story.content}", others, mentions, unresolved
    )
    curation = ports.curation
    pending = 0
    if curation is not None and curation.staging_enabled(story.legacy_id):
        from heirloom.domain.staging import admit

        entities, pending = admit(curation, story, entities, digest, version)
    redirects = (
        {m.absorbed_id: m.survivor_id for m in curation.active_merges(story.legacy_id)}
        if curation is not None
        else None
    )
    # one writer of the story's graph at a time: two deliveries (or a re-link) never interleave
    # their withdraw-then-write (decision 0020); the mark is written before the lock is released
    with ports.stories.story_graph_lock(story.id):
        report = sync_story_entities(ports.graph, story, entities, mentions, unresolved, redirects)
        now = ports.stories.get_story(story.id)
        # a story moved or made visible to others while this sync ran is not marked: what it
        # may link changed with it, and its next sync (the change's own) writes it again
        if now is None or (now.legacy_id, now.visibility) == (story.legacy_id, story.visibility):
            ports.stories.mark_graph_synced(story.id, digest, version, report.fingerprint)
            ports.stories.set_named_things(story.id, own)
    report.names_changed = named_things.changed(named.get(story.id, ()), own)
    if curation is not None:
        changes = sum(report.entities.values()) + report.mentions + report.person_edges
        curation.record_impact(story.legacy_id, changes)
        detail = {
            "entities": report.entities,
            "mentions": report.mentions,
            "person_edges": report.person_edges,
            "staged_pending": pending,
            "content_hash": digest,
            # who could read the story then: the changelog shows a deleted story's rows by these
            "visibility": story.visibility.value,
            "author_user_id": str(story.author_user_id),
        }
        change = GraphChange(
            legacy_id=story.legacy_id, source="story", story_id=story.id, action="story_synced", detail=detail
        )
        curation.record_change(change)
    return report


def resync_story(ports: GraphWrites, story_id: UUID) -> bool:
    """Write the story's graph facts again from its saved extraction (a staging decision
    changed what may enter); False when there is none for its current text (a newer ingestion
    run will sync it)."""
    story = ports.stories.get_story(story_id)
    saved = ports.curation.extraction(story_id) if ports.curation is not None else None
    if story is None or saved is None:
        return False
    digest, version, entities = saved
    if story_digest(story.title, story.content) != digest:
        return False
    # unmarked first: if the re-sync fails, the story is behind and the next run rebuilds it
    ports.stories.forget_graph_synced([story_id])
    sync_entities(ports, story, entities.model_copy(update={"extractor_version": version}), digest)
    return True


def sync_entities(
    ports: GraphWrites,
    story: Story,
    entities: ExtractedEntities,
    digest: str,
    known: Sequence[Person] | None = None,
) -> SyncReport:
    """Resolve people against the legacy's known persons (`known`, or read now) and replace the
    story's graph facts."""
    if known is None:
        known = ports.stories.persons_of([story.legacy_id])
    mentions, unresolved = resolve_mentions(ports, story, entities, known)
    return write_entities(ports, story, entities, digest, mentions, unresolved)


def enrich_story(ports: StoryGraphPorts, story: Story, digest: str) -> bool:
    """Extract and sync entities unless the graph already reflects this title and content
    (`digest`, `story_digest`) and extractor."""
    if ports.extractor is None:
        return False
    if ports.stories.graph_synced(story.id) == (digest, ports.extractor_version):
        return False
    report = sync_entities(ports, story, extract_story(ports, story), digest)
    relink_named(ports, story, report.names_changed)
    return True


def relink_named(
    ports: StoryGraphPorts,
    story: Story,
    names: Sequence[NamedThing],
    start_ingestion: Callable[[UUID], None] | None = None,
) -> list[UUID]:
    """Re-link the other graph-synced stories of `story`'s legacy that write a name it gave or
    stopped giving there (`names`: a sync's `names_changed`, decision 0040), through the
    ingestion workflow (`start_ingestion`) or inline. Returns their ids."""
    writing = writing_names(ports, story, names)
    return relink(ports, writing, start_ingestion) if writing else []


def writing_names(ports: StoryGraphPorts, story: Story, names: Sequence[NamedThing]) -> list[Story]:
    """The other graph-synced stories of `story`'s legacy that write one of `names`."""
    if not names:
        return []
    writing = named_things.stories_writing(ports.stories.stories_of(story.legacy_id), names)
    return [s for s in writing if s.id != story.id and ports.stories.graph_synced(s.id) is not None]


def names_given(ports: StoryGraphPorts, story: Story) -> tuple[NamedThing, ...]:
    """The names `story` gives an animal or a work in its legacy, as of its last graph sync
    (one per name key: what `write_entities` stored)."""
    return ports.stories.named_things_of(story.legacy_id).get(story.id, ())


def relink(
    ports: StoryGraphPorts, stories: Iterable[Story], start_ingestion: Callable[[UUID], None] | None = None
) -> list[UUID]:
    """Forget the stories' graph marks, then hand each to the ingestion workflow
    (`start_ingestion`) or re-extract and re-sync it inline. Returns the story ids."""
    chosen: Sequence[Story] = list({s.id: s for s in stories}.values())
    if ports.extractor is None or not chosen:
        return []
    ids = [s.id for s in chosen]
    ports.stories.forget_graph_synced(ids)
    for story in chosen:
        if start_ingestion is not None:
            start_ingestion(story.id)
        else:
            enrich_story(ports, story, story_digest(story.title, story.content))
    return ids
