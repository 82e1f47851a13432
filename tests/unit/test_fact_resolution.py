"""Edge resolution rules (heirloom.domain.fact_resolution), pure."""

from heirloom.domain.fact_resolution import CURRENT, FactEdge, contradicts, resolve_edges


def _f(fid, story, narrator, told, *, years="", negated=False, src="a", dst="b", rel="MARRIED"):
    return FactEdge(fact_id=fid, source_id=src, target_id=dst, relation=rel, story_id=story,
                    narrator=narrator, told_at=told, negated=negated, years=years, sentence=f"s {fid}")  # fmt: skip


def test_agreeing_tellings_are_all_current():
    facts = [_f("1", "s1", "n1", "2020", years="|1950|"), _f("2", "s2", "n2", "2021", years="|1950|"),
             _f("3", "s3", "n1", "2022")]  # fmt: skip
    assert resolve_edges(facts) == {"1": CURRENT, "2": CURRENT, "3": CURRENT}


def test_contradiction_needs_same_pair_and_relation():
    assert contradicts(_f("1", "s", "n", "t", years="|1950|"), _f("2", "s", "n", "t", years="|1952|"))
    # symmetric relation: the other direction is the same pair
    assert contradicts(_f("1", "s", "n", "t"), _f("2", "s", "n", "t", negated=True, src="b", dst="a"))
    assert not contradicts(
        _f("1", "s", "n", "t", rel="GAVE"), _f("2", "s", "n", "t", negated=True, src="b", dst="a", rel="GAVE")
    )
    assert not contradicts(
        _f("1", "s", "n", "t", years="|1950|"), _f("2", "s", "n", "t", rel="MET", years="|1952|")
    )


def test_same_narrator_later_telling_supersedes_whatever_the_order_given():
    old, new = _f("1", "s1", "n1", "2020", years="|1950|"), _f("2", "s2", "n1", "2021", years="|1952|")
    for given in ([old, new], [new, old]):
        states = resolve_edges(given)
        assert states["2"] == CURRENT
        assert states["1"].valid_to == "2021" and states["1"].superseded_by == "s2"
        assert "s2" in states["1"].invalid_reason


def test_different_narrators_conflict_and_a_superseded_telling_does_not():
    a1 = _f("1", "s1", "n1", "2020", years="|1950|")
    a2 = _f("2", "s2", "n1", "2022", years="|1953|")
    b = _f("3", "s3", "n2", "2021", years="|1953|")  # agrees with n1's latest telling
    states = resolve_edges([a1, a2, b])
    assert states["1"].superseded_by == "s2" and not states["1"].conflicting
    assert states["2"] == CURRENT and states["3"] == CURRENT
    c = _f("4", "s4", "n3", "2023", negated=True)
    states = resolve_edges([a1, a2, b, c])
    assert states["4"].conflicting and states["2"].conflicting and states["3"].conflicting
