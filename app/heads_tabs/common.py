"""What the "What heads do" page and its tab files share: KEEP, and the names of layers and heads."""

# The page's tabs are lazy: only the open tab runs, so a closed tab's widgets are not drawn, and Streamlit forgets
# the value of a widget it did not draw. persist_state=KEEP keeps it while the student stays on the page.
KEEP = "page"


def layer_name(layer: int) -> str:
    return f"layer {layer + 1}"


def head_name(head: int) -> str:
    """A head from 1, or -1: the mean of the layer's heads."""
    return "mean of all heads" if head < 0 else f"head {head + 1}"
