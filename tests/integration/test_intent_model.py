"""The learned intent classifier with the local MiniLM embedder, on the project's own intent set
(config/intents/train.jsonl). Measured: held-out 0.884, 5-fold cross-validation on the training
split 0.859 (docs/evaluation.md; training is deterministic). The held-out floor is the issue's
acceptance (0.85), cross-validation's the measure minus a margin."""

import pytest

from heirloom.adapters.embedders import OnnxMiniLmEmbedder
from heirloom.contracts.context import Intent
from heirloom.domain.intent_model import (
    IntentModelCache,
    accuracy,
    cross_validate,
    load_examples,
    train,
    training_gazetteer,
)
from heirloom.domain.intent_step import EmbeddingIntentClassifier, IntentRequest

HELDOUT_MIN = 0.85
CROSS_VALIDATION_MIN = 0.82


@pytest.fixture(scope="module")
def minilm():
    return OnnxMiniLmEmbedder()


def test_trained_from_the_data_file_the_held_out_split_scores_above_the_measured_floor(minilm):
    model = train(minilm)
    heldout = [e for e in load_examples() if e.split == "heldout"]
    assert model.model_id == minilm.model_id
    assert accuracy(model, minilm, heldout) >= HELDOUT_MIN


def test_cross_validation_on_the_training_split(minilm):
    assert cross_validate(minilm) >= CROSS_VALIDATION_MIN


@pytest.mark.parametrize(
    ("question", "intent"),
    [
        # a known place as the setting of a question about a thing (was: temporal, spatial)
        ("Which tools did Vovô leave in the workshop when he retired?", Intent.ENTITY_FOCUSED),
        ("What was the name of the dog they had at the farmhouse?", Intent.ENTITY_FOCUSED),
        # a conversation's own calls as the time frame (was: cross_legacy)
        ("On the call after the storm, what did she say about the garden?", Intent.TEMPORAL),
    ],
)
def test_the_shipped_classifier_reads_what_a_question_asks_for_not_its_setting(minilm, question, intent):
    """Shapes the datasets showed the earlier model missing, in sentences written for this test."""
    classifier = EmbeddingIntentClassifier(minilm, IntentModelCache())
    answer = classifier.classify(IntentRequest(question, (), training_gazetteer(), "", "primary"))
    assert answer.intent is intent
