"""`heirloom eval`'s table: headers and figures line up, whatever the column or row names."""

from heirloom_dev.eval import HEADLINE, format_table


def _block(queries: float) -> dict[str, float]:
    return {c: (queries if c == "queries" else 12345.0 if c.startswith("latency") else 0.5) for c in HEADLINE}


def test_every_header_and_row_is_as_wide_as_the_others():
    result = {
        "dataset": "d",
        "mode": "hybrid",
        "queries": 3,
        "metrics": _block(3),
        "by_category": {"a_rather_long_category_name": _block(1), "x": _block(2)},
        "by_intent": {"entity_focused": _block(3)},
    }
    lines = format_table(result).splitlines()
    table = [line for line in lines[2:] if line.startswith(" ") or "  " in line]
    assert len(table) == 7
    assert len({len(line) for line in table}) == 1
    header = table[0]
    for row in table[1:]:
        # every figure ends where its column's name ends
        ends = [header.index(c) + len(c) for c in HEADLINE]
        assert all(row[end - 1] != " " and (end == len(row) or row[end] == " ") for end in ends), row
