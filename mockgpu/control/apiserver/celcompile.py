"""Compile-time checks of DRA CEL selector expressions, as kube-apiserver runs them on create (with cel-python).

Upstream compiles every new ``cel.expression`` of a DeviceClass, ResourceClaim or ResourceClaimTemplate with
the DRA CEL environment (``k8s.io/dynamic-resource-allocation/cel``); a failure is a 422 whose detail starts
``compilation failed: `` followed by cel-go's issue list (``ERROR: <input>:L:C: ...`` plus the expression and a
caret line). Here cel-python parses the expression, and identifiers are checked against the one variable the
environment declares (``device``), so a syntax error or an undeclared reference is refused in that shape.

A field of ``device`` that upstream's ``kubernetes.DRADevice`` type does not declare (``device.nosuch``) is
refused as cel-go's checker words it (``undefined field 'nosuch'``, the caret on the dot). An expression whose
result type is evident without a type checker (a literal, ``device.driver``, ``device.capacity``,
``device.allowMultipleAllocations``) and is not bool is refused as upstream's output-type check words it:
``must evaluate to bool or the unknown type, not string``. Simplified: cel-python has no type checker, so
other non-bool results (``device.attributes[...]`` arithmetic, ...), operator overloads (``quantity > 1``)
and cost estimation are not checked here (they fail when evaluated); a syntax error where the input ends
before an operand gets cel-go's ANTLR wording (``mismatched input '<EOF>' expecting {...}``), any other
syntax error cel-python's position and ``unexpected input``.
"""

from __future__ import annotations

import celpy
from lark import Token, Tree

from mockgpu.control.apiserver import limits

#: what cel-go's grammar expects where an operand starts, and the tokens after which one must
_OPERAND_START = ("{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, "
                  "BYTES, IDENTIFIER}")
_OPERAND_BEFORE = ("==", "!=", "<", "<=", ">", ">=", "&&", "||", "+", "-", "*", "/", "%", "(", "[", ",", "?", ":",
                   "!", " in")

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


#: the fields of upstream's ``kubernetes.DRADevice`` object type and their CEL types where evident
#: (``attributes``: a map whose value type is not printed here, so never "evident")
DEVICE_FIELDS: dict[str, str | None] = {
    "driver": "string", "attributes": None, "capacity": "map(string, map(string, kubernetes.Quantity))",
    "allowMultipleAllocations": "bool"}

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
    field = device_field(node)
    if field is not None:
        return DEVICE_FIELDS.get(str(field))
    return None


def device_field(node: Tree) -> Token | None:
    """The field token of ``device.<field>`` (``device`` itself, not inside a longer path); else None."""
    if node.data != "member_dot" or len(node.children) != 2 or not isinstance(node.children[0], Tree):
        return None
    base = node.children[0]
    idents = [t for t in base.iter_subtrees() if t.data == "ident"]
    if len(idents) == 1 and str(idents[0].children[0]) == "device" and \
            not any(t.data != "ident" and t.data not in ("member", "primary") for t in base.iter_subtrees()):
        return node.children[1] if isinstance(node.children[1], Token) else None
    return None


def compile_error(expression: str) -> str | None:
    """None when ``expression`` compiles; else the detail upstream's validation puts in the 422 cause."""
    try:
        env = celpy.Environment()  # sets the recursion limit to 2500, below what the server needs
        limits.ensure_recursion_headroom()
        tree = env.compile(expression)
    except celpy.CELParseError as exc:
        cause = exc.__cause__ or exc.__context__
        token = getattr(cause, "token", None)
        if getattr(token, "type", None) == "$END" and expression.rstrip().endswith(_OPERAND_BEFORE):
            # the input ends where an operand must come: cel-go's ANTLR wording, the caret after the last char
            lines = expression.split("\n")
            line, column = len(lines), len(lines[-1]) + 1
            return (f"compilation failed: ERROR: <input>:{line}:{column}: Syntax error: mismatched input '<EOF>' "
                    f"expecting {_OPERAND_START}{_caret(expression, line, column)}")
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
    for node in tree.iter_subtrees_topdown():
        field = device_field(node)
        if field is not None and str(field) not in DEVICE_FIELDS and "device" not in bound:
            line, column = getattr(field, "line", 1) or 1, max((getattr(field, "column", 2) or 2) - 1, 1)
            return (f"compilation failed: ERROR: <input>:{line}:{column}: undefined field '{field}'"
                    f"{_caret(expression, line, column)}")
    result = evident_type(tree)
    if result is not None and result != "bool":
        return f"must evaluate to bool or the unknown type, not {result}"
    return None
