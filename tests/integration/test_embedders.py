"""The local ONNX MiniLM embedder (weights from a pinned registry package) and the fake."""

import math

import pytest

from heirloom.adapters.embedders import HashingEmbedder, OnnxMiniLmEmbedder


@pytest.fixture(scope="module")
def minilm():
    return OnnxMiniLmEmbedder()


def cos(a, b):
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_minilm_vectors_are_384_dim_unit_length_and_semantic(minilm):
    a, b, c = minilm.embed(
        ["My grandmother baked bread every Sunday.", "Grandma made loaves of bread on Sundays.",
         "The quarterly tax filing deadline moved."]
    )  # fmt: skip
    assert len(a) == 384 and math.isclose(math.sqrt(cos(a, a)), 1.0, rel_tol=1e-4)
    assert cos(a, b) > 0.6 > cos(a, c)


def test_minilm_batches_match_single_calls(minilm):
    texts = [f"story number {i} about the lake" for i in range(40)]
    batch = minilm.embed(texts)
    assert cos(batch[37], minilm.embed([texts[37]])[0]) > 0.999


def test_hashing_embedder_is_deterministic_and_never_zero():
    e = HashingEmbedder(64)
    assert e.embed(["the lake house"]) == e.embed(["the lake house"])
    (empty,) = e.embed(["..."])
    assert math.isclose(cos(empty, empty), 1.0)
