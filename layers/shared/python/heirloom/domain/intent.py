"""IntentAnalysis without an LLM: known-entity matching (docs/design.md §11) plus cue lexicons (docs/design.md §5).

`Gazetteer` finds the names already in the legacy's graph in a message: a token index over
every full name and alias (case- and accent-insensitive, whole words only, possessives folded,
longest match first), plus first and last names of persons where they are unambiguous.
`classify` scores the six intents from the matches, time expressions and the cue table below,
resolves "she"/"there"/"that summer" against the last messages of the conversation, and returns
a `QueryIntent` (`source="rules"`); `analyse` also returns each intent's score, which the learned
classifier reads as features (`model_features`, decision 0032). The rules are general English
cues, not tuned to a dataset.
"""

from __future__ import annotations

import re
import time
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field

from heirloom.contracts.context import EntityMatch, Intent, Message, QueryEntities, QueryIntent
from heirloom.domain.gazetteer import Gazetteer, GazetteerEntry, Mention, _keys
from heirloom.domain.intent_cues import (
    _BE_OR_MODAL,
    _PERSON_PRONOUN,
    _QUANTIFIERS,
    _TIME_ANAPHOR,
    _VOICE,
    _WORD,
    CUES,
    LINKED_MATCH_WEIGHT,
    LINKED_VOICE_WEIGHT,
    PERSON_MATCH_WEIGHT,
    PLACE_MATCH_WEIGHT,
    PRIORITY,
    PRONOUN_GENDER,
    QUESTION_HEADS,
    RESOLVED_PLACE_WEIGHT,
    SETTING_PLACE_WEIGHT,
    THING_MATCH_WEIGHT,
    TIME_WEIGHT,
)
from heirloom.domain.kinship import parse_kin
from heirloom.domain.time_phrases import time_periods

#: below this the classifier answers `general` (docs/design.md §5)
MIN_CONFIDENCE = 0.5
MAX_CONFIDENCE = 0.95
#: messages of history used for pronoun resolution
HISTORY_WINDOW = 3
MAX_MATCHES = 12


# -- classification ---------------------------------------------------------------------------
def _noisy_or(weights: Iterable[float]) -> float:
    miss = 1.0
    for w in weights:
        miss *= 1.0 - w
    return 1.0 - miss


def _mask(text: str, mentions: Sequence[Mention]) -> str:
    """The text with every matched name replaced by a neutral word, so that "Uncle Jim" or an
    alias like "Dad" does not read as a kinship cue."""
    out, last = [], 0
    for m in mentions:
        possessive = re.search(r"['’]s?$", text[m.start : m.end])
        out.append(text[last : m.start])
        out.append("someone" + (possessive.group() if possessive else ""))
        last = m.end
    out.append(text[last:])
    return "".join(out)


def locative_there(text: str) -> bool:
    """Whether "there" in `text` points at a place ("did she live there?") rather than being the
    empty subject of "there was a fire" / "was there anyone" / "there's"."""
    words = [w.lower() for w in _WORD.findall(text.replace("’", "'"))]
    for i, word in enumerate(words):
        if word != "there":
            continue
        prev = words[i - 1] if i else ""
        nxt = words[i + 1] if i + 1 < len(words) else ""
        if nxt in _BE_OR_MODAL or (prev in _BE_OR_MODAL and nxt in _QUANTIFIERS):
            continue
        return True
    return False


def _is_subject(entry: GazetteerEntry, subject: tuple[str, ...]) -> bool:
    return entry.label == "Person" and _keys(entry.name) == subject


@dataclass(frozen=True)
class _Recent:
    #: the people of the last messages, most recent first (one mention per person)
    people: tuple[Mention, ...] = ()
    place: Mention | None = None
    period: str | None = None
    #: gender the messages' own words give a person: the pronoun that follows their name, or a
    #: gendered kin word before it ("her uncle Jim"); conflicting words give none
    said: dict[str, str | None] = field(default_factory=dict)


_SENTENCE_END = re.compile(r"[.!?]+[\"”’)]*\s+")
_NEXT_SUBJECT = re.compile(r"(he|she)\b", re.IGNORECASE)


def said_gender(
    text: str, mentions: Sequence[Mention], seen: dict[str, set[str]], only: Collection[str] | None = None
) -> None:
    """Gender evidence for each person named in `text` (`only`: for these node ids alone; the
    others still end a mention's sentence): a gendered kin word just before the name ("her uncle
    Jim"), else "He"/"She" opening the next sentence when no one else was named in between
    ("Lucia left in 1960. She ..."). Object and possessive pronouns are no evidence: "Sabine
    rode with him" says nothing of Sabine."""
    people = [m for m in mentions if m.entries[0].label == "Person"]
    for i, mention in enumerate(people):
        if only is not None and not any(e.node_id in only for e in mention.entries):
            continue
        before = _WORD.findall(text[max(0, mention.start - 24) : mention.start])
        kin = parse_kin(before[-1]) if before else None
        gender = kin.gender if kin else None
        if gender is None:
            stop = people[i + 1].start if i + 1 < len(people) else len(text)
            end = _SENTENCE_END.search(text, mention.end, stop)
            opener = _NEXT_SUBJECT.match(text, end.end(), stop) if end else None
            gender = PRONOUN_GENDER[opener.group(1).lower()] if opener else None
        if gender:
            for entry in mention.entries:
                seen.setdefault(entry.node_id, set()).add(gender)


def _recent(history: Sequence[Message], gazetteer: Gazetteer) -> _Recent:
    """The people (most recent first), the most recent place and time period of the last messages."""
    people: list[Mention] = []
    ids: set[tuple[str, ...]] = set()
    place = None
    period = None
    seen: dict[str, set[str]] = {}
    for message in reversed(history[-HISTORY_WINDOW:]):
        mentions = gazetteer.find(message.content)
        said_gender(message.content, mentions, seen)
        for m in reversed(mentions):
            key = tuple(e.node_id for e in m.entries)
            if m.entries[0].label == "Person" and key not in ids:
                ids.add(key)
                people.append(m)
        if place is None:
            place = next((m for m in reversed(mentions) if m.entries[0].label == "Place"), None)
        if period is None:
            periods = [p for p in time_periods(message.content) if p[0].isdigit()]
            period = periods[-1] if periods else None
    said = {k: next(iter(v)) if len(v) == 1 else None for k, v in seen.items()}
    return _Recent(tuple(people), place, period, said)


def _gender_of(entries: Sequence[GazetteerEntry], said: dict[str, str | None]) -> str | None:
    """The gender the records give (else the conversation's words); None unless all agree."""
    genders = {e.gender or said.get(e.node_id) for e in entries}
    return genders.pop() if len(genders) == 1 else None


def _resolve_pronoun(
    pronoun: str, recent: _Recent, subject: tuple[str, ...], notes: list[str]
) -> list[EntityMatch]:
    """The person of the conversation a pronoun stands for: the most recent one whose known
    gender is the pronoun's. Someone of unknown gender is taken only when no one else could be
    meant; when two could, nothing is resolved and `notes` says so (never a guess)."""
    gender = PRONOUN_GENDER[pronoun.lower()]
    fitting: list[tuple[Mention, tuple[GazetteerEntry, ...], str | None]] = []
    named = False
    for mention in recent.people:
        entries = tuple(e for e in mention.entries if not _is_subject(e, subject))
        if not entries:
            continue
        named = True
        known = _gender_of(entries, recent.said)
        if known in (gender, None):
            fitting.append((mention, entries, known))
    if not fitting:
        if named:
            notes.append(f'"{pronoun}": no one the conversation named is known to be {pronoun}')
        return []
    mention, entries, known = fitting[0]
    if known is None and len(fitting) > 1:
        other = fitting[1][0].text
        notes.append(f'"{pronoun}": could be {mention.text} or {other}; gender of {mention.text} unknown')
        return []
    return list(Mention(0, 0, pronoun, entries, False).matches())


def _anaphora(
    query: str, recent: _Recent, subject: tuple[str, ...], periods: list[str], notes: list[str]
) -> list[EntityMatch]:
    """ "she", "there" and "that summer" resolved against the last messages: the matches they
    stand for (the period goes into `periods`, what cannot be decided into `notes`)."""
    resolved: list[EntityMatch] = []
    if (pronoun := _PERSON_PRONOUN.search(query)) and recent.people:
        resolved.extend(_resolve_pronoun(pronoun.group(), recent, subject, notes))
    if _TIME_ANAPHOR.search(query) and recent.period and recent.period not in periods:
        periods.append(recent.period)
    if recent.place is not None and locative_there(query):
        resolved.extend(recent.place.matches("there"))
    return resolved


def _linked_evidence(
    mentions: Sequence[Mention],
    subject: tuple[str, ...],
    text: str,
    primary_legacy_id: str,
    linked_kin: bool = False,
) -> list[float]:
    """Cross-legacy evidence: a name known only in a linked legacy, a linked subject's own voice
    (named, or `linked_kin`: the asker's kin word is one, "what did my mother write")."""
    found: list[float] = []
    for mention in mentions:
        legacies = {e.legacy_id for e in mention.entries if not _is_subject(e, subject)}
        if legacies and "" not in legacies and primary_legacy_id not in legacies:
            found.append(LINKED_MATCH_WEIGHT)
            break
    voices = [m for m in mentions if any(e.linked_subject for e in m.entries)]
    if (voices or linked_kin) and _VOICE.search(text):
        found.append(LINKED_VOICE_WEIGHT)
    return found


def links_in_reach(gazetteer: Gazetteer, primary_legacy_id: str, linked_kin: bool = False) -> bool:
    """Whether another legacy's account can be asked for: the gazetteer holds a name of a linked
    legacy (it lists the actively linked ones) or the asker's kin word names a linked subject.
    Without `primary_legacy_id` nothing is known, so nothing is ruled out."""
    if linked_kin or not primary_legacy_id:
        return True
    return any(e.linked_subject or e.legacy_id not in ("", primary_legacy_id) for e in gazetteer.entries)


def _entity_evidence(
    query: str, named: Sequence[EntityMatch], matches: Sequence[EntityMatch]
) -> dict[Intent, list[float]]:
    """Evidence from what the question names: people, places, things, years, a resolved "there"."""
    evidence: dict[Intent, list[float]] = {intent: [] for intent in PRIORITY}
    labels = {m.label for m in named}
    if "Person" in labels:
        evidence[Intent.RELATIONAL].append(PERSON_MATCH_WEIGHT)
    things = labels & {"Event", "Object"}
    if "Place" in labels:
        evidence[Intent.SPATIAL].append(SETTING_PLACE_WEIGHT if things else PLACE_MATCH_WEIGHT)
    if things:
        evidence[Intent.ENTITY_FOCUSED].append(THING_MATCH_WEIGHT)
    if any(p[0].isdigit() for p in time_periods(query)):
        evidence[Intent.TEMPORAL].append(TIME_WEIGHT)
    if any(m.mention == "there" and m.label == "Place" for m in matches):
        evidence[Intent.SPATIAL].append(RESOLVED_PLACE_WEIGHT)
    return evidence


def _scores(evidence: dict[Intent, list[float]]) -> dict[Intent, float]:
    """Each intent's evidence combined by noisy-OR (`general` has none: it is what is left)."""
    return {intent: _noisy_or(evidence.get(intent, ())) for intent in Intent}


def _best(scores: dict[Intent, float]) -> tuple[Intent, float]:
    best = max(PRIORITY, key=lambda i: (scores[i], -PRIORITY.index(i)))
    confidence = min(MAX_CONFIDENCE, scores[best])
    if confidence < MIN_CONFIDENCE:
        return Intent.GENERAL, round(1.0 - confidence, 3)
    return best, confidence


def analyse(
    query: str,
    history: Sequence[Message],
    gazetteer: Gazetteer,
    subject_name: str,
    primary_legacy_id: str = "",
    *,
    linked_kin: bool = False,
) -> tuple[QueryIntent, dict[Intent, float]]:
    """The rule-based answer for `query` and each intent's score behind it (the learned
    classifier reads the scores as features). The legacy's subject is left out of the matches:
    every question is about them, and naming them would tag every story that mentions them.
    With `primary_legacy_id`, a name known only in a linked legacy is evidence for
    `cross_legacy`, and so is a linked legacy's subject whose own account is asked for, named or
    (`linked_kin`) as the asker's kin word (decision 0027)."""
    started = time.perf_counter()
    subject = _keys(subject_name)
    mentions = gazetteer.find(query)
    named: list[EntityMatch] = []
    for mention in mentions:
        kept = tuple(e for e in mention.entries if not _is_subject(e, subject))
        named.extend(Mention(mention.start, mention.end, mention.text, kept, mention.derived).matches())
    periods = time_periods(query)
    recent = _recent(history, gazetteer) if history else _Recent()
    notes: list[str] = []
    resolved = _anaphora(query, recent, subject, periods, notes)
    have = {m.node_id for m in named}
    matches = list(dict.fromkeys([*named, *(m for m in resolved if m.node_id not in have)]))[:MAX_MATCHES]

    # evidence per intent: cue words (names masked out), question heads, named entities, times
    text = _mask(query, mentions)
    evidence: dict[Intent, list[float]] = {intent: [] for intent in PRIORITY}
    for intent, cues in CUES.items():
        evidence[intent].extend(w for w, pattern in cues if pattern.search(text))
    for intent, (weight, pattern) in QUESTION_HEADS.items():
        if pattern.search(query.strip()):
            evidence[intent].append(weight)
    if primary_legacy_id:
        evidence[Intent.CROSS_LEGACY].extend(
            _linked_evidence(mentions, subject, text, primary_legacy_id, linked_kin)
        )
    for intent, weights in _entity_evidence(query, named, matches).items():
        evidence[intent].extend(weights)
    if not links_in_reach(gazetteer, primary_legacy_id, linked_kin):
        evidence[Intent.CROSS_LEGACY] = []  # no linked legacy: no other legacy's account to ask for
    scores = _scores(evidence)
    best, confidence = _best(scores)

    def names(*wanted: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m.name for m in matches if m.label in wanted))

    answer = QueryIntent(
        intent=best,
        entities=QueryEntities(
            people=names("Person"),
            places=names("Place"),
            time_periods=tuple(periods),
            events=names("Event"),
            objects=names("Object"),
        ),
        matches=tuple(matches),
        confidence=round(confidence, 3),
        source="rules",
        latency_ms=round((time.perf_counter() - started) * 1000, 3),
        notes=tuple(notes),
    )
    return answer, scores


#: the rule-derived features the learned classifier weighs next to the query's embedding: what
#: the gazetteer and the time expressions find (`entity_features`), then the rule-based score of
#: each intent (`analyse`; rules enter the model as features only, decision 0032)
ENTITY_FEATURE_NAMES: tuple[str, ...] = ("person", "place", "thing", "linked", "time")
FEATURE_NAMES: tuple[str, ...] = (*ENTITY_FEATURE_NAMES, *(f"rules_{i.value}" for i in Intent))


def entity_features(
    query: str,
    gazetteer: Gazetteer,
    subject_name: str = "",
    primary_legacy_id: str = "",
    *,
    linked: bool = False,
) -> tuple[float, ...]:
    """What the gazetteer and the time expressions find in `query`, as 0/1 features (in
    `ENTITY_FEATURE_NAMES` order): a person other than the subject, a place, an event or object, a name
    only a linked legacy holds or a linked legacy's subject (`linked`: already known, e.g. the
    asker's kin word named one), a year/range/decade."""
    subject = _keys(subject_name)
    labels: set[str] = set()
    for mention in gazetteer.find(query):
        kept = [e for e in mention.entries if not _is_subject(e, subject)]
        labels.update(e.label for e in kept)
        legacies = {e.legacy_id for e in kept}
        if primary_legacy_id and legacies and "" not in legacies and primary_legacy_id not in legacies:
            linked = True
        if any(e.linked_subject for e in kept):
            linked = True
    time_expression = any(p[0].isdigit() for p in time_periods(query))
    return (
        float("Person" in labels),
        float("Place" in labels),
        float(bool(labels & {"Event", "Object"})),
        float(linked),
        float(time_expression),
    )


#: what a known person's or place's name reads as among the learned classifier's words
NAME_WORDS = {"Person": "someone", "Place": "that place"}
_ARTICLE_BEFORE = re.compile(r"\b(?:the|a|an)\s+$", re.IGNORECASE)


def name_masked(text: str, gazetteer: Gazetteer, subject_name: str = "") -> str:
    """`text` with each known person's or place's name (not the subject's) as a neutral word, a
    possessive and a place's article included ("What did someone keep at that place?" for "...
    Nell keep at the cabin?", "someone quilt"): the learned classifier reads these words beside the
    question's own, so that a question's shape weighs the same whatever names it uses (decision
    0036)."""
    subject = _keys(subject_name)
    out, last = [], 0
    for mention in gazetteer.find(text):
        kept = [e for e in mention.entries if not _is_subject(e, subject)]
        word = NAME_WORDS.get(kept[0].label) if kept else None
        if word is None:
            continue
        before = text[last : mention.start]
        if kept[0].label == "Place":
            before = _ARTICLE_BEFORE.sub("", before)
        out += [before, word]
        last = mention.end
    out.append(text[last:])
    return "".join(out)


def model_features(
    query: str,
    history: Sequence[Message],
    gazetteer: Gazetteer,
    subject_name: str = "",
    primary_legacy_id: str = "",
    *,
    linked: bool = False,
    scores: dict[Intent, float] | None = None,
) -> tuple[float, ...]:
    """The learned classifier's features in `FEATURE_NAMES` order: `entity_features`, then the
    rule-based score of each intent (`scores` when the caller already has `analyse`'s)."""
    if scores is None:
        scores = analyse(query, history, gazetteer, subject_name, primary_legacy_id, linked_kin=linked)[1]
    named = entity_features(query, gazetteer, subject_name, primary_legacy_id, linked=linked)
    return (*named, *(scores[i] for i in Intent))
