"""Labs 01–07, 09, 11 and 12 keep their teaching shape: goals, a cluster from clusters/, exercises whose stored check
says Correct, and a cluster that outlives Run All. These are the labs with answers, labs/solutions/ (nbval runs
them; this checks the stored notebooks); tests/test_labs_copies.py checks the learner copies made from them."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
# 08 is the trace simulator (no cluster), 10 the capstone (graded as a whole plan: tests/test_capstone.py)
LABS = sorted(p for p in (REPO / "labs" / "solutions").glob("[01][0-9]-*.ipynb") if p.name[:2] not in ("08", "10"))


def _nb(path: Path):
    return nbformat.read(path, as_version=4)


def _code(path: Path):
    return [c for c in _nb(path).cells if c.cell_type == "code"]


def _text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


labs = pytest.mark.parametrize("path", LABS, ids=[p.stem[:2] for p in LABS])


def test_labs_01_to_07_09_11_and_12_exist():
    assert [p.name[:2] for p in LABS] == ["01", "02", "03", "04", "05", "06", "07", "09", "11", "12"]


@labs
def test_lab_states_learning_goals(path):
    first = _nb(path).cells[0]
    assert first.cell_type == "markdown" and "**Learning goals.**" in first.source


@labs
def test_lab_starts_its_own_cluster_from_a_spec_in_clusters_and_keeps_it_up_after_run_all(path):
    """The cluster outlives Run All (the live widgets and the submit panel keep working): no cell closes it;
    the last one says how it goes (the kernel stopping, or ``lab.close()`` run by hand)."""
    code = _code(path)
    source = "\n".join(c.source for c in code)
    specs = re.findall(r'LabCluster\("(clusters/[^"]+)"', source)
    assert len(specs) == 1 and (REPO / specs[0]).is_file(), specs
    assert not [c.source for c in code if re.search(r"^\s*lab\.close\(\)", c.source, re.M)]
    assert "lab.close()" in code[-1].source and "kernel" in code[-1].source


@labs
def test_every_exercise_has_an_answer_cell_and_a_check_that_stored_correct(path):
    code = _code(path)
    answers = [i for i, c in enumerate(code) if "answer" in c.metadata.get("tags", [])]
    assert answers, "no answer cell"
    for i in answers:
        assert re.match(r"ANSWER\w* = ", code[i].source), code[i].source
        name = code[i].source.split("=")[0].strip()
        check = next(c for c in code[i + 1:] if name in c.source)
        assert {"check", "nbval-check-output"} <= set(check.metadata.get("tags", [])), check.source[:60]
        assert "Correct" in _text(check) and "Not quite" not in _text(check), _text(check)
