"""Grading of the labs' exercises: what a check cell prints.

An exercise is two cells (tags, see ``mockgpu.labcopies``): an ``answer`` cell where the learner sets
``NAME = <value>`` (``NAME = None`` in the learner's copy), and a ``check`` cell that measures the
cluster and grades the answer. The check cell prints one of three things:

* the answer is still ``None`` -> what to fill in, and nothing else (``answered`` returns False, so
  the cell skips the part of the experiment that needs the answer; Run All goes on);
* the answer is right -> ``Correct: <why>``;
* the answer is wrong -> ``Not quite: <hint>`` and the learner's own answer, never the right value:
  ``verdict`` refuses a hint that contains the expected value.

>>> answered(None, "ANSWER", "the number of GPUs one pod can get")
ANSWER is still None: set it to the number of GPUs one pod can get in the cell above, then run this cell again.
False
>>> print(verdict(False, right="8 GPUs.", hint="Count the GPUs per node.", answer=5, expected=8))
Not quite: Count the GPUs per node. (You said 5.)
>>> print(verdict(True, right="8 GPUs.", hint="Count the GPUs per node.", answer=8, expected=8))
Correct: 8 GPUs.
"""

from __future__ import annotations

import re
from typing import Any

CORRECT = "Correct: "
NOT_QUITE = "Not quite: "


def unanswered_message(name: str, fill_in: str) -> str:
    """What a check cell says while its answer is still ``None``."""
    return (f"{name} is still None: set it to {fill_in} in the cell above, "
            "then run this cell again.")


def answered(value: Any, name: str, fill_in: str) -> bool:
    """False (after printing what to fill in) while ``value`` is None; True once the learner answered."""
    if value is None:
        print(unanswered_message(name, fill_in))
        return False
    return True


def _mentions(text: str, expected: Any) -> bool:
    """Whether ``text`` gives away ``expected`` (its str, or each element's str for a collection)."""
    if isinstance(expected, (set, frozenset, tuple, list)):
        return str(expected) in text or str(sorted(expected, key=repr)) in text
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        forms = {str(expected)} | ({f"{expected:.2f}", f"{expected:.1f}"} if isinstance(expected, float) else set())
        return any(re.search(rf"(?<![\w.]){re.escape(f)}(?![\w]|\.\d)", text) for f in forms)
    return str(expected) in text


def verdict(correct: bool, *, right: str, hint: str, answer: Any = None, expected: Any = None) -> str:
    """The line a check cell prints: ``Correct: right`` or ``Not quite: hint (You said answer.)``.

    ``expected`` (the value the cluster measured) is only used to refuse a hint that states it: a wrong
    try must never be shown the right value. Raises ValueError for such a hint (a defect in the lab)."""
    if expected is not None and _mentions(hint, expected):
        raise ValueError(f"the hint gives the answer away: {hint!r} contains {expected!r}")
    if correct:
        return CORRECT + right
    said = f" (You said {answer!r}.)" if answer is not None else ""
    return NOT_QUITE + hint + said


def grade(correct: bool, *, right: str, hint: str, answer: Any = None, expected: Any = None) -> bool:
    """Print ``verdict(...)``; return ``correct``."""
    print(verdict(correct, right=right, hint=hint, answer=answer, expected=expected))
    return bool(correct)
