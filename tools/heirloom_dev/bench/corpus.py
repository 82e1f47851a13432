"""The synthetic corpus: seeded legacies, persons, users, links and stories built from sentence
templates (no text from any dataset), and the questions asked of it."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from heirloom.contracts.context import (
    ContextRequest,
    Persona,
)
from heirloom.contracts.extraction import (
    ExtractedEntities,
    ExtractedEvent,
    ExtractedObject,
    ExtractedPerson,
    ExtractedPlace,
    ExtractedRelationship,
    TimeReference,
)
from heirloom.contracts.records import (
    READS_PRIVATE,
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
from heirloom.domain.entity_sync import entity_id

#: bump when the generator's output changes: a loaded corpus of another version is reloaded
GENERATOR_VERSION = "1"
SEED = 20_240_501
#: the extractor version recorded for stories whose graph came from the generator
SYNTHETIC_EXTRACTOR = f"bench-synthetic-{GENERATOR_VERSION}"


# -- the synthetic corpus ---------------------------------------------------------------------
def _words(text: str, sep: str | None = None) -> tuple[str, ...]:
    return tuple(w.strip() for w in text.split(sep) if w.strip())


FIRST_NAMES = _words(
    "Agnes Albert Alma Arthur Beatrice Bernard Clara Clarence Cora Cyrus Dora Edgar Edith Edwin "
    "Elsie Emmett Esther Florence Floyd Gertrude Gilbert Harold Hazel Herman Ida Irving Josephine "
    "Leonard Lois Lucille Mabel Marion Martha Milton Mildred Nellie Oscar Otis Phyllis Ralph "
    "Rosalind Rufus Selma Silas Stella Theodore Thelma Vernon Viola Walter Wilbur Winifred"
)
SURNAMES = _words(
    "Abernathy Ballard Carver Dunmore Ellery Fairbanks Galloway Hartwell Ingram Jessup Kimball "
    "Lockhart Merriweather Northcott Oakley Pendleton Quimby Radcliffe Sutherland Thackeray "
    "Underhill Vance Whitcombe Yardley Ashby Blackwood Chandler Dempsey Everly Fenwick"
)
PLACE_HEADS = _words(
    "Alder Birch Cedar Elm Fox Hawthorn Juniper Larch Maple Oak Pine Rowan Willow Ash Beacon "
    "Clover Dover Ember Fern Glen Harbor Iron Kettle Lark North Orchard Pebble Quarry Raven Salt "
    "Thistle Upper Vale West Yarrow Copper Heron Bramble Sparrow Tamarack"
)
PLACE_KINDS = _words(
    "Creek Hollow Ridge Farm Mill Bridge Lake Station Crossing Point Chapel School Street Market "
    "Woods Hill Bay Falls Cannery Depot Square Landing Orchard Junction Pier"
)
EVENT_NOUNS = _words(
    "flood|county fair|harvest festival|barn fire|family reunion|blizzard|wedding dance|church "
    "picnic|mill strike|school pageant|river regatta|ice storm|summer carnival|Christmas concert|"
    "road trip|homecoming|dock strike|bake sale|rodeo|spelling bee|boat race|quilting bee|parade|"
    "centennial|tornado",
    "|",
)
OBJECT_NOUNS = _words(
    "pocket watch|quilt|fiddle|sewing machine|recipe box|toolbox|rocking chair|typewriter|camera|"
    "accordion|hope chest|fishing rod|cookbook|locket|bicycle|radio|tea set|mandolin|lantern|"
    "compass|writing desk|brooch|ledger|wedding ring",
    "|",
)
USER_NAMES = _words("Sam Alex Jordan Casey Riley Morgan Taylor Jamie Robin Quinn Avery Drew")
FAMILY_DETAILS = ("sister", "brother", "son", "daughter", "cousin", "niece", "nephew", "husband", "wife")

SENTENCES = (
    "{p1} first came to {place} in the spring of {year}, carrying little more than {object}.",
    "Everyone remembers how {p1} and {p2} laughed their way through {event}.",
    "{p1} kept {object} on the shelf above the stove for as long as anyone can recall.",
    "In {year} the family moved from {place} to {place2}, and {p2} drove the borrowed truck.",
    "{subject} worked long hours at {place} while {p1} minded the children at home.",
    "It was {p2} who told the story of {event} at every holiday dinner.",
    "The roads around {place} flooded most winters, so {p1} learned to row before learning to ride.",
    "{p1} wrote letters to {p2} every single week during {event}.",
    "When {subject} talked about {year}, the talk always drifted back to {place}.",
    "{p2} still has {object}, wrapped in an old cloth in the bottom drawer.",
    "People in {place} knew {p1} as someone who could mend anything with wire and patience.",
    "After {event}, {p1} and {subject} did not speak to each other for almost a year.",
    "The photograph from {event} shows {p2} squinting into the sun beside {p1}.",
    "Sunday mornings at {place} meant fresh bread, strong coffee and {p1} singing off key.",
    "{subject} bought {object} with the first wages earned at {place}.",
    "Nobody could agree whether {event} happened in {year} or the year after.",
    "{p1} taught {p2} to drive on the gravel roads behind {place}.",
    "Years later {p2} said that {event} changed everything for the family.",
    "There was always a chair for {p1} by the window at {place2}.",
    "{p1} repaired {object} twice, once after a fall and once after the move in {year}.",
    "{subject} and {p2} walked down to {place} together every evening that summer.",
    "The neighbours still bring up {event} whenever the name {subject} comes up.",
    "{p1} saved every ticket stub and receipt from {year} in a battered shoebox.",
    "Of all the places the family lived, {subject} loved {place2} best of all.",
    "During {event} {p2} carried food and blankets to the people stranded near {place}.",
    "{p1} never talked much about {year}, but {p2} filled in the gaps later.",
)
TITLES = (
    "Summers at {place}",
    "The {event_noun}",
    "{p1_first} and the {object_noun}",
    "The year {year}",
    "Leaving {place}",
    "What {p2_first} remembered",
    "Evenings at {place}",
    "Before the {event_noun}",
)


@dataclass
class LegacyPlan:
    legacy: Legacy
    subject: Person
    persons: list[Person]
    #: (user id, role) of every member
    members: list[tuple[uuid.UUID, Role]]
    #: (entity id, name) by label, as written to the graph
    places: list[tuple[str, str]] = field(default_factory=list)
    events: list[tuple[str, str, int]] = field(default_factory=list)
    objects: list[tuple[str, str]] = field(default_factory=list)
    years: list[int] = field(default_factory=list)


@dataclass
class StoryPlan:
    story: Story
    entities: ExtractedEntities
    #: person mention -> person id
    resolved: dict[str, str]


@dataclass
class Corpus:
    legacies: list[LegacyPlan]
    users: list[User]
    members: list[Member]
    relationships: list[Relationship]
    links: list[Link]
    stories: list[StoryPlan]

    @property
    def persons(self) -> list[Person]:
        return [p for plan in self.legacies for p in plan.persons]

    def active_links(self, legacy_id: uuid.UUID) -> list[uuid.UUID]:
        return [
            other
            for link in self.links
            if link.status is LinkStatus.ACTIVE and (other := link.other_side(legacy_id)) is not None
        ]


def _uuid(rng: random.Random) -> uuid.UUID:
    return uuid.UUID(int=rng.getrandbits(128), version=4)


def _unique(rng: random.Random, make: Callable[[], str], used: set[str], tries: int = 20) -> str:
    name = make()
    for _ in range(tries):
        if name not in used:
            break
        name = make()
    used.add(name)
    return name


def _legacy_plan(rng: random.Random, index: int) -> tuple[LegacyPlan, list[User], list[Relationship]]:
    legacy_id = _uuid(rng)
    family = SURNAMES[index % len(SURNAMES)]
    firsts = rng.sample(FIRST_NAMES, rng.randint(8, 15))
    persons: list[Person] = []
    for i, first in enumerate(firsts):
        surname = family if i == 0 or rng.random() < 0.5 else rng.choice(SURNAMES)
        birth = rng.randint(1905, 1945) if i == 0 else rng.randint(1900, 1970)
        aliases: tuple[str, ...] = ()
        if i == 0:
            aliases = (f"{rng.choice(('Nana', 'Grandpa', 'Granny', 'Pop'))} {first}",)
        elif rng.random() < 0.25:
            aliases = (f"{rng.choice(('Uncle', 'Aunt', 'Cousin'))} {first}",)
        death = birth + rng.randint(55, 95)
        persons.append(
            Person(
                id=_uuid(rng),
                legacy_id=legacy_id,
                name=f"{first} {surname}",
                aliases=aliases,
                birth_year=birth,
                death_year=death if death <= 2022 else None,
            )
        )
    subject = persons[0]
    legacy = Legacy(id=legacy_id, name=subject.name, subject_person_id=subject.id)
    users: list[User] = []
    members: list[tuple[uuid.UUID, Role]] = []
    for role in (Role.CREATOR, Role.ADMIN, Role.ADVOCATE, Role.ADMIRER, Role.ADMIRER):
        person_id = rng.choice(persons[1:]).id if role is Role.CREATOR and rng.random() < 0.5 else None
        user = User(id=_uuid(rng), name=f"{rng.choice(USER_NAMES)} {family}", person_id=person_id)
        users.append(user)
        members.append((user.id, role))
    rels: list[Relationship] = []
    others = persons[1:]
    kinds = [RelationshipType.FAMILY_OF] * 4 + [RelationshipType.FRIENDS_WITH] * 2
    kinds += [RelationshipType.WORKED_WITH] * 2
    for i, person in enumerate(others):
        kind = kinds[i] if i < len(kinds) else RelationshipType.KNEW
        detail = rng.choice(FAMILY_DETAILS) if kind is RelationshipType.FAMILY_OF else None
        since = str(rng.randint(1930, 1980)) if kind is RelationshipType.WORKED_WITH else None
        rels.append(
            Relationship(
                from_person_id=subject.id, to_person_id=person.id, type=kind, detail=detail, since=since
            )
        )
        if i and rng.random() < 0.6:  # second-hop paths between the other persons
            other = others[rng.randrange(i)]
            rels.append(
                Relationship(
                    from_person_id=person.id, to_person_id=other.id, type=rng.choice(list(RelationshipType))
                )
            )
    plan = LegacyPlan(legacy=legacy, subject=subject, persons=persons, members=members)
    return plan, users, rels


def _story(
    rng: random.Random, plan: LegacyPlan, used: set[str], home: list[str], created: datetime
) -> StoryPlan:
    lid = str(plan.legacy.id)
    subject = plan.subject
    cast = rng.sample(plan.persons[1:], min(3, len(plan.persons) - 1))
    places = [rng.choice(home)] + [
        _unique(rng, lambda: f"{rng.choice(PLACE_HEADS)} {rng.choice(PLACE_KINDS)}", used) for _ in range(2)
    ]
    event_year = rng.randint(1930, 1999)
    event_noun = rng.choice(EVENT_NOUNS)
    event = _unique(rng, lambda: f"the {event_year} {event_noun}", used)
    object_noun = rng.choice(OBJECT_NOUNS)
    owner = rng.choice([subject, *cast])
    obj = _unique(rng, lambda: f"{owner.name.split()[0]}'s {object_noun}", used)
    years = sorted({event_year, rng.randint(1930, 1999)})
    paragraphs = []
    for _ in range(6):
        sentences = []
        for template in rng.sample(SENTENCES, rng.randint(4, 6)):
            p1, p2 = rng.sample(cast, 2) if len(cast) >= 2 else (cast[0], cast[0])
            sentences.append(
                template.format(
                    p1=p1.name,
                    p2=p2.name,
                    subject=subject.name,
                    place=places[rng.randrange(len(places))],
                    place2=rng.choice(places),
                    event=event,
                    object=obj,
                    year=rng.choice(years),
                )
            )
        text = " ".join(sentences)
        paragraphs.append(text[0].upper() + text[1:])
    title = rng.choice(TITLES).format(
        place=places[1],
        event_noun=event_noun,
        p1_first=cast[0].name.split()[0],
        object_noun=object_noun,
        year=years[0],
        p2_first=cast[-1].name.split()[0],
    )
    roll = rng.random()
    visibility = (
        Visibility.PUBLIC if roll < 0.6 else Visibility.PRIVATE if roll < 0.9 else Visibility.PERSONAL
    )
    authors = (
        plan.members
        if visibility is Visibility.PERSONAL
        else [m for m in plan.members if m[1] in READS_PRIVATE]
    )
    story = Story(
        id=_uuid(rng),
        legacy_id=plan.legacy.id,
        author_user_id=rng.choice(authors)[0],
        title=title[0].upper() + title[1:],
        content="\n\n".join(paragraphs),
        visibility=visibility,
        created_at=created,
        updated_at=created,
    )
    people = [subject, *cast]
    entities = ExtractedEntities(
        people=tuple(ExtractedPerson(name=p.name, confidence=1.0) for p in people),
        places=tuple(ExtractedPlace(name=p, confidence=1.0) for p in places),
        events=(ExtractedEvent(name=event, date=str(event_year), confidence=1.0),),
        objects=(ExtractedObject(name=obj, confidence=1.0),),
        time_references=tuple(TimeReference(period=str(y)) for y in years),
        relationships=(
            ExtractedRelationship(
                subject=cast[0].name, predicate="LIVED_IN", object=places[1], confidence=1.0
            ),
            ExtractedRelationship(
                subject=subject.name, predicate="PARTICIPATED_IN", object=event, confidence=1.0
            ),
            ExtractedRelationship(subject=owner.name, predicate="OWNED", object=obj, confidence=1.0),
        ),
        extractor_version=SYNTHETIC_EXTRACTOR,
    )
    for name in places:
        if all(name != p[1] for p in plan.places):
            plan.places.append((entity_id(lid, "Place", name), name))
    plan.events.append((entity_id(lid, "Event", event), event, event_year))
    plan.objects.append((entity_id(lid, "Object", obj), obj))
    plan.years.extend(years)
    return StoryPlan(story=story, entities=entities, resolved={p.name: str(p.id) for p in people})


def generate_corpus(stories: int, seed: int = SEED) -> Corpus:
    """The same corpus for the same (stories, seed): ~stories/100 legacies (at least 2)."""
    if stories < 2:
        raise ValueError("the bench needs at least 2 stories")
    rng = random.Random(seed)  # noqa: S311 - a reproducible corpus, not secrets
    n_legacies = max(2, stories // 100)
    plans: list[LegacyPlan] = []
    users: list[User] = []
    relationships: list[Relationship] = []
    for i in range(n_legacies):
        plan, legacy_users, rels = _legacy_plan(rng, i)
        plans.append(plan)
        users.extend(legacy_users)
        relationships.extend(rels)
    # a user of each legacy also admires the next one (people belong to several legacies)
    members = [Member(legacy_id=p.legacy.id, user_id=u, role=r) for p in plans for u, r in p.members]
    for i, plan in enumerate(plans):
        nxt = plans[(i + 1) % n_legacies]
        user = plan.members[-1][0]
        nxt.members.append((user, Role.ADMIRER))
        members.append(Member(legacy_id=nxt.legacy.id, user_id=user, role=Role.ADMIRER))
    story_plans: list[StoryPlan] = []
    start = datetime(2020, 1, 1, tzinfo=UTC)
    for i, plan in enumerate(plans):
        count = stories // n_legacies + (1 if i < stories % n_legacies else 0)
        used: set[str] = set()
        home = [
            _unique(rng, lambda: f"{rng.choice(PLACE_HEADS)} {rng.choice(PLACE_KINDS)}", used)
            for _ in range(3)
        ]
        for _ in range(count):
            created = start + timedelta(days=rng.randint(0, 1500), minutes=rng.randint(0, 1439))
            story_plans.append(_story(rng, plan, used, home, created))
    links: list[Link] = []
    by_legacy: dict[uuid.UUID, list[uuid.UUID]] = {}
    for sp in story_plans:
        by_legacy.setdefault(sp.story.legacy_id, []).append(sp.story.id)
    for i in range(0, n_legacies - 1, 2 if n_legacies > 2 else 1):
        a, b = plans[i].legacy.id, plans[i + 1].legacy.id
        roll = rng.random()
        if roll < 0.45:
            status, mode = LinkStatus.ACTIVE, ShareMode.ALL
        elif roll < 0.7:
            status, mode = LinkStatus.ACTIVE, ShareMode.SELECTIVE
        elif roll < 0.85:
            status, mode = LinkStatus.PENDING, ShareMode.ALL
        else:
            status, mode = LinkStatus.REVOKED, ShareMode.ALL
        shared: tuple[uuid.UUID, ...] = ()
        if mode is ShareMode.SELECTIVE:
            pool = by_legacy.get(a, []) + by_legacy.get(b, [])
            shared = tuple(rng.sample(pool, min(10, len(pool))))
        links.append(
            Link(
                id=_uuid(rng),
                legacy_a_id=a,
                legacy_b_id=b,
                status=status,
                share_mode=mode,
                shared_story_ids=shared,
            )
        )
    return Corpus(plans, users, members, relationships, links, story_plans)


# -- query samples ----------------------------------------------------------------------------
@dataclass
class Sample:
    request: ContextRequest
    plan: LegacyPlan
    kind: str
    legacy_ids: list[str]
    person_id: str
    place: tuple[str, str]
    event: tuple[str, str, int]
    obj: tuple[str, str]
    #: stories that mention the person (the bridge template's seeds)
    story_ids: list[str] = field(default_factory=list)


def _question(rng: random.Random, kind: str, plan: LegacyPlan, person: Person, sample: Sample) -> str:
    first = plan.subject.name.split()[0]
    place, event, obj = sample.place[1], sample.event[1], sample.obj[1]
    decade = sample.event[2] // 10 * 10
    options = {
        "relational": [
            f"How did {first} get along with {person.name}?",
            f"Who were {first}'s closest friends?",
        ],
        "temporal": [
            f"What happened in {sample.event[2]}?",
            f"What was life like for {first} in the {decade}s?",
        ],
        "spatial": [f"What do you remember about {place}?", f"Where did {first} live after the war?"],
        "entity_focused": [f"Tell me about {event}.", f"What happened to {obj}?"],
        "general": [f"What was {first} like?", "Tell me about her life."],
        "cross_legacy": [
            f"What do the linked families remember about {first}?",
            f"What do others remember about {place}?",
        ],
    }
    return rng.choice(options[kind])


def build_samples(corpus: Corpus, count: int, seed: int = SEED) -> list[Sample]:
    rng = random.Random(seed + 1)  # noqa: S311
    kinds = ["relational", "temporal", "spatial", "entity_focused", "general", "cross_legacy"]
    samples: list[Sample] = []
    for i in range(count):
        plan = rng.choice(corpus.legacies)
        user, _role = rng.choice(plan.members)
        person = rng.choice(plan.persons[1:])
        kind = kinds[i % len(kinds)]
        sample = Sample(
            request=ContextRequest(
                legacy_id=plan.legacy.id, user_id=user, persona=rng.choice(list(Persona)), query="?"
            ),
            plan=plan,
            kind=kind,
            legacy_ids=[str(plan.legacy.id)] + [str(x) for x in corpus.active_links(plan.legacy.id)],
            person_id=str(person.id),
            place=rng.choice(plan.places),
            event=rng.choice(plan.events),
            obj=rng.choice(plan.objects),
            story_ids=[str(sp.story.id) for sp in corpus.stories if str(person.id) in sp.resolved.values()][
                :10
            ],
        )
        sample.request = sample.request.model_copy(
            update={"query": _question(rng, kind, plan, person, sample)}
        )
        samples.append(sample)
    return samples


def template_params(sample: Sample, limit: int) -> dict[str, dict[str, Any]]:
    """Realistic parameters for every traversal template, from one sample."""
    from heirloom.domain.traversal import BRIDGE_MAX_REACH
    from heirloom.domain.year_keys import year_keys

    subject = str(sample.plan.subject.id)
    base = {"legacy_ids": sample.legacy_ids, "limit": limit}
    decade = sample.event[2] // 10 * 10
    return {
        "legacy_context": {"legacy_id": sample.legacy_ids[0]},
        "relational": {**base, "person_id": subject, "target_ids": [sample.person_id]},
        "relational_2hop": {**base, "person_id": subject, "target_ids": []},
        "person_mentions": {**base, "ids": [sample.person_id]},
        "entity_focused": {**base, "ids": [sample.event[0], sample.obj[0]]},
        "spatial": {**base, "ids": [sample.place[0]], "names": [sample.place[1].lower()]},
        "temporal": {**base, "years": year_keys(decade, decade + 9)},
        "told_in": {**base, "start": "2024-03-01", "end": "2024-03-11"},
        "cross_legacy": {
            **base,
            "legacy_id": sample.legacy_ids[0],
            "ids": [sample.person_id, sample.place[0]],
        },
        "general": {**base, "person_id": subject},
        "facts": {
            "person_ids": sorted({subject, sample.person_id}),
            "subject_id": subject,
            "limit": 2 * limit,
        },
        "story_facts": {**base, "ids": [subject, sample.person_id, sample.obj[0]]},
        "fact_neighbours": {**base, "ids": [sample.person_id]},
        "fact_sentences": {**base, "ids": sorted({subject, sample.person_id}), "subject_id": subject},
        "ambient": {"node_ids": [sample.place[0], sample.event[0], sample.obj[0]], "limit": limit},
        "bridge": {
            **base,
            "seed_ids": sample.story_ids,
            "ids": sorted({subject, sample.person_id}),
            "max_reach": BRIDGE_MAX_REACH,
            "limit": 4 * limit,
        },
    }
