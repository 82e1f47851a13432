"""What Amazon Neptune's openCypher refuses and FalkorDB runs: the local server's strictness.

FalkorDB accepts more than Neptune does, so the local Neptune stand-in
(`neptune_server.py`) checks each query against these rules before running it and
answers a refusal as Neptune would (HTTP 400 with `code` and `detailedMessage`). Sources, AWS
Neptune user guide pages:

- "openCypher specification compliance in Amazon Neptune": no `shortestPath()` /
  `allShortestPaths()`, no `MANDATORY MATCH`, no non-static SKIP / LIMIT values, no
  `CALL` procedures, mutations cannot be combined with `UNION`, no `^` operator.
- "Neptune compatibility with Neo4j": no APOC or other namespaced (user-defined) functions;
  AWS re:Post (QU2mfcPZWgSyatrTnJi82J3w): `date()`, `time()`, `duration()` and the other
  temporal functions answer "Date and Time related functions are not supported".
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


#: functions Neptune's openCypher lacks, and why
_CALLS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("shortestpath", "allshortestpaths"), "{name}() is not supported in Neptune openCypher"),
    (
        ("any", "all", "none", "single"),
        "the predicate function {name}() is not supported; use a list comprehension",
    ),
    (("reduce",), "reduce() is not supported; use a list comprehension"),
    (
        ("datetime", "localdatetime", "date", "time", "localtime", "duration"),
        "{name}() is not supported in Neptune openCypher",
    ),
)
#: two-word constructs Neptune's openCypher lacks
_PAIRS: dict[tuple[str, str], str] = {
    ("MANDATORY", "MATCH"): "MANDATORY MATCH is not supported in Neptune openCypher",
    ("EXISTS", "{"): "EXISTS { } subqueries are not supported in Neptune openCypher",
    ("LOAD", "CSV"): "LOAD CSV is not supported in Neptune openCypher",
    **{
        (word, after): f"{word} {after} is not supported: Neptune indexes by itself"
        for word in ("CREATE", "DROP")
        for after in ("INDEX", "CONSTRAINT")
    },
}


def _call_refusal(toks: list[Token], i: int) -> Refusal | None:
    for names, message in _CALLS:
        if _is_call(toks, i, *names):
            return Refusal(UNSUPPORTED, message.format(name=toks[i].text))
    if toks[i].text == "^" and toks[i].kind == "op":
        return Refusal(UNSUPPORTED, "the ^ operator is not supported in Neptune openCypher")
    namespaced = i > 1 and toks[i - 1].text == "." and toks[i - 2].kind == "ident"
    if namespaced and toks[i].kind == "ident" and i + 1 < len(toks) and toks[i + 1].text == "(":
        return Refusal(
            UNSUPPORTED, f"the function {toks[i].text}() of a namespace is not supported (no APOC)"
        )
    return None


def _keyword_refusal(toks: list[Token], words: list[str], i: int) -> Refusal | None:
    if toks[i].kind != "ident" or i + 1 >= len(toks):
        return None
    word, after = words[i], words[i + 1]
    if (word, after) in _PAIRS:
        return Refusal(UNSUPPORTED, _PAIRS[(word, after)])
    if word == "CALL" and toks[i + 1].kind == "ident":
        return Refusal(UNSUPPORTED, "CALL of a procedure is not supported in Neptune openCypher")
    if word in {"SKIP", "LIMIT"} and not (i > 0 and toks[i - 1].text == "."):
        value = _until_clause(toks, i + 1, words)
        if not (len(value) == 1 and value[0].kind in {"number", "param"}):
            return Refusal(UNSUPPORTED, f"{word} takes a literal or a parameter, not an expression")
    return None


def _features(toks: list[Token]) -> Iterator[Refusal]:
    words = [t.upper for t in toks]
    for i in range(len(toks)):
        refusal = _call_refusal(toks, i) or _keyword_refusal(toks, words, i)
        if refusal is not None:
            yield refusal
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


def _bad_value(expr: list[Token], scope: _Scope) -> str | None:
    bad = next((v for v in scope.values(expr) or [] if _not_single(v)), None)
    return None if bad is None else f"a {type(bad).__name__} from {''.join(t.text for t in expr)}"


def _call_step(expr: list[Token], i: int) -> tuple[int, str | None]:
    name = expr[i].text.lower()
    if name in _SCALAR_FUNCTIONS:  # whatever is inside, one value comes out
        return _close(expr, i + 1) + 1, None
    if name in _LIST_FUNCTIONS and not (i > 0 and expr[i - 1].text == "."):
        return i + 1, f"the list from {expr[i].text}()"
    return i + 1, None


def _membership_end(expr: list[Token], i: int) -> int:
    """A membership test is a boolean: the index after its right-hand side."""
    after = i + 1
    if expr[after].kind == "ident" and after + 1 < len(expr) and expr[after + 1].text == "(":
        after += 1  # a function call: skip its arguments too
    return _close(expr, after) + 1 if expr[after].text in "([" else after + 1


def _bound_step(expr: list[Token], i: int, scope: _Scope) -> tuple[int, str | None]:
    """A parameter or unwound name inside an expression (`coalesce($years, 0)`); indexed, it is
    one element."""
    end = i + 1
    if (
        expr[i].kind == "ident"
        and end + 1 < len(expr)
        and expr[end].text == "."
        and expr[end + 1].kind == "ident"
    ):
        end += 2
    if end < len(expr) and expr[end].text in {"[", "."}:
        return end, None
    return end, _bad_value(expr[i:end], scope)


def _step(expr: list[Token], i: int, scope: _Scope) -> tuple[int, str | None] | None:
    """How far the token at `i` reaches and what it makes the value, or None for one token."""
    tok = expr[i]
    if tok.kind == "ident" and i + 1 < len(expr) and expr[i + 1].text == "(":
        return _call_step(expr, i)
    if tok.kind == "ident" and tok.upper == "IN" and i + 1 < len(expr):
        return _membership_end(expr, i), None
    if tok.kind == "ident" and tok.upper == "WHEN":  # a CASE condition is not the value
        return next((j for j in range(i + 1, len(expr)) if expr[j].upper == "THEN"), len(expr)) + 1, None
    if tok.kind == "param" or (
        tok.kind == "ident" and tok.text in scope.aliases and not (i > 0 and expr[i - 1].text == ".")
    ):
        return _bound_step(expr, i, scope)
    return None


def _literal(expr: list[Token], i: int) -> str | None:
    if expr[i].text == "[" and not (i > 0 and _indexable(expr[i - 1])):
        return "a list"
    if expr[i].text == "{" and not (i > 0 and expr[i - 1].kind == "ident"):
        return "a map"
    return None


def _list_valued(expr: list[Token], scope: _Scope) -> str | None:
    """Why `expr`, written as one property value, is a list or map (None if it is not)."""
    if scope.values(expr) is not None:
        return _bad_value(expr, scope)
    i = 0
    while i < len(expr):
        step = _step(expr, i, scope)
        if step is None:
            step = (i + 1, _literal(expr, i))
        i, reason = step
        if reason is not None:
            return reason
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
