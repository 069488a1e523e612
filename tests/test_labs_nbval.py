"""Every lab is stored so that nbval's comparison means something, and the one sanitize file is read as intended.

``./scripts/test`` runs the labs with answers, labs/solutions/, under ``pytest --nbval-lax
--nbval-current-env`` (with ``--nbval-sanitize-with labs/nbval-sanitize.cfg`` when that file exists).
nbval-lax fails a lab on any error and compares the stored outputs of cells tagged ``nbval-check-output``
only, and only of cells that have an execution count. The markers are cell tags, not source comments, so
a learner sees no test plumbing. These checks catch, without a kernel, the ways a lab would pass vacuously or
drift: unrun cells, a stale out-of-order run, no checked cell, or a sanitizer line nbval silently skips.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

LABS = Path(__file__).resolve().parents[1] / "labs"
NOTEBOOKS = sorted((LABS / "solutions").glob("*.ipynb"))
SANITIZE = LABS / "nbval-sanitize.cfg"
CHECK_MARK = ("nbval-check-output",)
RAISES_MARK = ("nbval-raises-exception", "raises-exception")


def _marked(cell, marks: tuple[str, ...]) -> bool:
    return any(t in marks for t in cell.get("metadata", {}).get("tags", []))


def _code(path: Path):
    return [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


labs = pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])


def test_there_are_labs():
    assert NOTEBOOKS, f"no notebooks in {LABS}"


@labs
def test_lab_is_named_with_a_two_digit_number(path: Path):
    assert re.fullmatch(r"\d\d-[a-z0-9-]+\.ipynb", path.name), path.name


def test_lab_numbers_are_unique():
    numbers = [p.name[:2] for p in NOTEBOOKS]
    assert len(numbers) == len(set(numbers)), numbers


@labs
def test_lab_is_stored_from_one_clean_top_to_bottom_run(path: Path):
    """Counts 1..n in order: the stored outputs are what a fresh kernel (as nbval starts) produces."""
    counts = [c.execution_count for c in _code(path) if c.source.strip()]
    assert counts == list(range(1, len(counts) + 1)), counts


@labs
def test_lab_has_no_stored_errors_except_where_marked(path: Path):
    raised = [c.source.splitlines()[0] for c in _code(path)
              if any(o.output_type == "error" for o in c.outputs) and not _marked(c, RAISES_MARK)]
    assert not raised


@labs
def test_lab_has_checked_cells_with_stored_outputs(path: Path):
    """nbval-lax compares only marked cells; a lab with none (or a marked cell with no output) checks nothing."""
    checked = [c for c in _code(path) if _marked(c, CHECK_MARK)]
    assert checked, "no cell tagged nbval-check-output"
    assert all(c.outputs for c in checked), [c.source.splitlines()[0] for c in checked if not c.outputs]


@labs
def test_nbval_markers_are_tags_not_source_comments(path: Path):
    """nbval also reads ``# NBVAL_...`` comments; the labs keep them out of what learners read."""
    assert not [c.source.splitlines()[0] for c in _code(path) if re.search(r"#\s*NBVAL_", c.source)]


@labs
def test_lab_kernel_is_python3(path: Path):
    """JupyterLab (``mockgpu lab``, the browser test) starts the kernel the notebook names."""
    assert nbformat.read(path, as_version=4).metadata.get("kernelspec", {}).get("name") == "python3"


@pytest.mark.skipif(not SANITIZE.exists(), reason="no labs/nbval-sanitize.cfg: no checked output needs sanitizing")
def test_sanitize_file_is_read_whole_by_nbval():
    """nbval takes a ``regex:`` line only when a ``replace:`` line follows at once; other spellings are
    silently ignored. Every regex line must be taken, and compile."""
    from nbval.plugin import get_sanitize_patterns

    text = SANITIZE.read_text()
    pairs = get_sanitize_patterns(text)
    regex_lines = [line for line in text.splitlines() if line.lstrip().startswith("regex")]
    assert pairs and len(pairs) == len(regex_lines), (len(pairs), regex_lines)
    for regex, _ in pairs:
        re.compile(regex)
