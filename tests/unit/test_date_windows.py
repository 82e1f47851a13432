"""Dates a question names to the month or the day, as [start, end) windows."""

import pytest

from heirloom.domain.time_phrases import date_windows


@pytest.mark.parametrize(
    ("text", "windows"),
    [
        ("What happened at the church in mid-December 2023?", [("2023-12-11", "2023-12-21")]),
        ("What happened at Bea's allotment in early July 2023?", [("2023-07-01", "2023-07-11")]),
        ("in late February 2024", [("2024-02-21", "2024-03-01")]),
        ("What was Mum doing in October 2023?", [("2023-10-01", "2023-11-01")]),
        ("the call on Sunday 5 November 2023", [("2023-11-05", "2023-11-06")]),
        ("November 5, 2023 and the 5th of November 2023", [("2023-11-05", "2023-11-06")]),
        ("Dec. 31 2023, then March 2024", [("2023-12-31", "2024-01-01"), ("2024-03-01", "2024-04-01")]),
    ],
)
def test_a_month_or_a_day_is_a_window(text, windows):
    assert date_windows(text) == windows


@pytest.mark.parametrize(
    "text",
    [
        "What happened in 1987?",
        "in the sixties",
        "the 30th of February 2023",
        "March on, 2023 style",
        "may we",
    ],
)
def test_a_year_alone_or_no_real_date_is_no_window(text):
    assert date_windows(text) == []
