"""The learner copies (labs/NN-*.ipynb) hand out no answers, and differ from labs/solutions only where they must.

``mockgpu.labcopies`` builds them: ``answer`` cells blanked to ``NAME = None``, ``check`` cells' outputs
removed, ``solution`` cells dropped, everything else identical. The check cells grade through
``mockgpu.widgets.exercise``, whose wrong-answer hints must not state the value the lab expects. The
labs' markdown must not hold ``$`` pairs, which JupyterLab typesets as math ("$27 per hour for 8 GPUs = $3"
came out as one italic formula).
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
from pathlib import Path

import nbformat
import pytest

from mockgpu import labcopies
from mockgpu.widgets import exercise

REPO = Path(__file__).resolve().parents[1]
SOLUTIONS = REPO / "labs" / "solutions"
PATHS = sorted(SOLUTIONS.glob("[0-9][0-9]-*.ipynb"))
labs = pytest.mark.parametrize("solution", PATHS, ids=[p.name[:2] for p in PATHS])


def _nb(path: Path):
    return nbformat.read(path, as_version=4)


def _answers(nb) -> dict[str, object]:
    """NAME -> value of every top-level assignment in the notebook's ``answer`` cells."""
    out = {}
    for cell in nb.cells:
        if labcopies.ANSWER in labcopies.tags(cell):
            for node in ast.parse(cell.source).body:
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        out[target.id] = ast.literal_eval(node.value)
    return out


# ---- the transformation, table-driven -------------------------------------------------------------------

BLANK = [
    ("ANSWER = 8  # how many pods", "ANSWER = None  # how many pods"),
    ("ANSWER = (0, 2)", "ANSWER = None"),
    ('ANSWER_CEL = \'x == "3g.40gb"\'  # a CEL expression', "ANSWER_CEL = None  # a CEL expression"),
    ("# a comment above\nA = {(0, 'inference')}  # a set", "# a comment above\nA = None  # a set"),
    ("A = 1\nB = [\n    1,\n    2,\n]  # two lines", "A = None\nB = None  # two lines"),
    ("PRICE = 164.68  # USD — to the cent", "PRICE = None  # USD — to the cent"),
]


@pytest.mark.parametrize("source,blanked", BLANK, ids=[s.splitlines()[-1][:20] for s, _ in BLANK])
def test_blank_answers_keeps_names_and_comments(source, blanked):
    assert labcopies.blank_answers(source) == labcopies.FILL_IN + "\n" + blanked


def test_blank_answers_is_idempotent_and_refuses_a_cell_without_an_assignment():
    once = labcopies.blank_answers("ANSWER = 3  # n")
    assert labcopies.blank_answers(once) == once
    with pytest.raises(ValueError):
        labcopies.blank_answers("print('no answer here')")


def _cell(tags, source="x = 1", outputs=True):
    cell = nbformat.v4.new_code_cell(source, metadata={"tags": tags} if tags else {})
    cell.execution_count = 4
    if outputs:
        cell.outputs = [nbformat.v4.new_output("stream", text="Correct: yes\n")]
    return cell


CELLS = [  # tags, kept?, source blanked?, outputs kept?
    ([], True, False, True),
    (["nbval-check-output"], True, False, True),
    (["answer"], True, True, False),
    (["check", "nbval-check-output"], True, False, False),
    (["solution"], False, None, None),
    (["solution", "nbval-check-output"], False, None, None),
]


@pytest.mark.parametrize("tags,kept,blanked,outputs", CELLS, ids=[",".join(t) or "plain" for t, *_ in CELLS])
def test_learner_cell_by_tag(tags, kept, blanked, outputs):
    cell = _cell(tags)
    got = labcopies.learner_cell(cell)
    if not kept:
        assert got is None
        return
    assert (got.source != cell.source) == blanked
    assert bool(got.outputs) == outputs
    assert (got.execution_count is None) == (not outputs)
    assert got.metadata == cell.metadata
    assert _cell(tags).outputs == cell.outputs  # the solution cell itself is not changed


def test_learner_copy_leaves_markdown_and_metadata_alone():
    nb = nbformat.v4.new_notebook(metadata={"widgets": {"state": 1}, "language_info": {"name": "python"}})
    nb.cells = [nbformat.v4.new_markdown_cell("# Lab"), _cell(["answer"], "A = 2"), _cell(["check"]),
                _cell(["solution"]), _cell([])]
    copy = labcopies.learner_copy(nb)
    assert [c.cell_type for c in copy.cells] == ["markdown", "code", "code", "code"]
    assert copy.metadata == nb.metadata and copy.cells[0] == nb.cells[0] and copy.cells[3] == nb.cells[4]
    assert len(nb.cells) == 5 and nb.cells[1].source == "A = 2"


# ---- the stored labs ---------------------------------------------------------------------------------------

def test_there_are_solution_labs_and_each_has_a_learner_copy():
    assert PATHS, f"no labs in {SOLUTIONS}"
    learner = sorted(p.name for p in (REPO / "labs").glob("[0-9]*.ipynb"))
    assert [labcopies.learner_path(p).name for p in PATHS] == learner


def test_learner_copies_are_up_to_date():
    assert labcopies.stale(SOLUTIONS) == [], "run ./scripts/learner-copies"


def test_learner_copies_check_command_names_a_stale_copy(tmp_path):
    (tmp_path / "solutions").mkdir()
    solution = tmp_path / "solutions" / "01-x.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [_cell(["answer"], "A = 2")]
    nbformat.write(nb, solution)
    assert labcopies.main(["--check", str(tmp_path / "solutions")]) == 1
    assert labcopies.main([str(tmp_path / "solutions")]) == 0
    assert labcopies.main(["--check", str(tmp_path / "solutions")]) == 0
    assert "A = None" in (tmp_path / "01-x.ipynb").read_text()
    run = subprocess.run([REPO / "scripts" / "learner-copies", "--check"], cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


@labs
def test_learner_copy_differs_from_its_solution_only_in_answers_check_outputs_and_solution_cells(solution):
    sol, mine = _nb(solution), _nb(labcopies.learner_path(solution))
    kept = [c for c in sol.cells if labcopies.SOLUTION not in labcopies.tags(c)]
    assert len(mine.cells) == len(kept)
    assert mine.metadata == sol.metadata
    for s, m in zip(kept, mine.cells, strict=True):
        t = labcopies.tags(s)
        if labcopies.ANSWER in t:
            assert m.source == labcopies.blank_answers(s.source) and not m.outputs
        elif labcopies.CHECK in t:
            assert m.source == s.source and not m.outputs and m.execution_count is None
        else:
            assert m == s


@labs
def test_every_exercise_is_tagged_and_the_solution_answers_it(solution):
    """Each answer cell is followed by a check cell using its names; the solution's stored check says Correct."""
    nb = _nb(solution)
    code = [c for c in nb.cells if c.cell_type == "code"]
    for i, cell in enumerate(code):
        if labcopies.ANSWER not in labcopies.tags(cell):
            assert not re.match(r"ANSWER\w* = ", cell.source), f"an untagged answer cell: {cell.source[:60]}"
            continue
        names = list(_answers(nbformat.v4.new_notebook(cells=[cell])))
        check = next(c for c in code[i + 1:] if any(n in c.source for n in names))
        assert labcopies.CHECK in labcopies.tags(check), check.source[:80]
        text = "".join(o.get("text", "") for o in check.outputs)
        assert exercise.CORRECT in text and exercise.NOT_QUITE not in text, text


@labs
def test_no_lab_source_carries_nbval_comments(solution):
    for path in (solution, labcopies.learner_path(solution)):
        assert not [c.source[:40] for c in _nb(path).cells if "NBVAL_" in c.source], path


def _calls(source: str, *names: str) -> list[ast.Call]:
    """The ``exercise.<name>(...)`` calls in ``source``."""
    return [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute) and n.func.attr in names]


@labs
def test_learner_copy_stores_no_verdict_and_no_answer(solution):
    mine = _nb(labcopies.learner_path(solution))
    stored = json.dumps([c.get("outputs", []) for c in mine.cells]) + json.dumps(mine.metadata)
    for verdict in ("Correct", "Not quite", "Well done"):
        assert verdict not in stored
    answers = _answers(_nb(solution))
    assert all(v is None for v in _answers(mine).values()) and set(_answers(mine)) == set(answers)
    # no text a check cell shows (what to fill in, the hint, the "right" explanation) states an answer in its
    # source: the learner reads the source before running it
    for cell in mine.cells:
        if labcopies.CHECK in labcopies.tags(cell):
            calls = _calls(cell.source, "grade", "answered")
            texts = [n.value for call in calls for n in ast.walk(call)
                     if isinstance(n, ast.Constant) and isinstance(n.value, str)]
            for name, value in answers.items():
                leaked = [t for t in texts if exercise._mentions(t, value)]
                assert not leaked, (name, value, leaked)




@labs
def test_each_checker_gives_a_wrong_answer_a_hint_without_the_answer(solution):
    nb = _nb(solution)
    answers = _answers(nb)
    calls = [call for c in nb.cells if labcopies.CHECK in labcopies.tags(c) for call in _calls(c.source, "grade")]
    assert len(calls) == len(answers) or not answers
    for call in calls:
        kw = {k.arg: k.value for k in call.keywords}
        name = ast.unparse(kw["answer"]).replace("sorted(", "").rstrip(")")
        value = answers[name]
        hints = [n.value for n in ast.walk(kw["hint"]) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        assert hints, ast.unparse(kw["hint"])
        for hint in hints:
            out = exercise.verdict(False, right="-", hint=hint, answer="my guess", expected=value)
            assert out.startswith(exercise.NOT_QUITE) and not exercise._mentions(out, value), out


# ---- the grading module ------------------------------------------------------------------------------------

VERDICTS = [  # correct, answer, expected, output starts with
    (True, 8, 8, "Correct: "),
    (False, 5, 8, "Not quite: "),
    (False, (1, 1), (0, 2), "Not quite: "),
    (False, 100.0, 164.68, "Not quite: "),
    (False, {(1, "x")}, {(0, "inference")}, "Not quite: "),
]


@pytest.mark.parametrize("correct,answer,expected,start", VERDICTS)
def test_verdict_says_correct_or_hints_without_the_value(correct, answer, expected, start):
    out = exercise.verdict(correct, right="why.", hint="look again.", answer=answer, expected=expected)
    assert out.startswith(start)
    if not correct:
        assert not exercise._mentions(out, expected) and repr(answer) in out


@pytest.mark.parametrize("hint,expected", [("there are 8 of them", 8), ("it costs $164.68", 164.68),
                                           ("the pair (0, 2)", (0, 2)), ("GPU 0", 0)])
def test_verdict_refuses_a_hint_that_gives_the_answer_away(hint, expected):
    with pytest.raises(ValueError):
        exercise.verdict(False, right="-", hint=hint, expected=expected)


@pytest.mark.parametrize("text,expected,mentioned", [("1g.10gb", 0, False), ("cuda:0", 0, True),
                                                     ("18 pods", 8, False), ("8.5", 8, False),
                                                     ("164.7 USD", 164.68, True), ("165 USD", 164.68, False),
                                                     ("$164.68", 164.68, True)])
def test_mentions_reads_numbers_as_words(text, expected, mentioned):
    assert exercise._mentions(text, expected) == mentioned


def test_answered_says_what_to_fill_in(capsys):
    assert exercise.answered(None, "ANSWER_MAX", "the largest number of GPUs") is False
    out = capsys.readouterr().out
    assert out == exercise.unanswered_message("ANSWER_MAX", "the largest number of GPUs") + "\n"
    assert "ANSWER_MAX" in out and "the largest number of GPUs" in out
    assert exercise.answered(0, "ANSWER", "x") is True and capsys.readouterr().out == ""


# ---- markdown that JupyterLab would typeset as math ---------------------------------------------------------

def math_pairs(markdown: str) -> list[str]:
    """Paragraphs with two or more unescaped ``$`` outside code: JupyterLab's renderer pairs them as inline
    math (its removeMath works per block of text, after code spans are set aside)."""
    text = re.sub(r"```.*?```", "", markdown, flags=re.S)
    text = re.sub(r"(`+).*?\1", "", text, flags=re.S)
    return [p.strip() for p in re.split(r"\n\s*\n", text) if len(re.findall(r"(?<!\\)\$", p)) >= 2]


MATH = [
    ("p4de.24xlarge in us-east-1: $27.44705 per hour\nfor 8 GPUs = **$3.4309 per GPU-hour**", True),
    ("a price of $3.43 per hour", False),
    ("costs \\$27 and \\$3", False),
    ("`$HOME` and `$PATH`", False),
    ("$5 here\n\nand $6 in the next paragraph", False),
    ("```\necho $A $B\n```", False),
]


@pytest.mark.parametrize("markdown,flagged", MATH)
def test_math_pairs_finds_what_jupyterlab_typesets(markdown, flagged):
    assert bool(math_pairs(markdown)) == flagged


@pytest.mark.parametrize("path", [*PATHS, *(labcopies.learner_path(p) for p in PATHS), REPO / "labs" / "README.md"],
                         ids=lambda p: str(p.relative_to(REPO)))
def test_lab_markdown_has_no_dollar_pairs(path):
    if path.suffix == ".md":
        cells = [path.read_text()]
    else:
        cells = [c.source for c in _nb(path).cells if c.cell_type == "markdown"]
    assert not [pair for source in cells for pair in math_pairs(source)]


# ---- a learner's Run All on the blank copies ----------------------------------------------------------------

@labs
def test_learner_copy_runs_to_the_end_with_blank_answers(solution, tmp_path, monkeypatch):
    """Run All on the learner's copy, answers untouched: no cell fails, each check says what to fill in,
    none says Correct. (A learner who has not answered yet must still see the rest of the lab run.)"""
    nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (pip install -e '.[lab]')")
    monkeypatch.setenv("MOCKGPU_HOME", str(tmp_path / "home"))  # the lab's cluster, away from the learner's
    monkeypatch.delenv("MOCKGPU_KUBECONFIG", raising=False)
    path = labcopies.learner_path(solution)
    nb = _nb(path)
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    text = "\n".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    assert text.count("is still None: set it to") == len(_answers(_nb(solution)))
    assert exercise.CORRECT not in text and exercise.NOT_QUITE not in text
