"""Help text for the command-line parsers, taken from module docstrings.

A parser's description is the docstring's whole first paragraph (up to the first blank line), joined into
one line with the reST backticks dropped: cutting at the first *line* cut sentences in half.
"""

from __future__ import annotations


def describe(doc: str | None) -> str:
    """``"``x``: does y,\\nand z.\\n\\nMore."`` -> ``"x: does y, and z."``."""
    first = (doc or "").strip().split("\n\n", 1)[0]
    return " ".join(first.split()).replace("``", "")
