"""Learner copies of the labs: ``labs/NN-*.ipynb`` built from ``labs/solutions/NN-*.ipynb``.

The solution labs are the source (answers filled in, outputs stored by ``scripts/refresh-labs``, run by
nbval). A learner copy is the same notebook with the answers taken out, decided by cell tags:

``answer``
    An exercise cell the learner fills. Each top-level ``NAME = <value>  # comment`` becomes
    ``NAME = None  # comment``, under a first line saying what to do (``FILL_IN``); outputs cleared.
``check``
    The cell that grades the answer (``mockgpu.widgets.exercise``). Its outputs are removed, so no
    stored "Correct" (nor the measured value) is shown before the learner answers.
``solution``
    Removed from the learner copy (e.g. an instructor's check that runs the model solution).

Every other cell, the notebook metadata and the stored widget state stay identical, so the pictures
show on first open. nbval reads its own tags (``nbval-check-output``, ``nbval-ignore-output``,
``nbval-skip``, ``raises-exception``); they are left as they are.

>>> print(blank_answers('ANSWER = (0, 2)  # your pair: (spreading, bin-packing)'))
# Your answer: replace None below, then run this cell and the check under it.
ANSWER = None  # your pair: (spreading, bin-packing)
"""

from __future__ import annotations

import argparse
import ast
import copy
from pathlib import Path

import nbformat

ANSWER, CHECK, SOLUTION = "answer", "check", "solution"
FILL_IN = "# Your answer: replace None below, then run this cell and the check under it."


def tags(cell) -> list[str]:
    """The cell's tags (``metadata.tags``), [] when none."""
    return list(cell.get("metadata", {}).get("tags", []))


def blank_answers(source: str) -> str:
    """``source`` with the value of each top-level ``NAME = value`` replaced by None, comments kept.

    Raises ValueError when the cell assigns nothing (an ``answer`` tag on the wrong cell)."""
    lines = source.splitlines()
    assigns = [node for node in ast.parse(source).body
               if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets)]
    if not assigns:
        raise ValueError(f"an answer cell assigns no name: {source!r}")
    for node in reversed(assigns):  # from the end, so earlier offsets stay valid
        v = node.value
        first, last = v.lineno - 1, v.end_lineno - 1
        # ast offsets are in UTF-8 bytes
        head = lines[first].encode()[:v.col_offset].decode()
        tail = lines[last].encode()[v.end_col_offset:].decode()
        lines[first:last + 1] = [head + "None" + tail]
    body = [line for line in lines if line.strip() != FILL_IN]
    return "\n".join([FILL_IN, *body])


def learner_cell(cell):
    """The learner's version of one solution cell, or None when the cell is dropped."""
    t = tags(cell)
    if SOLUTION in t:
        return None
    if ANSWER in t:
        out = copy.deepcopy(cell)
        out.source = blank_answers(cell.source)
        out.outputs, out.execution_count = [], None
        return out
    if CHECK in t:
        out = copy.deepcopy(cell)
        out.outputs, out.execution_count = [], None
        return out
    return cell


def learner_copy(solution):
    """The learner's notebook made from a solution notebook (an nbformat NotebookNode, not changed)."""
    nb = copy.deepcopy(solution)
    nb.cells = [c for c in (learner_cell(cell) for cell in nb.cells) if c is not None]
    return nb


def learner_path(solution_path: Path) -> Path:
    """``labs/solutions/NN-x.ipynb`` -> ``labs/NN-x.ipynb``."""
    return solution_path.parent.parent / solution_path.name


def render(solution_path: Path) -> str:
    """The learner copy's text for one solution lab, as ``nbformat.write`` stores it."""
    text = nbformat.writes(learner_copy(nbformat.read(solution_path, as_version=4)))
    return text if text.endswith("\n") else text + "\n"  # as nbformat.write stores it


def stale(solutions: Path) -> list[Path]:
    """The learner copies that are missing or differ from what ``render`` makes of their solution."""
    out = []
    for path in sorted(solutions.glob("[0-9][0-9]-*.ipynb")):
        target = learner_path(path)
        if not target.exists() or target.read_text(encoding="utf-8") != render(path):
            out.append(target)
    return out


def write_all(solutions: Path) -> list[Path]:
    """(Re)write every stale learner copy; return the ones written."""
    written = stale(solutions)
    for target in written:
        target.write_text(render(solutions / target.name), encoding="utf-8")
    return written


def main(argv: list[str] | None = None) -> int:
    """``python -m mockgpu.labcopies [--check] [SOLUTIONS_DIR]``: write the copies, or with --check
    exit 1 naming each stale one."""
    parser = argparse.ArgumentParser(prog="learner-copies", description=main.__doc__)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a copy is stale")
    parser.add_argument("solutions", nargs="?", default="labs/solutions", type=Path)
    args = parser.parse_args(argv)
    if args.check:
        bad = stale(args.solutions)
        for target in bad:
            print(f"learner-copies: {target} is stale; run ./scripts/learner-copies")
        return 1 if bad else 0
    for target in write_all(args.solutions):
        print(f"learner-copies: wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
