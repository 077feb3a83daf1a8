"""Pure figure builders: data in, Plotly or Altair figure out. No Streamlit here."""
