"""Replay bridge-evidence rules (docs/decisions/0022) over `heirloom eval --per-query` files.

Input: per dataset, a hybrid run with the bridge hits recorded but not counted
(`BRIDGE_SEEDS=3 BRIDGE_SLOT=0 BRIDGE_WEIGHT=0`) and a vector run. The per-query file holds
every candidate the ranking scored with all its graph paths (`in_context` false for those the
token budget cut), so an entity's reach is counted over the same candidates `apply_bridge`
counts. Each rule re-ranks the hybrid candidates the way `ranking.apply_bridge` does (the
recorded scores, the bridge paths whose seed is a top story); a candidate the budget cut above
the context's last story stays out (it did not fit). Each rule is scored per category against
the vector run with decision 0009's criterion: no category with >= 10 queries below vector on
recall@5, all_gold@5 or mrr on any dataset. A replay, for choosing: the numbers reported come
from real `heirloom eval` runs. Files written before `in_context` existed (only the context's
stories) are read as all in the context.

    python -m heirloom_dev.bridge_replay d:H.jsonl:V.jsonl s:H.jsonl:V.jsonl c:H.jsonl:V.jsonl
"""

from __future__ import annotations

import itertools
import json
import sys
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any

K = 5
MIN_QUERIES = 10


@dataclass(frozen=True)
class Rule:
    seeds: int
    slot: int
    weight: float
    graph_only: bool = False
    #: intents the rule applies to (empty: all)
    intents: tuple[str, ...] = ()
    #: edge kinds of the seed to the bridge entity that count (empty: all)
    kinds: tuple[str, ...] = ()
    #: distinct seed stories that must bridge to a story for it to count
    agree: int = 1

    def __str__(self) -> str:
        return (
            f"seeds={self.seeds} slot={self.slot} w={self.weight} go={int(self.graph_only)} "
            f"intents={','.join(self.intents) or '*'} kinds={','.join(self.kinds) or '*'} agree={self.agree}"
        )


def cut_by_budget(cands: list[dict[str, Any]]) -> set[str]:
    """Candidates ranked above the context's last story that are not in it: the budget (or
    deduplication) left them out, and would again."""
    inside = [c["ranking_rank"] for c in cands if c.get("in_context", True) and c.get("ranking_rank")]
    last = max(inside, default=0)
    return {
        c["story_id"]
        for c in cands
        if not c.get("in_context", True) and c.get("ranking_rank") is not None and c["ranking_rank"] < last
    }


def _entity(path: dict[str, Any]) -> str:
    """The entity a path went through, as the ranking keys it (`ranking.entity_key`)."""
    return str(path.get("entity_id") or (path["entity"] or "").casefold())


def rerank(record: dict[str, Any], rule: Rule) -> list[str]:
    cut = cut_by_budget(record["candidates"])
    return [sid for sid in _rerank(record, rule) if sid not in cut]


def _rerank(record: dict[str, Any], rule: Rule) -> list[str]:
    cands = record["candidates"]
    tier = {c["story_id"]: 0 if c["similarity"] is not None else 1 for c in cands}
    bridge_only = {
        c["story_id"]
        for c in cands
        if c["similarity"] is None
        and c["graph_paths"]
        and all(p["template"] == "bridge" for p in c["graph_paths"])
    }
    base = [c for c in cands if c["story_id"] not in bridge_only]
    if rule.intents and record["intent"] not in rule.intents:
        return [c["story_id"] for c in base]
    seeds = {c["story_id"] for c in [c for c in base if tier[c["story_id"]] == 0][: rule.seeds]}

    def live(c: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            p
            for p in c["graph_paths"]
            if p["template"] == "bridge"
            and p.get("source_story_id") in seeds
            and c["story_id"] not in seeds
            and (not rule.kinds or p.get("relationship") in rule.kinds)
        ]

    reach: dict[str, int] = defaultdict(int)
    for c in cands:
        for key in {_entity(p) for p in live(c)}:
            reach[key] += 1
    pool = base + ([c for c in cands if c["story_id"] in bridge_only] if rule.graph_only else [])
    scored = []
    boosted: dict[str, float] = {}
    for i, c in enumerate(pool):
        paths = live(c)
        if len({p["source_story_id"] for p in paths}) < rule.agree:
            paths = []
        value = max((1.0 / reach[_entity(p)] for p in paths), default=0.0)
        if value and (tier[c["story_id"]] == 0 or rule.graph_only):
            boosted[c["story_id"]] = value
        else:
            value = 0.0
        scored.append((tier[c["story_id"]], -((c["score"] or 0.0) + rule.weight * value), i, c["story_id"]))
    order = [s[3] for s in sorted(scored)]
    if rule.slot and boosted and len(order) > rule.slot:
        best = max(boosted, key=lambda sid: (boosted[sid], -order.index(sid)))
        if order.index(best) >= rule.slot:
            order.remove(best)
            order.insert(rule.slot - 1, best)
    return order


def metrics(ranked: list[str], gold: list[str]) -> tuple[float, float, float]:
    g = set(gold)
    top = set(ranked[:K])
    ranks = [ranked.index(x) + 1 for x in g if x in ranked]
    return len(g & top) / len(g), float(g <= top), 1.0 / min(ranks) if ranks else 0.0


def table(records: list[dict[str, Any]], ranked: dict[str, list[str]]) -> dict[str, tuple[int, list[float]]]:
    by: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    for r in records:
        if not r["gold"]:
            continue
        m = metrics(ranked[r["query_id"]], r["gold"])
        by["all"].append(m)
        by[r["category"]].append(m)
        if r.get("expected_intent"):
            by["intent:" + r["expected_intent"]].append(m)
    return {k: (len(v), [sum(x[i] for x in v) / len(v) for i in range(3)]) for k, v in by.items()}


def load(path: str) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


Set = tuple[str, list[dict[str, Any]], dict[str, tuple[int, list[float]]]]


def judge(rule: Rule, sets: list[Set]) -> tuple[bool, float, str]:
    """Decision 0009's criterion on every set, the summed multi-hop all_gold@5 gain over vector,
    and a line per set."""
    ok, gain, detail = True, 0.0, []
    for name, h, vt in sets:
        ht = table(h, {r["query_id"]: rerank(r, rule) for r in h})
        for cat, (n, hm) in ht.items():
            if cat.startswith("intent:") or n < MIN_QUERIES or cat not in vt:
                continue
            if any(a < b - 1e-9 for a, b in zip(hm, vt[cat][1], strict=True)):
                ok = False
        mh = ht.get("multi_hop", (0, [0, 0, 0]))[1][1] - vt.get("multi_hop", (0, [0, 0, 0]))[1][1]
        ef = ht.get("intent:entity_focused", (0, [0, 0, 0]))[1]
        gain += mh
        a = ht["all"][1]
        detail.append(f"{name}: all {a[0]:.3f}/{a[1]:.3f}/{a[2]:.3f} mh+{mh:.3f} ef {ef[0]:.3f}/{ef[1]:.3f}")
    return ok, gain, " | ".join(detail)


def window(rule: Rule, sets: list[Set], step: float = 0.01, top: float = 0.5) -> tuple[float, float]:
    """The widest run of weights (every `step` up to `top`) around `rule.weight` for which the
    same rule still passes with the same gain: (low, high)."""
    _, gain, _ = judge(rule, sets)
    weights = [round(step * i, 4) for i in range(1, int(top / step) + 1)]
    good = {w for w in weights if (r := judge(replace(rule, weight=w), sets))[0] and r[1] >= gain - 1e-9}
    low = high = rule.weight
    while round(low - step, 4) in good:
        low = round(low - step, 4)
    while round(high + step, 4) in good:
        high = round(high + step, 4)
    return low, high


def agreement(records: list[dict[str, Any]], rule: Rule, real: list[dict[str, Any]]) -> list[str]:
    """Queries whose top K the replay of `rule` over `records` puts differently from a real run
    of that rule (`real`'s per-query file): one line each, multi-hop first."""
    actual = {r["query_id"]: r for r in real}
    lines = []
    for r in sorted(records, key=lambda r: r["category"] != "multi_hop"):
        replayed, got = rerank(r, rule)[:K], actual[r["query_id"]]["ranked"][:K]
        if replayed != got:
            lines.append(f"{r['query_id']} ({r['category']}): replay {replayed} real {got}")
    return lines


def parse_rule(text: str) -> Rule:
    """A rule as `__str__` writes it, e.g. "seeds=2 slot=0 w=0.15 go=0 agree=2" (missing
    fields take their defaults)."""
    fields = dict(part.split("=", 1) for part in text.split())

    def tup(key: str) -> tuple[str, ...]:
        return tuple(v for v in fields.get(key, "*").split(",") if v != "*")

    return Rule(
        seeds=int(fields.get("seeds", 0)),
        slot=int(fields.get("slot", 0)),
        weight=float(fields.get("w", 0.0)),
        graph_only=fields.get("go", "0") == "1",
        intents=tup("intents"),
        kinds=tup("kinds"),
        agree=int(fields.get("agree", 1)),
    )


def main(argv: list[str]) -> None:
    if argv[:1] == ["--check"]:  # --check RULE HYBRID.jsonl REAL.jsonl
        rule, records, real = parse_rule(argv[1]), load(argv[2]), load(argv[3])
        lines = agreement(records, rule, real)
        print(f"{rule}: {len(records) - len(lines)}/{len(records)} queries with the same top {K}")
        print("\n".join(lines))
        return
    sets: list[Set] = []
    for arg in argv:
        name, hybrid, vector = arg.split(":")
        h, v = load(hybrid), load(vector)
        vt = table(v, {r["query_id"]: r["ranked"] for r in v})
        sets.append((name, h, vt))
    baseline = Rule(0, 0, 0.0)
    for name, h, _ in sets:  # the replay without a rule must give the real run's own lists
        same = sum(rerank(r, baseline)[:K] == r["ranked"][:K] for r in h)
        print(f"{name}: the replay without a rule keeps the real top {K} in {same}/{len(h)} queries")
    rules = [baseline] + [
        Rule(seeds, slot, weight, go, intents, kinds, agree)
        for seeds, slot, weight, go, intents, kinds, agree in itertools.product(
            (1, 2, 3),
            (0, 3, 4, 5, 6),
            (0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3),
            (False, True),
            ((), ("relational", "entity_focused")),
            ((), ("MENTIONS",)),
            (1, 2),
        )
        if (slot or weight) and agree <= seeds
    ]
    rows = [(rule, *judge(rule, sets)) for rule in rules]
    rows.sort(key=lambda r: (not r[1], -r[2]))
    for rule, passed, total, line in rows[:40]:
        span = ""
        if passed and total > 1e-9 and rule.weight and not rule.slot:
            low, high = window(rule, sets)
            span = f" window {low:.2f}-{high:.2f}"
        print(f"{'OK ' if passed else 'no '} {total:+.3f} {rule!s:60s} {line}{span}")


if __name__ == "__main__":
    main(sys.argv[1:])
