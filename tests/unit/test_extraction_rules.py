"""The shared extraction rules: contract coercion, threshold, limits, normalisation, PII scrub,
relationship filtering and person mention resolution (exact, alias, names, fuzzy, kinship)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence

import pytest
from pydantic import ValidationError

from heirloom.contracts.extraction import (
    EXTRACTION_SCHEMA_VERSION,
    ExtractedEntities,
    ExtractedEvent,
    ExtractedObject,
    ExtractedPerson,
    ExtractedPlace,
    ExtractedRelationship,
    TimeReference,
    extraction_json_schema,
    extraction_prompt,
)
from heirloom.domain.extraction import MIN_CONFIDENCE, ExtractionLimits, extract_entities, postprocess
from heirloom.domain.kinship import Kin, inverse_relation, parse_kin
from heirloom.domain.names import name_key, normalize_name
from heirloom.domain.people import ResolutionMethod, resolve_people
from heirloom.domain.pii import has_contact_data, scrub_pii
from heirloom.ports import EntityExtractor
from tests.support.kin import family, person


def people(*pairs: tuple[str, float]) -> ExtractedEntities:
    return ExtractedEntities(people=tuple(ExtractedPerson(name=n, confidence=c) for n, c in pairs))


# --------------------------------------------------------------------------- contract


class TestContract:
    def test_unknown_types_become_other_and_known_ones_are_normalised(self) -> None:
        assert ExtractedPlace(name="x", type="spaceport", confidence=0.9).type == "other"
        assert ExtractedEvent(name="x", type="Family Gathering", confidence=0.9).type == "family_gathering"
        assert ExtractedObject(name="x", type=None, confidence=0.9).type == "other"  # type: ignore[arg-type]
        assert ExtractedObject(name="x", type="HEIRLOOM", confidence=0.9).type == "heirloom"

    def test_schema_3_names_animals_and_works_for_both_extractors(self) -> None:
        """A Bedrock answer typing "Biscuit" an animal or "Danny Boy" a work keeps the type, the
        tool schema lists both, and the prompt of the schema version asks for them."""
        assert ExtractedObject(name="Biscuit", type="Animal", confidence=0.9).type == "animal"
        assert ExtractedObject(name="Danny Boy", type="work", confidence=0.9).type == "work"
        schema = json.dumps(extraction_json_schema())
        assert '"animal"' in schema and '"work"' in schema
        prompt = extraction_prompt()
        assert "animal, work, other" in " ".join(prompt.split())

    @pytest.mark.parametrize("confidence", [-0.1, 1.01])
    def test_confidence_is_a_probability(self, confidence: float) -> None:
        with pytest.raises(ValidationError):
            ExtractedPerson(name="Jim", confidence=confidence)

    def test_models_are_frozen_and_closed(self) -> None:
        p = ExtractedPerson(name="Jim", confidence=0.9)
        with pytest.raises(ValidationError):
            p.name = "Bob"  # type: ignore[misc]
        with pytest.raises(ValidationError):
            ExtractedPerson(name="Jim", confidence=0.9, email="x@y.z")  # type: ignore[call-arg]
        with pytest.raises(ValidationError):
            ExtractedRelationship(subject="Jim", predicate="MARRIED", object="May", confidence=0.9)  # type: ignore[arg-type]

    def test_tool_schema_is_self_contained(self) -> None:
        schema = extraction_json_schema()
        text = json.dumps(schema)
        assert schema["type"] == "object"
        assert "$ref" not in text and "$defs" not in text
        assert set(schema["properties"]) == {
            "people",
            "places",
            "events",
            "objects",
            "time_references",
            "relationships",
            "facts",
        }
        predicate = schema["properties"]["relationships"]["items"]["properties"]["predicate"]
        assert set(predicate["enum"]) == {
            "PARTICIPATED_IN",
            "LIVED_IN",
            "WORKED_AT",
            "OWNED",
            "TOOK_PLACE_AT",
        }
        assert EXTRACTION_SCHEMA_VERSION in schema["description"]
        # what the LLM returns validates against the model
        ExtractedEntities.model_validate(
            {"people": [{"name": "Uncle Jim", "context": "mother's brother", "confidence": 0.95}]}
        )

    def test_prompt_is_versioned_and_filled_in(self) -> None:
        prompt = extraction_prompt(known_names=["Edith Marlowe", "Jim"], max_people=7)
        assert "At most 7 people" in prompt
        assert "Edith Marlowe, Jim" in prompt
        assert "${" not in prompt
        assert "phone numbers" in prompt and "confidence" in prompt


# --------------------------------------------------------------------------- post-processing


class TestThresholdAndLimits:
    def test_only_confident_entities_are_kept(self) -> None:
        out = postprocess(people(("Edith", 0.69), ("Ray", MIN_CONFIDENCE), ("Jim", 0.95)))
        assert [p.name for p in out.people] == ["Ray", "Jim"]

    def test_threshold_applies_to_every_kind(self) -> None:
        raw = ExtractedEntities(
            places=(ExtractedPlace(name="Duluth", confidence=0.5),),
            events=(ExtractedEvent(name="flood", confidence=0.6),),
            objects=(ExtractedObject(name="quilt", confidence=0.65),),
        )
        out = postprocess(raw)
        assert not (out.places or out.events or out.objects)

    def test_a_place_the_title_names_is_kept_below_the_threshold(self) -> None:
        """The title corroborates a weak proper-named place; nothing else is lifted."""
        raw = ExtractedEntities(
            places=(
                ExtractedPlace(name="Larkspur Terrace", type="workplace", confidence=0.6),
                ExtractedPlace(name="Quarry Hill", confidence=0.6),  # not in the title
                ExtractedPlace(name="porch", confidence=0.6),  # not a proper name
                ExtractedPlace(name="Terrace", confidence=0.4),  # too weak even so
            ),
            events=(ExtractedEvent(name="Larkspur Picnic", confidence=0.6),),
        )
        title = "Grandpa's porch at Larkspur Terrace"
        out = postprocess(raw, title=title)
        assert [(p.name, p.confidence) for p in out.places] == [("Larkspur Terrace", MIN_CONFIDENCE)]
        assert not out.events
        assert not postprocess(raw).places  # without the title, all stay below the threshold
        assert not postprocess(raw, title="Larkspur Terraces").places  # whole words only

    def test_a_person_the_model_took_for_a_place_is_not_lifted_by_the_title(self) -> None:
        raw = ExtractedEntities(
            people=(ExtractedPerson(name="Velma Ostrow", confidence=0.85),),
            places=(
                ExtractedPlace(name="Aunt Velma", confidence=0.6),  # a kin word first
                ExtractedPlace(name="Velma Ostrow", confidence=0.6),  # a person's name
                ExtractedPlace(name="Ostrow", confidence=0.6),  # one word
                ExtractedPlace(name="Dr. Haines", confidence=0.6),  # an honorific first
            ),
        )
        title = "Aunt Velma, Velma Ostrow and Dr. Haines at Ostrow"
        assert not postprocess(raw, title=title).places

    def test_a_known_persons_name_is_not_a_place(self) -> None:
        """The legacy's persons, names and aliases of two or more words, are never places,
        whatever the confidence or the title; a one-word name may also be a town."""
        raw = ExtractedEntities(
            places=(
                ExtractedPlace(name="Nurse Halvorsen", confidence=0.6),  # an alias, named by the title
                ExtractedPlace(name="the Ingrid  Halvorsen's", confidence=0.85),  # the name, as written
                ExtractedPlace(name="Florence", confidence=0.85),  # a one-word alias stays a place
                ExtractedPlace(name="Halvorsen Creek", confidence=0.85),
                ExtractedPlace(name="Ridge", confidence=0.85),  # "the Ridge" is one word
            ),
        )
        known = ["Ingrid Halvorsen", "Nurse Halvorsen", "Florence", "the Ridge"]
        out = postprocess(raw, title="Nurse Halvorsen", known_names=known)
        assert [p.name for p in out.places] == ["Florence", "Halvorsen Creek", "Ridge"]
        assert len(postprocess(raw, title="Nurse Halvorsen").places) == 5  # not known: kept

    def test_limits_keep_the_most_confident_in_story_order(self) -> None:
        raw = people(*[(f"Person{i:02d}", 0.7 + i / 100) for i in range(25)])
        out = postprocess(raw)
        assert len(out.people) == 20
        assert [p.name for p in out.people] == [f"Person{i:02d}" for i in range(5, 25)]

    def test_custom_limits(self) -> None:
        raw = ExtractedEntities(
            places=tuple(ExtractedPlace(name=f"Town {c}", confidence=0.9) for c in "ABCDEFGHIJKLMNOPQR")
        )
        assert len(postprocess(raw).places) == 15
        assert len(postprocess(raw, limits=ExtractionLimits(places=3)).places) == 3

    def test_extractor_version_is_kept(self) -> None:
        raw = ExtractedEntities(extractor_version="fake-1")
        assert postprocess(raw).extractor_version == "fake-1"


class TestNormalisation:
    @pytest.mark.parametrize(
        ("raw", "kwargs", "expected"),
        [
            ('  "Uncle   Jim,"  ', {}, "Uncle Jim"),
            ("“Grandma”", {}, "Grandma"),
            ("Ray’s", {"possessive": True}, "Ray"),
            ("Ray's", {}, "Ray's"),
            ("the Hansens'", {"possessive": True}, "the Hansens"),
            ("the mill", {"determiners": True}, "mill"),
            ("The Hague", {"determiners": True}, "The Hague"),  # capitalised: a name, kept
            ("my grandmother's quilt", {"determiners": True}, "grandmother's quilt"),
            ("Ray Alder Jr.", {}, "Ray Alder Jr."),
            ("the old mill.", {"determiners": True}, "old mill"),
            ("'57 Chevy", {}, "'57 Chevy"),
            ("McDONALD farm", {}, "McDONALD farm"),  # capitalisation as written
        ],
    )
    def test_normalize_name(self, raw: str, kwargs: dict[str, bool], expected: str) -> None:
        assert normalize_name(raw, **kwargs) == expected

    def test_person_possessive_is_stripped_but_object_owner_kept(self) -> None:
        raw = ExtractedEntities(
            people=(ExtractedPerson(name="Ray's", confidence=0.9),),
            objects=(ExtractedObject(name="the grandmother's quilt", confidence=0.9),),
        )
        out = postprocess(raw)
        assert [p.name for p in out.people] == ["Ray"]
        assert [o.name for o in out.objects] == ["grandmother's quilt"]

    def test_duplicates_merge_case_insensitively(self) -> None:
        raw = ExtractedEntities(
            places=(
                ExtractedPlace(name="the Mill", confidence=0.75),
                ExtractedPlace(name="mill", type="building", location="Duluth", confidence=0.9),
                ExtractedPlace(name="MILL", confidence=0.8),
            ),
            people=(
                ExtractedPerson(name="Uncle Jim", confidence=0.9),
                ExtractedPerson(name="uncle jim", context="mother's brother", confidence=0.8),
            ),
        )
        out = postprocess(raw)
        assert len(out.places) == 1
        assert out.places[0].name == "mill" and out.places[0].location == "Duluth"
        assert len(out.people) == 1
        assert out.people[0].name == "Uncle Jim" and out.people[0].context == "mother's brother"
        assert name_key("The Mill") == name_key("mill")

    def test_names_without_letters_or_digits_are_dropped(self) -> None:
        assert not postprocess(people(("'s", 0.9), ("--", 0.9))).people


class TestPii:
    def test_scrub(self) -> None:
        text = "Call 555-123-4567 or (608) 555-0142, write edith@example.com, SSN 123-45-6789."
        assert scrub_pii(text) == "Call [phone] or [phone], write [email], SSN [number]."
        assert scrub_pii("They lived at 14 Elm Street, Springfield, IL 62704.") == (
            "They lived at Elm Street, Springfield, IL."
        )
        assert scrub_pii("Write to P.O. Box 12") == "Write to [address]"

    def test_years_and_ranges_are_not_phone_numbers(self) -> None:
        for text in ("1962-1965", "from 1941 to 1945", "the 1962 flood", "Route 9", "aged 88"):
            assert not has_contact_data(text)
            assert scrub_pii(text) == text

    def test_entities_named_by_contact_data_are_dropped(self) -> None:
        raw = people(("edith@example.com", 0.9), ("555-123-4567", 0.9), ("Edith", 0.9))
        assert [p.name for p in postprocess(raw).people] == ["Edith"]

    def test_house_numbers_leave_place_names_and_properties(self) -> None:
        raw = ExtractedEntities(
            places=(ExtractedPlace(name="14 Elm Street", location="5 Oak Lane, Duluth", confidence=0.9),),
            people=(ExtractedPerson(name="Lou", context="reach him at lou@example.net", confidence=0.9),),
            events=(ExtractedEvent(name="the funeral", date="call 555-0142", confidence=0.9),),
            time_references=(TimeReference(period="1962", context="at 14 Elm Street, call 555-123-4567"),),
        )
        out = postprocess(raw)
        dumped = out.model_dump_json()
        assert "14" not in dumped and "555" not in dumped and "@" not in dumped
        assert out.places[0].name == "Elm Street"
        assert out.places[0].location == "Oak Lane, Duluth"
        assert out.people[0].context == "reach him at [email]"
        assert out.events[0].date == "call [phone]"
        assert out.time_references[0].context == "at Elm Street, call [phone]"


class TestRelationships:
    def test_relationships_only_between_kept_entities_with_canonical_names(self) -> None:
        raw = ExtractedEntities(
            people=(ExtractedPerson(name="Ray", confidence=0.9), ExtractedPerson(name="Joe", confidence=0.5)),
            objects=(ExtractedObject(name="the pocket watch", confidence=0.9),),
            events=(ExtractedEvent(name="1962 flood", confidence=0.9),),
            places=(ExtractedPlace(name="the Mill", confidence=0.9),),
            relationships=(
                ExtractedRelationship(
                    subject="Ray's", predicate="OWNED", object="Pocket Watch", confidence=0.9
                ),
                ExtractedRelationship(subject="Joe", predicate="WORKED_AT", object="mill", confidence=0.9),
                ExtractedRelationship(
                    subject="Ray", predicate="WORKED_AT", object="the mill", confidence=0.6
                ),
                ExtractedRelationship(
                    subject="1962 flood", predicate="TOOK_PLACE_AT", object="mill", confidence=0.8
                ),
                ExtractedRelationship(
                    subject="Ray", predicate="LIVED_IN", object="pocket watch", confidence=0.9
                ),
                ExtractedRelationship(
                    subject="ray", predicate="OWNED", object="pocket watch", confidence=0.95
                ),
            ),
        )
        out = postprocess(raw)
        assert {(r.subject, r.predicate, r.object, r.confidence) for r in out.relationships} == {
            ("Ray", "OWNED", "pocket watch", 0.95),
            ("1962 flood", "TOOK_PLACE_AT", "Mill", 0.8),
        }


class FakeExtractor:
    def extract(self, text: str, *, known_names: Sequence[str] = ()) -> ExtractedEntities:
        return ExtractedEntities(
            people=(
                *(ExtractedPerson(name=n, confidence=0.9) for n in known_names if n in text),
                ExtractedPerson(name="Somebody", confidence=0.5),
            ),
            extractor_version="fake-1",
        )


def test_extract_entities_runs_the_port_then_the_rules() -> None:
    extractor: EntityExtractor = FakeExtractor()
    out = extract_entities(extractor, "Edith and Ray went fishing.", known_names=["Edith", "Ray", "Jim"])
    assert [p.name for p in out.people] == ["Edith", "Ray"]
    assert out.extractor_version == "fake-1"


# --------------------------------------------------------------------------- kinship vocabulary


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("father", Kin("parent", "m")),
        ("Mom", Kin("parent", "f")),
        ("my late father", Kin("parent", "m")),
        ("mother's brother", Kin("pibling", "m")),
        ("my mother’s mother", Kin("grandparent", "f")),
        ("great-grandmother", Kin("great_grandparent", "f")),
        ("Great Uncle", Kin("great_pibling", "m")),
        ("uncle (mother's side)", Kin("pibling", "m")),
        ("paternal grandmother", Kin("grandparent", "f")),
        ("step-father", Kin("step_parent", "m")),
        ("Sister-in-law", Kin("sibling_in_law", "f")),
        ("cousin", Kin("cousin", None)),
        ("best friend", None),
        ("brother's friend", None),
        ("", None),
    ],
)
def test_parse_kin(text: str, expected: Kin | None) -> None:
    assert parse_kin(text) == expected


def test_parse_kin_from_a_narrator() -> None:
    assert parse_kin("my dad", mention=True) == Kin("parent", "m")
    assert parse_kin("grandmother", mention=True) == Kin("grandparent", "f")
    assert parse_kin("his mother", mention=True) is None  # someone else's mother
    assert parse_kin("his mother") == Kin("parent", "f")  # as a relationship detail it reads fine


def test_parse_kin_after_a_possessive_of_any_language() -> None:
    assert parse_kin("minha avó", mention=True) == Kin("grandparent", "f")
    assert parse_kin("Ma mémé", mention=True) == Kin("grandparent", "f")
    assert parse_kin("mijn opa", mention=True) == Kin("grandparent", "m")
    assert parse_kin("mia nonna", mention=True) == Kin("grandparent", "f")
    assert parse_kin("ma", mention=True) == Kin("parent", "f")  # alone, "ma" is the kin word


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("minha vó", Kin("grandparent", "f")),  # Brazilian short forms, not only "avó"
        ("Vô", Kin("grandparent", "m")),
        ("mainha", Kin("parent", "f")),
        ("ma frangine", Kin("sibling", "f")),
        ("mijn schoonzus", Kin("sibling_in_law", "f")),
        ("mijn oudoom", Kin("great_pibling", "m")),
        ("mi yerno", Kin("child_in_law", "m")),
        ("meine Schwägerin", Kin("sibling_in_law", "f")),
        ("moja teściowa", Kin("parent_in_law", "f")),
        ("my bubbe", Kin("grandparent", "f")),  # the words English speakers use for grandparents
        ("Zayde", Kin("grandparent", "m")),
        ("my yiayia", Kin("grandparent", "f")),
        ("Meemaw", Kin("grandparent", "f")),
        ("my hubby", Kin("spouse", "m")),
    ],
)
def test_kin_words_families_say_in_several_languages(text: str, expected: Kin) -> None:
    assert parse_kin(text, mention=True) == expected


def test_inverse_relation() -> None:
    assert inverse_relation("parent") == "child"
    assert inverse_relation("great_grandparent") == "great_grandchild"
    assert inverse_relation("pibling") == "nibling"
    assert inverse_relation("sibling") == "sibling"


# --------------------------------------------------------------------------- resolution


class TestResolution:
    def setup_method(self) -> None:
        self.edith = person("Edith Anne Marlowe", "Grandma Edie")
        self.ray = person('Raymond "Ray" Marlowe')
        self.jim_uncle = person("James Carter", "Uncle Jim")
        self.jim_cousin = person("Jim Hale")
        self.may = person("May Hale")
        self.narrator = person("Carol Marlowe")
        self.known = [self.edith, self.ray, self.jim_uncle, self.jim_cousin, self.may, self.narrator]
        self.rels = [
            family(self.narrator, self.ray, "father"),  # Ray is Carol's father
            family(self.edith, self.narrator, "granddaughter"),  # Carol is Edith's granddaughter
            family(self.narrator, self.edith, "paternal grandmother"),
            family(self.narrator, self.jim_uncle, "mother's brother"),
            family(self.may, self.jim_cousin, "husband"),
        ]

    def resolve(
        self, *mentions: str, narrator: uuid.UUID | None = None
    ) -> dict[str, tuple[uuid.UUID, str] | None]:
        resolved, unresolved = resolve_people(
            list(mentions), self.known, self.rels, narrator if narrator is not None else self.narrator.id
        )
        out: dict[str, tuple[uuid.UUID, str] | None] = {m: (pid, str(method)) for m, pid, method in resolved}
        out.update(dict.fromkeys(unresolved))
        return out

    def test_exact_and_alias_case_insensitive(self) -> None:
        got = self.resolve("edith anne marlowe", "GRANDMA EDIE", "Uncle Jim", "Ray")
        assert got["edith anne marlowe"] == (self.edith.id, ResolutionMethod.EXACT)
        assert got["GRANDMA EDIE"] == (self.edith.id, ResolutionMethod.ALIAS)
        assert got["Uncle Jim"] == (self.jim_uncle.id, ResolutionMethod.ALIAS)
        assert got["Ray"] == (self.ray.id, ResolutionMethod.ALIAS)  # the quoted nickname

    def test_name_parts(self) -> None:
        got = self.resolve("Edith Marlowe", "Edith", "Mrs. Marlowe", "Carter", "Jimmy Hale")
        assert got["Edith Marlowe"] == (self.edith.id, ResolutionMethod.FIRST_LAST)
        assert got["Edith"] == (self.edith.id, ResolutionMethod.FIRST_NAME)
        assert got["Mrs. Marlowe"] is None  # three Marlowes: ambiguous, left unresolved
        assert got["Carter"] == (self.jim_uncle.id, ResolutionMethod.LAST_NAME)
        assert got["Jimmy Hale"] == (self.jim_cousin.id, ResolutionMethod.FIRST_LAST)  # nickname

    def test_first_name_beats_nickname_and_ambiguity_stays_unresolved(self) -> None:
        # "Jim" is Jim Hale's first name (and only a nickname of James Carter's)
        assert self.resolve("Jim")["Jim"] == (self.jim_cousin.id, ResolutionMethod.FIRST_NAME)
        self.known.append(person("May Brandt"))
        assert self.resolve("May")["May"] is None

    def test_kin_title_narrows_an_ambiguous_name(self) -> None:
        self.known.remove(self.jim_uncle)
        uncle = person("James Carter")  # no "Uncle Jim" alias this time
        self.known.append(uncle)
        self.rels[3] = family(self.narrator, uncle, "uncle")
        got = self.resolve("Uncle Jim", "Jim")
        assert got["Uncle Jim"] == (uncle.id, ResolutionMethod.KINSHIP)  # not Jim Hale
        assert got["Jim"] == (self.jim_cousin.id, ResolutionMethod.FIRST_NAME)
        resolved, _ = resolve_people(["Uncle Jim"], self.known, self.rels, None)
        assert resolved[0].person_id == self.jim_cousin.id  # no narrator: the name alone decides

    def test_title_then_first_name(self) -> None:
        joe = person("Joseph Brandt")
        self.known.append(joe)
        got = self.resolve("Grandpa Joe", "Aunt May")
        assert got["Grandpa Joe"] == (joe.id, ResolutionMethod.FIRST_NAME)
        assert got["Aunt May"] == (self.may.id, ResolutionMethod.FIRST_NAME)

    def test_fuzzy(self) -> None:
        got = self.resolve("Edith Ann Marlow", "Carol Marlow")
        assert got["Edith Ann Marlow"] == (self.edith.id, ResolutionMethod.FUZZY)
        assert got["Carol Marlow"] == (self.narrator.id, ResolutionMethod.FUZZY)
        assert self.resolve("Edwin Marsh")["Edwin Marsh"] is None

    def test_narrator_kinship_through_family_relationships(self) -> None:
        got = self.resolve("my dad", "Dad", "my father", "my grandmother", "my uncle", "my mother's brother")
        assert got["my dad"] == (self.ray.id, ResolutionMethod.KINSHIP)
        assert got["Dad"] == (self.ray.id, ResolutionMethod.KINSHIP)
        assert got["my father"] == (self.ray.id, ResolutionMethod.KINSHIP)
        assert got["my grandmother"] == (self.edith.id, ResolutionMethod.KINSHIP)
        assert got["my uncle"] == (self.jim_uncle.id, ResolutionMethod.KINSHIP)  # detail "mother's brother"
        assert got["my mother's brother"] == (self.jim_uncle.id, ResolutionMethod.KINSHIP)

    def test_narrator_kinship_in_any_language_of_the_kin_lexicon(self) -> None:
        got = self.resolve("minha avó", "Vovó", "mijn opa", "ma mémé")
        assert got["minha avó"] == (self.edith.id, ResolutionMethod.KINSHIP)
        assert got["Vovó"] == (self.edith.id, ResolutionMethod.KINSHIP)
        assert got["ma mémé"] == (self.edith.id, ResolutionMethod.KINSHIP)
        assert got["mijn opa"] is None  # no grandfather among the narrator's relationships

    def test_inverse_direction_needs_gender_evidence_for_gendered_words(self) -> None:
        mom = person("Ruth Marlowe")
        self.known.append(mom)
        self.rels.append(family(mom, self.narrator, "daughter"))  # Carol is Ruth's daughter
        got = self.resolve("my mother", "my parent")
        assert got["my mother"] is None  # Ruth is a parent, but nothing says she is a mother
        assert got["my parent"] is None  # and "parent" now means Ray or Ruth: ambiguous
        self.rels.append(family(self.ray, mom, "wife"))  # now Ruth is known to be female
        got = self.resolve("my mother", "Mom")
        assert got["my mother"] == (mom.id, ResolutionMethod.KINSHIP)
        assert got["Mom"] == (mom.id, ResolutionMethod.KINSHIP)

    def test_kin_recorded_only_through_two_links(self) -> None:
        """The records say what each relative is to the subject, seldom to every narrator: a son
        recorded only as his mother's son reads "Dad" as her husband and "Grandpa" as her father.
        A relative recorded directly wins, and two candidates (a second husband) leave none."""
        ruth, otto, ben = person("Ruth Marlowe"), person("Otto Brandt"), person("Ben Marlowe")
        self.known += [ruth, otto, ben]
        self.rels += [
            family(ruth, ben, "son"),
            family(ruth, self.ray, "husband"),
            family(ruth, otto, "father"),
        ]
        got = self.resolve("Dad", "Grandpa", narrator=ben.id)
        assert got == {
            "Dad": (self.ray.id, ResolutionMethod.KINSHIP),
            "Grandpa": (otto.id, ResolutionMethod.KINSHIP),
        }
        assert self.resolve("Dad")["Dad"] == (self.ray.id, ResolutionMethod.KINSHIP)  # Carol's, recorded
        self.rels.append(family(ruth, person("Sam Cole"), "second husband"))
        assert self.resolve("Dad", narrator=ben.id)["Dad"] is None

    def test_inverse_child(self) -> None:
        # Edith's mention of "my granddaughter" when Edith narrates
        got = self.resolve("my granddaughter", narrator=self.edith.id)
        assert got["my granddaughter"] == (self.narrator.id, ResolutionMethod.KINSHIP)

    def test_kin_words_need_a_known_narrator_and_are_never_fuzzy(self) -> None:
        dan = person("Dan Hale")
        self.known.append(dan)
        resolved, unresolved = resolve_people(["my dad", "Dad", "Uncle Jim"], self.known, self.rels, None)
        assert [r.mention for r in resolved] == ["Uncle Jim"]  # the alias still matches
        assert unresolved == ["my dad", "Dad"]  # never fuzzily "Dan"
        assert self.resolve("his mother")["his mother"] is None

    def test_ambiguous_kin_stays_unresolved(self) -> None:
        other = person("Hazel Brandt")
        self.known.append(other)
        self.rels.append(family(self.narrator, other, "grandmother"))
        assert self.resolve("my grandmother")["my grandmother"] is None

    def test_unresolved_kept_in_order_and_mentions_reported_once(self) -> None:
        resolved, unresolved = resolve_people(
            ["Lou Pacheco", "Ray", "ray", "Maria", "Lou Pacheco", "Ray's"],
            self.known,
            self.rels,
            self.narrator.id,
        )
        assert [r.mention for r in resolved] == ["Ray"]
        assert unresolved == ["Lou Pacheco", "Maria"]

    def test_resolved_mentions_are_tuples(self) -> None:
        resolved, _ = resolve_people(["Edith"], self.known, self.rels, None)
        mention, person_id, method = resolved[0]
        assert (mention, person_id, method) == ("Edith", self.edith.id, "first_name")
