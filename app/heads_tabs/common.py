"""What the "What heads do" page and its tab files share: KEEP, the names of layers and heads, and a CSV download."""
import pandas as pd
import streamlit as st

from app.figures import heads as figs

# The page's tabs are lazy: only the open tab runs, so a closed tab's widgets are not drawn, and Streamlit forgets
# the value of a widget it did not draw. persist_state=KEEP keeps it while the student stays on the page.
KEEP = "page"


def layer_name(layer: int) -> str:
    return f"layer {layer + 1}"


def head_name(head: int) -> str:
    """A head from 1, or -1: the mean of the layer's heads."""
    return "mean of all heads" if head < 0 else f"head {head + 1}"


def csv_button(df: pd.DataFrame, label: str, file: str, key: str) -> None:
    """A button that downloads a table as CSV, with layers and heads counted from 1 (app.figures.heads.one_based)."""
    st.download_button(label, figs.one_based(df).to_csv(index=False).encode("utf-8"), file_name=file,
                       mime="text/csv", key=key)
