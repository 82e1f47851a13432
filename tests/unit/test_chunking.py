"""Paragraph chunking under a token limit, cut at sentence boundaries."""

import pytest

from heirloom.adapters.tokenizer import TiktokenTokenizer
from heirloom.domain.chunking import chunk_story, content_hash, paragraphs


@pytest.fixture(scope="module")
def tok():
    return TiktokenTokenizer()


def test_one_chunk_per_paragraph_with_token_counts(tok):
    chunks = chunk_story("First paragraph here.\n\nSecond one,\nwrapped.\n\n\n", tok)
    assert [c.text for c in chunks] == ["First paragraph here.", "Second one, wrapped."]
    assert [c.index for c in chunks] == [0, 1]
    assert all(c.token_count == tok.count(c.text) for c in chunks)


def test_long_paragraph_splits_at_sentence_boundaries(tok):
    sentence = "The mill whistle blew at seven and everyone on the hill went down to work. "
    chunks = chunk_story(sentence * 80, tok, max_tokens=100)
    assert len(chunks) > 1
    assert all(c.token_count <= 100 for c in chunks)
    assert all(c.text.endswith(".") for c in chunks)


def test_a_single_huge_sentence_is_cut_by_tokens(tok):
    chunks = chunk_story("word " * 1200, tok, max_tokens=500)
    assert len(chunks) >= 3 and all(c.token_count <= 500 for c in chunks)


def test_content_hash_changes_with_content_only():
    assert content_hash("a") == content_hash("a") != content_hash("b")
    assert paragraphs("  \n\n ") == []
