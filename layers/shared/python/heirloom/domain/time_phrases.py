"""Time expressions in a question: years, ranges, decades ("the 1960s", "the sixties"), eras
and ages, as periods."""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable, Iterator
from datetime import date, timedelta

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


# -- dates a question names to the month or the day -------------------------------------------
#: the months' names, January first
MONTH_NAMES: tuple[str, ...] = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_ABBREVIATIONS = {"sep": 9, "sept": 9} | {n[:3]: i + 1 for i, n in enumerate(MONTH_NAMES) if n != "may"}
#: a month's name or abbreviation -> its number
_MONTHS = {n: i + 1 for i, n in enumerate(MONTH_NAMES)} | _ABBREVIATIONS
_MONTH = rf"({'|'.join(sorted(_MONTHS, key=len, reverse=True))})\.?"
_DAY = r"([0-3]?\d)(?:st|nd|rd|th)?"
#: "mid-December 2023", "early July 2023", "March 2023", "November 5, 2023"
_MONTH_FIRST = re.compile(rf"\b(?:(early|mid|late)[\s-]+)?{_MONTH}(?:\s+{_DAY})?,?\s+{_YEAR}\b", re.I)
#: "5 November 2023", "the 5th of November, 2023"
_DAY_FIRST = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.I)
#: the days of a month's part: early 1-10, mid 11-20, late 21-end
_PARTS = {"early": (1, 11), "mid": (11, 21), "late": (21, 32)}


def _window(year: int, month: int, day: int | None, part: str | None) -> tuple[str, str] | None:
    """[start, end) as ISO dates: the day, the part of the month, or the month."""
    last = calendar.monthrange(year, month)[1]
    if day is not None:
        if not 1 <= day <= last:
            return None
        start = date(year, month, day)
        return start.isoformat(), (start + timedelta(days=1)).isoformat()
    first, stop = _PARTS.get((part or "").lower(), (1, 32))
    start = date(year, month, first)
    end = date(year, month, stop) if stop <= last else date(year, month, last) + timedelta(days=1)
    return start.isoformat(), end.isoformat()


def date_windows(text: str) -> list[tuple[str, str]]:
    """The dates `text` names to the month or finer, as [start, end) ISO dates, in order: "mid-
    December 2023" -> ("2023-12-11", "2023-12-21"); a year alone is no window (`time_periods`)."""
    # a day that is no date ("30th of February") still holds its words: no month window there
    found: list[tuple[int, int, tuple[str, str] | None]] = [
        (m.start(), m.end(), _window(int(m.group(3)), _MONTHS[m.group(2).lower()], int(m.group(1)), None))
        for m in _DAY_FIRST.finditer(text)
    ]
    for m in _MONTH_FIRST.finditer(text):
        if not any(s < m.end() and m.start() < e for s, e, _ in found):
            day = int(m.group(3)) if m.group(3) else None
            found.append(
                (m.start(), m.end(), _window(int(m.group(4)), _MONTHS[m.group(2).lower()], day, m.group(1)))
            )
    out: list[tuple[str, str]] = []
    for _, _, window in sorted(found, key=lambda f: f[0]):
        if window and window not in out:
            out.append(window)
    return out
