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
    Known("outcome", case=r"update a template's spec \(immutable\)", detail="field is immutable",
          reason="same 422, path and 'field is immutable'; the bad value upstream prints is Go's JSON of its internal "
                 "struct (untagged field names, every nil field as null), which the embedded server prints as the "
                 "v1 JSON instead (resourcev1.py's docstring)"),
    Known("outcome", case=r"claim: CEL syntax error inside the expression", detail="Syntax error",
          reason="same 422, field path and 'compilation failed: ERROR: <input>:L:C: Syntax error:' shape; cel-go's "
                 "ANTLR parser names the token it expected there, cel-python's Lark parser does not (celcompile.py "
                 "gives ANTLR's wording only where the input ends before an operand)"),
    Known("outcome", case=r"claim: CEL quantity compared to an int", detail="no matching overload",
          reason="upstream's cel-go type-checks operator overloads at create; cel-python has no type checker, so "
                 "the embedded server stores the claim and the expression fails when the allocator evaluates it "
                 "(the claim is unallocatable with that reason, as a runtime CEL error is upstream)"),
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
