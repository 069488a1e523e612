"""Compile-time checks of DRA CEL selector expressions, as kube-apiserver runs them on create (with cel-python).

Upstream compiles every new ``cel.expression`` of a DeviceClass, ResourceClaim or ResourceClaimTemplate with
the DRA CEL environment (``k8s.io/dynamic-resource-allocation/cel``); a failure is a 422 whose detail starts
``compilation failed: `` followed by cel-go's issue list (``ERROR: <input>:L:C: ...`` plus the expression and a
caret line). Here cel-python parses the expression, and identifiers are checked against the one variable the
environment declares (``device``), so a syntax error or an undeclared reference is refused in that shape.

An expression whose result type is evident without a type checker (a literal, or ``device.driver``) and is not
bool is refused as upstream's output-type check words it: ``must evaluate to bool or the unknown type, not
string``. Simplified: cel-python has no type checker, so other non-bool results (``device.attributes[...]``
arithmetic, ...) and cost estimation are not checked here (they fail when evaluated), and the syntax-error text
after the position is cel-python's, not cel-go's ANTLR wording.
"""

from __future__ import annotations

import celpy
from lark import Token, Tree

#: the variables the DRA CEL environment declares
DECLARED = frozenset({"device"})
#: macros whose first argument binds a variable in the others
_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})


def _caret(expression: str, line: int, column: int) -> str:
    """cel-go's snippet: `` | <line>`` then `` | ...^`` with a dot per column before the caret."""
    lines = expression.split("\n")
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return f"\n | {text}\n | {'.' * max(column - 1, 0)}^"


def _bound(tree: Tree) -> set[str]:
    out: set[str] = set()
    for node in tree.iter_subtrees():
        if node.data == "member_dot_arg" and len(node.children) >= 3:
            method, args = node.children[1], node.children[2]
            if isinstance(method, Token) and str(method) in _MACROS and isinstance(args, Tree) and args.children:
                first = args.children[0]
                idents = [t for t in first.iter_subtrees() if t.data == "ident"] if isinstance(first, Tree) else []
                if len(idents) == 1:
                    out.add(str(idents[0].children[0]))
    return out


_LITERAL_TYPES = {"INT_LIT": "int", "UINT_LIT": "uint", "FLOAT_LIT": "double", "STRING_LIT": "string",
                  "BYTES_LIT": "bytes", "BOOL_LIT": "bool", "NULL_LIT": "null_type"}


def evident_type(tree: Tree) -> str | None:
    """The result type of an expression that is only a literal or ``device.driver``; None when not evident."""
    node = tree
    while isinstance(node, Tree) and len(node.children) == 1 and isinstance(node.children[0], Tree):
        node = node.children[0]  # through expr, conditionalor, ..., primary and parentheses
    if not isinstance(node, Tree):
        return None
    if node.data == "literal" and node.children and isinstance(node.children[0], Token):
        return _LITERAL_TYPES.get(node.children[0].type)
    if node.data == "member_dot" and len(node.children) == 2 and str(node.children[1]) == "driver":
        idents = [t for t in node.children[0].iter_subtrees() if t.data == "ident"] \
            if isinstance(node.children[0], Tree) else []
        if len(idents) == 1 and str(idents[0].children[0]) == "device" and \
                not any(t.data != "ident" and t.data not in ("member", "primary")
                        for t in node.children[0].iter_subtrees()):
            return "string"
    return None


def compile_error(expression: str) -> str | None:
    """None when ``expression`` compiles; else the detail upstream's validation puts in the 422 cause."""
    try:
        tree = celpy.Environment().compile(expression)
    except celpy.CELParseError as exc:
        line, column = getattr(exc, "line", None) or 1, getattr(exc, "column", None) or 1
        return (f"compilation failed: ERROR: <input>:{line}:{column}: Syntax error: "
                f"unexpected input{_caret(expression, line, column)}")
    except Exception as exc:  # noqa: BLE001 - any other parser failure is still a compile error, never a 500
        return f"compilation failed: ERROR: <input>:1:1: {exc}"
    bound = _bound(tree)
    for node in tree.iter_subtrees_topdown():
        if node.data != "ident" or not node.children:
            continue
        token = node.children[0]
        name = str(token)
        if name not in DECLARED and name not in bound:
            line, column = getattr(token, "line", 1) or 1, (getattr(token, "column", 1) or 1)
            return (f"compilation failed: ERROR: <input>:{line}:{column}: undeclared reference to '{name}' "
                    f"(in container ''){_caret(expression, line, column)}")
    result = evident_type(tree)
    if result is not None and result != "bool":
        return f"must evaluate to bool or the unknown type, not {result}"
    return None
