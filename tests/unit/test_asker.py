"""Questions relative to the asker: kin phrases found, followed through the known relationships
(several languages, chains, gender), and used by IntentAnalysis and VectorSearch."""

from __future__ import annotations

from uuid import uuid4

import pytest

from heirloom.adapters.memory import memory_services
from heirloom.contracts.context import (
    ContextRequest,
    EntityMatch,
    IntentAnalysisInput,
    QueryIntent,
    VectorSearchInput,
)
from heirloom.contracts.records import (
    Legacy,
    Link,
    Member,
    Person,
    Relationship,
    RelationshipType,
    Role,
    User,
)
from heirloom.domain.asker import (
    AskerKin,
    asker_kin,
    kin_phrases,
    named_kin_phrases,
    namesakes,
    resolve_kin,
    resolve_named_kin,
    their_own,
    with_asker_kin,
    with_asker_names,
)
from heirloom.steps import intent_analysis, story_events, vector_search
from tests.support.events import story_created

LEGACY, LINKED = uuid4(), uuid4()
ME, DAD, MUM, BRO, SIS, UNCLE, UNCLE_WIFE, OPA = (uuid4() for _ in range(8))
ASKER = uuid4()


def person(pid, name, legacy=LEGACY, aliases=()):
    return Person(id=pid, legacy_id=legacy, name=name, aliases=aliases)


PERSONS = [
    person(ME, "Ana Silva"),
    person(DAD, "João Silva"),  # the legacy's subject
    person(MUM, "Rosa Silva"),
    person(BRO, "Tomás Silva"),
    person(SIS, "Inês Silva"),
    person(UNCLE, "Carlos Silva"),
    person(UNCLE_WIFE, "Marta Silva"),
    person(OPA, "Henk de Vries", legacy=LINKED),
]


def family(a, b, detail):
    return Relationship(from_person_id=a, to_person_id=b, type=RelationshipType.FAMILY_OF, detail=detail)


RELATIONSHIPS = [
    family(ME, DAD, "father"),
    family(ME, MUM, "mother"),
    family(ME, BRO, "brother"),
    family(SIS, ME, "sister"),  # only recorded from Inês's side: Ana is her sister
    family(MUM, SIS, "daughter"),  # Inês is a daughter: her gender
    family(DAD, UNCLE, "brother"),
    family(UNCLE, UNCLE_WIFE, "wife"),
    family(MUM, OPA, "father"),
]


def names(found: list[AskerKin]) -> list[str]:
    return [k.person.name for k in found]


@pytest.mark.parametrize(
    ("text", "phrases"),
    [
        ("What did my brother build?", ["my brother"]),
        ("Where was Dad born, and when?", ["Dad"]),
        ("Quando o Pai foi para Lisboa?", ["Pai"]),
        ("Did Opa ever go back to Utrecht?", ["Opa"]),
        ("What did Tonton say at the wedding?", ["Tonton"]),
        ("Who was my uncle's wife?", ["my uncle's wife"]),
        ("What did my late father tell me?", ["my late father"]),
        ("Mum's brother lent us the van", ["Mum's brother"]),
        ("Grandma Ida's quilt and Dad's watch", ["Dad's"]),  # "Grandma Ida" is a name
        ("Did mijn opa ever talk about the war?", ["mijn opa"]),  # another language's "my"
        ("Minha avó sewed it", ["Minha avó"]),
        ("What did ma mémé cook?", ["ma mémé"]),
        ("Ma said no", ["Ma"]),  # "ma" alone is Mum
        ("Where did my parents meet?", ["my parents"]),  # the plural: every one of them
        ("What did her father do?", []),  # someone else's father
        ("Father Declan said the Mass", []),  # a title before a name
        ("What happened at the mill?", []),
    ],
)
def test_kin_phrases_relative_to_the_asker(text, phrases):
    assert [p.text for p in kin_phrases(text)] == phrases


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What did my brother build?", ["Tomás Silva"]),
        ("Where was Dad born?", ["João Silva"]),
        ("Quando a Mãe casou?", ["Rosa Silva"]),  # Portuguese, accent and capital
        ("Où est allé Papa?", ["João Silva"]),
        ("Did Opa ever go back?", ["Henk de Vries"]),  # Dutch, into the linked legacy
        ("Who was my uncle's wife?", ["Marta Silva"]),  # link by link
        ("What did my sister say?", ["Inês Silva"]),  # recorded the other way round
        ("Did mijn opa ever go back?", ["Henk de Vries"]),
        ("Where did my parents meet?", ["João Silva", "Rosa Silva"]),
        ("What did my cousin say?", []),  # no cousin recorded: nothing, never a guess
    ],
)
def test_phrases_resolve_through_the_known_relationships(text, expected):
    assert sorted(names(resolve_kin(kin_phrases(text), ME, PERSONS, RELATIONSHIPS))) == sorted(expected)


@pytest.mark.parametrize(
    ("text", "phrases"),
    [
        ("Carlos's grandson: how did his test go?", [("Carlos", "Carlos's grandson")]),
        ("How did Tomás's mãe help?", [("Tomás", "Tomás's mãe")]),
        ("Who was Carlos’s second wife?", [("Carlos", "Carlos's second wife")]),
        ("Mum's brother lent us the van", []),  # a kin word as the name: the asker's
        ("Carlos's knee got worse", []),  # no kin word after the name
        ("the mill's owner", []),  # not a name
    ],
)
def test_kin_phrases_relative_to_a_named_person(text, phrases):
    assert [(anchor, p.text) for anchor, p in named_kin_phrases(text)] == phrases


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Who was Carlos's wife?", ["Marta Silva"]),
        ("What did Rosa's father do?", ["Henk de Vries"]),  # first name, into the linked legacy
        ("What did Rosinha's father do?", ["Henk de Vries"]),  # an alias
        ("Who was Ana's uncle?", ["Carlos Silva"]),  # composed: her father's brother
        ("Who was Marco's wife?", []),  # nobody is Marco
        ("Who was Carlos's daughter?", []),  # none recorded: nothing, never a guess
    ],
)
def test_named_phrases_resolve_from_the_named_person(text, expected):
    persons = [p if p.id != MUM else person(MUM, "Rosa Silva", aliases=("Rosinha",)) for p in PERSONS]
    found = resolve_named_kin(named_kin_phrases(text), persons, RELATIONSHIPS)
    assert names(found) == expected
    assert all(k.anchor is not None for k in found)


def test_a_name_two_people_of_one_legacy_share_resolves_nothing():
    phrases = named_kin_phrases("Who was Carlos's wife?")
    assert names(resolve_named_kin(phrases, PERSONS, RELATIONSHIPS)) == ["Marta Silva"]
    # the same Carlos in the linked legacy, married there too: both sides followed
    linked, linked_wife = (
        person(uuid4(), "Carlos Silva", legacy=LINKED),
        person(uuid4(), "Marta S.", legacy=LINKED),
    )
    more = [*RELATIONSHIPS, family(linked.id, linked_wife.id, "wife")]
    found = resolve_named_kin(phrases, [*PERSONS, linked, linked_wife], more)
    assert sorted(names(found)) == ["Marta S.", "Marta Silva"]
    # another Carlos in the same legacy: which one is meant is a guess
    other = person(uuid4(), "Carlos Pereira")
    assert names(resolve_named_kin(phrases, [*PERSONS, other], RELATIONSHIPS)) == []


def test_the_askers_relatives_recorded_in_a_linked_legacy_are_theirs():
    """Each legacy keeps its own Person nodes: the linked legacy records its subject's
    granddaughter Ana as its own node. "my grandfather" is followed from that node too."""
    GRANDPA, ANA_THERE, GRANDPAS_FATHER = uuid4(), uuid4(), uuid4()
    there = [
        person(GRANDPA, "Piet de Vries", legacy=LINKED),
        person(ANA_THERE, "Ana S.", legacy=LINKED, aliases=("Ana Silva",)),
        person(GRANDPAS_FATHER, "Jan de Vries", legacy=LINKED),
    ]
    rels = [
        *RELATIONSHIPS,
        family(GRANDPA, ANA_THERE, "granddaughter"),
        family(GRANDPA, GRANDPAS_FATHER, "father"),
    ]
    everyone = [*PERSONS, *there]
    assert namesakes(PERSONS[0], everyone) == {ME, ANA_THERE}
    grandpa = kin_phrases("What did my grandfather build?")
    assert names(resolve_kin(grandpa, ME, everyone, rels)) == ["Henk de Vries"]  # the mother's father
    found = resolve_kin(grandpa, ME, everyone, rels, also={ANA_THERE})
    assert sorted((k.person.name, k.linked) for k in found) == [
        ("Henk de Vries", False),
        ("Piet de Vries", True),
    ]
    opa = kin_phrases("Opa's father")
    assert names(resolve_kin(opa, ME, everyone, rels, also={ANA_THERE})) == ["Jan de Vries"]
    # found only there: the graph's, not the retrieval text's; the subject of the legacy
    # searched, it leaves that search's text as the subject's names do
    text = "What did my grandfather build?"
    assert with_asker_names(text, found, DAD) == f"{text} Henk de Vries"
    assert with_asker_names(text, found, GRANDPA) == "What did build? Henk de Vries"
    # two people there could be her: neither is
    twin = person(uuid4(), "Ana Silva", legacy=LINKED)
    assert namesakes(PERSONS[0], [*everyone, twin]) == {ME}


def test_a_gendered_word_never_takes_a_relative_recorded_as_the_other_gender():
    # Inês is recorded as a daughter: "my brother" is Tomás only
    assert names(resolve_kin(kin_phrases("my brother"), ME, PERSONS, RELATIONSHIPS)) == ["Tomás Silva"]
    # with no brother recorded, a sibling of unknown gender may be him; a sister may not
    unknown = person(uuid4(), "Sam Silva")
    rels = [r for r in RELATIONSHIPS if r.to_person_id != BRO] + [family(unknown.id, ME, "sister")]
    found = resolve_kin(kin_phrases("my brother"), ME, [*PERSONS, unknown], rels)
    assert names(found) == ["Sam Silva"]


def test_an_askers_other_parent_is_not_read_through_a_spouse():
    """A narrator's "Dad" may be the mother's husband (people.THROUGH_SPOUSE); an asker's is
    not: the asker's relatives are named in the text vector search embeds, where that reading
    cost ranks on two datasets (docs/evaluation.md, "One piano")."""
    rels = [r for r in RELATIONSHIPS if r.to_person_id != DAD] + [family(MUM, DAD, "husband")]
    dad = kin_phrases("Where was Dad born?")
    assert names(resolve_kin(dad, ME, PERSONS, rels)) == []
    assert names(resolve_kin(dad, ME, PERSONS, RELATIONSHIPS)) == ["João Silva"]


def test_the_retrieval_text_names_the_relatives_and_drops_the_subject():
    kin = resolve_kin(kin_phrases("What did my brother build for Dad?"), ME, PERSONS, RELATIONSHIPS)
    text = with_asker_names("What did my brother build for Dad?", kin, DAD)
    assert "Tomás Silva" in text and "Dad" not in text and "João" not in text
    assert with_asker_names("Dad?", kin[1:], DAD) == "Dad?"  # nothing left: the text as it was
    # someone named relative to another person seeds the graph, not the retrieval text
    named = resolve_named_kin(named_kin_phrases("Who was Carlos's wife?"), PERSONS, RELATIONSHIPS)
    assert names(named) == ["Marta Silva"]
    assert with_asker_names("Who was Carlos's wife?", named, DAD) == "Who was Carlos's wife?"


def test_the_intent_gets_the_relatives_as_person_matches():
    wrong = EntityMatch(mention="Dad", node_id="someone-else", label="Person", name="Walter")
    intent = QueryIntent(matches=(wrong,))
    kin = resolve_kin(kin_phrases("What did Dad and my brother build?"), ME, PERSONS, RELATIONSHIPS)
    out = with_asker_kin(intent, kin)
    assert [(m.mention, m.node_id) for m in out.matches] == [("Dad", str(DAD)), ("my brother", str(BRO))]
    assert out.entities.people == ("João Silva", "Tomás Silva")
    assert with_asker_kin(intent, []) is intent


def in_linked(services, names, relationships):
    """These persons (id: name) of the linked legacy and these relationships, recorded."""
    store = services.stories
    for pid, name in names.items():
        store.upsert_person(person(pid, name, legacy=LINKED))
    for r in relationships:
        store.upsert_relationship(r)
    return store


@pytest.fixture
def services():
    svc = memory_services()
    store = svc.stories
    for p in PERSONS:
        store.upsert_person(p)
    for r in RELATIONSHIPS:
        store.upsert_relationship(r)
    store.upsert_legacy(Legacy(id=LEGACY, name="João", subject_person_id=DAD))
    store.upsert_legacy(Legacy(id=LINKED, name="Henk", subject_person_id=OPA))
    store.upsert_link(
        Link(id=uuid4(), legacy_a_id=LEGACY, legacy_b_id=LINKED, status="active", share_mode="all")
    )
    store.upsert_user(User(id=ASKER, name="Ana", person_id=ME))
    store.upsert_member(Member(legacy_id=LEGACY, user_id=ASKER, role=Role.CREATOR))
    return svc


def test_asker_kin_reads_the_store_only_for_a_kin_phrase(services):
    class Counting:
        def __init__(self, inner):
            self.inner, self.reads = inner, 0

        def __getattr__(self, name):
            self.reads += 1
            return getattr(self.inner, name)

    store = Counting(services.stories)
    assert asker_kin("What happened at the mill?", ASKER, LEGACY, store) == []
    assert store.reads == 0
    assert names(asker_kin("Did Opa ever go back?", ASKER, LEGACY, store)) == ["Henk de Vries"]
    # a user who is no known person: nothing relative to them (one read: the user), but a
    # named person's kin still
    services.stories.upsert_user(User(id=ASKER, name="Ana", person_id=None))
    store.reads = 0
    assert asker_kin("Did Opa ever go back?", ASKER, LEGACY, store) == []
    assert store.reads == 1
    # VectorSearch asks for the asker's relatives only: a named person's kin reads nothing
    store.reads = 0
    assert asker_kin("Who was Carlos's wife?", ASKER, LEGACY, store, others=False) == []
    assert store.reads == 0
    found = asker_kin("Did Opa meet Carlos's wife?", ASKER, LEGACY, services.stories)
    assert [(k.mention, k.person.name, k.anchor) for k in found] == [
        ("Carlos's wife", "Marta Silva", "Carlos")
    ]


def _asked(services, query):
    """(node id, mention) of the intent's matches, and VectorSearch's hits, for `query`."""
    request = ContextRequest(legacy_id=LEGACY, user_id=ASKER, persona="family", query=query)
    intent = intent_analysis.run(IntentAnalysisInput(request=request), services)
    hits = vector_search.run(VectorSearchInput(request=request), services).hits
    return {(m.node_id, m.mention) for m in intent.matches}, hits


def test_the_steps_seed_traversal_and_vector_search_with_the_relatives(services):
    shed, garden = uuid4(), uuid4()
    story_events.run(
        story_created(shed, LEGACY, ASKER, "The shed", "Tomás built the shed by the river."), services
    )
    story_events.run(
        story_created(garden, LEGACY, ASKER, "The garden", "We planted beans by the wall."), services
    )
    matches, hits = _asked(services, "What did my brother make?")
    assert (str(BRO), "my brother") in matches
    # the words of the question name no one; the brother's name does
    by_story = {h.story_id: h.lexical for h in hits}
    assert by_story[shed] > 0 and by_story.get(garden, 0.0) == 0.0
    assert hits[0].story_id == shed


def test_a_named_persons_relative_seeds_traversal_but_not_the_search_text(services):
    beans = uuid4()
    story_events.run(
        story_created(beans, LEGACY, ASKER, "The garden", "Marta planted beans by the wall."), services
    )
    matches, hits = _asked(services, "What did Carlos's wife grow?")
    assert (str(UNCLE_WIFE), "Carlos's wife") in matches
    assert all(h.lexical == 0.0 for h in hits if h.story_id == beans)  # "Marta" is not searched


def test_a_relative_recorded_only_in_a_linked_legacy_seeds_traversal_but_not_the_search_text(services):
    """The linked legacy records its subject Henk's grandson Tomás as its own node, and Henk's
    brother Piet there: "my great-uncle" is Piet, found through that node only."""
    tomas_there, piet = uuid4(), uuid4()
    rels = [family(OPA, tomas_there, "grandson"), family(OPA, piet, "brother")]
    store = in_linked(services, {tomas_there: "Tomás Silva", piet: "Piet de Vries"}, rels)
    store.upsert_user(User(id=ASKER, name="Tomás", person_id=BRO))
    found = asker_kin("What did my great-uncle build?", ASKER, LEGACY, store)
    assert [(k.person.name, k.linked) for k in found] == [("Piet de Vries", True)]
    boat = uuid4()
    story_events.run(story_created(boat, LEGACY, ASKER, "The boat", "Piet built a boat."), services)
    matches, hits = _asked(services, "What did my great-uncle build?")
    assert (str(piet), "my great-uncle") in matches
    assert all(h.lexical == 0.0 for h in hits if h.story_id == boat)  # "Piet" is not searched


def test_a_linked_legacy_whose_subject_is_named_is_searched_without_their_names(services):
    """Henk's legacy is his own account ("I asked Rosa ..."): searched for "How did Henk propose
    to Rosa?", its stories are matched against the question without his names; the request's
    subject's names stay there (a person like any other in his stories)."""
    from heirloom.domain.access_filter import scope_for

    store = services.stories
    scope = scope_for(store, ASKER, LEGACY)
    ((text, own),) = vector_search.own_accounts("How did Henk propose to Rosa?", [], scope, LEGACY, store)
    assert text == "How did propose to Rosa?" and own.legacy_ids == (LINKED,)
    ((text, _),) = vector_search.own_accounts("Did João ever meet Henk de Vries?", [], scope, LEGACY, store)
    assert text == "Did João ever meet ?"
    assert vector_search.own_accounts("How did Tomás propose?", [], scope, LEGACY, store) == []
    # named as the asker's relative: "Opa" is Henk, and goes from his legacy's text
    kin = asker_kin("Did Opa ever go back?", ASKER, LEGACY, store, others=False)
    ((text, own),) = vector_search.own_accounts("Did Opa ever go back?", kin, scope, LEGACY, store)
    assert text == "Did ever go back?" and own.legacy_ids == (LINKED,)
    ferry, shed = uuid4(), uuid4()
    story_events.run(
        story_created(ferry, LINKED, ASKER, "The ferry", "I asked Rosa to marry me on the ferry."), services
    )
    story_events.run(story_created(shed, LEGACY, ASKER, "The shed", "Henk built the shed."), services)
    _, hits = _asked(services, "How did Henk propose to Rosa?")
    by_story = {h.story_id: h for h in hits}
    assert set(by_story) == {ferry, shed} and len(hits) == 2  # each chunk once
    # the shed matched "Henk" in the request's search; the ferry was searched without him
    assert by_story[shed].lexical > 0

    def cosine(text):
        (embedding,) = services.embedder.embed([text])
        return next(h.similarity for h in services.vectors.search(embedding, own, 24) if h.story_id == ferry)

    assert by_story[ferry].similarity == round(cosine("How did propose to Rosa?"), 6)
    assert by_story[ferry].similarity != round(cosine("How did Henk propose to Rosa?"), 6)


def test_a_relative_of_the_asker_with_the_askers_name_is_not_the_asker(services):
    """Ana's aunt, also Ana Silva, in the linked legacy: by name alone she would be Ana's node
    there, and her daughter Ana's."""
    aunt, lia = uuid4(), uuid4()
    rels = [family(aunt, ME, "niece"), family(aunt, lia, "daughter")]
    store = in_linked(services, {aunt: "Ana Silva", lia: "Lia Silva"}, rels)
    assert asker_kin("What did my daughter say?", ASKER, LEGACY, store) == []
    assert names(asker_kin("What did my aunt say?", ASKER, LEGACY, store)) == ["Ana Silva"]


def test_a_relative_with_a_linked_subjects_name_is_that_subject():
    """Opa as a person of the asker's legacy is Opa of his own linked legacy (whose stories are
    his own account); a name two linked subjects share maps to neither."""
    home_opa = person(uuid4(), "Henk de Vries")
    subject = person(OPA, "Henk de Vries", legacy=LINKED)
    kin = [AskerKin("Opa", home_opa), AskerKin("my brother", PERSONS[3])]
    assert [(k.mention, k.person.id) for k in their_own(kin, [subject])] == [
        ("Opa", OPA),
        ("my brother", BRO),
    ]
    other = person(uuid4(), "Henk de Vries", legacy=uuid4())
    assert their_own(kin, [subject, other]) == kin
    # the subject found twice (their node and the home one) is one relative
    assert [
        k.person.id for k in their_own([AskerKin("Opa", home_opa), AskerKin("Opa", subject)], [subject])
    ] == [OPA]
