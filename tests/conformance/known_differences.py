"""Differences between the embedded and the upstream control plane that are kept on purpose, each with
its one-line reason. A difference the suite finds that matches none of these fails the suite."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Known:
    kind: str  # regex on Difference.kind
    reason: str
    case: str = ".*"  # regex on the case id
    detail: str = ".*"  # regex searched in Difference.detail

    def matches(self, case: str, kind: str, detail: str) -> bool:
        return bool(re.fullmatch(self.kind, kind) and re.fullmatch(self.case, case)
                    and re.search(self.detail, detail))


KNOWN: list[Known] = [
    Known("stderr", case=r"kubectl .*: patch forbidden field \(422\)", detail="pod updates may not change",
          reason="kube-apiserver appends a go-cmp diff of the two pod specs after this message; go-cmp varies its "
                 "whitespace on purpose, so the embedded message stops at that newline (apiserver/podupdate.py)"),
    Known("outcome", case=r"continue with a garbage token.*", detail="continue key is not valid",
          reason="same 400 BadRequest; the text after 'continue key is not valid:' is the decoder's own error "
                 "for the token's bytes (Go's encoding/json upstream), which the embedded server does not mimic"),
]


def explain(case: str, kind: str, detail: str) -> str | None:
    """The reason a difference is kept, or None when it is not a known one."""
    for k in KNOWN:
        if k.matches(case, kind, detail):
            return k.reason
    return None
