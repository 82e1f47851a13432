"""Label and relationship-type prefixing for openCypher, shared by every graph adapter.

Callers write logical names (`(p:Person)-[r:FAMILY_OF|KNEW]-(q)`); `prefix_query` finds each
label and type position with a small lexer (outside strings, comments and map literals),
refuses names outside the whitelist, and rewrites them as backtick-quoted prefixed names
(`` :`prod-Person` ``). Values only ever travel as parameters.
"""

from __future__ import annotations

import re

from heirloom.domain.graph_schema import NODE_LABELS, RELATIONSHIP_TYPES
from heirloom.settings import PREFIX_PATTERN

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|`[^`]+`")


class GraphSchemaError(ValueError):
    """A label or relationship type outside the whitelist, refused before any query is sent."""


def validate_prefix(prefix: str) -> str:
    if not PREFIX_PATTERN.fullmatch(prefix):
        raise GraphSchemaError(f"graph prefix {prefix!r} must match [a-z0-9_]+")
    return prefix


def physical_name(prefix: str, logical: str) -> str:
    return f"{prefix}-{logical}"


def logical_name(prefix: str, physical: str) -> str | None:
    head = f"{prefix}-"
    return physical[len(head) :] if physical.startswith(head) else None


def _skip_string(query: str, i: int) -> int:
    quote = query[i]
    i += 1
    while i < len(query):
        if query[i] == "\\":
            i += 2
            continue
        if query[i] == quote:
            return i + 1
        i += 1
    raise GraphSchemaError("unterminated string literal in query")


def _verbatim_end(query: str, i: int) -> int | None:
    """Where a string literal, a `//` comment or a `$parameter` starting at `i` ends (they are
    copied as they are), or None when none starts there."""
    ch = query[i]
    if ch in "'\"":
        return _skip_string(query, i)
    if query.startswith("//", i):
        end = query.find("\n", i)
        return len(query) if end == -1 else end
    if ch == "$":
        match = _IDENT.match(query, i + 1)
        return match.end() if match else i + 1
    return None


def _track_nesting(ch: str, brace_depth: int, brackets: list[str]) -> int:
    """The map-literal depth after `ch`; `brackets` keeps the open ( and [ (a [ is a relationship)."""
    if ch == "{":
        return brace_depth + 1
    if ch == "}":
        return brace_depth - 1
    if ch in "([":
        brackets.append(ch)
    elif ch in ")]" and brackets:
        brackets.pop()
    return brace_depth


def _names_after_colon(query: str, i: int, in_rel: bool) -> tuple[list[str], int] | None:
    """The label (`n:Person`, `(:Person)`) or types (`[r:KNEW|FAMILY_OF]`) after the colon at `i`."""
    j = i + 1
    while j < len(query) and query[j] == " ":
        j += 1
    match = _IDENT.match(query, j)
    if match is None:
        return None
    names = [match.group(0)]
    end = match.end()
    while in_rel:
        alt = re.match(r"\s*\|\s*:?\s*", query[end:])
        nxt = _IDENT.match(query, end + alt.end()) if alt else None
        if nxt is None:
            break
        names.append(nxt.group(0))
        end = nxt.end()
    return names, end


def _prefixed(names: list[str], prefix: str) -> str:
    allowed = NODE_LABELS | RELATIONSHIP_TYPES
    rewritten = []
    for name in names:
        bare = name.strip("`")
        if bare not in allowed:
            raise GraphSchemaError(f"label or relationship type {bare!r} is not in the graph schema")
        rewritten.append(f"`{physical_name(prefix, bare)}`")
    return ":" + "|".join(rewritten)


def prefix_query(query: str, prefix: str) -> str:
    """Rewrite every label and relationship type of `query` with `prefix`."""
    validate_prefix(prefix)
    out: list[str] = []
    i, n = 0, len(query)
    brace_depth = 0
    brackets: list[str] = []
    while i < n:
        end = _verbatim_end(query, i)
        if end is not None:
            out.append(query[i:end])
            i = end
            continue
        ch = query[i]
        brace_depth = _track_nesting(ch, brace_depth, brackets)
        found = _names_after_colon(query, i, bool(brackets) and brackets[-1] == "[") if ch == ":" else None
        if found is not None and brace_depth == 0:
            names, i = found
            out.append(_prefixed(names, prefix))
            continue
        out.append(ch)
        i += 1
    return "".join(out)
