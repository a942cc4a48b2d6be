"""Friendly wording for expression syntax errors.

lark reports an offset and the set of terminal names it would have accepted;
this module turns that into "unexpected `)`; expected an expression" plus a
suggestion for the mistakes people actually make (`=` for `==`, single quotes,
`and`/`or`, an unterminated string).
"""

from __future__ import annotations

import re

# Terminals that can only start an operand (`(` and `[` may also follow one).
_OPERAND_START = {"IDENT", "NUMBER", "TRUE", "FALSE", "NULL", "_QUOTE", "LBRACE", "BANG"}
# Binary operators only: a `-` may also start an operand.
_OPERATORS = {"OR", "AND", "EQ", "NE", "LT", "LE", "GT", "GE", "PLUS", "STAR", "SLASH", "PERCENT"}
_PUNCTUATION = {
    "RPAR": "`)`",
    "RSQB": "`]`",
    "RBRACE": "`}`",
    "COMMA": "`,`",
    "COLON": "`:`",
    "EQUAL": "`=`",
    "QMARK": "`?`",
    "_QUOTE": '`"`',
}
_WORDS = {"and": "&&", "or": "||", "not": "!"}
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*|[0-9][0-9.eE+-]*|&&|\|\||==|!=|<=|>=|\$\{|\S")


def describe_syntax_error(source: str, offset: int, expected: set[str]) -> tuple[str, str | None]:
    """The message and optional suggestion for a syntax error at ``offset``."""
    in_string = "STRING_TEXT" in expected
    at_end = offset >= len(source.rstrip()) if not in_string else offset >= len(source)
    if in_string and (at_end or source[offset] == "\n"):
        return "unterminated string", 'close the string with `"` on the same line'
    if "TEMPLATE_TEXT" not in expected and "RBRACE" in expected and at_end and "${" in source:
        return "unexpected end of text: an interpolation `${` is not closed", "add the closing `}`"
    found = "end of the expression" if at_end else f"`{_token_at(source, offset)}`"
    message = f"unexpected {found}; expected {_expected(expected)}"
    return message, _suggestion(_token_at(source, offset) if not at_end else "", expected)


def _token_at(source: str, offset: int) -> str:
    match = _TOKEN.match(source, offset)
    return match.group(0) if match else source[offset : offset + 1]


def _expected(expected: set[str]) -> str:
    names: list[str] = []
    operand = bool(expected & _OPERAND_START)
    if operand:
        names.append("an expression")
    # Wherever the input may end, a complete operand could also continue.
    if expected & _OPERATORS or "$END" in expected:
        names.append("an operator")
    names.extend(
        text
        for name, text in _PUNCTUATION.items()
        if name in expected and not (operand and name in _OPERAND_START)
    )
    if "$END" in expected:
        names.append("the end of the expression")
    if not names:
        return "something else"
    names = list(dict.fromkeys(names))[:5]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _suggestion(found: str, expected: set[str]) -> str | None:
    if found == "=" and "EQ" in expected:
        return "use `==` to compare values"
    if found in ("'", "`"):
        return 'strings use double quotes: "text"'
    if found in _WORDS:
        return f"use `{_WORDS[found]}` for `{found}`"
    if found == "${":
        return "`${...}` is only for interpolation inside a string; write the expression directly"
    return None
