"""app/display.py's click parser: the customdata of a clicked Plotly point, however the browser sends it."""
from app.display import clicked_numbers


def event(*customdata) -> dict:
    return {"selection": {"points": [{"customdata": c} for c in customdata]}}


def test_a_list_a_typed_array_or_a_single_number():
    assert clicked_numbers(event([2, 5]), 2) == [2, 5]
    assert clicked_numbers(event({"0": 2, "1": 5}), 2) == [2, 5]                # a typed array
    assert clicked_numbers(event([7, 1, True, "extra"]), 3) == [7, 1, True]     # [sentence, position, is_query]
    assert clicked_numbers(event(3), 1) == [3] and clicked_numbers(event([3]), 1) == [3]
    assert clicked_numbers(event({"0": 3}), 1) == [3]


def test_the_first_point_that_has_the_numbers_wins():
    assert clicked_numbers(event(None, [1], ["a", 2], [4, 6], [8, 9]), 2) == [4, 6]


def test_nothing_clicked_or_nothing_usable_is_none():
    assert clicked_numbers(None, 2) is None and clicked_numbers({}, 2) is None
    assert clicked_numbers({"selection": None}, 2) is None
    assert clicked_numbers(event(), 1) is None
    assert clicked_numbers(event([], {"0": 1}, "text", [None, 2]), 2) is None
