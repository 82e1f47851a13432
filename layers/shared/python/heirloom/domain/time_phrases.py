"""Time expressions in a question: years, ranges, decades ("the 1960s", "the sixties"), eras
and ages, as periods."""

from __future__ import annotations

import re

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


def time_periods(text: str) -> list[str]:
    """Years, year ranges and decades in `text`, normalised ("'70s" -> "1970s"), in order."""
    found: list[tuple[int, int, str]] = []

    def free(start: int, end: int) -> bool:
        return all(end <= s or start >= e for s, e, _ in found)

    for m in _RANGE.finditer(text):
        found.append((m.start(), m.end(), f"{m.group(1)}-{m.group(2)}"))
    for m in _DECADE_NUM.finditer(text):
        if free(m.start(), m.end()):
            found.append((m.start(), m.end(), f"{m.group(1)}0s"))
    for pattern in (_DECADE_SHORT, _DECADE_WORD):
        for m in pattern.finditer(text):
            if not free(m.start(), m.end()) or _AGE_BEFORE.search(text[: m.start()]):
                continue
            word = m.group(1).lower()
            decade = int(word) if word.isdigit() else _DECADE_WORDS[word]
            found.append((m.start(), m.end(), f"19{decade}0s"))
    for m in _YEAR_ALONE.finditer(text):
        if free(m.start(), m.end()):
            found.append((m.start(), m.end(), m.group(1)))
    for m in _ERA_PHRASE.finditer(text):
        if free(m.start(), m.end()):
            found.append((m.start(), m.end(), " ".join(m.group(0).lower().split())))
    out: list[str] = []
    for _, _, value in sorted(found):
        if value not in out:
            out.append(value)
    return out
