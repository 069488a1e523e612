r"""The grammar of field selectors, as ``k8s.io/apimachinery/pkg/fields`` reads them: terms split on unescaped
commas, each at its first ``!=``, ``==`` or ``=``, values unescaped (``\\``, ``\,``, ``\=``). Which labels a kind
supports is its record's (``registry``); ``selectors.parse_field_selector`` puts the two together."""

from __future__ import annotations


def split_unescaped(text: str, sep: str) -> list[str]:
    parts, cur, i = [], "", 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            cur += text[i:i + 2]
            i += 2
            continue
        if text[i] == sep:
            parts.append(cur)
            cur = ""
        else:
            cur += text[i]
        i += 1
    parts.append(cur)
    return parts


def unescape(value: str) -> str:
    r"""fields.UnescapeValue: ``\\``, ``\,`` and ``\=`` are the only escapes; a bare ``,`` or ``=`` is an error."""
    out, i = "", 0
    while i < len(value):
        c = value[i]
        if c == "\\":
            if i + 1 == len(value):
                raise ValueError("invalid field selector: invalid escape sequence: \\")
            if value[i + 1] not in "\\,=":
                raise ValueError(f"invalid field selector: invalid escape sequence: \\{value[i + 1]}")
            out += value[i + 1]
            i += 2
            continue
        if c in ",=":
            raise ValueError(f"invalid field selector: unescaped character in value: {ord(c)}")
        out += c
        i += 1
    return out


def split_term(text: str, term: str) -> tuple[str, str, str]:
    """fields' splitTerm: the first position where ``!=``, ``==`` or ``=`` starts splits the term."""
    for i in range(len(term)):
        for op_text, op in (("!=", "!="), ("==", "="), ("=", "=")):
            if term.startswith(op_text, i):
                return term[:i], op, term[i + len(op_text):]
    raise ValueError(f"invalid selector: '{text}'; can't understand '{term}'")
