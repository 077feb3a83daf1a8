"""app/figures/classroom.py: the class beside the model. Taps and guesses become shares of the students who answered,
placed on the model's words and pieces; the model's choice is marked; students' text is escaped, never markup."""
import pytest

from app.figures import classroom as C


def test_the_class_row_sits_beside_the_heads_row_over_the_same_words():
    words, weights = ["The", "Law", "will", "its", "Law"], [0.1, 0.5, 0.1, 0.1, 0.2]
    fig = C.class_beside_attention(words, weights, {"law": 3, "its,": 1, "nonsense": 4}, "layer 6, head 8")
    class_row, head_row = fig.data[0].z
    assert list(head_row) == weights
    assert class_row == pytest.approx([0, 3 / 8, 0, 1 / 8, 0])          # a repeated word: its first place only
    assert list(fig.data[0].y) == ["the class", "layer 6, head 8"]
    assert list(fig.layout.xaxis.ticktext) == words
    assert "layer 6, head 8" in fig.layout.title.text


def test_guesses_sit_beside_the_models_probabilities_and_unranked_guesses_are_added():
    fig = C.class_beside_probabilities(["seine", "-r", "ihre"], [0.5, 0.2, 0.1], {"Seine": 2, "<b>die</b>": 2})
    the_class, model = fig.data
    assert list(model.y) == ["seine", "-r", "ihre", "&lt;b&gt;die&lt;/b&gt;"]   # shown as typed, not as markup
    assert list(model.x) == [0.5, 0.2, 0.1, 0.0]
    assert list(the_class.x) == [0.5, 0.0, 0.0, 0.5]


def test_a_choice_marks_the_models_option_and_counts_shares():
    fig = C.class_split_beside_choice(("ihre", "seine"), {"ihre": 1, "seine": 3}, "seine")
    assert list(fig.data[0].y) == [0.25, 0.75]
    assert "the model" in fig.layout.xaxis.ticktext[1] and "the model" not in fig.layout.xaxis.ticktext[0]
    assert list(fig.data[0].marker.color) == [C.CLASS, C.MODEL]
    assert C.matching_choice(("ihre", "seine"), "ihren") == "ihre"
    assert C.matching_choice(("ihre", "seine"), "seinem") == "seine"
    assert C.matching_choice(("Key 1", "Key 2"), "something else") is None


def test_live_bars_keep_a_choices_order_and_escape_long_answers():
    fig = C.live_bars({"Key 3": 2, "Key 1": 1}, ("Key 1", "Key 2", "Key 3"))
    assert list(fig.data[0].y) == ["Key 1", "Key 2", "Key 3"] and list(fig.data[0].x) == [1, 0, 2]
    typed = C.live_bars({"<script>x</script>" + "y" * 40: 1})
    (label,) = fig_labels = list(typed.data[0].y)
    assert label.startswith("&lt;script&gt;") and label.endswith("…") and len(fig_labels) == 1
