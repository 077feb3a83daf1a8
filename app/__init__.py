"""The Streamlit app: pages call into core/ and draw with app/figures/."""
