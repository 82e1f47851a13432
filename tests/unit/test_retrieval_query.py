"""The retrieval query leaves the legacy's subject out: every story is about them; a follow-up
that leans on the conversation borrows the previous user message."""

from uuid import uuid4

import pytest

from heirloom.adapters.embedders import HashingEmbedder
from heirloom.contracts.context import ContextRequest, Message, Persona
from heirloom.contracts.records import Legacy, Person, Role
from heirloom.domain.retrieval import SubjectCache, query_text, subject_forms, without_subject
from heirloom.steps.vector_search import vector_search


class _Store:
    def __init__(self, legacy: Legacy, person: Person):
        self.legacy, self.person = legacy, person

    def get_legacy(self, legacy_id):
        return self.legacy if legacy_id == self.legacy.id else None

    def get_person(self, person_id):
        return self.person if person_id == self.person.id else None


def _store() -> _Store:
    legacy_id, person_id = uuid4(), uuid4()
    person = Person(
        id=person_id, legacy_id=legacy_id, name="Margit Ella Sorensen", aliases=["Gitte", "Nana Gitte"]
    )
    return _Store(Legacy(id=legacy_id, name="Margit", subject_person_id=person_id), person)


def test_subject_forms_are_name_aliases_and_first_name_longest_first():
    store = _store()
    forms = subject_forms(store, store.legacy.id)
    assert set(forms) == {"Margit Ella Sorensen", "Gitte", "Nana Gitte", "Margit"}
    assert forms[0] == "Margit Ella Sorensen" and forms.index("Nana Gitte") < forms.index("Gitte")
    assert subject_forms(store, uuid4()) == ()


def test_the_subjects_names_and_possessives_leave_the_query():
    store = _store()
    forms = subject_forms(store, store.legacy.id)
    assert without_subject("What did Nana Gitte keep in Gitte's sewing box?", forms) == (
        "What did keep in sewing box?"
    )
    assert without_subject("Where did Margit Ella Sorensen grow up?", forms) == "Where did grow up?"
    # whole words only, other people stay
    assert without_subject("Did Margitta know Gittel?", forms) == "Did Margitta know Gittel?"


class _CountingStore(_Store):
    """A member's store that counts the reads of the legacy row."""

    def __init__(self, legacy: Legacy, person: Person):
        super().__init__(legacy, person)
        self.legacy_reads = 0

    def get_legacy(self, legacy_id):
        self.legacy_reads += 1
        return super().get_legacy(legacy_id)

    def role_of(self, user_id, legacy_id):
        return Role.CREATOR

    def links_of(self, legacy_id):
        return []

    def member_legacy_ids(self, user_id):
        return [self.legacy.id]


class _Index:
    def __init__(self):
        self.texts: list[str] = []

    def search_text(self, text, scope, k):
        self.texts.append(text)
        return []

    def search(self, embedding, scope, k, *, also=()):
        return []


def test_vector_search_reads_the_legacy_once_for_the_scope_and_the_subject():
    base = _store()
    store, index = _CountingStore(base.legacy, base.person), _Index()
    request = ContextRequest(
        legacy_id=base.legacy.id,
        user_id=uuid4(),
        persona=Persona.FAMILY,
        query="What did Gitte grow in the garden?",
    )
    vector_search(request, store, index, HashingEmbedder(16))
    assert store.legacy_reads == 1
    assert index.texts == ["What did grow in the garden?"]


def test_the_subject_cache_reads_a_legacy_once_per_ttl():
    base = _store()
    store = _CountingStore(base.legacy, base.person)
    now = [0.0]
    cache = SubjectCache(ttl_s=300.0, clock=lambda: now[0])
    expected = (base.person.id, subject_forms(base, base.legacy.id))
    assert cache.get(store, base.legacy.id) == expected
    assert cache.get(store, base.legacy.id) == expected
    assert store.legacy_reads == 1
    now[0] = 300.0  # expired: read again
    assert cache.get(store, base.legacy.id) == expected
    assert store.legacy_reads == 2
    assert cache.get(store, uuid4()) == (None, ())  # no such legacy: no subject


def _asked(query: str) -> str:
    history = (
        Message(role="user", content="When was Stan's knee operation?"),
        Message(role="assistant", content="Wednesday 24 January 2024."),
    )
    request = ContextRequest(
        legacy_id=uuid4(), user_id=uuid4(), persona="friend", query=query, history=history
    )
    return query_text(request)


@pytest.mark.parametrize(
    "query",
    [
        "What happened to him the following Sunday?",  # a pronoun, a day is no name
        "And who helped her then, and in the days after?",
        "What did the family do that summer?",
        "What did he do after that, I wonder?",  # "I" names no one
        "And her sister?",  # short
    ],
)
def test_a_follow_up_that_names_nothing_borrows_the_previous_user_message(query):
    assert _asked(query) == f"When was Stan's knee operation? {query}"


@pytest.mark.parametrize(
    "query",
    [
        "Why did they stop speaking after Grandpa Sal died?",  # names its own anchor
        "And what did she sing on her own at Christmas?",
        "Where did the bakery on the corner buy its flour?",  # leans on nothing
    ],
)
def test_a_question_that_stands_alone_is_searched_alone(query):
    assert _asked(query) == query
