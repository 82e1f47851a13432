"""The legacy's names, matched in a question: exact forms, given names, short forms, folded
accents, never a stopword or an ambiguous word alone."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple, cast

from heirloom.contracts.context import EntityMatch
from heirloom.domain.intent_cues import (
    AMBIGUOUS_WORDS,
    ARTICLES,
    NAME_PREFIXES,
    NAME_SUFFIXES,
    PLACE_NAME_HEADS,
    STOPWORDS,
)
from heirloom.domain.people import alias_gender

Label = Literal["Person", "Place", "Event", "Object"]
#: possessive determiners: "my wedding" is one wedding
OWNER_WORDS = frozenset({"my", "your", "his", "her", "our", "their"})
LABELS: frozenset[str] = frozenset({"Person", "Place", "Event", "Object"})


class GazetteerEntry(NamedTuple):
    node_id: str
    label: Label
    name: str
    aliases: Sequence[str] = ()
    #: the legacy the node belongs to ("" when unknown)
    legacy_id: str = ""
    #: the person is the subject of an actively linked legacy (whose stories are their own account)
    linked_subject: bool = False
    #: the person's gender as the records show it ("m", "f"), None when they do not
    gender: str | None = None


# -- gazetteer --------------------------------------------------------------------------------
_TOKEN = re.compile(r"\w+(?:['’]\w+)*['’]?")


def _fold(word: str) -> str:
    """Case- and accent-insensitive key of one word, possessive removed ("Zoë's" -> "zoe")."""
    word = word.replace("’", "'")
    if word.lower().endswith("'s"):
        word = word[:-2]
    word = word.rstrip("'")
    if word.isascii():  # nothing to decompose; casefold is lower (most words: a story's cost)
        return word.lower()
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


def _keys(text: str) -> tuple[str, ...]:
    return tuple(k for k in (_fold(m.group()) for m in _TOKEN.finditer(text)) if k)


def words_pattern(words: Collection[str]) -> re.Pattern[str] | None:
    """A search for any of these folded words (`Gazetteer.first_words`) as a whole word; None
    for no words."""
    if not words:
        return None
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=lambda w: (-len(w), w)))
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)")


def may_name(text: str, pattern: re.Pattern[str] | None) -> bool:
    """Could `find` find a name in `text` opening with one of the words of `pattern`
    (`words_pattern`)? False is certain, and costs no tokenizing: in ASCII text every word's
    key is the word in lower case (possessive after it); a text with other characters, whose
    folding may move word boundaries, may always."""
    if pattern is None:
        return False
    plain = text.replace("’", "'")
    return not plain.isascii() or pattern.search(plain.lower()) is not None


@dataclass(frozen=True)
class _Form:
    keys: tuple[str, ...]
    entries: tuple[int, ...]
    #: a first or last name, an alias without its kinship word, a place without its kind of
    #: place ("Birchwood"): not a name as given
    derived: bool


@dataclass(frozen=True)
class Mention:
    """One name found in a text: where, as written, and every entry it names."""

    start: int
    end: int
    text: str
    entries: tuple[GazetteerEntry, ...]
    derived: bool

    def matches(self, mention: str | None = None) -> tuple[EntityMatch, ...]:
        return tuple(
            EntityMatch(mention=mention or self.text, node_id=e.node_id, label=e.label, name=e.name)
            for e in self.entries
        )


def _strip_prefixes(keys: tuple[str, ...]) -> tuple[str, ...]:
    i = 0
    while i < len(keys) - 1 and keys[i] in NAME_PREFIXES:
        i += 1
    return keys[i:]


def _usable(keys: tuple[str, ...]) -> bool:
    return bool(keys) and not all(k in STOPWORDS or len(k) < 2 for k in keys)


def _given_forms(entry: GazetteerEntry) -> list[tuple[str, ...]]:
    """The name and aliases as keys, a leading article dropped ("the lake house")."""
    out = []
    for surface in (entry.name, *entry.aliases):
        keys = _keys(surface)
        if len(keys) > 1 and keys[0] in ARTICLES:
            keys = keys[1:]
        if _usable(keys):
            out.append(keys)
    return out


def _short_forms(entry: GazetteerEntry) -> list[tuple[str, ...]]:
    """A person's first and last name, and aliases without their kinship word ("Uncle Jim" ->
    "jim"); a place's name without the word that says what kind of place it is ("Birchwood
    Commons" -> "birchwood"). The gazetteer keeps those that name one entity only."""
    out: list[tuple[str, ...]] = []
    if entry.label == "Place":
        keys = tuple(k for k in _keys(entry.name) if k not in ARTICLES)
        if len(keys) > 1 and keys[-1] in PLACE_NAME_HEADS:
            out.append(keys[:-1])
    elif entry.label == "Person":
        name = _strip_prefixes(_keys(entry.name))
        name = tuple(k for k in name if k not in NAME_SUFFIXES) or name
        if len(name) > 1:
            out += [(name[0],), (name[-1],)]
        for alias in entry.aliases:
            keys = _keys(alias)
            bare = _strip_prefixes(keys)
            if bare != keys:
                out.append(bare)
    return [f for f in out if _usable(f) and all(len(k) > 1 for k in f)]


class Gazetteer:
    """The names of a legacy's graph, indexed by first word for matching in messages."""

    def __init__(self, entries: Sequence[GazetteerEntry], index: dict[str, tuple[_Form, ...]]):
        self.entries = tuple(entries)
        self._index = index

    def __len__(self) -> int:
        return len(self.entries)

    @classmethod
    def build(
        cls,
        entries: Iterable[
            GazetteerEntry
            | tuple[str, str, str, Sequence[str]]
            | tuple[str, str, str, Sequence[str], str]
            | tuple[str, str, str, Sequence[str], str, bool]
            | tuple[str, str, str, Sequence[str], str, bool, str | None]
        ],
    ) -> Gazetteer:
        items: list[GazetteerEntry] = []
        for raw in entries:
            node_id, label, name, aliases, *rest = raw
            if label not in LABELS:
                raise ValueError(f"gazetteer entry {node_id}: label {label!r} is not one of {sorted(LABELS)}")
            legacy = str(rest[0]) if rest else ""
            subject = bool(rest[1]) if len(rest) > 1 else False
            gender = cast(str | None, rest[2]) if len(rest) > 2 else None
            if gender is None and label == "Person":  # "Uncle Otto", "Grandma": the alias says
                genders = {g for g in map(alias_gender, aliases) if g}
                gender = genders.pop() if len(genders) == 1 else None
            items.append(
                GazetteerEntry(
                    str(node_id), cast(Label, label), name, tuple(aliases), legacy, subject, gender
                )
            )
        # a linked legacy's subject as entered in other legacies (same full name) is them too
        voices = {_keys(e.name) for e in items if e.linked_subject}
        items = [
            e._replace(linked_subject=True) if e.label == "Person" and _keys(e.name) in voices else e
            for e in items
        ]

        explicit: dict[tuple[str, ...], list[int]] = {}
        derived: dict[tuple[str, ...], list[int]] = {}
        for i, entry in enumerate(items):
            for keys in _given_forms(entry):
                explicit.setdefault(keys, []).append(i)
            for keys in _short_forms(entry):
                derived.setdefault(keys, []).append(i)

        forms = [_Form(k, tuple(dict.fromkeys(v)), False) for k, v in explicit.items()]
        for keys, owners in derived.items():
            # unambiguous: not anyone's name or alias, and every owner has the same full name
            if keys in explicit or len({_keys(items[i].name) for i in owners}) != 1:
                continue
            forms.append(_Form(keys, tuple(dict.fromkeys(owners)), True))
        index: dict[str, list[_Form]] = {}
        for form in forms:
            index.setdefault(form.keys[0], []).append(form)
        frozen = {k: tuple(sorted(v, key=lambda f: -len(f.keys))) for k, v in index.items()}
        return cls(items, frozen)

    def first_words(self, node_ids: Collection[str]) -> frozenset[str]:
        """The first word (folded) of every form that names one of these nodes."""
        wanted = {i for i, e in enumerate(self.entries) if e.node_id in node_ids}
        return frozenset(
            key for key, forms in self._index.items() if any(wanted.intersection(f.entries) for f in forms)
        )

    def find(self, text: str) -> list[Mention]:
        """Every known name in `text`, longest first and without overlaps, in text order."""
        tokens = [(m.start(), m.end(), _fold(m.group())) for m in _TOKEN.finditer(text)]
        found: list[tuple[int, int, _Form]] = []
        for i, (_, _, key) in enumerate(tokens):
            for form in self._index.get(key, ()):
                n = len(form.keys)
                if i + n > len(tokens) or any(tokens[i + j][2] != form.keys[j] for j in range(1, n)):
                    continue
                if n == 1 and not self._plausible(text, tokens[i][0], key):
                    continue
                if n == 1 and i > 0 and self._owned_common(text, tokens[i - 1], form):
                    continue
                if form.derived and self._place(form) and not self._short_place(text, tokens, i, n):
                    continue
                found.append((i, i + n, form))
                break
        taken: set[int] = set()
        chosen: list[tuple[int, int, _Form]] = []
        for first, last, form in sorted(found, key=lambda f: (f[0] - f[1], f[0])):
            if taken.isdisjoint(range(first, last)):
                taken.update(range(first, last))
                chosen.append((first, last, form))
        mentions = []
        for first, last, form in sorted(chosen, key=lambda f: f[0]):
            start, end = tokens[first][0], tokens[last - 1][1]
            written = re.sub(r"['’]s?$", "", text[start:end]) or text[start:end]
            mentions.append(
                Mention(
                    start=start,
                    end=end,
                    text=written,
                    entries=tuple(self.entries[i] for i in form.entries),
                    derived=form.derived,
                )
            )
        return mentions

    def _owned_common(self, text: str, before: tuple[int, int, str], form: _Form) -> bool:
        """A thing's common name after a possessive determiner ("my wedding", "her funeral"):
        the question means one, and the legacy's entity of that bare name is every story's. An
        owner by name ("Carl's canoe") is matched: the legacy's canoe is most often his."""
        if not all(
            self.entries[i].label in ("Event", "Object") and self.entries[i].name.islower()
            for i in form.entries
        ):
            return False
        return text[before[0] : before[1]].lower() in OWNER_WORDS

    def _place(self, form: _Form) -> bool:
        return any(self.entries[i].label == "Place" for i in form.entries)

    @staticmethod
    def _short_place(text: str, tokens: Sequence[tuple[int, int, str]], i: int, n: int) -> bool:
        """A place's short name as written: capitalised ("the birchwood trees" is none), and
        not the start of a longer name ("Kettle Bayside" is not "Kettle Lake")."""
        after = tokens[i + n][0] if i + n < len(tokens) else None
        return text[tokens[i][0]].isupper() and (after is None or not text[after].isupper())

    def match(self, text: str) -> tuple[EntityMatch, ...]:
        return tuple(m for mention in self.find(text) for m in mention.matches())

    @staticmethod
    def _plausible(text: str, start: int, key: str) -> bool:
        """A one-word name that is also a common word must be capitalised mid-sentence."""
        if key not in AMBIGUOUS_WORDS:
            return True
        if not text[start].isupper():
            return False
        before = text[:start].rstrip()
        return bool(before) and before[-1] not in '.!?"“'
