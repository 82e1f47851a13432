"""The local spaCy extractor on invented family stories, through the shared post-processing rules.

Every story here was written for this test (nothing from the evaluation set). Each expected
entity lists the surface forms that count as finding it; precision and recall are computed per
kind and printed (`pytest -s` shows them) for three sets:
- tuned: written first; a few generic rule fixes were made while looking at them;
- held-out: written next; their first run gave people P 0.83 / R 0.90, places P 0.93 / R 0.81,
  events P 0.67 / R 0.50, objects P 0.67 / R 0.25, and four generic bugs it exposed were fixed
  (mixed-case names such as "DeLuca", two-word heirlooms tagged as proper nouns, weak spans
  displacing confident ones, NER spans running on past "on"/"in");
- blind: written last and run once with the rules frozen.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from heirloom.adapters.spacy import extractor as spacy_extractor
from heirloom.adapters.spacy.extractor import SpacyEntityExtractor
from heirloom.adapters.spacy.people import _known_people
from heirloom.adapters.spacy.selection import _entities
from heirloom.contracts.extraction import ExtractedEntities
from heirloom.domain.extraction import extract_entities, postprocess
from heirloom.domain.kinship import parse_kin
from heirloom.ports import EntityExtractor

try:
    spacy_extractor.installed_model_package()
except spacy_extractor.ExtractorUnavailable as exc:  # pragma: no cover - depends on the environment
    pytest.skip(str(exc), allow_module_level=True)


@dataclass(frozen=True)
class Story:
    text: str
    #: kind -> entities, each a tuple of accepted surface forms (case-insensitive)
    expected: dict[str, tuple[tuple[str, ...], ...]]
    times: tuple[str, ...] = ()
    #: kind -> names that are acceptable but not required (neither a miss nor a false positive)
    optional: dict[str, tuple[str, ...]] | None = None


FARM = Story(
    text=(
        "Harold Brennan was born in 1931 on a dairy farm outside Eau Claire, Wisconsin. His wife, "
        "Lorraine, said he could fix anything with baling wire. Every Fourth of July the whole family "
        "gathered at the Brennan farm for the reunion, and Aunt Ruth brought her rhubarb pie. When the "
        "barn fire of 1958 took the hay loft, Harold and his brother Walter rebuilt it in six weeks. I "
        "still have Harold's pocket watch and the family Bible with every birth written inside the "
        "cover. He retired from the creamery in 1991 and spent the nineties fishing on Lake Wissota."
    ),
    expected={
        "people": (("Harold Brennan", "Harold"), ("Lorraine",), ("Aunt Ruth", "Ruth"), ("Walter",)),
        "places": (
            ("Eau Claire",),
            ("Wisconsin",),
            ("Brennan farm", "dairy farm"),
            ("Lake Wissota",),
            ("creamery",),
        ),
        "events": (("reunion",), ("barn fire of 1958", "barn fire")),
        "objects": (("Harold's pocket watch", "pocket watch"), ("family Bible", "Bible")),
    },
    times=("1931", "1958", "1991", "1990s"),
)

CITY = Story(
    text=(
        "My father, Tomasz Kowalczyk, came to Chicago in 1949 with one suitcase and his mother's "
        "rosary. He worked at the Union Stock Yards for twenty years and sang in the choir at St. "
        "Hedwig's Church on Sunday mornings. Mom met him at a dance at the Aragon Ballroom. They married "
        "in 1952, and the wedding was held in the church basement. During the war he had been a forced "
        "laborer in Germany; he never talked about it. My sister Anna keeps his accordion in her living "
        "room in Milwaukee, and I have the recipe box Mom filled with pierogi cards."
    ),
    expected={
        "people": (("Tomasz Kowalczyk", "Tomasz"), ("Mom",), ("Anna",)),
        "places": (
            ("Chicago",),
            ("Union Stock Yards",),
            ("St. Hedwig's Church",),
            ("Aragon Ballroom",),
            ("Germany",),
            ("Milwaukee",),
        ),
        "events": (("wedding",), ("war",)),
        "objects": (("mother's rosary", "rosary"), ("accordion",), ("recipe box",)),
    },
    times=("1949", "1952"),
)

BAKERY = Story(
    text=(
        "Grandma Rose ran the bakery on Front Street in Marietta for forty years. Every Christmas Eve "
        "she made kolaches with my cousin Denise and me while Grandpa Earl read the paper by the stove. "
        "When the Ohio River flooded in 1937, the water reached the second shelf of the bakery, and "
        "Grandma Rose saved her sourdough starter and her mother's sewing machine by carrying them up "
        "to the attic. Uncle Vern always said the flood was the making of her. After she died in 1994, "
        "Denise took the sewing machine and I took the rolling pin."
    ),
    expected={
        "people": (("Grandma Rose", "Rose"), ("Denise",), ("Grandpa Earl", "Earl"), ("Uncle Vern", "Vern")),
        "places": (("bakery",), ("Front Street",), ("Marietta",), ("Ohio River",)),
        "events": (("flood",),),
        "objects": (("mother's sewing machine", "sewing machine"), ("rolling pin",)),
    },
    times=("1937", "1994"),
)

NEIGHBOR = Story(
    text=(
        "Dad's best friend, Lou Pacheco, lived two doors down at 418 Birch Avenue, and you could reach "
        "him at (608) 555-0142 until the day he died. The two of them played cribbage every Friday and "
        "argued about the Packers. Lou's daughter Maria emailed me from maria.pacheco@example.net after "
        "the funeral to say he had kept Dad's old harmonica all those years. We had no idea. In the "
        "eighties they drove a 1972 Ford pickup to every county fair in the state."
    ),
    expected={
        "people": (("Dad",), ("Lou Pacheco", "Lou"), ("Maria",)),
        "places": (("Birch Avenue",),),
        "events": (("funeral",),),
        "objects": (("Dad's old harmonica", "Dad's harmonica", "harmonica"),),
    },
    times=("1980s",),
)

QUIET = Story(
    text=(
        "She laughed easily and never held a grudge. If you were sad, she would sit with you at the "
        "kitchen table and pour two cups of coffee, and somehow the world felt smaller and kinder. We "
        "miss her every day."
    ),
    expected={"people": (), "places": (), "events": (), "objects": ()},
)

# Written after the rules were frozen and never used to adjust them: the figures on these are the
# honest ones (the five above shaped a few generic fixes).
NAVY = Story(
    text=(
        "Grandpa Lyle enlisted in the Navy in 1942 and served on a destroyer in the Pacific. He wrote to "
        "my grandmother, June Abernathy, every week, and she kept all of his letters in a shoebox. After "
        "the war they bought a little house on Willow Lane in Sioux Falls. Uncle Dale was born there in "
        "1947. Grandpa Lyle's Purple Heart hangs in our hallway now, next to their wedding photo from "
        "Trinity Lutheran Church."
    ),
    expected={
        "people": (("Grandpa Lyle", "Lyle"), ("June Abernathy", "June"), ("Uncle Dale", "Dale")),
        "places": (("Pacific",), ("Willow Lane",), ("Sioux Falls",), ("Trinity Lutheran Church",)),
        "events": (("war",),),
        "objects": (
            ("letters", "his letters"),
            ("Purple Heart", "Grandpa Lyle's Purple Heart"),
            ("wedding photo",),
        ),
    },
    times=("1942", "1947"),
    optional={"places": ("little house", "house")},
)

DINER = Story(
    text=(
        "For thirty-one years my mother ran the Starlite Diner on Route 9 outside Kingston. Her "
        "short-order cook, a quiet man named Eugene Tillman, made the best hash browns in Ulster County. "
        "In the blizzard of 1978 the diner stayed open for three days straight and fed the snowplow crews "
        "for free. Mom kept the original menu from 1961 framed above the register, and my brother Pete "
        "has her coffee urn in his garage in Albany."
    ),
    expected={
        "people": (("my mother", "Mom"), ("Eugene Tillman",), ("Pete",)),
        "places": (
            ("Starlite Diner", "diner"),
            ("Route 9",),
            ("Kingston",),
            ("Ulster County",),
            ("Albany",),
        ),
        "events": (("blizzard of 1978", "blizzard"),),
        "objects": (("original menu", "menu"), ("coffee urn",)),
    },
    times=("1978", "1961"),
    optional={"places": ("garage",)},
)

CROSSING = Story(
    text=(
        "Nonna Lucia crossed from Naples to New York in 1921 with her sister Carmela and a brass "
        "candlestick wrapped in a wool shawl. They settled in Providence, where Lucia sewed coats at the "
        "Cohen garment factory on Federal Hill. At her granddaughter's christening in 1956 she wore the "
        "same shawl. When she turned ninety, the whole family threw a party at the Sons of Italy hall, "
        "and Father DeLuca gave a blessing."
    ),
    expected={
        "people": (("Nonna Lucia", "Lucia"), ("Carmela",), ("Father DeLuca", "DeLuca")),
        "places": (
            ("Naples",),
            ("New York",),
            ("Providence",),
            ("Cohen garment factory", "garment factory"),
            ("Federal Hill",),
            ("Sons of Italy hall", "Sons of Italy"),
        ),
        "events": (("christening", "granddaughter's christening", "christening in 1956"), ("party",)),
        "objects": (("brass candlestick", "candlestick"), ("wool shawl", "shawl")),
    },
    times=("1921", "1956"),
)

RECORDS = Story(
    text=(
        "Nobody in our family can carry a tune, but we sing anyway. On Sunday afternoons Aunt Bea would "
        "put a record on, open the windows, and let the whole street hear. Her neighbors complained for "
        "years. When she moved to Tucson she left the record player with us, and it still works."
    ),
    expected={
        "people": (("Aunt Bea", "Bea"),),
        "places": (("Tucson",),),
        "events": (),
        "objects": (("record player",),),
    },
)

# Written last, run once, and no rule was changed after seeing the result.
OBITUARY = Story(
    text=(
        "Margaret Ann Doyle, 88, of Bangor, Maine, died peacefully on March 3. Born in 1935 in Presque "
        "Isle to Francis and Ellen Doyle, Peggy graduated from Husson College and taught second grade at "
        "the Abraham Lincoln School for thirty-four years. She married Robert Doyle in 1958 at St. John's "
        "Church. Peggy loved her garden, her cribbage board and the annual trip to Moosehead Lake. She is "
        "survived by her son Michael, her daughter Kathleen Ferris, and seven grandchildren."
    ),
    expected={
        "people": (
            ("Margaret Ann Doyle", "Peggy", "Margaret"),
            ("Francis", "Francis Doyle"),
            ("Ellen Doyle", "Ellen"),
            ("Robert Doyle", "Robert"),
            ("Michael",),
            ("Kathleen Ferris", "Kathleen"),
        ),
        "places": (
            ("Bangor",),
            ("Maine",),
            ("Presque Isle",),
            ("Husson College",),
            ("Abraham Lincoln School",),
            ("St. John's Church",),
            ("Moosehead Lake",),
        ),
        "events": (("annual trip to Moosehead Lake", "annual trip", "trip to Moosehead Lake", "trip"),),
        "objects": (("cribbage board",),),
    },
    times=("1935", "1958"),
)

TACKLE = Story(
    text=(
        "Every August my grandfather took me out on the rowboat at Pine Hollow before sunrise. He never "
        "said much, but he showed me how to tie a clinch knot with his old tackle box open on his knees. "
        "The tackle box is mine now. My cousin Ben got the canoe, which seems fair, since Ben is the one "
        "who actually catches fish. Grandpa Walt died the winter after the Hollow froze solid, in 2003."
    ),
    expected={
        "people": (("my grandfather", "Grandpa Walt", "Walt"), ("Ben",)),
        "places": (("Pine Hollow", "Hollow"),),
        "events": (),
        "objects": (("rowboat",), ("tackle box", "old tackle box"), ("canoe",)),
    },
    times=("2003",),
)

MILL_TOWN = Story(
    text=(
        "My mother worked the night shift at the Bethlehem Steel plant in Sparrows Point for twenty-two "
        "years. During the 1959 strike she and her friend Dolores Kaminski ran a soup kitchen out of the "
        "union hall on Dundalk Avenue. When the plant closed in 2012, she gave me her hard hat and the "
        "lunch pail my father had carried before her."
    ),
    expected={
        "people": (("my mother",), ("Dolores Kaminski",), ("my father",)),
        "places": (
            ("Bethlehem Steel plant", "Bethlehem Steel", "plant"),
            ("Sparrows Point",),
            ("union hall",),
            ("Dundalk Avenue",),
        ),
        "events": (("1959 strike", "strike"),),
        "objects": (("hard hat",), ("lunch pail",)),
    },
    times=("1959", "2012"),
)

FRUITCAKE = Story(
    text=(
        "Aunt Clara's fruitcake was a family joke, but nobody ever threw one away. She mailed them from "
        "Tulsa every December in tins wrapped in brown paper, with a card that always said the same "
        "thing. After Clara passed, my sister found the recipe in a Bible in the attic of the old house "
        "on Sycamore Road."
    ),
    expected={
        "people": (("Aunt Clara", "Clara"), ("my sister",)),
        "places": (("Tulsa",), ("Sycamore Road",)),
        "events": (),
        "objects": (("Bible",),),
    },
    optional={"places": ("old house", "house"), "objects": ("recipe",)},
)

TUNED = (FARM, CITY, BAKERY, NEIGHBOR, QUIET)
HELD_OUT = (NAVY, DINER, CROSSING, RECORDS)
BLIND = (OBITUARY, TACKLE, MILL_TOWN, FRUITCAKE)
STORIES = TUNED + HELD_OUT + BLIND
KINDS = ("people", "places", "events", "objects")


@pytest.fixture(scope="module")
def extractor() -> SpacyEntityExtractor:
    ex = SpacyEntityExtractor()
    ex.warm()
    return ex


@pytest.fixture(scope="module")
def results(extractor: SpacyEntityExtractor) -> list[ExtractedEntities]:
    return [extract_entities(extractor, s.text) for s in STORIES]


def _names(entities: ExtractedEntities, kind: str) -> list[str]:
    return [e.name for e in getattr(entities, kind)]


def _matches(name: str, forms: tuple[str, ...]) -> bool:
    return name.casefold() in {f.casefold() for f in forms}


def _scores(
    stories: tuple[Story, ...], results: list[ExtractedEntities]
) -> dict[str, tuple[float, float, list[str], list[str]]]:
    scores = {}
    for kind in KINDS:
        tp_pred = n_pred = tp_exp = n_exp = 0
        false_pos: list[str] = []
        missed: list[str] = []
        for story, got in zip(stories, results, strict=True):
            expected = story.expected[kind]
            optional = (story.optional or {}).get(kind, ())
            names = [n for n in _names(got, kind) if not _matches(n, optional)]
            n_pred += len(names)
            n_exp += len(expected)
            for name in names:
                if any(_matches(name, forms) for forms in expected):
                    tp_pred += 1
                else:
                    false_pos.append(name)
            for forms in expected:
                if any(_matches(name, forms) for name in names):
                    tp_exp += 1
                else:
                    missed.append(forms[0])
        precision = tp_pred / n_pred if n_pred else 1.0
        recall = tp_exp / n_exp if n_exp else 1.0
        scores[kind] = (precision, recall, false_pos, missed)
    return scores


def test_satisfies_the_port() -> None:
    ex: EntityExtractor = SpacyEntityExtractor()
    assert callable(ex.extract)


def _report(label: str, scores: dict[str, tuple[float, float, list[str], list[str]]]) -> None:
    print(f"\n[{label}]")
    for kind, (precision, recall, false_pos, missed) in scores.items():
        print(f"{kind:8s} precision={precision:.2f} recall={recall:.2f} false+={false_pos} missed={missed}")


def test_precision_and_recall(results: list[ExtractedEntities]) -> None:
    n, m = len(TUNED), len(TUNED) + len(HELD_OUT)
    _report("tuned stories", _scores(TUNED, results[:n]))
    _report("held-out stories (first run: see the module docstring)", _scores(HELD_OUT, results[n:m]))
    _report("blind stories", _scores(BLIND, results[m:]))
    scores = _scores(STORIES, results)
    _report("all stories", scores)
    assert scores["people"][0] >= 0.8
    assert scores["places"][0] >= 0.8
    assert scores["events"][0] >= 0.7
    assert scores["objects"][0] >= 0.7
    assert all(recall >= 0.6 for _, recall, _, _ in scores.values())


def test_farm_story(results: list[ExtractedEntities]) -> None:
    got = results[0]
    people = {p.name: p for p in got.people}
    assert {"Harold Brennan", "Lorraine", "Aunt Ruth", "Walter"} <= set(people)
    assert people["Walter"].context == "brother"
    assert "Lake Wissota" in _names(got, "places")
    eau_claire = next(p for p in got.places if p.name == "Eau Claire")
    assert eau_claire.location == "Wisconsin"
    fire = next(e for e in got.events if "fire" in e.name)
    assert fire.date == "1958" and fire.type == "disaster"
    watch = next(o for o in got.objects if "watch" in o.name)
    assert watch.name == "Harold's pocket watch" and watch.type == "timepiece"
    assert {"1931", "1958", "1991", "1990s"} <= {t.period for t in got.time_references}


def test_city_story_kin_and_heirlooms(results: list[ExtractedEntities]) -> None:
    got = results[1]
    people = {p.name: p for p in got.people}
    assert people["Tomasz Kowalczyk"].context == "father"  # "My father, Tomasz Kowalczyk"
    assert people["Anna"].context == "sister"  # "My sister Anna"
    assert "St. Hedwig's Church" in _names(got, "places")
    assert {"accordion", "recipe box"} <= set(_names(got, "objects"))
    assert "war" in _names(got, "events")


def test_bakery_story_titles(results: list[ExtractedEntities]) -> None:
    got = results[2]
    assert {"Grandma Rose", "Grandpa Earl", "Uncle Vern", "Denise"} <= set(_names(got, "people"))
    assert "Rose" not in _names(got, "people")  # the short form of a name already found
    assert {"Front Street", "Marietta", "Ohio River"} <= set(_names(got, "places"))
    assert {"1937", "1994"} <= {t.period for t in got.time_references}


def test_no_contact_data_survives(results: list[ExtractedEntities]) -> None:
    got = results[3]
    dumped = got.model_dump_json()
    assert "555" not in dumped
    assert "@" not in dumped
    assert "418" not in dumped
    assert "Birch Avenue" in _names(got, "places")  # the street stays, its house number goes
    assert "Dad's old harmonica" in _names(got, "objects")
    assert "1980s" in {t.period for t in got.time_references}
    assert not any(e.name.lower().startswith("county fair") for e in got.events)  # "every county fair"


def test_quiet_story_yields_nothing(results: list[ExtractedEntities]) -> None:
    got = results[4]
    assert not (got.people or got.places or got.events or got.objects)


def test_relationships_between_kept_entities(results: list[ExtractedEntities]) -> None:
    farm = results[0]
    names = {n for kind in KINDS for n in _names(farm, kind)}
    for rel in farm.relationships:
        assert rel.subject in names and rel.object in names
    # "Harold's pocket watch": the owner is the person named "Harold Brennan" earlier in the story
    assert ("Harold Brennan", "OWNED", "Harold's pocket watch") in {
        (r.subject, r.predicate, r.object) for r in farm.relationships
    }


def test_an_events_owner_took_part_in_it_unless_it_is_their_funeral(extractor: SpacyEntityExtractor) -> None:
    facts = {}
    for kind in ("wedding", "funeral", "burial"):
        text = f"Harold Brennan farmed the east field. At Harold's {kind} the whole parish came."
        got = extract_entities(extractor, text, known_names=["Harold Brennan"])
        assert [e.name for e in got.events] == [f"Harold's {kind}"]
        facts[kind] = {(r.subject, r.predicate, r.object) for r in got.relationships}
    assert facts["wedding"] == {("Harold Brennan", "PARTICIPATED_IN", "Harold's wedding")}
    assert facts["funeral"] == facts["burial"] == set()


def test_kin_references_and_time_phrases(extractor: SpacyEntityExtractor) -> None:
    text = (
        "The summer after the flood, my dad and my grandmother moved to the lake cabin. "
        "We spent the seventies there and my mother's brother worked at the old mill. "
        "Father Keane buried Grandpa in the spring of 1979."
    )
    got = extract_entities(extractor, text)
    people = _names(got, "people")
    assert {"my dad", "my grandmother", "my mother's brother", "Father Keane"} <= set(people)
    periods = {t.period for t in got.time_references}
    assert {"summer after the flood", "1970s", "spring of 1979"} <= periods
    assert {"lake cabin", "old mill"} <= set(_names(got, "places"))
    assert ("my mother's brother", "WORKED_AT", "old mill") in {
        (r.subject, r.predicate, r.object) for r in got.relationships
    }


def test_known_names_lift_recall(extractor: SpacyEntityExtractor) -> None:
    text = "We always said Birdie could outwork anyone at the cannery."
    without = extract_entities(extractor, text)
    with_known = extract_entities(extractor, text, known_names=["Birdie", "Harold Brennan"])
    assert "Birdie" in _names(with_known, "people")
    assert len(with_known.people) >= len(without.people)


def test_weak_guesses_are_filtered(extractor: SpacyEntityExtractor) -> None:
    raw = extractor.extract("We sat by a fire and talked about nothing in particular.")
    assert all(e.confidence < 0.7 for e in raw.events)
    assert not postprocess(raw).events
    assert raw.extractor_version.startswith("spacy-en_core_web_sm")


def test_an_organisation_the_story_returns_to_is_a_place(extractor: SpacyEntityExtractor) -> None:
    """The small model tags a proper-named home or shop ORG (a weak guess, dropped). Named
    again in another sentence, after "at"/"into", or in the title, it is kept; named once
    with nothing saying it is a place, it stays dropped."""
    once = "The staff of Larkspur Terrace let Grandpa keep his fiddle."
    twice = once + " Later the nurses of Larkspur Terrace played cards with him."
    one_sentence = (
        "The staff of Larkspur Terrace let Grandpa keep his fiddle, and the nurses of Larkspur Terrace"
        " played cards with him."
    )
    moved = "Grandpa moved into Larkspur Terrace the winter he turned ninety, and he kept his fiddle."
    assert "Larkspur Terrace" in _names(extract_entities(extractor, twice), "places")
    assert "Larkspur Terrace" in _names(extract_entities(extractor, moved), "places")
    assert "Larkspur Terrace" not in _names(extract_entities(extractor, once), "places")
    assert "Larkspur Terrace" not in _names(extract_entities(extractor, one_sentence), "places")
    titled = extract_entities(extractor, once, title="The fiddle at Larkspur Terrace")
    assert "Larkspur Terrace" in _names(titled, "places")
    shop = "Mom worked at Pelham Mercantile for years. Everyone in town bought flour at Pelham Mercantile."
    assert "Pelham Mercantile" in _names(extract_entities(extractor, shop), "places")


def test_a_kin_or_honorific_title_makes_no_place(extractor: SpacyEntityExtractor) -> None:
    """The model tags some titled names FAC, GPE or ORG. A kin title in any language of the
    kinship lexicon, or an honorific, opens a person's name, not a place's: unless the name
    ends in a place word ("Uncle Sam's Diner") or the title is a saint's ("St. Agatha")."""
    died = "Papa lived alone on the farm since Nonna Rosa died, and he would not leave."
    recipe = "The recipe came from Nonna Rosa, who brought it over on the boat."
    bible = "The Bible had been Pastor Lund's, and it went to Mom."
    for text in (died, recipe, bible):
        places = _names(extract_entities(extractor, text), "places")
        assert not {"Nonna Rosa", "Pastor Lund"} & set(places), places
    assert "farm" in _names(extract_entities(extractor, died), "places")
    # an ORG guess no longer hides the person the rules found ("Sister Agnes" is a title)
    sister = "The photographs were sent by Sister Agnes from the convent."
    assert "Sister Agnes" in _names(extract_entities(extractor, sister), "people")
    saint = "We went to Mass at St. Agatha every Sunday morning. They were married at Saint Mary's in 1952."
    assert {"St. Agatha", "Saint Mary"} <= set(_names(extract_entities(extractor, saint), "places"))
    diner = "Dad took us for pie at Uncle Sam's Diner on the way home."
    assert "Uncle Sam's Diner" in _names(extract_entities(extractor, diner), "places")
    kitchen = "Grandpa courted her at Aunt Bea's Kitchen. Later they went back to Aunt Bea's Kitchen."
    got = extract_entities(extractor, kitchen)
    assert not any(p.startswith("Aunt Bea") for p in _names(got, "places"))  # "kitchen" is no place word
    assert "Aunt Bea" in _names(got, "people")


def test_a_kin_word_before_a_name_makes_it_a_person_the_model_tagged_a_place(
    extractor: SpacyEntityExtractor,
) -> None:
    """rules-13: "my sister Tess" with Tess tagged FAC, "my uncle Jordan" with Jordan a country:
    the kin word says a person. The same name after "to" stays a place."""
    got = extract_entities(extractor, "Her second move was to send my sister Tess and me up after it.")
    assert ("Tess", "sister") in {(p.name, p.context) for p in got.people}
    assert "Tess" not in _names(got, "places")
    got = extract_entities(extractor, "My uncle Jordan farmed near Paris. We drove to Jordan once.")
    assert ("Jordan", "uncle") in {(p.name, p.context) for p in got.people}
    assert "Jordan" in _names(got, "places")


def test_a_kin_title_in_any_language_names_a_person(extractor: SpacyEntityExtractor) -> None:
    """A capitalised kin title of any language of the kin lexicon before a capitalised name is a
    person mention with the title in the name and the kin word as context, as "Aunt Bea" is,
    whatever the model tagged it (a building, an organisation, nothing, a person)."""
    for text, name, gender in (
        ("Papa lived alone on the farm since Nonna Rosa died, and he would not leave.", "Nonna Rosa", "f"),
        ("Tonton Marcel played the accordion at every party.", "Tonton Marcel", "m"),
        ("Avó Lurdes sewed the christening gown.", "Avó Lurdes", "f"),
        ("Oma Greet baked bread on Saturdays.", "Oma Greet", "f"),
        ("Opa Willem kept bees behind the house.", "Opa Willem", "m"),
        ("Tia Maria brought the photographs from Lisbon.", "Tia Maria", "f"),
    ):
        got = extract_entities(extractor, text)
        people = {p.name: p for p in got.people}
        assert name in people, (text, people)
        kin = parse_kin(people[name].context)
        assert kin is not None and kin.gender == gender, (name, people[name].context)
        assert name not in _names(got, "places")


def test_kin_words_of_any_language_are_read_as_english_ones(extractor: SpacyEntityExtractor) -> None:
    """A kin word of another language of the kin lexicon, inside an English story, is read as an
    English one: after a possessive of any of those languages (with or without a name after it),
    or an elder's alone and capitalised as a form of address; the kin word is the context."""
    for text, name, kin_word in (
        ("Every spring my nonna Teresa planted tomatoes by the fence.", "Teresa", "nonna"),
        ("In the winter minha avó knitted scarves for the whole street.", "minha avó", "avó"),
        ("We took the night train to see ma mémé in Lyon.", "ma mémé", "mémé"),
        ("After the war mijn opa repaired bicycles in a shed.", "mijn opa", "opa"),
        ("The year the river froze, our oma skated to the bakery.", "our oma", "oma"),
        ("Each Sunday my tante brought a cake with plums.", "my tante", "tante"),
        ("Opa said the old boat would never float again.", "Opa", "opa"),
        ("That August we visited Vovó at the farm.", "Vovó", "vovó"),
        ("Mémé sang the same lullaby to every grandchild.", "Mémé", "mémé"),
    ):
        people = {p.name: p.context for p in extract_entities(extractor, text).people}
        assert people.get(name) == kin_word, (text, people)
        assert parse_kin(people[name]) is not None


def test_a_foreign_kin_word_that_is_also_an_english_word_or_name_needs_a_possessive(
    extractor: SpacyEntityExtractor,
) -> None:
    """ "Mamie", "Pepe", "Mae" alone (or before a surname) are names, "mere" an adjective; after a
    possessive they are kin; and someone else's kin word is not the narrator's."""
    for text in (
        "Mamie said the parade would start at noon.",
        "Pepe waved from the other side of the square.",
        "Mamie Eisenhower visited the town in 1955.",
        "My mere presence at the dance annoyed him.",
        "Her nonna cooked for the whole village.",
    ):
        people = {p.name: p.context for p in extract_entities(extractor, text).people}
        assert not any(people.values()), (text, people)
    people = {p.name: p.context for p in extract_entities(extractor, "I phoned my mamie every week.").people}
    assert people.get("my mamie") == "mamie", people


def test_a_kin_title_that_is_also_a_word_leaves_places_alone(extractor: SpacyEntityExtractor) -> None:
    """A kin title that is also an ordinary word or opens place names ("Gran", Italian "Primo")
    makes no person where the model tags the name a place or an article precedes it, and the
    model's place stands."""
    for text, place in (
        ("We spent two winters in Gran Canaria.", "Gran Canaria"),
        ("We drove along the Gran Via in Madrid.", "Gran Via"),
        ("We ate at Primo Pizza on Friday nights.", "Primo Pizza"),
    ):
        got = extract_entities(extractor, text)
        assert place in _names(got, "places"), (text, got.places)
        assert not any(p.startswith(place.split()[0]) for p in _names(got, "people")), got.people
    opera = extract_entities(extractor, "The Prima Donna sang at the opera house.")
    assert "Prima Donna" not in _names(opera, "people")
    gran = extract_entities(extractor, "We stayed with Gran Edith in the summer.")
    assert "Gran Edith" in _names(gran, "people")  # the English title still names a person


def test_a_place_name_ends_at_a_function_word(extractor: SpacyEntityExtractor) -> None:
    """The model runs a saint's place name on over "for Grandpa"; a name ends at its first
    lower-case function word, other than the "of" of "Knights of Columbus"."""
    got = extract_entities(extractor, "We lit a candle at St. Agatha for Grandpa every year.")
    assert "St. Agatha" in _names(got, "places"), got.places
    assert not any("Grandpa" in p for p in _names(got, "places"))
    assert "Grandpa" in _names(got, "people")
    raw = extractor.extract("Dad joined the Knights of Columbus in 1950.")  # an ORG guess, whole
    assert "Knights of Columbus" in _names(raw, "places")


def test_a_name_runs_on_over_a_function_word_before_no_kin_word(extractor: SpacyEntityExtractor) -> None:
    """The model's tags set by hand: "for" before a kin word ends a name, "for" inside one
    ("School for the Deaf") does not."""
    from spacy.tokens import Doc, Span

    from heirloom.adapters.spacy.things import _ner_name

    nlp = extractor._nlp()
    for words, tags, (start, end, label), name in (
        ("at St. Agatha for Grandpa .", "IN NNP NNP IN NNP .", (1, 5, "FAC"), "St. Agatha"),
        ("at the School for the Deaf .", "IN DT NNP IN DT NNP .", (1, 6, "ORG"), "School for the Deaf"),
    ):
        doc = Doc(nlp.vocab, words=words.split(), tags=tags.split())
        doc.ents = [Span(doc, start, end, label=label)]
        span = _ner_name(doc, doc.ents[0])
        assert span is not None and doc[span[0] : span[1]].text == name


def test_a_known_persons_alias_is_not_a_place(extractor: SpacyEntityExtractor) -> None:
    """The model tags a titled name FAC here; when the legacy knows the name as a person's
    (decision 0031), it is no place, whether or not the title names it."""
    text = "Everyone at school was a little afraid of Nurse Halvorsen."
    assert "Nurse Halvorsen" in _names(extract_entities(extractor, text), "places")  # unknown: a guess
    known = ["Ingrid Halvorsen", "Nurse Halvorsen"]
    for title in ("", "Nurse Halvorsen"):
        got = extract_entities(extractor, text, title=title, known_names=known)
        assert "Nurse Halvorsen" not in _names(got, "places")
        assert "Nurse Halvorsen" in _names(got, "people")  # a mention of the known person


def test_a_known_name_the_model_tagged_a_place(extractor: SpacyEntityExtractor) -> None:
    """The model's tags set by hand: a known name of two capitalised words is a person whatever
    the tag; one capitalised word after an article ("The Range", a region) is not."""
    from spacy.tokens import Doc, Span

    nlp = extractor._nlp()
    known = spacy_extractor._known_matcher(nlp, ["Ingrid Halvorsen", "Nurse Halvorsen", "the Range"])
    for words, (start, end, label), person in (
        (["Nurse", "Halvorsen", "came", "."], (0, 2, "FAC"), True),
        (["The", "Range", "was", "cold", "."], (0, 2, "LOC"), False),
    ):
        doc = Doc(nlp.vocab, words=words)
        doc.ents = [Span(doc, start, end, label=label)]
        found = [c.name for c in _known_people(doc, known(doc), [])]
        assert found == ([" ".join(words[start:end])] if person else []), found


def test_a_one_word_known_name_the_model_tagged_a_place(extractor: SpacyEntityExtractor) -> None:
    """The small model tags many one-word given names GPE (checked below, so the test fails if it
    stops doing so). The legacy knows the name as a person's, alone or as the first word of a
    full name: it is the person, not a place, unless a preposition of place comes right before it;
    a month tagged DATE is still no person."""
    nlp = extractor._nlp()
    cases = (
        ("Virginia said the pie was burnt again.", ["Virginia"], "Virginia"),
        ("Tamsin was there and took the photographs.", ["Tamsin Reyes"], "Tamsin"),
        ("Georgia sends her love from the coast.", ["Georgia Pell", "Gigi"], "Georgia"),
        ("We had supper at Tamsin's on Friday.", ["Tamsin"], "Tamsin"),  # an owner's "'s"
    )
    for text, known, name in cases:
        assert {(e.text, e.label_) for e in nlp(text).ents} >= {(name, "GPE")}
        got = extract_entities(extractor, text, known_names=known)
        assert name in _names(got, "people") and name not in _names(got, "places"), (text, got)
    for text in ("After the war she moved to Virginia with her sister.", "We drove from Virginia in June."):
        assert ("Virginia", "GPE") in {(e.text, e.label_) for e in nlp(text).ents}
        got = extract_entities(extractor, text, known_names=["Virginia Hale", "Virginia"])
        assert "Virginia" in _names(got, "places") and "Virginia" not in _names(got, "people"), (text, got)
    text = "We married in May, when the lilacs were out."
    assert ("May", "DATE") in {(e.text, e.label_) for e in nlp(text).ents}
    got = extract_entities(extractor, text, known_names=["May Brennan", "May"])
    assert "May" not in _names(got, "people") and "May" not in _names(got, "places")


def test_a_place_name_after_a_or_a_possessive_is_a_thing(extractor: SpacyEntityExtractor) -> None:
    """A proper name that heads its phrase after "a"/"an" or a possessive pronoun is a make, a
    family or a feast, not a place ("a Nash", the model's GPE); one that modifies a noun after
    them ("a Minnesota winter") and one after a preposition stay places."""
    from spacy.tokens import Doc, Span

    from heirloom.adapters.spacy.things import _ner_places_events

    nlp = extractor._nlp()
    text = "Uncle Ted bought a Nash in 1952."
    assert ("Nash", "GPE") in {(e.text, e.label_) for e in nlp(text).ents}
    assert "Nash" not in _names(extract_entities(extractor, text), "places")
    text = "We spent a Minnesota winter in a cabin near Ely."
    assert {"Minnesota", "Ely"} <= set(_names(extract_entities(extractor, text), "places"))
    for words, tags, place in (
        ("Our Midsummer was always at the lake .", "PRP$ NNP VBD RB IN DT NN .", False),
        ("We drove to Nash that summer .", "PRP VBD IN NNP DT NN .", True),
    ):
        doc = Doc(nlp.vocab, words=words.split(), tags=tags.split())
        doc.ents = [Span(doc, 1 if not place else 3, 2 if not place else 4, label="GPE")]
        assert bool(_ner_places_events(doc)) is place, words


def test_a_greeting_is_no_name_and_the_one_it_addresses_is_a_person(extractor: SpacyEntityExtractor) -> None:
    """Chat transcripts open turns with greetings (rules-9): "Sorry Audrey" is Audrey, "Welcome
    home, stranger" no place, "Happy Easter!" the feast and no one's name, "Thanks Jon!" names
    Jon even where the model tags no one, "Cheers Mate!" names no one."""
    nlp = extractor._nlp()
    cases = {
        "Bea: Welcome home, stranger. Sorry Audrey, I missed your call.": ({"Audrey"}, set()),
        "Thanks Jon! The dance studio opened on Friday.": ({"Jon"}, set()),
        "Congrats Nate! Merry Christmas, everyone.": ({"Nate"}, set()),
        "Cheers Mate! Morning Sunshine! Thanks Honey.": (set(), set()),
        "Morning Glory Farm is where we met.": (set(), {"Morning Glory Farm"}),
    }
    for text, (people, places) in cases.items():
        got = extract_entities(extractor, text)
        assert set(_names(got, "people")) == people, text
        assert set(_names(got, "places")) == places, text

    # what the model does alone: the results above are the rules' doing
    def ents(text: str) -> set[tuple[str, str]]:
        return {(e.text, e.label_) for e in nlp(text).ents}

    assert ("Sorry Audrey", "PERSON") in ents(
        "Bea: Welcome home, stranger. Sorry Audrey, I missed your call."
    )
    assert ("Merry Christmas", "PERSON") in ents("Congrats Nate! Merry Christmas, everyone.")
    assert ("Morning Sunshine", "PERSON") in ents("Cheers Mate! Morning Sunshine! Thanks Honey.")
    assert not any(t == "Jon" for t, _ in ents("Thanks Jon! The dance studio opened on Friday."))


def test_a_hyphenated_modifier_stays_whole(extractor: SpacyEntityExtractor) -> None:
    """'an assisted-living place' is not the place '-living place': a name never starts with
    punctuation, and a hyphenated compound is one modifier."""
    got = extractor.extract("She spent her last years at Quarry Hill, an assisted-living place in Tipton.")
    names = [e.name for e in (*got.places, *got.objects, *got.events)]
    assert not any(n[:1] in "-–" for n in names)
    assert "assisted-living place" in names


def _story_of(words: int, seed: int) -> str:
    base = " ".join(s.text for s in STORIES)
    tokens = re.findall(r"\S+", base)
    start = (seed * 37) % len(tokens)
    rotated = tokens[start:] + tokens[:start]
    return " ".join((rotated * (words // len(rotated) + 1))[:words])


def test_batched_extraction_equals_one_story_at_a_time(extractor: SpacyEntityExtractor) -> None:
    """`extract_many` (backfill) gives what `extract` gives; throughput is measured by
    `heirloom bench`, not here."""
    stories = [_story_of(200, i) for i in range(6)]
    single = [extractor.extract(story) for story in stories]
    assert list(extractor.extract_many(stories, batch_size=4)) == single


def test_the_reduced_pipeline_extracts_what_the_full_model_does(extractor: SpacyEntityExtractor) -> None:
    """`load_pipeline` leaves out the parser, attribute ruler and lemmatiser and runs the matrix
    products on numpy's OpenBLAS instead of thinc's BLIS. Neither changes what is extracted:
    token by token the same tags and entities as the same components on BLIS, and the same
    entities as the whole model (whose parser sets sentence starts, which NER respects, so its
    token-level entities may differ) on the sample stories and generated family stories."""
    import spacy

    from heirloom_dev.bench.corpus import generate_corpus

    package = extractor.package
    texts = [s.text for s in STORIES] + [sp.story.content for sp in generate_corpus(300).stories[::10]]
    reduced = spacy_extractor.load_pipeline(package)
    full = spacy.load(package)
    on_blis = spacy.load(package, exclude=["parser", "attribute_ruler", "lemmatizer", "senter"])
    assert full.get_pipe("ner").model.ops.use_blis and on_blis.get_pipe("ner").model.ops.use_blis

    def tokens(doc):
        return [(t.tag_, t.ent_iob_, t.ent_type_) for t in doc]

    for text in texts:
        doc = reduced(text)
        assert tokens(doc) == tokens(on_blis(text))
        assert _entities(doc, None, "v") == _entities(full(text), None, "v")


def test_facts_between_people_and_things(extractor: SpacyEntityExtractor) -> None:
    text = (
        "Lucille Hart married Frank Dorsey in 1951. "
        "Years later she gave the silver locket to my cousin Bea. "
        "Frank never taught Bea to drive. "
        "Uncle Otto worked alongside Frank Dorsey at the cannery, and he carved a walking stick."
    )
    got = extract_entities(extractor, text)
    facts = {(f.source, f.relation, f.target, f.negated) for f in got.facts}
    assert ("Lucille Hart", "MARRIED", "Frank Dorsey", False) in facts
    # "she" is the most recent person who opened a sentence
    assert ("Lucille Hart", "GAVE", "silver locket", False) in facts
    assert ("Frank Dorsey", "TAUGHT", "Bea", True) in facts
    assert ("Uncle Otto", "WORKED_WITH", "Frank Dorsey", False) in facts
    for f in got.facts:  # each keeps the verb as written and its own sentence
        assert f.verb.split()[0] in f.sentence and f.sentence in text


def test_a_common_thing_someone_gave_made_or_kept_is_kept_with_its_fact(
    extractor: SpacyEntityExtractor,
) -> None:
    """rules-18: "the pot" alone is too common to be a keepsake, unless an owner qualifies it;
    a named person giving, making or keeping it qualifies it as well, and the fact survives."""
    got = extract_entities(extractor, "Mémé Yvonne gave us the pot as a wedding present.")
    assert "pot" in _names(got, "objects")
    assert ("Mémé Yvonne", "GAVE", "pot") in {(f.source, f.relation, f.target) for f in got.facts}
    got = extract_entities(extractor, "Aunt Rose kept the letters in a shoebox under her bed.")
    assert ("Aunt Rose", "KEPT", "letters") in {(f.source, f.relation, f.target) for f in got.facts}
    # no fact, no keepsake: a pot on the stove is no thing of the family's
    got = extract_entities(extractor, "Mémé Yvonne stirred the pot while the radio played.")
    assert "pot" not in _names(got, "objects") and not got.facts


def test_a_thing_that_went_to_someone_was_received_by_them(extractor: SpacyEntityExtractor) -> None:
    """rules-19: "it went to Mom", "the accordion passed to his son Tony": the person RECEIVED
    the thing; a person going somewhere, or a thing going to no person, states no fact."""
    text = "Grandma Ida made the quilt in 1938. When she died it went to Mom."
    facts = {(f.source, f.relation, f.target) for f in extract_entities(extractor, text).facts}
    assert ("Mom", "RECEIVED", "quilt") in facts
    text = "The accordion passed to his son Tony in 1979."
    facts = {(f.source, f.relation, f.target) for f in extract_entities(extractor, text).facts}
    assert facts == {("Tony", "RECEIVED", "accordion")}
    for text in ("Aunt Rose went to Peter for help.", "The watch went to the jeweler on Grand Avenue."):
        assert not extract_entities(extractor, text).facts, text
    # someone passing a thing on still GAVE it
    facts = extract_entities(extractor, "Grandpa passed the watch down to Tony.").facts
    assert ("Grandpa", "GAVE", "watch") in {(f.source, f.relation, f.target) for f in facts}


def test_a_name_the_sentence_puts_somewhere_is_a_place(extractor: SpacyEntityExtractor) -> None:
    """The small model reads one-word towns as people (rules-10): a name after "in", or after
    the "to" or "from" of travelling ("moved to", "drove back from"), is a place, and so is the
    same name elsewhere in the story. "Wrote to", "came from", "went to" (an heirloom going to
    someone) and an owner's "'s" leave a person, and so does a name the legacy knows."""
    nlp = extractor._nlp()
    text = "We moved to Duluth in 1950. Duluth was cold, and she drove back from Esker every week."
    assert ("Duluth", "PERSON") in {(e.text, e.label_) for e in nlp(text).ents}  # the model alone
    got = extract_entities(extractor, text)
    assert {"Duluth", "Esker"} <= set(_names(got, "places"))
    assert not {"Duluth", "Esker"} & set(_names(got, "people"))

    people = "A letter came from Carl. The watch went to Peter, and I wrote to Sue in Bea's kitchen."
    got = extract_entities(extractor, people)
    assert {"Carl", "Peter", "Sue"} <= set(_names(got, "people"))
    assert not {"Carl", "Peter", "Sue", "Bea", "Bea's kitchen"} & set(_names(got, "places"))

    known = "Mom flew to Dana in May, and Dana met her at the airport."
    got = extract_entities(extractor, known, known_names=["Dana"])
    assert "Dana" in _names(got, "people") and "Dana" not in _names(got, "places")


def test_a_name_put_somewhere_where_the_model_tagged_nothing_is_a_place(
    extractor: SpacyEntityExtractor,
) -> None:
    """rules-11: the sentence that puts the name somewhere may be one where the model tagged no
    entity at all (as it does in a long call); the person it tagged elsewhere is then the place.
    The same words opening a longer name ("in Lyon Street"), or owning something, say nothing."""
    from spacy.tokens import Doc

    from heirloom.adapters.spacy.where import retag_places

    nlp = extractor._nlp()

    def retagged(words: str, ents: list[str]) -> set[tuple[str, str]]:
        doc = Doc(nlp.vocab, words=words.split(), ents=ents)
        retag_places(doc, [])
        return {(e.text, e.label_) for e in doc.ents}

    tail, person = "Ring me from Lyon .", ["O", "O", "O", "B-PERSON", "O"]
    for words, label in (
        ("Her hip is at the clinic in Lyon . ", "GPE"),
        ("We went to the market in Lyon Street . ", "PERSON"),
        ("Bea wrote in Lyon 's album . ", "PERSON"),
        ("Bea wrote to Lyon . ", "PERSON"),
    ):
        got = retagged(words + tail, ["O"] * len(words.split()) + person)
        assert got == {("Lyon", label)}, words


def _animals(got: ExtractedEntities) -> set[str]:
    return {o.name for o in got.objects if o.type == "animal"}


def test_an_animal_the_story_names_is_a_thing_never_a_person(extractor: SpacyEntityExtractor) -> None:
    """rules-12: a name given to an animal ("our cat Biscuit", "a parakeet named Pastor Rudd",
    "Biscuit, our old cat,", a list of them) is an object of type animal, and no person wherever
    else the story uses it (the model tags "Pastor Rudd" a person)."""
    got = extract_entities(
        extractor,
        "Dot lived alone with a parakeet named Pastor Rudd, after the minister. Pastor Rudd talked "
        "all day. Our cat Biscuit hid in the boiler cupboard. Biscuit, our old cat, sleeps all day "
        "now. We had two dogs, Pickle and Mustard, and Dad's horse Duke.",
    )
    assert _animals(got) == {"Pastor Rudd", "Biscuit", "Pickle", "Mustard", "Duke"}
    assert not {"Pastor Rudd", "Biscuit", "Pickle", "Mustard", "Duke"} & set(_names(got, "people"))


def test_a_name_near_an_animal_word_is_not_always_its_name(extractor: SpacyEntityExtractor) -> None:
    """Someone given the dog, addressed before it, doing something to it, a name the legacy
    knows as a person's, a capitalised animal word inside a name: no animal."""
    for text, known in (
        ("I gave Mary the dog on Sunday.", ()),
        ("Thanks Mary, the dog is fine.", ()),
        ("The dog Peter found was a stray.", ()),
        ("Our dog Peter ran off.", ("Peter",)),
        ('There is "Tamarack Fish Fry": walleye in bacon fat.', ()),
        ("When the dog tore his ear, Nell cleaned it.", ()),
    ):
        got = extract_entities(extractor, text, known_names=known)
        assert not _animals(got), text
    kept = extract_entities(extractor, "Our dog Peter ran off.", known_names=["Peter"])
    assert "Peter" in _names(kept, "people")


def _works(got: ExtractedEntities) -> set[str]:
    return {o.name for o in got.objects if o.type == "work"}


def test_a_title_in_quotes_is_a_work(extractor: SpacyEntityExtractor) -> None:
    """rules-12: a song, hymn or book by its title in quotes is an object of type work, said to
    be one ("played", "sang", "the hymn ...") or reading as a title alone (a proper or foreign
    word first, no verb, pronoun or owner); a title the model tagged a person is no person."""
    got = extract_entities(
        extractor,
        'At the wake Uncle Dommie played "Danny Boy" on the accordion. Greta\'s choir sang the '
        '"Ave Maria". Odile: "Minuit, chrétiens", the French one, the Christmas hymn my mother sang. '
        'Bea: You made Stan cry. "Plaisir d\'amour" and the whole club silent.',
    )
    assert _works(got) == {"Danny Boy", "Ave Maria", "Minuit, chrétiens", "Plaisir d'amour"}
    assert "Danny Boy" not in _names(got, "people")


def test_quoted_speech_is_no_work(extractor: SpacyEntityExtractor) -> None:
    """Speech in quotes: a sentence, a word of address, a fragment ending as speech does, words
    opening with a function word or holding an owner, a cue word cut off by punctuation."""
    for text in (
        '"Test before you touch," he said every morning.',
        '"Farrow," she said. "Gamma!" the children called.',
        'Her entries read: "Baby gaining." "Father drinking again."',
        '"And then" was all she wrote. The card said "From Walter\'s family".',
        'She called her "Nellie" all her life.',
    ):
        assert not _works(extract_entities(extractor, text)), text


def test_a_feast_or_a_season_alone_is_no_place(extractor: SpacyEntityExtractor) -> None:
    """rules-13: the small model tags "Easter" LOC in "the Easter bread" and FAC in "for Easter";
    a feast or a season is a time, never a place. A place whose name holds one stays."""
    for text in (
        "Most of the cards are in Mom's hand: the wedding soup, the Easter bread, the ham loaf.",
        "We went to Grandma's for Easter.",
    ):
        got = extract_entities(extractor, text)
        assert "Easter" not in _names(got, "places"), text
    kept = extract_entities(extractor, "Every summer we drove to Palm Springs and Winter Park.")
    assert {"Palm Springs", "Winter Park"} & set(_names(kept, "places"))


def test_heirloom_tableware_by_its_two_words_is_a_thing_its_head_alone_is_not(
    extractor: SpacyEntityExtractor,
) -> None:
    """rules-13: "punch bowl", "gravy boat", "sugar bowl" are kitchenware; a bowl or a boat
    alone, without an owner, is too common a word to be one."""
    got = extract_entities(
        extractor,
        "Every Christmas Eve Mom filled the punch bowl. Grandma's gravy boat and the sugar bowl "
        "stayed on the shelf. We ate from a bowl on the boat.",
    )
    things = {o.name: o.type for o in got.objects}
    assert things == {"punch bowl": "kitchenware", "Grandma's gravy boat": "kitchenware",
                      "sugar bowl": "kitchenware"}  # fmt: skip


def test_a_name_after_a_word_for_a_person_and_called_is_a_person(extractor: SpacyEntityExtractor) -> None:
    """rules-14: "a nurse named Kenji" with Kenji tagged GPE; "a pub called" names no person."""
    got = extract_entities(extractor, "We met a nurse named Kenji at the clinic.")
    assert "Kenji" in _names(got, "people")
    assert "Kenji" not in _names(got, "places")
    kept = extract_entities(extractor, "We had lunch in a village called Dover.")
    assert "Dover" not in _names(kept, "people")


def test_a_name_with_a_birthday_a_paw_or_kin_is_no_place(extractor: SpacyEntityExtractor) -> None:
    """rules-14: a name the story gives a tail, a husband or stitches with its "'s" is no place,
    wherever the model tagged it GPE; a place's harbour keeps it a place."""
    for text, name in (
        ("Honestly it was fine. Apart from Rowan. Rowan's tail was wagging.", "Rowan"),
        ("Then we waited for Denver. Denver's husband was late.", "Denver"),
    ):
        assert name not in _names(extract_entities(extractor, text), "places"), text
    kept = extract_entities(extractor, "We drove home past Dover. Dover's harbour was busy.")
    assert "Dover" in _names(kept, "places")


def test_a_breed_after_adverbs_and_a_drawn_out_word_are_no_names(extractor: SpacyEntityExtractor) -> None:
    """rules-14: "a very wet Labrador" (tagged GPE) is a breed as "a Nash" is a make; "Nooo" (tagged
    PERSON or GPE) is a word drawn out."""
    got = extract_entities(extractor, "It was a very wet Labrador, and it shook itself on me.")
    assert "Labrador" not in _names(got, "places")
    got = extract_entities(extractor, "Sooo. Nooo, he said.")
    assert not any(n.startswith("N") for n in _names(got, "people") + _names(got, "places"))


def test_a_known_given_name_the_model_tagged_nothing_is_the_person(extractor: SpacyEntityExtractor) -> None:
    """rules-15: the small model tags many given names nothing (checked below, so the test fails
    if it stops doing so); written alone as a proper noun, a known person's given name is that
    person. Not part of another full name, not a transcript's speaker label, not a month."""
    nlp = extractor._nlp()
    known = ["Femi Okafor", "Vivian Kask", "May Brennan"]
    for text, name in (
        ("Odile: Fifteen. Femi drove us to the vets on Tuesday.", "Femi"),
        ("It was quiet at home. Femi fed him sardines every day.", "Femi"),
    ):
        assert [t.ent_type_ for t in nlp(text) if t.text == name] == [""], text  # tagged nothing
        assert name in _names(extract_entities(extractor, text, known_names=known), "people"), text
    for text, name in (
        ("Femi: Sounds perfect actually.\nOdile: It was.", "Femi"),  # a speaker's label
        ("My mother, Vivian Helmi Rautio, was born in 1930.", "Vivian"),  # another Vivian
        ("We married in May, when the lilacs were out.", "May"),
    ):
        got = extract_entities(extractor, text, known_names=known)
        assert name not in _names(got, "people"), (text, got)


def test_a_river_a_port_or_a_lock_the_model_took_for_a_person_is_a_place(
    extractor: SpacyEntityExtractor,
) -> None:
    """rules-16: one proper noun after "the" after a preposition of where ("on the Maas", "up the
    Rhine"), a name after a noun of a place and "of" ("the port of Rotterdam"), or after a noun
    and "at" ("the lock at Ampsin") is a place where the model tagged it a person (checked
    below). "a look at Bea", "a dig at Ray" and "laughed at Tom" leave a person."""
    nlp = extractor._nlp()
    for text, name in (
        ("She lay at Maastricht, on the Maas, for the winter.", "Maas"),
        ("We went up the Rhine as far as Strasbourg.", "Rhine"),
        ("The silk came from a trader in the port of Rotterdam.", "Rotterdam"),
        ("The engine died in the lock at Ampsin, below Huy.", "Ampsin"),
    ):
        assert (name, "PERSON") in {(e.text, e.label_) for e in nlp(text).ents}, text
        got = extract_entities(extractor, text)
        assert name in _names(got, "places") and name not in _names(got, "people"), (text, got)
    for text in ("He took a look at Bea and laughed at Tom.", "Tom had a dig at Ray about the money."):
        got = extract_entities(extractor, text)
        assert not {"Bea", "Tom", "Ray"} & set(_names(got, "places")), (text, got)
