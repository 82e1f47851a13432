"""The docs/dataset-format.md scores computed by heirloom eval, on hand-made outcomes with hand-computed
expectations."""

import pytest

from heirloom.domain.evaluation import QueryOutcome, StoryText, leaked, percentile, score

A = StoryText("a", "The Orchard", "We picked apples in the orchard every single autumn together.")
B = StoryText("b", "The Boat", "Grandpa rebuilt the old green rowboat in the garage that winter.")
C = StoryText("c", "The Move", "They moved to the city by train in the spring of 1961.")
F = StoryText(
    "f", "The Secret Letter", "She kept the letter from her brother hidden in the cedar chest for years."
)
X = StoryText("x", "Another Day", "Nothing much happened on the farm that particular rainy day.")
STORIES = {s.id: s for s in (A, B, C, F, X)}


def outcome(qid, gold, ranked, context="", forbidden=(), category="c1", expected=None, got=None, ms=10.0):
    return QueryOutcome(
        query_id=qid,
        category=category,
        expected_intent=expected,
        gold=tuple(gold),
        forbidden=tuple(forbidden),
        ranked=tuple(ranked),
        context=context,
        intent=got,
        latency_ms=ms,
    )


def test_recall_all_gold_mrr_evidence_leaks_latency_and_intent():
    q1 = outcome(
        "q1", ["a", "b"], ["a", "x", "b"], context=A.content, expected="relational", got="relational", ms=10
    )
    q2 = outcome("q2", ["c"], ["x", "a", "c"], context=C.content + " " + B.content, ms=30, category="c2")
    # a probe: no gold; the forbidden story's sentence is in the text although its id is not
    q3 = outcome("q3", [], ["x"], context="Intro. " + F.content, forbidden=["f"], expected="general",
                 got="temporal", ms=20, category="c2")  # fmt: skip
    readable = {"q1": {"a", "b", "c", "x"}, "q2": {"a", "b", "c", "x"}, "q3": {"a", "b", "c", "x"}}
    result = score([q1, q2, q3], STORIES, readable, ks=(1, 3))
    m = result["metrics"]
    assert m["queries"] == 3
    assert m["recall@1"] == pytest.approx((0.5 + 0.0) / 2)
    assert m["recall@3"] == pytest.approx((1.0 + 1.0) / 2)
    assert m["all_gold@1"] == 0.0 and m["all_gold@3"] == 1.0
    assert m["mrr"] == pytest.approx((1.0 + 1 / 3) / 2)
    # gold texts in context: a yes, b no (q1); c yes (q2)
    assert m["evidence_in_context"] == pytest.approx(2 / 3)
    assert m["leaks"] == 1.0
    assert (m["latency_p50_ms"], m["latency_p95_ms"]) == (20.0, 30.0)
    assert m["intent_accuracy"] == 0.5  # two queries carry an expected intent, one is right
    assert set(result["by_category"]) == {"c1", "c2"}
    assert result["by_category"]["c2"]["recall@3"] == 1.0 and result["by_category"]["c2"]["leaks"] == 1.0
    assert result["by_intent"]["relational"]["intent_accuracy"] == 1.0


def test_a_leak_by_id_by_title_or_by_sentence_and_what_is_not_one():
    readable = [A, B, C]
    by_id = outcome("q", [], ["f"], forbidden=["f"])
    assert leaked(by_id, F, readable)
    by_title = outcome("q", [], [], context="## The Secret Letter\nSomething else.", forbidden=["f"])
    assert leaked(by_title, F, readable)
    by_text = outcome("q", [], [], context="As she said: " + F.content, forbidden=["f"])
    assert leaked(by_text, F, readable)
    # a sentence a readable story also holds is not evidence of the forbidden one
    shared = StoryText("s", "Shared", F.content)
    assert not leaked(by_text, F, [*readable, shared])
    assert not leaked(outcome("q", [], ["a"], context=A.content, forbidden=["f"]), F, readable)


def test_percentiles_pick_a_measured_value():
    assert percentile([], 0.5) == 0.0
    assert percentile([5.0], 0.95) == 5.0
    assert percentile([30.0, 10.0, 20.0, 40.0], 0.5) == 30.0  # index round(1.5) = 2 of the sorted list


def test_a_leak_is_found_through_the_context_s_escapes():
    """Formatting escapes `<`, `>` (and look-alikes), `#` and quotes in story text: leak detection
    must read through them, or a story with such a character could leak unseen."""
    from heirloom.fencing import inline, quoted_title

    odd = StoryText(
        "o", 'The "#1" <Secret> Recipe', "She wrote <never tell> on the card, recipe ‹#1› for years."
    )
    context = f'### "{quoted_title(odd.title)}"\n<story-1>\n> {inline(odd.content)}\n</story-1>'
    assert leaked(outcome("q", [], [], context=context, forbidden=["o"]), odd, [A])
    assert leaked(outcome("q", [], [], context=f'"{quoted_title(odd.title)}"', forbidden=["o"]), odd, [A])
