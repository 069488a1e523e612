"""The stored labs show pictures on first open: JupyterLab renders no widget in an untrusted notebook, so
every widget output must also carry ``text/html`` (and no object's Python repr as the only text)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

LABS = Path(__file__).resolve().parents[2] / "labs"
NOTEBOOKS = sorted(LABS.glob("[0-9][0-9]-*.ipynb")) + sorted((LABS / "solutions").glob("[0-9][0-9]-*.ipynb"))
WIDGET = "application/vnd.jupyter.widget-view+json"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name[:2]}")
def test_every_stored_widget_output_has_an_html_picture(path):
    nb = nbformat.read(path, as_version=4)
    missing, raw = [], []
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if WIDGET in data and "text/html" not in data:
                missing.append(i)
            plain = data.get("text/plain", "")
            if "text/html" not in data and "image/png" not in data and ("HTML(value=" in plain or
                                                                        "VBox(children=" in plain or " at 0x" in plain):
                raw.append(i)
    assert not missing, f"cells {missing}: a widget output without a text/html picture"
    assert not raw, f"cells {raw}: only a Python repr to show"
