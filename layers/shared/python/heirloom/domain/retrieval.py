"""VectorSearch: embed the query, search the chunks the user may read by embedding and by
words (inverse-document-frequency weighted), and merge both lists. The legacy subject's names
are left out of both searches: every story is about the subject."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from uuid import UUID

from heirloom.contracts.context import ContextRequest
from heirloom.contracts.records import Legacy
from heirloom.domain.time_phrases import MONTH_NAMES
from heirloom.ports import StoryStore

#: a query this short borrows the previous user message for context ("and her sister?")
SHORT_QUERY_WORDS = 6

#: words that lean on what was said before ("what happened to him the following Sunday?",
#: "what did the family do that summer?"): a query with one that names nothing borrows the
#: previous user message whatever its length (docs/evaluation.md, "Follow-up questions")
LEANS_ON_HISTORY = re.compile(
    r"\b(?:he|him|his|she|her|hers|they|them|their|then|after that|in between"
    r"|the (?:following|next|same) \w+|that (?:year|day|week|month|summer|winter|spring|autumn|fall"
    r"|time|night|morning|evening|afternoon|weekend|trip|visit))\b",
    re.IGNORECASE,
)


def subject_forms(store: StoryStore, legacy_id: UUID, *, legacy: Legacy | None = None) -> tuple[str, ...]:
    """The names the legacy's subject goes by (name, aliases, first name). `legacy`: its row,
    when the caller has read it already."""
    legacy = legacy or store.get_legacy(legacy_id)
    person = store.get_person(legacy.subject_person_id) if legacy else None
    if person is None:
        return ()
    forms = {person.name, *person.aliases}
    parts = person.name.split()
    if len(parts) > 1:
        forms.add(parts[0])
    return tuple(sorted((f for f in forms if f.strip()), key=len, reverse=True))


class SubjectCache:
    """Per-container subject of each legacy (person id, `subject_forms`), kept for `ttl_s`
    seconds: VectorSearch wants them for every linked legacy in reach, on every request (two
    reads each otherwise, 1.5 ms at p50 in `heirloom bench`)."""

    def __init__(
        self, ttl_s: float = 300.0, clock: Callable[[], float] = time.monotonic, max_items: int = 4096
    ):
        self.ttl_s, self.clock, self.max_items = ttl_s, clock, max_items
        self._items: dict[UUID, tuple[float, UUID | None, tuple[str, ...]]] = {}

    def get(self, store: StoryStore, legacy_id: UUID) -> tuple[UUID | None, tuple[str, ...]]:
        hit = self._items.get(legacy_id)
        if hit and self.clock() - hit[0] < self.ttl_s:
            return hit[1], hit[2]
        legacy = store.get_legacy(legacy_id)
        subject = legacy.subject_person_id if legacy else None
        forms = subject_forms(store, legacy_id, legacy=legacy) if legacy else ()
        if len(self._items) >= self.max_items:
            self._items.clear()
        self._items[legacy_id] = (self.clock(), subject, forms)
        return subject, forms


def without_subject(text: str, forms: tuple[str, ...]) -> str:
    """`text` with the subject's names removed: every story is about the subject, so naming
    them says nothing about which story answers (possessives go with the name)."""
    for form in forms:
        text = re.sub(rf"\b{re.escape(form)}(?:['’]s?)?(?!\w)", " ", text, flags=re.IGNORECASE)
    return " ".join(text.split())


#: calendar words are capitalised without naming anyone
_CALENDAR = frozenset(
    ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", *MONTH_NAMES]
)


def names_something(query: str) -> bool:
    """A capitalised word after the first (not "I", not a day or month): the query has its own
    anchor ("Why did they stop speaking after Grandpa Sal died?")."""
    words = re.findall(r"[^\W\d_][\w'’-]*", query)[1:]
    return any(
        w[:1].isupper() and re.sub(r"['’].*", "", w) != "I" and w.casefold() not in _CALENDAR for w in words
    )


def leans_on_history(query: str) -> bool:
    """A follow-up that names nothing and leans on what was said ("What did he do after that?")."""
    return bool(LEANS_ON_HISTORY.search(query)) and not names_something(query)


def query_text(request: ContextRequest) -> str:
    """The text searched: the query, after the previous user message when the query is short or
    a follow-up that names nothing ("What happened to him the following Sunday?" after "When
    was Stan's knee operation?")."""
    if len(request.query.split()) >= SHORT_QUERY_WORDS and not leans_on_history(request.query):
        return request.query
    previous = [m.content for m in request.history if m.role == "user"]
    return f"{previous[-1]} {request.query}" if previous else request.query


@lru_cache(maxsize=1)
def _query_embeddings() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="heirloom-query-embed")
