"""The IntentAnalysis step: known-entity matching against a per-legacy gazetteer cached in the
container, the local classifier (the learned one over the query's embedding by default, the
rule-based one without an embedder), optionally an LLM classifier behind the `IntentClassifier`
port (given the gazetteer's matches as hints; any failure keeps the local result), and the
graph breaker's state for the Choice state."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol, cast
from uuid import UUID

from heirloom.contracts.context import (
    EntityMatch,
    Intent,
    Message,
    QueryEntities,
    QueryIntent,
)
from heirloom.contracts.records import Visibility
from heirloom.domain.deadline import DeadlineExceeded, call_within
from heirloom.domain.gazetteer import Gazetteer, GazetteerEntry, Label, may_name, words_pattern
from heirloom.domain.intent import (
    MAX_MATCHES,
    MIN_CONFIDENCE,
    analyse,
    links_in_reach,
    model_features,
    name_masked,
    said_gender,
)
from heirloom.domain.linked_subjects import linked_legacies, subjects_of
from heirloom.domain.names import one_of_many
from heirloom.domain.people import gender_evidence
from heirloom.ports import Embedder, GraphStore, StoryStore

if TYPE_CHECKING:
    from heirloom.contracts.intent import IntentClassification
    from heirloom.domain.intent_model import IntentModelCache

log = logging.getLogger(__name__)

#: the graph's entities by name, and the other names stories wrote on their edge to one (an
#: owned thing's owner written another way, an entity merged into another one) as its aliases
ENTITY_NAMES = """
MATCH (e:Place) WHERE e.legacy_id IN $ids
RETURN e.id AS id, 'Place' AS label, e.name AS name, e.legacy_id AS legacy, false AS alias
UNION ALL
MATCH (e:Event) WHERE e.legacy_id IN $ids
RETURN e.id AS id, 'Event' AS label, e.name AS name, e.legacy_id AS legacy, false AS alias
UNION ALL
MATCH (e:Object) WHERE e.legacy_id IN $ids
RETURN e.id AS id, 'Object' AS label, e.name AS name, e.legacy_id AS legacy, false AS alias
UNION ALL
MATCH (:Story)-[r]->(e:Place) WHERE e.legacy_id IN $ids AND r.name IS NOT NULL
RETURN DISTINCT e.id AS id, 'Place' AS label, r.name AS name, e.legacy_id AS legacy, true AS alias
UNION ALL
MATCH (:Story)-[r]->(e:Event) WHERE e.legacy_id IN $ids AND r.name IS NOT NULL
RETURN DISTINCT e.id AS id, 'Event' AS label, r.name AS name, e.legacy_id AS legacy, true AS alias
UNION ALL
MATCH (:Story)-[r]->(e:Object) WHERE e.legacy_id IN $ids AND r.name IS NOT NULL
RETURN DISTINCT e.id AS id, 'Object' AS label, r.name AS name, e.legacy_id AS legacy, true AS alias
"""


def entity_entries(rows: Sequence[Mapping[str, Any]]) -> list[GazetteerEntry]:
    """One gazetteer entry per entity of `ENTITY_NAMES`: its name, and the names stories wrote
    on their edge to it as aliases."""
    names: dict[tuple[str, str], str] = {}
    written: dict[tuple[str, str], list[str]] = {}
    legacy: dict[tuple[str, str], str] = {}
    for r in rows:
        if not r.get("name") or one_of_many(str(r["label"]), str(r["name"])):
            continue  # "the wedding" of one story names nothing a question can (decision 0041)
        key = (str(r["id"]), str(r["label"]))
        legacy.setdefault(key, str(r.get("legacy") or ""))
        if r.get("alias"):
            written.setdefault(key, []).append(str(r["name"]))
        else:
            names[key] = str(r["name"])
    return [
        GazetteerEntry(
            node_id,
            cast(Label, label),
            name,
            tuple(dict.fromkeys(a for a in written.get((node_id, label), ()) if a != name)),
            legacy[(node_id, label)],
        )
        for (node_id, label), name in names.items()
    ]


#: the legacies whose entity names one query lists
NamesKey = tuple[str, ...]


class LateNames:
    """Entity-name queries that outlived the gazetteer's budget, kept per container: while one
    runs no other is sent for the same legacies, and the rows it brings after its budget are
    the next build's. A legacy whose names always take longer than the budget then has them
    from its second request on, instead of every request waiting and going without."""

    def __init__(self, max_age_s: float = 300.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_age_s, self.clock = max_age_s, clock
        self._lock = threading.Lock()
        self._running: set[NamesKey] = set()
        self._arrived: dict[NamesKey, tuple[float, list[dict[str, Any]]]] = {}

    def run(
        self, key: NamesKey, seconds: float, query: Callable[[], list[dict[str, Any]]]
    ) -> list[dict[str, Any]]:
        """Rows that arrived late for `key` (once, within `max_age_s`), else `query()` within
        `seconds`; DeadlineExceeded past them, or at once while an earlier query for `key` runs."""
        with self._lock:
            arrived = self._arrived.pop(key, None)
            if arrived is not None and self.clock() - arrived[0] < self.max_age_s:
                return arrived[1]
            if key in self._running:
                raise DeadlineExceeded("entity names: an earlier query is still running")
            self._running.add(key)

        def tracked() -> list[dict[str, Any]]:
            try:
                return query()
            finally:
                with self._lock:
                    self._running.discard(key)

        def keep(rows: list[dict[str, Any]]) -> None:
            with self._lock:
                self._arrived[key] = (self.clock(), rows)

        return call_within(seconds, tracked, name="entity names", late=keep)


class GazetteerCache:
    """Per-container gazetteers by legacy, refreshed after `ttl_s` seconds, and the entity-name
    queries that outlived their budget (`late_names`)."""

    def __init__(self, ttl_s: float = 300.0, clock: Callable[[], float] = time.monotonic):
        self.ttl_s = ttl_s
        self.clock = clock
        self.late_names = LateNames(ttl_s, clock)
        self._items: dict[UUID, tuple[float, Gazetteer, str]] = {}

    def get(
        self,
        legacy_id: UUID,
        build: Callable[[], tuple[Gazetteer, str]],
        keep: Callable[[], bool] = lambda: True,
    ) -> tuple[Gazetteer, str]:
        """The cached gazetteer, or `build()`'s, kept for `ttl_s` unless `keep()` says it is a
        degraded one (built without the graph's names) to be rebuilt by the next request."""
        hit = self._items.get(legacy_id)
        if hit and self.clock() - hit[0] < self.ttl_s:
            return hit[1], hit[2]
        gazetteer, subject = build()
        if keep():
            self._items[legacy_id] = (self.clock(), gazetteer, subject)
        return gazetteer, subject


#: how long the graph may take to list entity names before the gazetteer does without them
GRAPH_NAMES_BUDGET_S = 0.3


def build_gazetteer(
    legacy_id: UUID,
    stories: StoryStore,
    graph: GraphStore | None,
    *,
    degraded: list[str] | None = None,
    late: LateNames | None = None,
) -> tuple[Gazetteer, str]:
    """Names of the legacy's (and actively linked legacies') persons and graph entities. When
    the graph fails or takes longer than `GRAPH_NAMES_BUDGET_S`, persons only (the reason is
    appended to `degraded`); with `late`, names that arrive after the budget are kept for the
    next build."""
    legacy = stories.get_legacy(legacy_id)
    ids = [legacy_id, *linked_legacies(stories, legacy_id)]
    persons = stories.persons_of(ids)
    linked_subjects = set(subjects_of(stories, ids[1:]))
    # gender from the records: kin words of the known relationships, aliases such as "Aunt Lucy"
    genders = gender_evidence(persons, stories.relationships_of([p.id for p in persons])) if persons else {}
    entries = [
        GazetteerEntry(
            str(p.id),
            "Person",
            p.name,
            tuple(p.aliases),
            str(p.legacy_id),
            linked_subject=p.id in linked_subjects,
            gender=genders.get(p.id),
        )
        for p in persons
    ]
    if graph is not None:
        try:
            names = {"ids": [str(i) for i in ids]}
            rows = (late or LateNames()).run(
                tuple(names["ids"]), GRAPH_NAMES_BUDGET_S, lambda: graph.run(ENTITY_NAMES, names)
            )
            entries += entity_entries(rows)
        except Exception as exc:  # the graph is optional here; persons still match
            log.warning("gazetteer_graph_unavailable: %s", type(exc).__name__)
            if degraded is not None:
                degraded.append(type(exc).__name__)
    subject = stories.get_person(legacy.subject_person_id) if legacy else None
    return _with_story_genders(Gazetteer.build(entries), stories, ids), subject.name if subject else ""


def _with_story_genders(gazetteer: Gazetteer, stories: StoryStore, legacy_ids: list[UUID]) -> Gazetteer:
    """Persons the records give no gender get the one the legacies' public stories use for them
    ("Marco left Naples in 1960. He ..."); stories that disagree give none."""
    genderless = {e.node_id for e in gazetteer.entries if e.label == "Person" and not e.gender}
    if not genderless:
        return gazetteer
    # a story that cannot name one of them says nothing that counts: skipped without tokenizing
    pattern = words_pattern(gazetteer.first_words(genderless))
    seen: dict[str, set[str]] = {}
    for legacy_id in legacy_ids:
        for story in stories.stories_of(legacy_id):
            if story.visibility is Visibility.PUBLIC and may_name(story.content, pattern):
                said_gender(story.content, gazetteer.find(story.content), seen, genderless)
    if not seen:
        return gazetteer
    said = {k: next(iter(v)) for k, v in seen.items() if len(v) == 1}
    return Gazetteer.build(
        e._replace(gender=said.get(e.node_id)) if e.label == "Person" and e.gender is None else e
        for e in gazetteer.entries
    )


# -- the classifier port ----------------------------------------------------------------------
@dataclass(frozen=True)
class IntentRequest:
    """What a classifier is given for one message."""

    query: str
    history: tuple[Message, ...]
    gazetteer: Gazetteer
    subject_name: str = ""
    legacy_id: str = ""
    #: names of the legacy's graph the gazetteer found in the message (hints for an LLM)
    matches: tuple[EntityMatch, ...] = ()
    #: the asker's kin word names a linked legacy's subject ("my mother"): the rules' evidence and
    #: the learned classifier's `linked` feature, as a linked subject's name is
    linked_kin: bool = False


def analysed(request: IntentRequest) -> tuple[QueryIntent, dict[Intent, float]]:
    """The rule-based answer for the request and each intent's score (`intent.analyse`)."""
    return analyse(
        request.query,
        request.history,
        request.gazetteer,
        request.subject_name,
        request.legacy_id,
        linked_kin=request.linked_kin,
    )


class IntentClassifier(Protocol):
    @property
    def budget_s(self) -> float | None:
        """Seconds a call may take before the rule-based result is used (INTENT_BUDGET_MS, set
        by the factory); None: no deadline (the rule-based classifier)."""
        ...

    def classify(self, request: IntentRequest) -> QueryIntent: ...


class RuleBasedIntentClassifier:
    """The local default: gazetteer matches, cue words, time expressions, no model."""

    version = "rules"
    budget_s: float | None = None

    def classify(self, request: IntentRequest) -> QueryIntent:
        return analysed(request)[0]


RULES = RuleBasedIntentClassifier()

#: how long embedding the message for the learned classifier may take
LOCAL_BUDGET_S = 0.3


class EmbeddingIntentClassifier:
    """The learned classifier (`domain.intent_model`) over the query's embedding, its words, the
    gazetteer's features and the rule-based scores of each intent; the rule-based analysis
    supplies the matches and entities (names, time expressions, resolved pronouns) and those
    scores, never the intent itself."""

    version = "embedding"
    #: no deadline from analyse_intent: it bounds its own embedding call (LOCAL_BUDGET_S)
    budget_s: float | None = None

    def __init__(self, embedder: Embedder, models: IntentModelCache | None = None):
        from heirloom.domain.intent_model import IntentModelCache

        self.embedder = embedder
        self.models = models or IntentModelCache()

    def classify(self, request: IntentRequest) -> QueryIntent:
        started = time.perf_counter()
        base, scores = analysed(request)
        model = self.models.get(self.embedder)  # trained on first use unless shipped (decision 0008)
        vector = call_within(
            LOCAL_BUDGET_S, lambda: self.embedder.embed([request.query])[0], name="intent embedding"
        )
        feats = model_features(
            request.query,
            request.history,
            request.gazetteer,
            request.subject_name,
            request.legacy_id,
            linked=request.linked_kin,
            scores=scores,
        )
        # another legacy's account needs a linked legacy in reach (as for the rules)
        alone = not links_in_reach(request.gazetteer, request.legacy_id, request.linked_kin)
        exclude = {Intent.CROSS_LEGACY} if alone else set()
        masked = name_masked(request.query, request.gazetteer, request.subject_name)
        intent, probability = model.predict(vector, feats, request.query, exclude=exclude, masked=masked)
        return base.model_copy(
            update={
                "intent": intent,
                "confidence": round(probability, 3),
                "source": "model",
                "latency_ms": round((time.perf_counter() - started) * 1000, 3),
            }
        )

    def warm(self) -> None:
        """Read the weights and run the embedder once, so that the first question's embedding
        is not the model's first run."""
        self.models.get(self.embedder)
        self.embedder.embed(["warm"])


class WarmingIntentClassifier:
    """A classifier whose construction loads a model (the local embedder for the learned one):
    built and warmed in the background from the first call, the rules answering until it is
    ready, so a cold container never waits for the model inside a request (decision 0034). A
    build that fails leaves the rules answering, logged once."""

    version = "warming"
    budget_s: float | None = None

    def __init__(self, build: Callable[[], IntentClassifier], fallback: IntentClassifier = RULES):
        self._build = build
        self._fallback = fallback
        self._ready: IntentClassifier | None = None
        self._started = False
        self._lock = threading.Lock()
        self.done = threading.Event()

    def classify(self, request: IntentRequest) -> QueryIntent:
        ready = self._ready
        if ready is not None:
            return ready.classify(request)
        self._start()
        return self._fallback.classify(request)

    def wait_ready(self, timeout_s: float) -> bool:
        """Start the build if it has not started and wait for it (up to `timeout_s`): whether the
        built classifier answers now."""
        self._start()
        self.done.wait(timeout_s)
        return self._ready is not None

    def _start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
        threading.Thread(target=self._run, name="heirloom-intent-warm", daemon=True).start()

    def _run(self) -> None:
        try:
            classifier = self._build()
            warm = getattr(classifier, "warm", None)
            if callable(warm):
                warm()
            self._ready = classifier
        except Exception as exc:  # the rules keep answering; the next container tries again
            log.warning("intent_classifier_unavailable: %s", type(exc).__name__)
        finally:
            self.done.set()


def _names(matches: tuple[EntityMatch, ...], *labels: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(m.name for m in matches if m.label in labels))


def classification_intent(answer: IntentClassification, request: IntentRequest) -> QueryIntent:
    """An LLM's answer as a `QueryIntent`: names it lists that the gazetteer knows become matches
    (graph node ids) under their known spelling; the legacy's subject is never one."""
    subject = request.subject_name.casefold()
    matches: list[EntityMatch] = []

    def resolve(names: tuple[str, ...], label: str) -> tuple[str, ...]:
        out: list[str] = []
        for name in names:
            hits = [m for m in request.gazetteer.match(name) if m.label == label]
            if not hits and name.casefold() != subject:
                out.append(name)
            for hit in hits:
                if hit.name.casefold() != subject:
                    matches.append(hit)
                    out.append(hit.name)
        return tuple(dict.fromkeys(out))

    e = answer.entities
    entities = QueryEntities(
        people=resolve(e.people, "Person"),
        places=resolve(e.places, "Place"),
        time_periods=e.time_periods,
        events=resolve(e.events, "Event"),
        objects=resolve(e.objects, "Object"),
    )
    return QueryIntent(
        intent=answer.intent,
        entities=entities,
        matches=tuple(dict.fromkeys(matches))[:MAX_MATCHES],
        confidence=round(answer.confidence, 3),
        source="llm",
    )


def _merge(rules: QueryIntent, model: QueryIntent) -> QueryIntent:
    """The model's intent and confidence; the gazetteer's matches first, then the model's; the
    entity names of both."""

    def union(*parts: tuple[str, ...]) -> tuple[str, ...]:
        seen: dict[str, str] = {}
        for name in (n for part in parts for n in part):
            seen.setdefault(name.casefold(), name)
        return tuple(seen.values())

    have = {m.node_id for m in rules.matches}
    matches = (*rules.matches, *(m for m in model.matches if m.node_id not in have))[:MAX_MATCHES]
    r, m = rules.entities, model.entities
    return model.model_copy(
        update={
            "notes": (*rules.notes, *model.notes),
            "matches": matches,
            "entities": QueryEntities(
                people=union(_names(matches, "Person"), r.people, m.people),
                places=union(_names(matches, "Place"), r.places, m.places),
                time_periods=union(r.time_periods, m.time_periods),
                events=union(_names(matches, "Event"), r.events, m.events),
                objects=union(_names(matches, "Object"), r.objects, m.objects),
            ),
        }
    )


def local_intent(request: IntentRequest, local: IntentClassifier = RULES) -> QueryIntent:
    """The local classifier's answer; if it fails (its embedder unavailable, throttled or slower
    than `LOCAL_BUDGET_S`), the rule-based one's."""
    if isinstance(local, RuleBasedIntentClassifier):
        return local.classify(request)
    try:
        return local.classify(request)
    except Exception as exc:  # the rule-based answer needs no model
        log.warning("intent_local_fallback", extra={"error": type(exc).__name__})
        return RULES.classify(request)


def analyse_intent(
    request: IntentRequest, classifier: IntentClassifier = RULES, local: IntentClassifier = RULES
) -> QueryIntent:
    """Known-entity matching and the local classifier first (`local`: the learned one over the
    query's embedding, or the rule-based one); then, when `classifier` is another one, that
    classifier with the matches as hints. Its failure (throttling, timeout, malformed output, no
    answer within its `budget_s`, anything) or a confidence below 0.5 keeps the local result."""
    base = local_intent(request, local)
    if classifier is local or isinstance(classifier, RuleBasedIntentClassifier):
        return base
    try:
        hinted = replace(request, matches=base.matches)
        # a slow model must not hold the request past the intent budget (docs/design.md §10)
        budget = classifier.budget_s
        model = (
            classifier.classify(hinted)
            if budget is None
            else call_within(budget, lambda: classifier.classify(hinted), name="intent model")
        )
    except Exception as exc:  # the local answer is always there to fall back on
        log.warning(
            "intent_model_fallback",
            extra={"error": type(exc).__name__, "code": str(getattr(exc, "code", ""))},
        )
        return base
    if model.confidence < MIN_CONFIDENCE:
        log.info("intent_model_unsure", extra={"confidence": model.confidence})
        return base
    return _merge(base, model)
