"""What Amazon Neptune's openCypher refuses and FalkorDB runs: the local server's strictness.

FalkorDB accepts more than Neptune does, so the local Neptune stand-in
(`neptune_server.py`) checks each query against these rules before running it and
answers a refusal as Neptune would (HTTP 400 with `code` and `detailedMessage`). Sources, AWS
Neptune user guide pages:

- "openCypher specification compliance in Amazon Neptune": no `shortestPath()` /
  `allShortestPaths()`, no `MANDATORY MATCH`, no non-static SKIP / LIMIT values, no
  `CALL` procedures, mutations cannot be combined with `UNION`.
- "Rewriting Cypher queries to run in openCypher on Neptune": the predicate functions
  `any/all/none/single` and `reduce()` must be rewritten (list comprehensions), `EXISTS { }`
  subqueries and `datetime()` are not available, nor schema commands (`CREATE INDEX`) or
  `LOAD CSV`.
- "openCypher data model": property values are single values (Bool, Byte, Short, Int, Long,
  Float, Double, DateTime, String); a list written from openCypher is refused ("Expected a
  simple literal but found List"), and a map is not a property type at all.

Codes, from "Graph engine error messages and codes": `UnsupportedOperationException` (400: "a
currently unsupported feature or construct") for the missing features, and
`MalformedQueryException` (400: "does not pass additional validation") for a list or map
property value. The checks read tokens, not a full grammar: strings and comments never match,
and a value is judged by its literal form, the parameter it names (also through `UNWIND $rows
AS row` / `WITH $x AS y`) or the function that produces it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

UNSUPPORTED = "UnsupportedOperationException"
MALFORMED = "MalformedQueryException"

_TOKEN = re.compile(
    r"""
    (?P<space>\s+|//[^\n]*|/\*.*?\*/)
  | (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<ident>`[^`]*`|[A-Za-z_][A-Za-z_0-9]*)
  | (?P<param>\$[A-Za-z_0-9]+)
  | (?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
  | (?P<op>\+=|<>|<=|>=|=~|->|<-|\.\.|[-+*/%^=<>.,:;|(){}\[\]])
    """,
    re.VERBOSE | re.DOTALL,
)
#: clause keywords that end a SET list, a SKIP/LIMIT value or a pattern
_CLAUSES = frozenset(
    [
        "MATCH",
        "OPTIONAL",
        "MANDATORY",
        "MERGE",
        "CREATE",
        "SET",
        "DELETE",
        "DETACH",
        "REMOVE",
        "WITH",
        "RETURN",
        "UNWIND",
        "UNION",
        "CALL",
        "FOREACH",
        "ON",
        "WHERE",
        "ORDER",
        "SKIP",
        "LIMIT",
        "LOAD",
        "USING",
    ]
)
#: words after which a `[` opens a list
_KEYWORDS = _CLAUSES | frozenset(
    ["ELSE", "THEN", "WHEN", "CASE", "AND", "OR", "XOR", "NOT", "IN", "IS", "AS", "DISTINCT", "BY"]
)
_WRITES = frozenset({"CREATE", "MERGE", "SET", "DELETE", "REMOVE", "FOREACH"})
#: functions whose value is a list or a map
_LIST_FUNCTIONS = frozenset(
    ["collect", "split", "range", "keys", "labels", "tail", "reverse", "nodes", "relationships", "properties"]
)
#: functions (and operators) whose value is a single value whatever their arguments are
_SCALAR_FUNCTIONS = frozenset(
    [
        "size",
        "length",
        "count",
        "sum",
        "min",
        "max",
        "avg",
        "head",
        "last",
        "tostring",
        "tointeger",
        "tofloat",
        "toboolean",
        "exists",
        "isempty",
        "id",
        "type",
    ]
)


@dataclass(frozen=True)
class Token:
    kind: str
    text: str

    @property
    def upper(self) -> str:
        return self.text.upper() if self.kind == "ident" else self.text


@dataclass(frozen=True)
class Refusal:
    """Why Neptune would refuse the query: its error code and a detailed message."""

    code: str
    message: str


def tokens(cypher: str) -> list[Token]:
    out: list[Token] = []
    pos = 0
    while pos < len(cypher):
        match = _TOKEN.match(cypher, pos)
        if match is None:  # something FalkorDB will call malformed; not ours to judge
            out.append(Token("op", cypher[pos]))
            pos += 1
            continue
        pos = match.end()
        kind = match.lastgroup or "op"
        if kind != "space":
            out.append(Token(kind, match.group()))
    return out


def _is_call(toks: list[Token], i: int, *names: str) -> bool:
    """toks[i] is a function name among `names` followed by `(` (not a property or label)."""
    return (
        toks[i].kind == "ident"
        and toks[i].text.lower() in names
        and i + 1 < len(toks)
        and toks[i + 1].text == "("
        and not (i > 0 and toks[i - 1].text in {".", ":"})
    )


def _features(toks: list[Token]) -> Iterator[Refusal]:
    words = [t.upper for t in toks]
    for i, tok in enumerate(toks):
        if _is_call(toks, i, "shortestpath", "allshortestpaths"):
            yield Refusal(UNSUPPORTED, f"{tok.text}() is not supported in Neptune openCypher")
        elif _is_call(toks, i, "any", "all", "none", "single"):
            yield Refusal(
                UNSUPPORTED, f"the predicate function {tok.text}() is not supported; use a list comprehension"
            )
        elif _is_call(toks, i, "reduce"):
            yield Refusal(UNSUPPORTED, "reduce() is not supported; use a list comprehension")
        elif _is_call(toks, i, "datetime", "localdatetime"):
            yield Refusal(UNSUPPORTED, f"{tok.text}() is not supported in Neptune openCypher")
        elif tok.kind == "ident" and i + 1 < len(toks):
            word, after = words[i], words[i + 1]
            if word == "MANDATORY" and after == "MATCH":
                yield Refusal(UNSUPPORTED, "MANDATORY MATCH is not supported in Neptune openCypher")
            elif word == "EXISTS" and after == "{":
                yield Refusal(UNSUPPORTED, "EXISTS { } subqueries are not supported in Neptune openCypher")
            elif word == "CALL" and toks[i + 1].kind == "ident":
                yield Refusal(UNSUPPORTED, "CALL of a procedure is not supported in Neptune openCypher")
            elif word == "LOAD" and after == "CSV":
                yield Refusal(UNSUPPORTED, "LOAD CSV is not supported in Neptune openCypher")
            elif word in {"CREATE", "DROP"} and after in {"INDEX", "CONSTRAINT"}:
                yield Refusal(UNSUPPORTED, f"{word} {after} is not supported: Neptune indexes by itself")
            elif word in {"SKIP", "LIMIT"} and not (i > 0 and toks[i - 1].text == "."):
                value = _until_clause(toks, i + 1, words)
                if not (len(value) == 1 and value[0].kind in {"number", "param"}):
                    yield Refusal(UNSUPPORTED, f"{word} takes a literal or a parameter, not an expression")
    if "UNION" in words and _WRITES & set(words):
        yield Refusal(UNSUPPORTED, "UNION is supported for read-only queries only")


def _until_clause(toks: list[Token], start: int, words: list[str]) -> list[Token]:
    """toks from `start` to the next clause keyword at bracket depth 0."""
    depth, end = 0, start
    while end < len(toks):
        text = toks[end].text
        if text in "([{":
            depth += 1
        elif text in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and toks[end].kind == "ident" and words[end] in _CLAUSES:
            break
        end += 1
    return toks[start:end]


def _split(toks: list[Token], sep: str) -> list[list[Token]]:
    """`toks` split at `sep` on bracket depth 0."""
    parts: list[list[Token]] = [[]]
    depth = 0
    for tok in toks:
        if tok.text in "([{":
            depth += 1
        elif tok.text in ")]}":
            depth -= 1
        if depth == 0 and tok.text == sep:
            parts.append([])
        else:
            parts[-1].append(tok)
    return [p for p in parts if p]


def _close(toks: list[Token], start: int) -> int:
    """The index of the bracket closing the one at `start`."""
    depth = 0
    for i in range(start, len(toks)):
        if toks[i].text in "([{":
            depth += 1
        elif toks[i].text in ")]}":
            depth -= 1
            if depth == 0:
                return i
    return len(toks) - 1


def _not_single(value: Any) -> bool:
    return isinstance(value, list | tuple | dict)


class _Scope:
    """Parameter values by name, and what `UNWIND $p AS x` / `WITH $p AS x` bound to names."""

    def __init__(self, params: Mapping[str, Any]):
        self.params = params
        #: alias -> the values it takes (every element of an unwound parameter)
        self.aliases: dict[str, list[Any]] = {}

    def bind(self, toks: list[Token], words: list[str]) -> None:
        for i, word in enumerate(words):
            if word not in {"UNWIND", "WITH"} or i + 3 >= len(toks):
                continue
            source, as_, alias = toks[i + 1], words[i + 2], toks[i + 3]
            if source.kind != "param" or as_ != "AS" or alias.kind != "ident":
                continue
            value = self.params.get(source.text[1:])
            if word == "UNWIND":
                self.aliases[alias.text] = list(value) if isinstance(value, list | tuple) else []
            else:
                self.aliases[alias.text] = [value]

    def values(self, expr: list[Token]) -> list[Any] | None:
        """What a parameter or unwound name (`$p`, `row`, `row.field`) holds, if it is one."""
        if len(expr) == 1 and expr[0].kind == "param":
            return [self.params.get(expr[0].text[1:])]
        if expr and expr[0].kind == "ident" and expr[0].text in self.aliases:
            values = self.aliases[expr[0].text]
            if len(expr) == 1:
                return values
            if len(expr) == 3 and expr[1].text == "." and expr[2].kind == "ident":
                return [v.get(expr[2].text) if isinstance(v, dict) else None for v in values]
        return None


def _list_valued(expr: list[Token], scope: _Scope) -> str | None:
    """Why `expr`, written as one property value, is a list or map (None if it is not)."""
    values = scope.values(expr)
    if values is not None:
        bad = next((v for v in values if _not_single(v)), None)
        return None if bad is None else f"a {type(bad).__name__} from {''.join(t.text for t in expr)}"
    i = 0
    while i < len(expr):
        tok = expr[i]
        if tok.kind == "ident" and i + 1 < len(expr) and expr[i + 1].text == "(":
            name = tok.text.lower()
            if name in _SCALAR_FUNCTIONS:  # whatever is inside, one value comes out
                i = _close(expr, i + 1) + 1
                continue
            if name in _LIST_FUNCTIONS and not (i > 0 and expr[i - 1].text == "."):
                return f"the list from {tok.text}()"
        elif tok.kind == "ident" and tok.upper == "IN" and i + 1 < len(expr):
            # a membership test is a boolean: skip its right-hand side
            after = i + 1
            if expr[after].kind == "ident" and after + 1 < len(expr) and expr[after + 1].text == "(":
                after += 1  # a function call: skip its arguments too
            i = _close(expr, after) + 1 if expr[after].text in "([" else after + 1
            continue
        elif tok.kind == "ident" and tok.upper == "WHEN":  # a CASE condition is not the value
            end = next((j for j in range(i + 1, len(expr)) if expr[j].upper == "THEN"), len(expr))
            i = end + 1
            continue
        elif tok.kind == "param" or (
            tok.kind == "ident" and tok.text in scope.aliases and not (i > 0 and expr[i - 1].text == ".")
        ):  # a parameter or unwound name inside an expression (`coalesce($years, 0)`)
            end = i + 1
            if (
                tok.kind == "ident"
                and end + 1 < len(expr)
                and expr[end].text == "."
                and expr[end + 1].kind == "ident"
            ):
                end += 2
            if not (end < len(expr) and expr[end].text in {"[", "."}):  # indexed: one element
                bad = next((v for v in scope.values(expr[i:end]) or [] if _not_single(v)), None)
                if bad is not None:
                    return f"a {type(bad).__name__} from {''.join(t.text for t in expr[i:end])}"
            i = end
            continue
        elif tok.text == "[" and not (i > 0 and _indexable(expr[i - 1])):
            return "a list"
        elif tok.text == "{" and not (i > 0 and expr[i - 1].kind == "ident"):
            return "a map"
        i += 1
    return None


def _indexable(before: Token) -> bool:
    """Whether a `[` after `before` indexes a value (`x[0]`, `$p[0]`, `f(x)[0]`) rather than
    opening a list (after an operator or a keyword such as ELSE)."""
    if before.kind == "ident":
        return before.upper not in _KEYWORDS
    return before.kind == "param" or before.text in {")", "]"}


def _map_entries(toks: list[Token]) -> list[tuple[str, list[Token]]]:
    """`key: expr` pairs of a map literal's inside."""
    entries = []
    for part in _split(toks, ","):
        if len(part) >= 2 and part[1].text == ":":
            entries.append((part[0].text, part[2:]))
    return entries


def _map_values(expr: list[Token], scope: _Scope) -> str | None:
    """Why a map written with `SET n += expr` / `SET n = expr` holds a list or map value."""
    if expr and expr[0].text == "{" and _close(expr, 0) == len(expr) - 1:
        for key, value in _map_entries(expr[1:-1]):
            why = _list_valued(value, scope)
            if why:
                return f"{key}: {why}"
        return None
    values = scope.values(expr)
    for mapping in values or []:
        for key, value in (mapping or {}).items() if isinstance(mapping, dict) else ():
            if _not_single(value):
                return f"{key}: a {type(value).__name__} from {''.join(t.text for t in expr)}"
    return None


def _property_writes(toks: list[Token], words: list[str], scope: _Scope) -> Iterator[Refusal]:
    writing: str | None = None  # the clause whose patterns are being read (CREATE / MERGE)
    i = 0
    while i < len(toks):
        word = words[i] if toks[i].kind == "ident" else ""
        if word in _CLAUSES and word != "SET":
            writing = word if word in {"CREATE", "MERGE"} else None
        if word == "SET":
            items = _until_clause(toks, i + 1, words)
            for item in _split(items, ","):
                why = _set_item(item, scope)
                if why:
                    yield Refusal(MALFORMED, f"Expected a simple literal but found {why} (SET)")
            i += 1 + len(items)
            continue
        if writing and toks[i].text == "{" and i > 0 and toks[i - 1].kind in {"ident", "op"}:
            end = _close(toks, i)
            for key, value in _map_entries(toks[i + 1 : end]):
                why = _list_valued(value, scope)
                if why:
                    yield Refusal(MALFORMED, f"Expected a simple literal but found {why} ({writing} {key})")
            i = end + 1
            continue
        i += 1


def _set_item(item: list[Token], scope: _Scope) -> str | None:
    ops = [j for j, t in enumerate(item) if t.text in {"=", "+="}]
    if not ops:
        return None  # `SET n:Label`
    op = ops[0]
    target, value = item[:op], item[op + 1 :]
    if len(target) == 1:  # `SET n += map` / `SET n = map`
        return _map_values(value, scope)
    return _list_valued(value, scope)


def refusal(cypher: str, params: Mapping[str, Any] | None = None) -> Refusal | None:
    """The first reason Neptune would refuse `cypher` with `params`, or None."""
    toks = tokens(cypher)
    words = [t.upper for t in toks]
    found = next(_features(toks), None)
    if found:
        return found
    scope = _Scope(params or {})
    scope.bind(toks, words)
    return next(_property_writes(toks, words, scope), None)
