"""examples/explore.ipynb runs from top to bottom in a Jupyter kernel (nbclient), draws its figures, and is
committed without outputs."""
from pathlib import Path

import pytest

from core.paths import REPO

nbformat = pytest.importorskip("nbformat", reason="pip install -r requirements-dev.txt (nbformat, nbclient, ipykernel)")
nbclient = pytest.importorskip("nbclient", reason="pip install -r requirements-dev.txt (nbformat, nbclient, ipykernel)")
NOTEBOOK = REPO / "examples" / "explore.ipynb"
PLOTLY = "application/vnd.plotly.v1+json"


def test_committed_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.outputs == [] and c.execution_count is None for c in code)


@pytest.mark.slow
def test_runs_and_draws_every_figure(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})   # run elsewhere: needs no cwd
    client.execute()                                    # raises CellExecutionError on the first error
    code = [c for c in nb.cells if c.cell_type == "code"]
    drawing = [c for c in code if c.source.strip().split("\n")[-1].split("(")[0] in FIGURES]   # a figure last
    assert {c.source.strip().split("\n")[-1].split("(")[0] for c in drawing} == FIGURES
    assert all(any(PLOTLY in o.get("data", {}) for o in c.outputs) for c in drawing)
    assert all(o.get("output_type") != "error" for c in code for o in c.outputs)
    assert not list(Path(tmp_path).iterdir())           # it writes nothing


FIGURES = {"head_map", "model_view", "head_view", "paper_figure", "contributions_map", "source_share", "next_pieces",
           "beam_tree", "why"}
