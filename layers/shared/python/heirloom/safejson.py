"""JSON from outside (API bodies, imported documents) parsed within limits, refused with
InvalidRequest beyond them: Python's parser raises RecursionError on deep nesting and
ValueError on an integer of more than 4,300 digits, neither of which is a caller's error."""

from __future__ import annotations

import json
import re
from typing import Any

from heirloom.errors import InvalidRequest

#: the deepest nesting of arrays and objects accepted (our documents nest 3 deep)
MAX_DEPTH = 8
#: the longest integer literal accepted
MAX_INT_DIGITS = 20

#: a JSON string (an unterminated one runs to the end) or one bracket; everything else is skipped
_STRUCTURE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]')


def _bounded_int(what: str) -> Any:
    def parse(text: str) -> int:
        if len(text.lstrip("-")) > MAX_INT_DIGITS:
            raise InvalidRequest(f"{what}: a number has more than {MAX_INT_DIGITS} digits")
        return int(text)

    return parse


def bounded_loads(text: str | bytes, *, what: str, max_bytes: int) -> Any:
    """`json.loads(text)`, or InvalidRequest naming `what` when `text` is larger than
    `max_bytes`, nests deeper than MAX_DEPTH, holds an integer longer than MAX_INT_DIGITS or is
    not UTF-8. Malformed JSON raises `json.JSONDecodeError` as before (callers report its
    position)."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if len(raw) > max_bytes:
        raise InvalidRequest(f"{what}: larger than {max_bytes} bytes")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidRequest(f"{what}: not valid UTF-8 at byte {exc.start}") from exc
    depth = 0
    for match in _STRUCTURE.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > MAX_DEPTH:
                raise InvalidRequest(f"{what}: nested more than {MAX_DEPTH} levels deep")
        elif token in ("]", "}"):
            depth -= 1
    return json.loads(text, parse_int=_bounded_int(what))
