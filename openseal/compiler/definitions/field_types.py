"""Field types of the definition model that parse while they validate.

Each type accepts what either syntax gives — an HCL expression
(:class:`~openseal.compiler.syntax.fold.ExprSource`) or a string, possibly with
``${...}`` — and stores the parsed form. Parse errors are appended, with their
exact spans, to the diagnostics list passed in the validation context, and a
placeholder is returned so validation can carry on and report more.
"""

from __future__ import annotations

import re
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, PlainSerializer, ValidationInfo, WithJsonSchema

from openseal.compiler.diagnostics import Diagnostic, error
from openseal.compiler.lang import expr as ex
from openseal.compiler.lang import types as ty
from openseal.compiler.syntax.file_text import IncludeError, read_included
from openseal.compiler.syntax.fold import ExprSource, SpannedStr
from openseal.compiler.syntax.spans import Span

_UNKNOWN = Span.point("<definition>")


@dataclass
class DecodeContext:
    """Passed to pydantic as ``context``; collects diagnostics raised by field parsing."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    fallback_span: Span = _UNKNOWN


def _context(info: ValidationInfo) -> DecodeContext:
    ctx = info.context
    return ctx if isinstance(ctx, DecodeContext) else DecodeContext()


def _span_of(value: object, ctx: DecodeContext) -> Span:
    return getattr(value, "span", None) or ctx.fallback_span


def _origin_of(value: object, span: Span) -> Span:
    """Where the text of ``value`` starts: after its opening quote, if it has one."""
    return value.origin if isinstance(value, SpannedStr) else span


def _report(result: tuple[Any, list[Diagnostic]], ctx: DecodeContext) -> Any:
    node, diagnostics = result
    ctx.diagnostics.extend(diagnostics)
    return node


# --------------------------------------------------------------------------- expressions


def to_expression(value: object, ctx: DecodeContext) -> ex.Expression:
    """Convert folded data (strings, HCL expressions, lists, maps, scalars) into one AST."""
    span = _span_of(value, ctx)
    if isinstance(value, ExprSource):
        node = _report(ex.parse_expression(value.source, value.span), ctx)
    elif isinstance(value, str):
        node = _report(ex.parse_template(str(value), _origin_of(value, span)), ctx)
    elif isinstance(value, list):
        return ex.ListExpr(tuple(to_expression(item, ctx) for item in value), span)
    elif isinstance(value, dict):
        items = tuple((str(k), to_expression(v, ctx)) for k, v in value.items())
        return ex.ObjectExpr(items, span)
    elif value is None or isinstance(value, bool | int | float):
        return ex.Literal(value, span)
    else:
        raise ValueError(f"unsupported value {value!r} in an expression")
    return node if node is not None else ex.Literal(None, span)


def _validate_expression(value: object, info: ValidationInfo) -> ex.Expression:
    if isinstance(value, ex.Expression):
        return value
    return to_expression(value, _context(info))


def _expression_json(node: ex.Expression) -> object:
    return ex.to_json(node)


_EXPR_SCHEMA = {"description": "an expression: a literal, a reference, or a string with ${...}"}

Expression = Annotated[
    ex.Expression,
    BeforeValidator(_validate_expression),
    PlainSerializer(_expression_json),
    WithJsonSchema(_EXPR_SCHEMA),
]

Template = Annotated[
    ex.Expression,
    BeforeValidator(_validate_expression),
    PlainSerializer(_expression_json),
    WithJsonSchema({"type": "string", "description": "text with optional ${...} interpolation"}),
]


# --------------------------------------------------------------------------- references


_REFERENCE_HINT = "write a reference such as `skill.search_vendors` or `state.review`"


def _validate_reference(value: object, info: ValidationInfo) -> ex.Ref:
    if isinstance(value, ex.Ref):
        return value
    ctx = _context(info)
    if isinstance(value, ExprSource):
        node = _report(ex.parse_expression(value.source, value.span), ctx)
    elif isinstance(value, str):
        text = str(value)
        span = _span_of(value, ctx)
        parse = ex.parse_template if "${" in text else ex.parse_expression
        node = _report(parse(text, _origin_of(value, span)), ctx)
    else:
        raise ValueError(f"expected a reference; {_REFERENCE_HINT}")
    if node is None:
        return ex.Ref("invalid", (), _span_of(value, ctx))
    if not isinstance(node, ex.Ref) or not all(isinstance(p, str) for p in node.path):
        raise ValueError(f"expected a plain reference, not an expression; {_REFERENCE_HINT}")
    return node


def reference_text(ref: ex.Ref) -> str:
    return ".".join([ref.root, *(str(p) for p in ref.path)])


Reference = Annotated[
    ex.Ref,
    BeforeValidator(_validate_reference),
    PlainSerializer(reference_text),
    WithJsonSchema({"type": "string", "pattern": r"^[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)+$"}),
]


# --------------------------------------------------------------------------- types


def _validate_type(value: object, info: ValidationInfo) -> ty.TypeExpr:
    if isinstance(value, ty.TypeExpr):
        return value
    ctx = _context(info)
    if isinstance(value, ExprSource | str):
        source = value.source if isinstance(value, ExprSource) else str(value)
        node = _report(ty.parse_type(source, _span_of(value, ctx)), ctx)
        return node if node is not None else ty.Primitive("any")
    raise ValueError("expected a type such as `string`, `list(number)` or `object({...})`")


TypeConstraint = Annotated[
    ty.TypeExpr,
    BeforeValidator(_validate_type),
    PlainSerializer(ty.to_json),
    WithJsonSchema({"type": "string", "description": "a type constraint, e.g. list(string)"}),
]


# --------------------------------------------------------------------------- durations


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(value: object) -> float:
    """``"72h"``, ``"1h30m"``, ``"500ms"`` or a number of seconds → seconds."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as `30s` or `72h`")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip()
        parts = _DURATION.findall(text)
        if not parts or "".join(n + u for n, u in parts) != text:
            raise ValueError(
                f"`{text}` is not a duration; write e.g. `30s`, `15m`, `72h` or `1h30m`"
            )
        seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)
    else:
        raise ValueError("expected a duration such as `30s` or `72h`")
    if seconds < 0:
        raise ValueError("a duration cannot be negative")
    return seconds


Duration = Annotated[
    float,
    BeforeValidator(parse_duration),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "pattern": r"^(\d+(\.\d+)?(ms|s|m|h|d))+$"},
                {"type": "number", "minimum": 0},
            ]
        }
    ),
]


# --------------------------------------------------------------------------- text and names


def _validate_text(value: object, info: ValidationInfo) -> str:
    """Inline text, or ``file("path")`` read relative to the defining file."""
    ctx = _context(info)
    if isinstance(value, str) and "${" not in value:
        return str(value)
    if not isinstance(value, ExprSource | str):
        raise ValueError('expected text or file("path")')
    node = _validate_expression(value, info)
    if isinstance(node, ex.Call) and node.name == "file":
        return _read_file_argument(node, ctx)
    raise ValueError('expected text or file("path"); other expressions are not allowed here')


#: While set to a list, every ``file()`` read during decoding is appended to it as
#: (path, text read, or ``None`` when it could not be read). The compile cache
#: keys an entry by these texts, so editing such a file invalidates it.
FILE_READS: ContextVar[list[tuple[Path, str | None]] | None] = ContextVar(
    "openseal_file_reads", default=None
)


def _read_file_argument(call: ex.Call, ctx: DecodeContext) -> str:
    if len(call.args) != 1 or not isinstance(call.args[0], ex.Literal):
        ctx.diagnostics.append(
            error("OS108", 'file() takes one literal path: file("notes.md")', call.span)
        )
        return ""
    relative = str(call.args[0].value)
    path = Path(call.span.file).parent / relative
    reads = FILE_READS.get()
    try:
        text = read_included(path, Path(call.span.file))
    except IncludeError as exc:
        if reads is not None:
            reads.append((path, None))
        ctx.diagnostics.append(
            error(
                "OS108",
                f"file({relative!r}) cannot be read: {exc.reason}",
                call.span,
                suggestion=exc.hint,
            )
        )
        return ""
    if reads is not None:
        reads.append((path, text))
    return text


Text = Annotated[str, BeforeValidator(_validate_text)]

#: The one rule for every name a definition file gives: definitions of every kind,
#: states, steps, inputs, outputs, roles, branches. ASCII only, so a name is the
#: same on every file system and in every reference, and never a path.
NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
#: The longest definition name: a definition is the file ``<kind>/<name>.json`` in a bundle,
#: and file systems refuse names past 255 bytes.
MAX_NAME_CHARS = 128
_NAME = re.compile(NAME_PATTERN.strip("^$"))


def is_name(text: str) -> bool:
    """Whether ``text`` follows the name rule (:data:`NAME_PATTERN`)."""
    return _NAME.fullmatch(text) is not None  # fullmatch: `$` would allow a final newline


def name_suggestion(text: str) -> str | None:
    """A valid name close to ``text`` (``"has space"`` → ``has_space``), if there is one."""
    fixed = re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_")
    if fixed and fixed[0].isdigit():
        fixed = "_" + fixed
    return fixed if fixed and is_name(fixed) else None


Identifier = Annotated[str, Field(pattern=NAME_PATTERN)]
