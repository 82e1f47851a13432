"""Facts a sentence states (docs/decisions/0012): subject - verb - object over the tagger's tags.

No dependency parser runs (it would cost about a third more CPU a story; the ingestion budget in
docs/benchmarks.md), so the rules read the token order inside one sentence: the subject is the
person named (or "he"/"she", resolved to the most recent compatible person of the story) left of
a fact verb, the target the first person or thing after it; "Rose and Walt married" joins the
two subjects; "never"/"not" before the verb marks the fact negated. A verb whose relation needs a
person target ("married", "taught") states nothing without one.
"""

from __future__ import annotations

from typing import Any

from heirloom.adapters.spacy.lexicon import _by_word, _words
from heirloom.adapters.spacy.tokens import RELATION_CONFIDENCE, _Cand, _text
from heirloom.contracts.extraction import ExtractedFact

_FACT_VERBS = _by_word("fact_verbs")
_NEGATIONS = _words("fact_negations")
_PASSING = _words("passing_verbs")
_FEMALE = _words("female_titles")
_MALE = _words("male_titles")
_SENTENCE_ENDS = frozenset({".", "!", "?"})
_PERSON_ONLY = frozenset({"MARRIED", "FRIEND_OF", "PARENT_OF", "TAUGHT", "MET", "WORKED_WITH"})
#: relations whose target is a thing ("made it for her" makes nothing of her)
_THING_ONLY = frozenset({"MADE", "KEPT", "RECEIVED"})
#: "worked" states WORKED_WITH only with "with"/"alongside" after it
_NEEDS_WITH = frozenset({"WORKED_WITH"})
_WITH = frozenset({"with", "alongside", "beside"})
#: a fact read through a pronoun is a little less sure
PRONOUN_CONFIDENCE = 0.72
_WINDOW = 8


def _sentences(doc: Any) -> list[tuple[int, int]]:
    out, start = [], 0
    for i, tok in enumerate(doc):
        if tok.text in _SENTENCE_ENDS or "\n" in tok.text:
            if i + 1 > start:
                out.append((start, i + 1))
            start = i + 1
    if start < len(doc):
        out.append((start, len(doc)))
    return out


def _gender(person: _Cand) -> str:
    first = person.name.split()[0].lower() if person.name else ""
    context = person.context.lower().split()
    words = {first, *context}
    if words & _FEMALE:
        return "f"
    if words & _MALE:
        return "m"
    return ""


def _compatible(pronoun: str, person: _Cand) -> bool:
    g = _gender(person)
    return not g or (g == "f") == (pronoun in ("she", "her"))


class _Story:
    """The people of a story in order, for pronoun resolution: the most recent compatible person
    who opened a sentence (its likely subject), else the most recent compatible one."""

    def __init__(self, people: list[_Cand], sentences: list[tuple[int, int]], things: list[_Cand]) -> None:
        self.people = sorted(people, key=lambda p: p.start)
        self.things = sorted(things, key=lambda t: t.start)
        self.said: dict[str, int] = {}
        self.openers: set[int] = set()
        for start, end in sentences:
            first = next((p for p in self.people if start <= p.start < end), None)
            if first is not None:
                self.openers.add(first.start)

    def thing_before(self, i: int) -> _Cand | None:
        """ "it": of the objects named before, the one the story is about (its head word said
        most often; a story about an heirloom keeps returning to it), the first named on a tie."""
        found = [t for t in self.things if t.end <= i]
        if not found:
            return None
        return max(enumerate(found), key=lambda it: (self.said.get(_head(it[1]), 0), -it[0]))[1]

    def before(self, i: int, pronoun: str, exclude: str = "") -> _Cand | None:
        fits = [p for p in self.people if p.end <= i and p.name != exclude and _compatible(pronoun, p)]
        openers = [p for p in fits if p.start in self.openers]
        found = openers or fits
        return found[-1] if found else None


def _head(thing: _Cand) -> str:
    return (thing.head or thing.name.split()[-1]).lower()


def _fact(
    source: str, relation: str, target: str, verb: str, sentence: str, negated: bool, conf: float
) -> ExtractedFact:
    return ExtractedFact(
        source=source, relation=relation, target=target, verb=verb, sentence=sentence,  # type: ignore[arg-type]
        negated=negated, confidence=conf,
    )  # fmt: skip


def _facts(doc: Any, cands: list[_Cand]) -> list[ExtractedFact]:
    sentences = _sentences(doc)
    story = _Story(
        [c for c in cands if c.kind == "people"], sentences, [c for c in cands if c.kind == "objects"]
    )
    for tok in doc:
        if tok.tag_ in ("NN", "NNS"):
            story.said[tok.lower_] = story.said.get(tok.lower_, 0) + 1
    at = {c.start: c for c in cands}
    out: list[ExtractedFact] = []
    for start, end in sentences:
        sentence = _text(doc, start, end)
        if not sentence:
            continue
        for k in range(start, end):
            tok = doc[k]
            if not tok.tag_.startswith("VB"):
                continue
            if tok.lower_ in _PASSING:  # a thing going to someone ("it went to Mom")
                out += _passed_to(doc, start, k, end, at, story, sentence)
            if tok.lower_ in _FACT_VERBS:  # a person's fact ("Dad passed it down", "she married")
                out += _verb_facts(doc, start, k, end, at, story, sentence)
    return out


def _verb_facts(
    doc: Any, start: int, k: int, end: int, at: dict[int, _Cand], story: _Story, sentence: str
) -> list[ExtractedFact]:
    """The facts of the fact verb at `k`: its subject, and each target after it."""
    tok = doc[k]
    relation = _FACT_VERBS[tok.lower_]
    if relation in _NEEDS_WITH and not (k + 1 < end and doc[k + 1].lower_ in _WITH):
        return []
    subject, conf, negated, partner = _subject(doc, start, k, at, story)
    if subject is None:
        return []
    verb = tok.text
    if k + 1 < end and doc[k + 1].lower_ in ("down", "on", "along") and relation == "GAVE":
        verb = f"{tok.text} {doc[k + 1].text}"
    targets = _targets(doc, k, end, at, story, subject, relation)
    if partner is not None and relation in _PERSON_ONLY and not targets:
        targets = [(partner, conf)]
    return [
        _fact(subject.name, relation, target.name, verb, sentence, negated, min(conf, t_conf))
        for target, t_conf in targets
    ]


def _passed_to(
    doc: Any, start: int, k: int, end: int, at: dict[int, _Cand], story: _Story, sentence: str
) -> list[ExtractedFact]:
    """ "The watch went to Peter", "it passed to his son": the person after the verb and "to"
    RECEIVED the thing named (or "it") just before the verb, in the same clause."""
    if k + 1 >= end or doc[k + 1].lower_ != "to":
        return []
    # the person right after "to", or after a possessive and a kin word ("to his son Tony")
    person = next(
        (c for j in range(k + 2, min(end, k + 5)) if (c := at.get(j)) is not None and c.kind == "people"),
        None,
    )
    if person is None or any(t.tag_.startswith("VB") for t in doc[k + 2 : person.start]):
        return []
    thing, conf, negated = _left_of(doc, start, k, at, story, "objects")
    if thing is None:
        return []
    verb = f"{doc[k].text} to"
    return [_fact(person.name, "RECEIVED", thing.name, verb, sentence, negated, conf)]


def _subject(
    doc: Any, start: int, k: int, at: dict[int, _Cand], story: _Story
) -> tuple[_Cand | None, float, bool, _Cand | None]:
    """The person left of the verb at `k` in its sentence (no other verb between), whether a
    negation stands between, and the partner of "X and Y <verb>"."""
    person, conf, negated = _left_of(doc, start, k, at, story, "people")
    partner = None
    named = person is not None and conf == RELATION_CONFIDENCE  # not a pronoun's referent
    if named and person is not None and person.start >= 2 and doc[person.start - 1].lower_ == "and":
        partner = next((c for c in at.values() if c.kind == "people" and c.end == person.start - 1), None)
    return person, conf, negated, partner


#: verbs that may stand between a subject and its fact verb ("she had given", "was carried")
_AUXILIARIES = frozenset({"was", "had", "did", "were", "has", "have", "is"})


def _left_of(
    doc: Any, start: int, k: int, at: dict[int, _Cand], story: _Story, kind: str
) -> tuple[_Cand | None, float, bool]:
    """The person ("people": a name, or "he"/"she") or thing ("objects": a name, or "it") left of
    the verb at `k` in its clause, and whether a negation stands between. Another verb or a
    comma ends the clause; looking for a thing, so does a person ("Aunt Rose went to Peter")."""
    negated = False
    j = k - 1
    while j >= start and k - j <= _WINDOW:
        tok = doc[j]
        if tok.lower_ in _NEGATIONS:
            negated = True
        here = [c for c in at.values() if c.start <= j < c.end]
        found = next((c for c in here if c.kind == kind), None)
        if found is not None:
            return found, RELATION_CONFIDENCE, negated
        if tok.tag_ == "PRP" and kind == "people" and tok.lower_ in ("he", "she"):
            return story.before(j, tok.lower_), PRONOUN_CONFIDENCE, negated
        if tok.tag_ == "PRP" and kind == "objects" and tok.lower_ == "it":
            return story.thing_before(j), PRONOUN_CONFIDENCE, negated
        if kind == "objects" and any(c.kind == "people" for c in here):
            break
        if tok.tag_.startswith("VB") and tok.lower_ not in _AUXILIARIES:
            break  # another verb's clause
        if tok.text in (",", ";") and j < k - 1:
            break
        j -= 1
    return None, 0.0, False


def _targets(
    doc: Any, k: int, end: int, at: dict[int, _Cand], story: _Story, subject: _Cand, relation: str
) -> list[tuple[_Cand, float]]:
    """The first person and (for thing relations) the first thing after the verb."""
    out: list[tuple[_Cand, float]] = []
    person = thing = False
    j = k + 1
    while j < min(end, k + 1 + _WINDOW):
        tok = doc[j]
        cand = at.get(j)
        if cand is not None:
            if (
                cand.kind == "people"
                and not person
                and cand.name != subject.name
                and relation not in _THING_ONLY
            ):
                out.append((cand, RELATION_CONFIDENCE))
                person = True
            elif cand.kind in ("objects", "events") and not thing and relation not in _PERSON_ONLY:
                out.append((cand, RELATION_CONFIDENCE))
                thing = True
            j = cand.end
            continue
        if tok.lower_ == "it" and tok.tag_ == "PRP" and not thing and relation not in _PERSON_ONLY:
            found_thing = story.thing_before(k)
            if found_thing is not None:
                out.append((found_thing, PRONOUN_CONFIDENCE))
                thing = True
        elif (
            tok.lower_ in ("him", "her") and tok.tag_ == "PRP" and not person and relation not in _THING_ONLY
        ):
            found = story.before(k, "she" if tok.lower_ == "her" else "he", exclude=subject.name)
            if found is not None:
                out.append((found, PRONOUN_CONFIDENCE))
                person = True
        elif tok.tag_.startswith("VB") or tok.text in (";",):
            break
        elif tok.tag_ == "IN" and not (
            (relation == "GAVE" and tok.lower_ in ("to", "down"))
            or (relation in _NEEDS_WITH and tok.lower_ in _WITH)
        ):
            break  # "sewed it on the kitchen table": what follows a preposition is no target
        j += 1
    return out
