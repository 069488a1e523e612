"""Lab 08 is stored executed, with its learning goals, answer cells marked for nbval, and no errors.
(Running it is ``pytest --nbval-lax labs/solutions/``; this checks what nbval needs to compare against.)"""

from __future__ import annotations

from pathlib import Path

import nbformat

LAB = Path(__file__).resolve().parents[1] / "labs" / "solutions" / "08-fragmentation-trace-replay.ipynb"
LEARNER = LAB.parent.parent / LAB.name


def _nb():
    return nbformat.read(LAB, as_version=4)


def test_lab_states_learning_goals_and_why_it_draws_with_matplotlib():
    nb = _nb()
    assert "Learning goals" in nb.cells[0].source
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "does not exist yet" not in text  # it did exist; the simulated nodes are not a live cluster
    assert "simulated nodes, not a live cluster" in text


def test_every_code_cell_is_stored_executed_without_errors():
    code = [c for c in _nb().cells if c.cell_type == "code"]
    assert code and all(c.execution_count is not None for c in code)
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]


def test_answer_cells_are_checked_and_the_solution_passes_the_check():
    code = [c for c in _nb().cells if c.cell_type == "code"]
    checked = [c for c in code if "nbval-check-output" in c.metadata.get("tags", [])]
    assert len(checked) >= 5 and all(c.outputs for c in checked)
    instructor = [c for c in checked if "Instructor check" in c.source]
    assert instructor and "Well done" in instructor[0].outputs[0].text
    assert "solution" in instructor[0].metadata["tags"]  # not in the learner's copy


def test_learner_copy_has_the_starter_and_its_check_but_not_the_instructor_check():
    learner = nbformat.read(LEARNER, as_version=4)
    code = [c.source for c in learner.cells if c.cell_type == "code"]
    assert any(s.startswith("def my_policy") for s in code) and any("check(my_policy)" in s for s in code)
    assert not any("Instructor check" in s for s in code)
