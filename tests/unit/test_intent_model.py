"""The learned intent classifier: its data file, training, the per-model cache, and the
IntentAnalysis step using it (with the hashing embedder; the MiniLM accuracy test is in
tests/integration/test_intent_model.py)."""

import json
import threading
from collections import Counter
from uuid import uuid4

import pytest

from heirloom.adapters.embedders import HashingEmbedder
from heirloom.contracts.context import ContextRequest, Intent, Message, Persona, QueryIntent
from heirloom.domain import intent_model
from heirloom.domain.breaker import CircuitBreaker, InMemoryBreakerStore
from heirloom.domain.gazetteer import Gazetteer, GazetteerEntry
from heirloom.domain.intent import FEATURE_NAMES, analyse, entity_features, model_features, name_masked
from heirloom.domain.intent_model import (
    IntentModel,
    IntentModelCache,
    accuracy,
    load_examples,
    ngrams,
    train,
    training_gazetteer,
)
from heirloom.domain.intent_step import (
    RULES,
    EmbeddingIntentClassifier,
    GazetteerCache,
    IntentRequest,
    WarmingIntentClassifier,
    analyse_intent,
)
from heirloom.steps.intent_analysis import intent_analysis_step


class CountingEmbedder(HashingEmbedder):
    def __init__(self, model_id: str = "hashing-bow") -> None:
        super().__init__()
        self.model_id = model_id
        self.calls = 0

    def embed(self, texts):
        self.calls += 1
        return super().embed(texts)


class BrokenEmbedder(HashingEmbedder):
    def embed(self, texts):
        raise RuntimeError("embedder throttled")


def test_the_intent_set_covers_six_intents_in_both_splits_with_kin_words_of_several_languages():
    examples = load_examples()
    assert len(examples) >= 1000
    assert len({e.text.casefold() for e in examples}) == len(examples)
    per = Counter((e.intent, e.split) for e in examples)
    for intent in Intent:
        assert per[intent, "train"] >= 90 and per[intent, "heldout"] >= 20, intent
    words = {w.strip("?,.'s").casefold() for e in examples for w in e.text.split()}
    # Portuguese, French, Dutch/German, Italian, Spanish, Polish, Norwegian, Arabic, Russian
    assert {"pai", "avó", "tonton", "mémé", "opa", "oma", "nonna", "abuela", "babcia"} <= words
    assert {"mormor", "farfar", "teta", "jiddo", "babushka", "zia", "oom"} <= words
    # phrased relative to the one asking, too ("my brother", "Dad", "Mãe")
    asker = {"my", "dad", "mum", "mom", "mam", "pai", "mãe", "papa"}
    assert sum(bool(asker & {w.strip("?,.'s").casefold() for w in e.text.split()}) for e in examples) >= 80


def test_the_intent_set_holds_no_evaluation_question():
    """Written for the project: no query of a dataset we measure on, not even re-cased."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    files = [root / "../shared/eval/dev-legacy/queries.jsonl", *root.glob("examples/*/queries.jsonl")]
    queries = {
        json.loads(line)["query"].casefold().strip()
        for file in files
        if file.is_file()
        for line in file.read_text().splitlines()
        if line.strip()
    }
    assert queries
    assert not queries & {e.text.casefold().strip() for e in load_examples()}


def test_a_malformed_line_names_the_file_and_line(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text('{"text": "Where?", "intent": "spatial"}\n{"text": "x", "intent": "gossip"}\n')
    with pytest.raises(ValueError, match=r"train.jsonl:2"):
        load_examples(path)


def test_the_training_names_give_the_features():
    gaz = training_gazetteer()
    feats = dict(
        zip(FEATURE_NAMES, entity_features("When did Opa leave Lisbon in 1962?", gaz, "", "primary"))
    )
    assert feats == {"person": 1.0, "place": 1.0, "thing": 0.0, "linked": 0.0, "time": 1.0}
    linked = entity_features("What did Uncle Jim say about the quilt?", gaz, "", "primary")
    assert dict(zip(FEATURE_NAMES, linked)) == {
        "person": 1.0,
        "place": 0.0,
        "thing": 1.0,
        "linked": 1.0,
        "time": 0.0,
    }


def test_the_rules_evidence_enters_the_model_as_features():
    """The rule-based classifier's score for each intent (noisy-OR of its cues, question heads
    and names) is one feature per intent, after the named-entity ones: rules as features only."""
    gaz = training_gazetteer()
    query = "Where did Opa live after he left Lisbon?"
    feats = dict(zip(FEATURE_NAMES, model_features(query, (), gaz, "", "primary"), strict=True))
    answer, scores = analyse(query, (), gaz, "", "primary")
    assert feats["person"] == 1.0 and feats["place"] == 1.0
    assert {f"rules_{i.value}": feats[f"rules_{i.value}"] for i in Intent} == {
        f"rules_{i.value}": scores[i] for i in Intent
    }
    assert answer.intent is Intent.SPATIAL and feats["rules_spatial"] > 0.5 > feats["rules_general"]
    assert feats["rules_temporal"] == 0.0


def test_the_rules_evidence_reads_the_conversation():
    """ "there" resolved to the place the last message named is spatial evidence for the model too."""
    gaz = training_gazetteer()
    history = (Message(role="user", content="Oma grew up in Rotterdam."),)
    alone = dict(zip(FEATURE_NAMES, model_features("What was it like there?", (), gaz, "", "primary")))
    after = dict(zip(FEATURE_NAMES, model_features("What was it like there?", history, gaz, "", "primary")))
    assert after["rules_spatial"] > alone["rules_spatial"]


def test_the_model_trains_from_the_data_file_and_fits_its_training_split():
    embedder = HashingEmbedder()
    model = train(embedder)
    assert model.model_id == "hashing-bow" and len(model.weights) == len(Intent)
    # 384 embedding dimensions + the features + one per word or word pair of the training split
    # (as written and with the training names masked) + a bias
    trained = [e for e in load_examples() if e.split == "train"]
    names = training_gazetteer()
    assert set(model.vocabulary) == {
        g for e in trained for g in ngrams(e.text) | ngrams(name_masked(e.text, names))
    }
    assert "someone" in model.vocabulary and "that place" in model.vocabulary
    assert all(len(row) == 384 + len(FEATURE_NAMES) + len(model.vocabulary) + 1 for row in model.weights)
    assert accuracy(model, embedder, trained) > 0.9


def test_the_question_words_and_pairs_are_what_the_model_reads():
    assert ngrams("Where did Opa’s boat go?") == {
        "where", "did", "opa's", "boat", "go", "^ where", "where did", "did opa's", "opa's boat", "boat go",
    }  # fmt: skip
    assert ngrams("") == set()


def test_the_words_of_a_question_move_the_answer():
    """One word's weight, nothing else: the n-grams are part of the model, not a side table."""
    intents = list(Intent)
    features = [0.0] * len(FEATURE_NAMES)
    # 1 embedding dimension, the features, 2 n-grams, a bias
    rows = [[0.0] * (1 + len(FEATURE_NAMES) + 2 + 1) for _ in intents]
    rows[intents.index(Intent.TEMPORAL)][1 + len(FEATURE_NAMES)] = 5.0
    rows[intents.index(Intent.SPATIAL)][1 + len(FEATURE_NAMES) + 1] = 5.0
    model = IntentModel("m", "", tuple(tuple(r) for r in rows), ("when", "where"))
    assert model.predict([0.0], features, "When was that?")[0] is Intent.TEMPORAL
    assert model.predict([0.0], features, "Where was that?")[0] is Intent.SPATIAL
    assert IntentModel.from_json(model.to_json()) == model


def test_training_learns_from_the_words_alone_when_the_embedding_says_nothing():
    """The sparse n-gram columns of `fit` line up with the ones `predict` reads."""
    texts = ["When did they marry?", "When was he born?", "Where did they live?", "Where is she buried?"]
    labels = [Intent.TEMPORAL, Intent.TEMPORAL, Intent.SPATIAL, Intent.SPATIAL]
    vocabulary = intent_model.vocabulary_of(texts)
    none = [0.0] * len(FEATURE_NAMES)
    weights = intent_model.fit([[0.0, 0.0]] * 4, [none] * 4, labels, texts, vocabulary)
    model = IntentModel("m", "", tuple(tuple(r) for r in weights), vocabulary)
    assert all(len(row) == model.width(2) for row in model.weights)
    when, where = (2 + len(FEATURE_NAMES) + vocabulary.index(w) for w in ("when", "where"))
    temporal, spatial = (
        weights[list(Intent).index(Intent.TEMPORAL)],
        weights[list(Intent).index(Intent.SPATIAL)],
    )
    assert temporal[when] > spatial[when] and spatial[where] > temporal[where]
    assert model.predict([0.0, 0.0], none, "When did the war end?")[0] is Intent.TEMPORAL
    assert model.predict([0.0, 0.0], none, "Where did the war end?")[0] is Intent.SPATIAL


def _names() -> Gazetteer:
    return Gazetteer.build(
        [
            GazetteerEntry("p1", "Person", "Marguerite"),
            GazetteerEntry("p2", "Person", "Tonton Rémy"),
            GazetteerEntry("p3", "Person", "Bea"),
            GazetteerEntry("l1", "Place", "Lisbon"),
            GazetteerEntry("l2", "Place", "Porto"),
            GazetteerEntry("o1", "Object", "quilt"),
        ]
    )


def test_known_persons_and_places_read_as_neutral_words_the_subject_and_things_as_written():
    names = _names()
    assert (
        name_masked("Did Tonton Rémy's wife keep Marguerite's quilt in Lisbon?", names)
        == "Did someone wife keep someone quilt in that place?"
    )
    assert (
        name_masked("What did Marguerite give Bea?", names, "Marguerite")
        == "What did Marguerite give someone?"
    )
    assert name_masked("Tell me about the war.", names) == "Tell me about the war."
    assert name_masked("Was the cottage in the Porto?", names) == "Was the cottage in that place?"
    # the model reads both forms' words
    masked = name_masked("Who visited Porto?", names)
    assert intent_model.model_grams("Who visited Porto?", masked) == ngrams("Who visited Porto?") | ngrams(
        masked
    )


def test_a_question_about_a_name_never_seen_in_training_reads_as_its_kind():
    """Trained on two names, asked about two others: only the masked words tell a person from a
    place, so the model answers by the kind of name, not by the name."""
    names = _names()
    texts = ["Tell me about Marguerite.", "Tell me about Lisbon."]
    masked = [name_masked(t, names) for t in texts]
    labels = [Intent.RELATIONAL, Intent.SPATIAL]
    vocabulary = intent_model.vocabulary_of(texts, masked)
    none = [0.0] * len(FEATURE_NAMES)
    weights = intent_model.fit([[0.0]] * 2, [none] * 2, labels, texts, vocabulary, masked)
    model = IntentModel("m", "", tuple(tuple(r) for r in weights), vocabulary)
    for question, expected in (
        ("Tell me about Bea.", Intent.RELATIONAL),
        ("Tell me about Porto.", Intent.SPATIAL),
    ):
        assert model.predict([0.0], none, question, masked=name_masked(question, names))[0] is expected


@pytest.fixture
def small_set(tmp_path):
    """Two questions per intent: the cache tests train several times."""
    rows = [(e.text, e.intent.value) for e in load_examples() if e.split == "train"]
    picked = [r for intent in Intent for r in [r for r in rows if r[1] == intent.value][:2]]
    path = tmp_path / "small.jsonl"
    path.write_text("".join(json.dumps({"text": t, "intent": i}) + "\n" for t, i in picked))
    return path


def test_one_model_per_embedder_model_id_trained_once(small_set):
    cache = IntentModelCache(path=small_set)
    a, b = CountingEmbedder("model-a"), CountingEmbedder("model-b")
    first = cache.get(a)
    assert cache.get(a) is first and a.calls == 1
    assert cache.get(b).model_id == "model-b" and b.calls == 1


def test_the_weights_are_kept_per_model_and_data_in_a_directory(tmp_path, small_set):
    cache_dir = tmp_path / "cache"
    model = IntentModelCache(cache_dir, small_set).get(CountingEmbedder())
    [file] = cache_dir.glob("intent-hashing-bow-384-*.json")
    again = CountingEmbedder()
    assert IntentModelCache(cache_dir, small_set).get(again) == model and again.calls == 0
    # a file of another data set (or a damaged one) is retrained over
    file.write_text(json.dumps({**json.loads(file.read_text()), "data_sha256": "other"}))
    retrained = CountingEmbedder()
    assert IntentModelCache(cache_dir, small_set).get(retrained) == model and retrained.calls == 1
    file.write_text("{not json")
    assert IntentModelCache(cache_dir, small_set).get(CountingEmbedder()) == model


def test_a_read_only_cache_directory_still_serves_from_memory(tmp_path, small_set):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert IntentModelCache(blocker / "sub", small_set).get(HashingEmbedder()).model_id == "hashing-bow"


# -- the step ---------------------------------------------------------------------------------
def gazetteer() -> Gazetteer:
    return Gazetteer.build(
        [
            GazetteerEntry("p1", "Person", "Ada Marsh"),
            GazetteerEntry("p2", "Person", "Otto Marsh", ("Uncle Otto",)),
            GazetteerEntry("l1", "Place", "Lisbon"),
        ]
    )


def request(query: str) -> IntentRequest:
    return IntentRequest(query, (), gazetteer(), "Ada Marsh", "primary")


@pytest.fixture(scope="module")
def classifier() -> EmbeddingIntentClassifier:
    embedder = HashingEmbedder()
    models = IntentModelCache()
    models.get(embedder)  # trained before the first request (as a layer's shipped weights are)
    return EmbeddingIntentClassifier(embedder, models)


def test_the_learned_classifier_answers_with_the_gazetteers_entities(classifier):
    result = analyse_intent(request("When did Uncle Otto move to Lisbon in 1962?"), RULES, classifier)
    assert result.source == "model" and result.intent in set(Intent)
    assert 0.0 < result.confidence <= 1.0
    assert result.entities.people == ("Otto Marsh",) and result.entities.places == ("Lisbon",)
    assert result.entities.time_periods == ("1962",)
    assert {m.node_id for m in result.matches} == {"p2", "l1"}


def test_a_slow_embedder_answers_from_the_rules(classifier):
    release = threading.Event()

    class Stuck(HashingEmbedder):
        def embed(self, texts):
            release.wait(10)
            return super().embed(texts)

    stuck = EmbeddingIntentClassifier(Stuck(), classifier.models)  # same model id: already trained
    try:
        result = analyse_intent(request("Where did Uncle Otto live?"), RULES, stuck)
    finally:
        release.set()
    assert result.source == "rules" and result.intent is Intent.SPATIAL


def test_a_classifier_still_being_built_leaves_the_rules_answering_then_takes_over(classifier):
    """A cold container never waits for the model (decision 0034 addendum): the first call starts
    the build in the background and the rules answer it; once built, the learned one answers."""
    release = threading.Event()
    builds = []

    def build():
        builds.append(1)
        release.wait(10)
        return classifier

    warming = WarmingIntentClassifier(build)
    first = analyse_intent(request("Where did Uncle Otto live?"), warming, warming)
    again = analyse_intent(request("Where did Uncle Otto live?"), warming, warming)
    assert (first.source, again.source, first.intent) == ("rules", "rules", Intent.SPATIAL)
    release.set()
    assert warming.done.wait(10)
    assert analyse_intent(request("Where did Uncle Otto live?"), warming, warming).source == "model"
    assert builds == [1]  # one build, however many calls came while it ran


def test_a_classifier_whose_build_fails_leaves_the_rules_answering(caplog):
    def build():
        raise RuntimeError("model file missing")

    warming = WarmingIntentClassifier(build)
    assert analyse_intent(request("Where did Uncle Otto live?"), warming, warming).source == "rules"
    assert warming.done.wait(10)
    assert analyse_intent(request("Where did Uncle Otto live?"), warming, warming).source == "rules"
    assert "intent_classifier_unavailable: RuntimeError" in caplog.text


def test_services_build_no_embedder_for_the_learned_classifier_until_its_first_call(monkeypatch):
    """INTENT_PROVIDER=auto with MiniLM: reading `Services.local_intent_classifier` loads no model
    (the old wiring built the embedder there, inside IntentAnalysis's first invocation)."""
    from heirloom.services import Services
    from heirloom.settings import settings_from_env

    services = Services(settings_from_env({"INTENT_PROVIDER": "auto"}))
    built = []
    monkeypatch.setattr(Services, "embedder", property(lambda self: built.append(1) or HashingEmbedder()))
    local = services.local_intent_classifier
    assert isinstance(local, WarmingIntentClassifier) and built == []


def test_an_embedder_of_another_dimension_gets_its_own_model(classifier):
    narrow = HashingEmbedder(64)
    model = classifier.models.get(narrow)
    assert all(len(row) == 64 + len(FEATURE_NAMES) + len(model.vocabulary) + 1 for row in model.weights)
    result = analyse_intent(
        request("Where did Uncle Otto live?"), RULES, EmbeddingIntentClassifier(narrow, classifier.models)
    )
    assert result.source == "model"


def test_a_model_answer_can_leave_an_intent_out():
    intents = list(Intent)
    rows = [[0.0] * (1 + len(FEATURE_NAMES) + 1) for _ in intents]
    rows[intents.index(Intent.CROSS_LEGACY)][-1] = 3.0  # bias
    rows[intents.index(Intent.TEMPORAL)][-1] = 1.0
    model = IntentModel("m", "", tuple(tuple(r) for r in rows))
    features = [0.0] * len(FEATURE_NAMES)
    assert model.predict([0.0], features)[0] is Intent.CROSS_LEGACY
    best, probability = model.predict([0.0], features, exclude={Intent.CROSS_LEGACY})
    probs = model.probabilities([0.0], features)
    assert best is Intent.TEMPORAL
    assert probability == pytest.approx(probs[Intent.TEMPORAL] / (1.0 - probs[Intent.CROSS_LEGACY]))


def test_the_learned_classifier_answers_cross_legacy_only_with_a_linked_legacy_in_reach():
    """A model sure of `cross_legacy` (its bias) answers otherwise for a legacy with no links."""
    intents = list(Intent)

    class Fixed:
        def get(self, embedder):
            rows = [[0.0] * (embedder.dimension + len(FEATURE_NAMES) + 1) for _ in intents]
            rows[intents.index(Intent.CROSS_LEGACY)][-1] = 3.0
            return IntentModel(embedder.model_id, "", tuple(tuple(r) for r in rows))

    classifier = EmbeddingIntentClassifier(HashingEmbedder(), Fixed())  # type: ignore[arg-type]
    alone = IntentRequest("What did he say about it?", (), gazetteer(), "Ada Marsh", "primary")
    assert classifier.classify(alone).intent is not Intent.CROSS_LEGACY
    linked = Gazetteer.build(
        [*gazetteer().entries, GazetteerEntry("p9", "Person", "Tom Reyes", (), "linked")]
    )
    across = IntentRequest("What did he say about it?", (), linked, "Ada Marsh", "primary")
    assert classifier.classify(across).intent is Intent.CROSS_LEGACY


def test_a_failing_embedder_falls_back_to_the_rules():
    broken = EmbeddingIntentClassifier(BrokenEmbedder(), IntentModelCache())
    result = analyse_intent(request("Where did Uncle Otto live?"), RULES, broken)
    assert result.source == "rules" and result.intent is Intent.SPATIAL


def test_the_auto_learned_classifier_falls_back_to_the_rules_when_its_embedder_fails():
    """INTENT_PROVIDER=auto with MiniLM's shipped weights: the learned classifier, and the rules'
    answer when embedding the message fails (decision 0034)."""
    from heirloom.adapters import factory
    from heirloom.settings import settings_from_env

    class BrokenMiniLm(BrokenEmbedder):
        model_id = "all-MiniLM-L6-v2-onnx-int8"

    settings = settings_from_env({"INTENT_PROVIDER": "auto"})
    local = factory.build_local_intent_classifier(settings, BrokenMiniLm())
    assert isinstance(local, EmbeddingIntentClassifier)
    result = analyse_intent(
        request("Where did Uncle Otto live?"), factory.build_intent_classifier(settings, local), local
    )
    assert result.source == "rules" and result.intent is Intent.SPATIAL


def test_a_failing_llm_falls_back_to_the_learned_classifier(classifier):
    class Throttled:
        def classify(self, request: IntentRequest) -> QueryIntent:
            raise RuntimeError("ThrottlingException")

    result = analyse_intent(request("Where did Uncle Otto live?"), Throttled(), classifier)
    assert result.source == "model"


def test_the_step_uses_the_learned_classifier_and_falls_back_to_it(classifier):
    legacy = uuid4()
    cache = GazetteerCache()
    cache.get(legacy, lambda: (gazetteer(), "Ada Marsh"))
    ctx = ContextRequest(
        legacy_id=legacy, user_id=uuid4(), persona=Persona.FAMILY, query="Where did Uncle Otto live?"
    )
    breaker = CircuitBreaker(InMemoryBreakerStore())
    alone = intent_analysis_step(ctx, None, None, breaker, cache, classifier)
    assert alone.source == "model" and alone.breaker_state == "closed"
    assert [m.node_id for m in alone.matches] == ["p2"]

    class Throttled:
        def classify(self, request: IntentRequest) -> QueryIntent:
            raise RuntimeError("ThrottlingException")

    behind = intent_analysis_step(ctx, None, None, breaker, cache, Throttled(), classifier)
    assert behind.model_copy(update={"latency_ms": 0}) == alone.model_copy(update={"latency_ms": 0})


def test_the_training_gazetteer_and_data_are_what_the_package_ships():
    assert intent_model.data_path().name == "train.jsonl"
    assert intent_model.data_path(intent_model.NAMES_RESOURCE).is_file()


def test_the_shipped_weights_are_of_the_current_data():
    """`heirloom intent-model --out config/intents/models` after editing the intent set: stale
    weights would be ignored and the model retrained inside a request."""
    shipped = sorted(intent_model.data_path(intent_model.SHIPPED_RESOURCE).glob("intent-*.json"))
    assert shipped
    for file in shipped:
        assert json.loads(file.read_text())["data_sha256"] == intent_model.data_digest(), file.name


@pytest.mark.parametrize("edited", ["intent_cues", "intent_model", "kin_lexicon"])
def test_the_weights_digest_covers_the_rules_and_the_feature_code(tmp_path, edited):
    """The rule-based scores are features, and intent_model builds the features and n-grams the
    weights are columns of: weights trained before a cue, a kin word, a weight or the n-grams
    changed are stale as surely as weights of an older intent set (decisions 0032, 0036)."""
    from pathlib import Path

    from heirloom.domain import intent_cues

    sources = {
        "intent_cues": Path(intent_cues.__file__),
        "intent_model": Path(intent_model.__file__),
        "kin_lexicon": intent_model.data_path(intent_model.KIN_LEXICON_RESOURCE),
    }
    copy = tmp_path / sources[edited].name
    copy.write_bytes(sources[edited].read_bytes())
    rules = tuple(copy if s == sources[edited] else s for s in intent_model.rule_sources())
    assert intent_model.data_digest(rules=rules) == intent_model.data_digest()
    copy.write_bytes(copy.read_bytes() + b"\n")
    assert intent_model.data_digest(rules=rules) != intent_model.data_digest()


def test_services_build_one_embedder_when_two_threads_ask_together(monkeypatch):
    """The warm-up thread and a handler may ask at once; Python 3.12's `cached_property` takes no
    lock, so the property's own body (called here directly, as 3.12 would) must build once."""
    import threading
    import time

    from heirloom.adapters import factory
    from heirloom.services import Services
    from heirloom.settings import settings_from_env

    services = Services(settings_from_env({}))
    builds = []

    def slow_build(settings):
        builds.append(1)
        time.sleep(0.05)  # long enough for the other thread to arrive meanwhile
        return HashingEmbedder()

    monkeypatch.setattr(factory, "build_embedder", slow_build)
    got = []
    threads = [
        threading.Thread(target=lambda: got.append(Services.embedder.func(services))) for _ in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert builds == [1] and len(got) == 2 and got[0] is got[1]
