"""The learning path (labs/README.md) and the labs' headers: every relative link resolves, from labs/ (the learner
copies, GitHub's rendering of labs/README.md) and from labs/solutions/; every lab is in the path's table, and each
lab's first cell says its time and prerequisites and links back to the path."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
LABS = REPO / "labs"
SOLUTIONS = sorted((LABS / "solutions").glob("[0-9][0-9]-*.ipynb"))
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _relative_links(text: str) -> list[str]:
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]


def _resolves(base: Path, target: str, here: Path | None = None) -> bool:
    """Whether ``target`` exists seen from folder ``base``; an anchor must name a heading of a markdown file
    (``here`` for a link to an anchor of the same file)."""
    path, _, anchor = target.partition("#")
    file = (base / path).resolve() if path else here
    if file is None or not file.exists():
        return False
    if anchor and file.suffix == ".md":
        return anchor in {_slug(h) for h in re.findall(r"^#+ (.+)$", file.read_text(), re.M)}
    return True


@pytest.mark.parametrize("readme", ["README.md", "solutions/README.md"])
def test_readme_links_resolve(readme):
    path = LABS / readme
    links = _relative_links(path.read_text())
    assert links
    broken = [t for t in links if not _resolves(path.parent, t, path)]
    assert not broken, broken


@pytest.mark.parametrize("lab", SOLUTIONS, ids=[p.name[:2] for p in SOLUTIONS])
def test_lab_header_and_its_links_work_from_both_folders(lab):
    nb = nbformat.read(lab, as_version=4)
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.startswith(f"# Lab {lab.name[:2]} ")
    for part in ("**Time.** About ", "**Prerequisites.** ", "**Learning goals.**", "](README.md)"):
        assert part in first.source, part
    links = [t for c in nb.cells if c.cell_type == "markdown" for t in _relative_links(c.source)]
    for base in (LABS, LABS / "solutions"):
        broken = [t for t in links if not _resolves(base, t)]
        assert not broken, (base, broken)


def test_every_lab_is_on_the_path_and_in_the_claim_map_or_table():
    text = (LABS / "README.md").read_text()
    for lab in SOLUTIONS:
        assert f"]({lab.name})" in text, lab.name

