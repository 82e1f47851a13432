"""Time expressions in a question: years, ranges, decades ("the 1960s", "the sixties"), eras
and ages, as periods."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

# -- time expressions -------------------------------------------------------------------------
_YEAR = r"(1[5-9]\d\d|20\d\d)"
_RANGE = re.compile(rf"\b{_YEAR}\s*(?:-|–|—|to|until|till|through)\s*{_YEAR}\b", re.IGNORECASE)
_DECADE_NUM = re.compile(r"\b(1[5-9]\d|20\d)0['’]?s\b")
_DECADE_SHORT = re.compile(r"(?<![\w'’])['’]?([1-9])0['’]?s\b")
_DECADE_WORDS = {
    "twenties": 2,
    "thirties": 3,
    "forties": 4,
    "fifties": 5,
    "sixties": 6,
    "seventies": 7,
    "eighties": 8,
    "nineties": 9,
}
_DECADE_WORD = re.compile(rf"\b({'|'.join(_DECADE_WORDS)})\b", re.IGNORECASE)
_YEAR_ALONE = re.compile(rf"\b{_YEAR}\b")
_ERA_PHRASE = re.compile(
    r"\b(?:after|before|during|since|until|throughout) the (?:\w+ )?(?:war|depression)\b", re.I
)
#: "in her thirties" is an age, not the 1930s
_AGE_BEFORE = re.compile(
    r"\b(?:her|his|their|my|your|our|one's)\s+(?:early\s+|late\s+|mid-?\s*)?$", re.IGNORECASE
)


def _short_decades(text: str) -> Iterator[tuple[int, int, str]]:
    """'70s, seventies: the 20th century's (never right after an age: "in her twenties")."""
    for pattern in (_DECADE_SHORT, _DECADE_WORD):
        for m in pattern.finditer(text):
            if _AGE_BEFORE.search(text[: m.start()]):
                continue
            word = m.group(1).lower()
            decade = int(word) if word.isdigit() else _DECADE_WORDS[word]
            yield m.start(), m.end(), f"19{decade}0s"


def time_periods(text: str) -> list[str]:
    """Years, year ranges and decades in `text`, normalised ("'70s" -> "1970s"), in order; where two
    overlap, the earlier kind in this list wins (a range over its years, a decade over its digits)."""
    kinds: list[Iterable[tuple[int, int, str]]] = [
        ((m.start(), m.end(), f"{m.group(1)}-{m.group(2)}") for m in _RANGE.finditer(text)),
        ((m.start(), m.end(), f"{m.group(1)}0s") for m in _DECADE_NUM.finditer(text)),
        _short_decades(text),
        ((m.start(), m.end(), m.group(1)) for m in _YEAR_ALONE.finditer(text)),
        ((m.start(), m.end(), " ".join(m.group(0).lower().split())) for m in _ERA_PHRASE.finditer(text)),
    ]
    found: list[tuple[int, int, str]] = []
    for kind in kinds:
        for start, end, value in kind:
            if all(end <= s or start >= e for s, e, _ in found):
                found.append((start, end, value))
    out: list[str] = []
    for _, _, value in sorted(found):
        if value not in out:
            out.append(value)
    return out
