"""A time period as the year keys the graph stores ("|1962|1965|" on the edges: decision 0007)."""

from __future__ import annotations

import re

_DECADE_WORDS = {
    "twenties": 1920,
    "thirties": 1930,
    "forties": 1940,
    "fifties": 1950,
    "sixties": 1960,
    "seventies": 1970,
    "eighties": 1980,
    "nineties": 1990,
}


def year_range(period: str) -> tuple[int, int] | None:
    """'1962' -> (1962, 1962); '1970s' / 'the seventies' -> (1970, 1979); else None."""
    text = period.lower()
    if m := re.search(r"\b(1[89]\d|20\d)0s\b", text):
        start = int(m.group(1)) * 10
        return start, start + 9
    if m := re.search(r"\b'?(\d)0s\b", text):
        start = 1900 + int(m.group(1)) * 10
        return start, start + 9
    for word, start in _DECADE_WORDS.items():
        if word in text:
            return start, start + 9
    years = [int(y) for y in re.findall(r"\b(1[89]\d\d|20\d\d)\b", text)]
    if years:
        return min(years), max(years)
    return None


#: the most years one temporal query asks for (a longer range is cut at its start + this)
MAX_TEMPORAL_YEARS = 120


def year_keys(start: int, end: int) -> list[str]:
    """The `years` keys of a range: (1960, 1962) -> ["|1960|", "|1961|", "|1962|"]."""
    return [f"|{y}|" for y in range(start, min(end, start + MAX_TEMPORAL_YEARS - 1) + 1)]
