"""The retrieval query leaves the legacy's subject out: every story is about them."""

from uuid import uuid4

from heirloom.contracts.records import Legacy, Person
from heirloom.domain.retrieval import subject_forms, without_subject


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
