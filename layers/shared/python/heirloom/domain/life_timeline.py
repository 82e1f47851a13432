"""The subject's life as a timeline: phrases such as "in her twenties", "as a child", "after she
retired" or "the year he married" resolved to calendar years from the subject's birth and death
years and the dated events of the graph (config/life_phrases.yaml); the working years a
`temporal_range: career` persona stays in; and the words that ask for recent material.

These are years the story's events happened, never when a story was written (that is recency,
`ranking.recency_factors`)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Literal
from uuid import UUID

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from heirloom.contracts.context import ContextRequest, Intent, QueryIntent
from heirloom.domain.access_filter import scope_for
from heirloom.domain.deadline import call_within
from heirloom.errors import AccessDenied, NotFound
from heirloom.ports import GraphStore, StoryStore

log = logging.getLogger(__name__)

#: the oldest age a life phrase reaches when no death year is known
MAX_AGE = 110


class LifeConfigError(ValueError):
    """life_phrases.yaml does not have the shape below."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PeriodRule(_Model):
    #: a span of ages, or an anchor event's year and the relation to it
    ages: tuple[int, int] | None = None
    last_years: int | None = Field(default=None, ge=1, le=50)
    anchor: str | None = None
    relation: Literal["after", "before", "at"] | None = None
    fallback_age: int | None = Field(default=None, ge=0, le=MAX_AGE)
    span: int = Field(default=10, ge=1, le=50)
    phrases: dict[str, tuple[str, ...]]

    @model_validator(mode="after")
    def _one_kind(self) -> PeriodRule:
        if (self.ages is None) == (self.anchor is None):
            raise ValueError("a period has either ages or an anchor")
        if self.anchor is not None and self.relation is None:
            raise ValueError("an anchored period needs a relation (after, before, at)")
        return self


class CareerRule(_Model):
    start_age: int = Field(ge=0, le=MAX_AGE)
    end_age: int = Field(ge=0, le=MAX_AGE)
    start_anchor: str
    end_anchor: str


class LifePhrases(_Model):
    version: int
    possessives: tuple[str, ...]
    decades: dict[str, int]
    parts: dict[str, tuple[int, int]]
    periods: dict[str, PeriodRule]
    career: CareerRule
    anchors: dict[str, tuple[str, ...]]
    recent: dict[str, tuple[str, ...]]

    @model_validator(mode="after")
    def _anchors_known(self) -> LifePhrases:
        named = {p.anchor for p in self.periods.values() if p.anchor} - {"death"}
        named |= {self.career.start_anchor, self.career.end_anchor}
        if missing := named - set(self.anchors):
            raise ValueError(f"anchors without words: {sorted(missing)}")
        return self


@lru_cache(maxsize=1)
def load_life_phrases() -> LifePhrases:
    raw = yaml.safe_load(resources.files("heirloom.config").joinpath("life_phrases.yaml").read_text())
    try:
        return LifePhrases.model_validate(raw)
    except ValidationError as exc:
        raise LifeConfigError(f"life_phrases.yaml: {exc}") from exc


@dataclass(frozen=True)
class Life:
    """What the records say of the subject's life: birth and death years, and the year of each
    anchor event ("retirement", "marriage", "work") the graph dates."""

    birth: int | None = None
    death: int | None = None
    anchors: Mapping[str, int] = field(default_factory=dict)

    def anchor(self, name: str) -> int | None:
        if name == "death":
            return self.death
        return self.anchors.get(name)


@dataclass(frozen=True)
class LifePeriod:
    phrase: str
    start: int
    end: int

    @property
    def period(self) -> str:
        """As a time period the traversal reads ("1958-1967", or "1958")."""
        return str(self.start) if self.start == self.end else f"{self.start}-{self.end}"


def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    words = r"\s+".join(re.escape(w) for w in phrase.split())
    return re.compile(rf"(?<!\w){words}(?!\w)", re.IGNORECASE)


def _span(life: Life, rule: PeriodRule) -> tuple[int, int] | None:
    last = life.death if life.death is not None else (life.birth + MAX_AGE if life.birth else None)
    if rule.ages is not None:
        if rule.last_years and life.death is not None:
            return life.death - rule.last_years, life.death
        if life.birth is None:
            return None
        return life.birth + rule.ages[0], min(life.birth + rule.ages[1], last or life.birth + rule.ages[1])
    year = life.anchor(rule.anchor or "")
    if year is None and rule.fallback_age is not None and life.birth is not None:
        year = life.birth + rule.fallback_age
    if year is None:
        return None
    if rule.relation == "at":
        return year, year
    if rule.relation == "before":
        return year - rule.span, year
    return year, last if last is not None and last >= year else year + rule.span


def life_periods(text: str, life: Life, phrases: LifePhrases | None = None) -> list[LifePeriod]:
    """The life phrases of `text` as calendar years, in text order; a phrase the records cannot
    place (no birth year for "in her twenties", no dated retirement and no birth year) gives
    nothing rather than a guess."""
    cfg = phrases or load_life_phrases()
    found: list[tuple[int, LifePeriod]] = []
    taken: list[tuple[int, int]] = []

    def add(start: int, end: int, phrase: str, years: tuple[int, int] | None) -> None:
        if years is None or any(not (end <= s or start >= e) for s, e in taken):
            return
        taken.append((start, end))
        found.append((start, LifePeriod(phrase, years[0], years[1])))

    owners = "|".join(re.escape(p) for p in cfg.possessives)
    decades = "|".join(cfg.decades)
    parts = "|".join(cfg.parts)
    ages = re.compile(rf"\b(?:{owners})\s+(?:({parts})[\s-]+)?({decades})\b", re.IGNORECASE)
    for m in ages.finditer(text):
        if life.birth is None:
            continue
        decade = cfg.decades[m.group(2).lower()]
        low, high = cfg.parts[m.group(1).lower()] if m.group(1) else (0, 9)
        add(m.start(), m.end(), m.group(0), (life.birth + decade + low, life.birth + decade + high))
    rules = sorted(
        ((p, rule) for rule in cfg.periods.values() for ps in rule.phrases.values() for p in ps),
        key=lambda x: -len(x[0]),  # the longest phrase first ("in her childhood" over "childhood")
    )
    for phrase, rule in rules:
        for m in _phrase_pattern(phrase).finditer(text):
            add(m.start(), m.end(), m.group(0), _span(life, rule))
    return [p for _, p in sorted(found, key=lambda x: x[0])]


def career_years(life: Life, phrases: LifePhrases | None = None) -> tuple[int, int] | None:
    """The subject's working years: the first work anchor (else birth + start_age) to the
    retirement anchor (else birth + end_age), never past the death year; None without either."""
    rule = (phrases or load_life_phrases()).career
    start = life.anchor(rule.start_anchor)
    end = life.anchor(rule.end_anchor)
    if start is None and life.birth is not None:
        start = life.birth + rule.start_age
    if end is None and life.birth is not None:
        end = life.birth + rule.end_age
    if start is None or end is None:
        return None
    if life.death is not None:
        end = min(end, life.death)
    return (start, end) if start <= end else None


def asks_recent(text: str, phrases: LifePhrases | None = None) -> bool:
    """Whether the question asks for recent material ("lately", "these days", "recentemente")."""
    cfg = phrases or load_life_phrases()
    return any(_phrase_pattern(p).search(text) for ps in cfg.recent.values() for p in ps)


def wants_recent(query: str, intent: QueryIntent, temporal_range: str) -> bool:
    """Whether ranking decays with a story's age: the question asks for recent material, or a
    `temporal_range: recent` persona asks an open question (intent `general`: "Tell me about
    her"). A recent persona's questions about something ("What did Nell do in the flood?",
    "When did she finish school?") keep their order: the write date of a story says nothing of
    when what it tells happened (measured: docs/evaluation.md, decision 0014)."""
    if asks_recent(query):
        return True
    return temporal_range == "recent" and intent.intent is Intent.GENERAL


def anchor_years(
    events: Iterable[tuple[str, Iterable[int]]], phrases: LifePhrases | None = None
) -> dict[str, int]:
    """The year of each anchor from dated events (name, years): the earliest year of an event
    whose name holds one of the anchor's words ("Dom's retirement party" -> retirement)."""
    cfg = phrases or load_life_phrases()
    out: dict[str, int] = {}
    for name, years in events:
        low = name.casefold()
        dated = sorted(years)
        if not dated:
            continue
        for anchor, words in cfg.anchors.items():
            if any(_phrase_pattern(w).search(low) for w in words):
                out[anchor] = min(out.get(anchor, dated[0]), dated[0])
    return out


#: the dated events of a legacy, for the anchors (names, "|1962|1965|" year keys, and the stories
#: that name each: an anchor counts for a user only when they may read every one of them)
DATED_EVENTS = """
MATCH (e:Event)
WHERE e.legacy_id = $legacy_id AND e.years IS NOT NULL
OPTIONAL MATCH (s:Story)-[r]->(e)
RETURN e.name AS name, e.years AS years, collect(DISTINCT s.id) AS stories
LIMIT 200
"""


def parse_year_keys(keys: str | None) -> list[int]:
    """ "|1962|1965|" -> [1962, 1965]."""
    return [int(y) for y in re.findall(r"\d{4}", keys or "")]


#: how long the graph may take to list the dated events before the anchors go without them
ANCHORS_BUDGET_S = 0.3
#: confidence of `temporal` when only a life phrase says so (as a year would: intent_cues.TIME_WEIGHT)
LIFE_TIME_WEIGHT = 0.6


def subject_life(
    legacy_id: UUID,
    stories: StoryStore,
    graph: GraphStore | None,
    readable: Callable[[set[str]], set[str]] | None = None,
) -> Life:
    """The subject's birth and death years (their Person record) and the anchors the graph's
    dated events give; without the graph (or when it fails or is slow), no anchors. `readable`
    (the story ids of a set the user may read): only events every story naming them is readable
    for (an event's years are its node's, whichever story gave them), so a year only an
    unreadable story gives never places a question."""
    legacy = stories.get_legacy(legacy_id)
    person = stories.get_person(legacy.subject_person_id) if legacy else None
    anchors: dict[str, int] = {}
    if graph is not None:
        try:
            rows = call_within(
                ANCHORS_BUDGET_S,
                lambda: graph.run(DATED_EVENTS, {"legacy_id": str(legacy_id)}),
                name="dated events",
            )
            if readable is not None:
                named = [{str(x) for x in r.get("stories") or () if x} for r in rows]
                shown = readable(set().union(*named))
                rows = [r for r, ids in zip(rows, named, strict=True) if ids and ids <= shown]
            anchors = anchor_years((str(r.get("name") or ""), parse_year_keys(r.get("years"))) for r in rows)
        except Exception as exc:  # the anchors help; birth and death years still place phrases
            log.warning("life_anchors_unavailable: %s", type(exc).__name__)
    return Life(
        birth=person.birth_year if person else None,
        death=person.death_year if person else None,
        anchors=anchors,
    )


def _readable_to(request: ContextRequest, stories: StoryStore) -> Callable[[set[str]], set[str]]:
    """Of a set of story ids, those the requesting user may read (as of the request's `as_of`);
    none for a non-member (the access filter refuses the request anyway)."""
    try:
        scope = scope_for(stories, request.user_id, request.legacy_id, as_of=request.as_of)
    except (AccessDenied, NotFound):
        return lambda ids: set()

    def readable(ids: set[str]) -> set[str]:
        metas = stories.story_meta({UUID(i) for i in ids}) if ids else []
        return {str(m.id) for m in metas if scope.allows(m)}

    return readable


def with_life(
    intent: QueryIntent,
    request: ContextRequest,
    stories: StoryStore,
    graph: GraphStore | None,
    temporal_range: str,
) -> QueryIntent:
    """The intent with the question's life phrases as calendar periods (a `general` intent
    becomes `temporal`); a `temporal_range: career` persona asking a temporal question that names
    no period gets the subject's working years. No store read unless a phrase or the persona
    asks for the timeline."""
    every = Life(birth=1900, death=2000, anchors=dict.fromkeys(load_life_phrases().anchors, 1950))
    placed = life_periods(request.query, every)  # any life phrase at all, placeable or not
    career = (
        temporal_range == "career" and intent.intent is Intent.TEMPORAL and not intent.entities.time_periods
    )
    if not placed and not career:
        return intent
    life = subject_life(request.legacy_id, stories, graph, _readable_to(request, stories))
    periods = [p.period for p in life_periods(request.query, life)]
    if not periods and career and (years := career_years(life)):
        periods = [f"{years[0]}-{years[1]}"]
    if not periods:
        note = "life phrase: the subject's birth year and dated events do not place it"
        return intent.model_copy(update={"notes": (*intent.notes, note)}) if placed else intent
    update: dict[str, object] = {
        "entities": intent.entities.model_copy(
            update={"time_periods": tuple(dict.fromkeys([*intent.entities.time_periods, *periods]))}
        )
    }
    if intent.intent is Intent.GENERAL:
        update |= {"intent": Intent.TEMPORAL, "confidence": max(intent.confidence, LIFE_TIME_WEIGHT)}
    return intent.model_copy(update=update)
