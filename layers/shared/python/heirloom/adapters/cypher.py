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


def prefix_query(query: str, prefix: str) -> str:
    """Rewrite every label and relationship type of `query` with `prefix`."""
    validate_prefix(prefix)
    allowed = NODE_LABELS | RELATIONSHIP_TYPES
    out: list[str] = []
    i, n = 0, len(query)
    brace_depth = 0
    bracket_stack: list[str] = []
    while i < n:
        ch = query[i]
        if ch in "'\"":
            end = _skip_string(query, i)
            out.append(query[i:end])
            i = end
            continue
        if query.startswith("//", i):
            end = query.find("\n", i)
            end = n if end == -1 else end
            out.append(query[i:end])
            i = end
            continue
        if ch == "{":
            brace_depth += 1
        elif ch == "}":
            brace_depth -= 1
        elif ch in "([":
            bracket_stack.append(ch)
        elif ch in ")]":
            if bracket_stack:
                bracket_stack.pop()
        elif ch == "$":
            match = _IDENT.match(query, i + 1)
            end = match.end() if match else i + 1
            out.append(query[i:end])
            i = end
            continue
        elif ch == ":" and brace_depth == 0:
            # a label (`n:Person`, `(:Person)`) or a type (`[r:KNEW|FAMILY_OF]`)
            j = i + 1
            while j < n and query[j] == " ":
                j += 1
            match = _IDENT.match(query, j)
            if match is None:
                out.append(ch)
                i += 1
                continue
            in_rel = bool(bracket_stack) and bracket_stack[-1] == "["
            names = [match.group(0)]
            end = match.end()
            while in_rel:
                alt = re.match(r"\s*\|\s*:?\s*", query[end:])
                if not alt:
                    break
                nxt = _IDENT.match(query, end + alt.end())
                if nxt is None:
                    break
                names.append(nxt.group(0))
                end = nxt.end()
            rewritten = []
            for name in names:
                bare = name.strip("`")
                if bare not in allowed:
                    raise GraphSchemaError(f"label or relationship type {bare!r} is not in the graph schema")
                rewritten.append(f"`{physical_name(prefix, bare)}`")
            out.append(":" + "|".join(rewritten))
            i = end
            continue
        out.append(ch)
        i += 1
    return "".join(out)
