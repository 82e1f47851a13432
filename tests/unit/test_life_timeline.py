"""The subject's life as a timeline (config/life_phrases.yaml), the career years, and recency:
phrases resolved from the records, never guessed; the recency decay reorders stories only when the
persona or the question asks for recent material."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID, uuid4

import pytest

from heirloom.adapters.memory import memory_services
from heirloom.contracts.context import (
    Candidate,
    ChunkResult,
    ContextRequest,
    FilteredContext,
    Intent,
    QueryEntities,
    QueryIntent,
    RankAssembleInput,
)
from heirloom.contracts.records import Legacy, Person
from heirloom.domain.life_timeline import (
    Life,
    LifeConfigError,
    LifePhrases,
    anchor_years,
    asks_recent,
    career_years,
    life_periods,
    load_life_phrases,
    with_life,
)
from heirloom.domain.personas import load_personas
from heirloom.domain.ranking import rank_candidates
from heirloom.domain.time_phrases import time_periods
from heirloom.steps import rank_assemble

LUCIA = Life(birth=1938, death=2016)


def _periods(text: str, life: Life = LUCIA) -> list[tuple[int, int]]:
    return [(p.start, p.end) for p in life_periods(text, life)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What did she do in her twenties?", [(1958, 1967)]),
        ("Where did he live in his early thirties?", [(1968, 1971)]),
        ("What was she like as a child?", [(1938, 1950)]),
        ("Did she travel as a teenager?", [(1951, 1957)]),
        ("What did she do late in life?", [(2006, 2016)]),
        ("What did she do before she died?", [(2006, 2016)]),
        ("O que fazia na infância?", [(1938, 1950)]),  # Portuguese
        ("Was hat sie im Alter gemacht?", [(2006, 2016)]),  # German
        ("What happened in the 1960s?", []),  # a calendar decade, not a life phrase
    ],
)
def test_life_phrases_resolve_from_birth_and_death_years(text, expected):
    assert _periods(text) == expected


def test_an_age_is_not_a_calendar_decade():
    assert time_periods("What did she do in her twenties?") == []


def test_anchored_phrases_use_the_dated_events_else_an_age_else_nothing():
    anchored = Life(birth=1938, death=2016, anchors={"retirement": 1999, "marriage": 1961})
    assert _periods("What did she do after she retired?", anchored) == [(1999, 2016)]
    assert _periods("Where did they live the year he married?", anchored) == [(1961, 1961)]
    # no dated retirement: the fallback age; no dated wedding: nothing rather than a guess
    assert _periods("What did she do after she retired?") == [(2003, 2016)]
    assert _periods("Where did they live the year he married?") == []
    # no birth year: no age can be placed
    assert _periods("What did she do in her twenties?", Life(death=2016)) == []


def test_career_years_from_work_and_retirement_else_ages_never_past_death():
    assert career_years(LUCIA) == (1956, 2003)
    assert career_years(Life(birth=1938, death=2016, anchors={"work": 1955, "retirement": 1999})) == (
        1955,
        1999,
    )
    assert career_years(Life(birth=1938, death=1990)) == (1956, 1990)
    assert career_years(Life()) is None


def test_anchor_years_come_from_event_names():
    events = [("Dom's retirement party", [2001, 2002]), ("the wedding", [1961]), ("the flood", [1972])]
    assert anchor_years(events) == {"retirement": 2001, "marriage": 1961}


def test_recent_cues_in_several_languages():
    assert asks_recent("What has she been doing lately?")
    assert asks_recent("O que fez recentemente?")
    assert not asks_recent("What did she do in 1962?")


def test_the_lexicon_is_validated():
    raw = load_life_phrases().model_dump()
    raw["periods"]["childhood"]["anchor"] = "retirement"  # both ages and an anchor
    with pytest.raises(ValueError):
        LifePhrases.model_validate(raw)
    assert issubclass(LifeConfigError, ValueError)


# -- through the intent: the subject's records ------------------------------------------------
LEGACY, SUBJECT = uuid4(), uuid4()


@pytest.fixture
def stories():
    svc = memory_services()
    svc.stories.upsert_person(Person(id=SUBJECT, legacy_id=LEGACY, name="Lucia Ferro", birth_year=1938))
    svc.stories.upsert_legacy(Legacy(id=LEGACY, name="Lucia", subject_person_id=SUBJECT))
    return svc.stories


def _request(query: str, persona: str = "biographer") -> ContextRequest:
    return ContextRequest(legacy_id=LEGACY, user_id=uuid4(), persona=persona, query=query)  # type: ignore[arg-type]


def test_a_life_phrase_makes_a_temporal_question_with_its_years(stories):
    intent = with_life(QueryIntent(), _request("What did she do in her twenties?"), stories, None, "full")
    assert intent.intent is Intent.TEMPORAL and intent.entities.time_periods == ("1958-1967",)
    # no death year and no dated wedding: said, not guessed
    unplaced = with_life(
        QueryIntent(), _request("Where was she the year she married?"), stories, None, "full"
    )
    assert unplaced.entities.time_periods == () and unplaced.notes
    plain = QueryIntent()
    assert with_life(plain, _request("Tell me about the farm"), stories, None, "full") is plain


def test_a_career_persona_asks_about_the_working_years(stories):
    temporal = QueryIntent(intent=Intent.TEMPORAL, confidence=0.7)
    request = _request("What was happening back then?", "colleague")
    assert with_life(temporal, request, stories, None, "career").entities.time_periods == ("1956-2003",)
    assert with_life(temporal, request, stories, None, "full").entities.time_periods == ()


# -- recency ------------------------------------------------------------------------------------
OLD, NEW = uuid4(), uuid4()


def _candidate(story_id: UUID, similarity: float, written: int) -> Candidate:
    chunk = ChunkResult(
        story_id=story_id, legacy_id=LEGACY, chunk_index=0, text=f"story {written}", token_count=3,
        similarity=similarity,
    )  # fmt: skip
    return Candidate(
        story_id=story_id,
        legacy_id=LEGACY,
        legacy_name="Lucia",
        title=f"written {written}",
        written_at=datetime(written, 6, 1, tzinfo=UTC),
        primary=True,
        chunks=(chunk,),
        embedding_score=similarity,
    )


CANDIDATES = (_candidate(OLD, 0.80, 2010), _candidate(NEW, 0.70, 2024))


def test_recency_reorders_by_when_a_story_was_written():
    config = load_personas()["biographer"].traversal
    assert [s.candidate.story_id for s in rank_candidates(CANDIDATES, config)] == [OLD, NEW]
    decayed = rank_candidates(CANDIDATES, config, recency=0.1)
    assert [s.candidate.story_id for s in decayed] == [NEW, OLD]
    assert decayed[0].score == pytest.approx(1.0 * 0.7 / 0.8, abs=1e-6)  # the newest keeps its score


TIME = QueryIntent(intent=Intent.TEMPORAL, confidence=0.7)
DATED = QueryIntent(intent=Intent.TEMPORAL, confidence=0.7, entities=QueryEntities(time_periods=("1962",)))


@pytest.mark.parametrize(
    ("persona", "query", "intent", "order"),
    [
        ("biographer", "Tell me about her work", QueryIntent(), [OLD, NEW]),  # full: no decay
        ("family", "Tell me about her", QueryIntent(), [OLD, NEW]),
        ("friend", "Tell me about her", QueryIntent(), [NEW, OLD]),  # temporal_range: recent, open
        ("friend", "When did she finish school?", TIME, [OLD, NEW]),  # about a time of her life
        ("friend", "What did she do in 1962?", DATED, [OLD, NEW]),
        ("biographer", "What has she been doing lately?", QueryIntent(), [NEW, OLD]),  # the question asks
    ],
)
def test_the_decay_applies_only_when_the_persona_or_question_asks(persona, query, intent, order):
    svc = memory_services()
    filtered = FilteredContext(
        intent=intent, subject_name="Lucia Ferro", legacy_name="Lucia", candidates=CANDIDATES
    )
    out = rank_assemble.run(RankAssembleInput(request=_request(query, persona), filtered=filtered), svc)
    assert list(out.ranked_story_ids) == order
