"""Paragraph chunking under a token limit, cut at sentence boundaries."""

import pytest

from heirloom.adapters.tokenizer import TiktokenTokenizer
from heirloom.domain.chunking import chunk_story, content_hash, is_transcript, paragraphs


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


def window(words: int):
    """An embedder window of `words` words (what `Embedder.fits` answers)."""
    return lambda text: len(text.split()) <= words


def test_a_paragraph_the_embedder_would_cut_is_split_at_its_lines_first(tok):
    turns = [f"Bea: turn {i} about the allotment and the bell, the cat and the choir." for i in range(12)]
    transcript = "\n".join(turns)  # one paragraph: the turns of a call, one per line
    assert [c.text for c in chunk_story(transcript, tok)] == [" ".join(transcript.split())]
    chunks = chunk_story(transcript, tok, fits=window(45))
    assert all(len(c.text.split()) <= 45 for c in chunks)
    # whole turns packed in order, none cut or lost
    assert [c.text for c in chunks] == ["\n".join(turns[i : i + 3]) for i in range(0, 12, 3)]


def test_a_line_too_long_for_the_window_splits_at_sentences_then_by_tokens(tok):
    sentence = "The mill whistle blew at seven and everyone on the hill went down to work."
    chunks = chunk_story(f"{sentence} {sentence} {sentence}\nshort line", tok, fits=window(20))
    assert [c.text for c in chunks] == [sentence, sentence, f"{sentence}\nshort line"]
    cut = chunk_story("word " * 300, tok, fits=window(100))
    assert len(cut) >= 3 and all(len(c.text.split()) <= 100 for c in cut)
    assert sum(len(c.text.split()) for c in cut) == 300


def test_paragraphs_that_fit_are_chunked_as_before(tok):
    content = "First paragraph here.\n\nSecond one,\nwrapped."
    assert chunk_story(content, tok, fits=window(10)) == chunk_story(content, tok)


def test_a_transcripts_turns_are_packed_into_chunks_that_fit(tok):
    turns = [
        "Bea: Did you look at the stairs again?",
        "Odile: I counted them this morning. Twenty-six.",
        "**Luc:** She should sell the house.",
        "[Bea]: He's not wrong, Odie.",
        "Dr. Anne-Marie Roy: The knee will need an operation.",
    ]
    chunks = chunk_story("\n\n".join(turns), tok, fits=window(16))
    # a turn alone rarely says what it answers: neighbours share a chunk, one turn a line
    assert [c.text.split("\n") for c in chunks] == [turns[:2], turns[2:4], turns[4:]]
    assert [c.text for c in chunk_story("\n\n".join(turns), tok)] == ["\n".join(turns)]


def test_prose_is_not_a_transcript():
    prose = ["The day we met: a Tuesday.", "It rained.", "Note: she kept the ticket.", "We married in June."]
    assert not is_transcript(prose)
    assert is_transcript(["Bea: hello", "Odile: hello.", "(the line crackles)"])
    assert not is_transcript(["Bea: hello"])  # one turn is a quotation, not a transcript
    # a time or a note beside the name, a list or quote mark before it
    assert is_transcript(["Bea (10:05): hello", "Luc [on the phone]: hi", "- Odile: yes", "> Bea: no"])
