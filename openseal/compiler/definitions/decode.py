"""Decode folded documents into the definition model, with located diagnostics.

Each definition is validated on its own so one mistake does not hide the
others. pydantic's errors are translated into openseal's codes and pointed at
the key or value they are about, with the allowed keys and a close match.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from openseal.compiler.definitions.field_types import (
    MAX_NAME_CHARS,
    DecodeContext,
    is_name,
    name_suggestion,
)
from openseal.compiler.definitions.key_spans import KeyLayout, pack_key_spans
from openseal.compiler.definitions.labels import unwrap
from openseal.compiler.definitions.specs import KIND_MODELS, Spec
from openseal.compiler.diagnostics import Diagnostic, did_you_mean, error
from openseal.compiler.lang import expr as ex
from openseal.compiler.syntax.fold import Folded, Path
from openseal.compiler.syntax.spans import Span


@dataclass(frozen=True, slots=True)
class Definition:
    """One named definition of one kind, as written in one file."""

    kind: str
    name: str
    spec: Spec
    span: Span
    name_span: Span
    #: where each key inside the definition was written, by path relative to it
    #: (``("state", "draft")`` → the label of ``state "draft"``), for diagnostics
    #: about parts of a definition that hold no span of their own
    key_spans: Mapping[Path, Span] = field(default_factory=dict, compare=False)

    @property
    def key(self) -> str:
        return f"{self.kind}.{self.name}"


def decode(folded: Folded, file: str) -> tuple[list[Definition], list[Diagnostic]]:
    """The definitions in ``folded`` and what is wrong with them.

    Each definition's data is let go once it is decoded (its name stays in ``folded.data``,
    its value is ``None``), and so are the spans of the keys and values inside it (those of
    the kinds and names stay), so a big file never holds all of its folded data beside all
    of its definitions.
    """
    definitions: list[Definition] = []
    diagnostics: list[Diagnostic] = []
    data = folded.data if isinstance(folded.data, dict) else {}
    spans_by_definition = _key_spans_by_definition(folded)
    inner_paths = _inner_paths(folded)
    for kind, by_name in data.items():
        kind_span = folded.keys.get((kind,)) or Span.whole_file(file)
        model = KIND_MODELS.get(kind)
        if model is None:
            diagnostics.append(
                error(
                    "OS109",
                    f"unknown definition kind `{kind}`; kinds are {_listing(KIND_MODELS)}",
                    kind_span,
                    suggestion=did_you_mean(kind, KIND_MODELS),
                )
            )
            continue
        if not isinstance(by_name, dict):
            diagnostics.append(
                error(
                    "OS103",
                    f"`{kind}` must hold named definitions",
                    kind_span,
                    suggestion=f'HCL: `{kind} "name" {{...}}`; YAML: `{kind}: {{name: ...}}`',
                )
            )
            continue
        for name in by_name:
            body, by_name[name] = by_name[name], None
            path: Path = (kind, name)
            try:
                span = folded.values.get(path) or kind_span
                name_span = folded.keys.get(path) or span
                if not is_name(str(name)):
                    diagnostics.append(_invalid_name(kind, str(name), name_span))
                    continue
                if len(name) > MAX_NAME_CHARS:
                    diagnostics.append(_long_name(kind, str(name), name_span))
                    continue
                ctx = DecodeContext(fallback_span=span)
                try:
                    spec = model.model_validate(body, context=ctx)
                except ValidationError as exc:
                    diagnostics.extend(ctx.diagnostics)
                    diagnostics.extend(_translate(exc, model, body, path, folded))
                    continue
                diagnostics.extend(ctx.diagnostics)
                spec = _placed(spec, path, folded.values, span)
                key_spans = spans_by_definition.get(path, {})
                definitions.append(Definition(kind, str(name), spec, span, name_span, key_spans))
            finally:
                _forget(folded, inner_paths.pop(path, ()))
    diagnostics.extend(_dropped_unknown_keys(folded))
    return definitions, diagnostics


_T = TypeVar("_T")


def _placed(value: _T, path: Path, spans: Mapping[Path, Span], unplaced: Span) -> _T:
    """``value`` with each expression that was a plain value (a number, a bool, a list or map
    of them) placed where it is written: decoding gives those the definition's own span
    (``unplaced``), having none, so a type error about one would point at the definition."""
    placed: object = value
    if isinstance(value, ex.Literal | ex.ListExpr | ex.ObjectExpr):
        placed = _placed_expression(value, path, spans, unplaced)
    elif isinstance(value, BaseModel):
        updates = {
            name: new
            for name in type(value).model_fields
            if (new := _placed(old := getattr(value, name), (*path, name), spans, unplaced))
            is not old
        }
        placed = value.model_copy(update=updates) if updates else value
    elif isinstance(value, dict):
        items = {k: _placed(v, (*path, k), spans, unplaced) for k, v in value.items()}
        placed = items if any(items[k] is not value[k] for k in value) else value
    elif isinstance(value, list):
        entries = [_placed(v, (*path, i), spans, unplaced) for i, v in enumerate(value)]
        placed = entries if any(a is not b for a, b in zip(entries, value, strict=True)) else value
    return placed  # type: ignore[return-value]


def _placed_expression(
    expr: ex.Expression, path: Path, spans: Mapping[Path, Span], unplaced: Span
) -> ex.Expression:
    if expr.span != unplaced:
        return expr  # written as an expression or a string: it has its own span
    span = spans.get(path, unplaced)
    if isinstance(expr, ex.ListExpr):
        items = tuple(
            _placed_expression(item, (*path, i), spans, unplaced)
            for i, item in enumerate(expr.items)
        )
        return ex.ListExpr(items, span)
    if isinstance(expr, ex.ObjectExpr):
        pairs = tuple(
            (key, _placed_expression(item, (*path, key), spans, unplaced))
            for key, item in expr.items
        )
        return ex.ObjectExpr(pairs, span)
    return dataclasses.replace(expr, span=span)


def _dropped_unknown_keys(folded: Folded) -> list[Diagnostic]:
    """OS101 for a misspelt key in a block dropped as a duplicate (OS011 says it was
    dropped): fixing the duplicate must not be the first time the typo is heard of."""
    found = []
    for path, written in folded.dropped:
        model = KIND_MODELS.get(str(path[0])) if len(path) == 2 else None
        allowed = _allowed_keys(model, ()) if model is not None else []
        for key, span in written.items():
            if allowed and key not in allowed:
                listing = f"; allowed keys: {_listing(allowed)}"
                absent = [k for k in allowed if k not in written]
                suggestion = did_you_mean(key, absent) or did_you_mean(key, allowed)
                found.append(
                    error("OS101", f"unknown key `{key}`{listing}", span, suggestion=suggestion)
                )
    return found


def _invalid_name(kind: str, name: str, span: Span) -> Diagnostic:
    fixed = name_suggestion(name)
    what = f"`{name}` is not a valid {kind} name" if name else f"a {kind} name cannot be empty"
    return error(
        "OS110",
        f"{what}; a name starts with an ASCII letter or `_` "
        "and holds only ASCII letters, digits and `_`",
        span,
        suggestion=f"rename it, for example to `{fixed}`" if fixed else None,
    )


def _long_name(kind: str, name: str, span: Span) -> Diagnostic:
    return error(
        "OS110",
        f"the {kind} name `{name[:24]}…` is {len(name)} characters long; a definition name "
        f"holds at most {MAX_NAME_CHARS}, because it names the definition's file in a bundle",
        span,
        suggestion=f"shorten it to {MAX_NAME_CHARS} characters or fewer",
    )


def written_keys(folded: Folded) -> set[str]:
    """``kind.name`` of every definition written in ``folded``, whether or not it decodes."""
    data = folded.data if isinstance(folded.data, dict) else {}
    return {
        f"{kind}.{name}"
        for kind, by_name in data.items()
        if kind in KIND_MODELS and isinstance(by_name, dict)
        for name in by_name
    }


def _key_spans_by_definition(folded: Folded) -> dict[Path, Mapping[Path, Span]]:
    """Each definition's key spans relative to it, by ``(kind, name)``: one pass over the keys.

    (Filtering every key once per definition made decoding quadratic in the
    number of definitions in a file.)
    """
    by_definition: dict[Path, list[tuple[Path, Span]]] = {}
    for path, span in folded.keys.items():
        if len(path) > 2:
            inner = by_definition.get(path[:2])
            if inner is None:
                inner = by_definition[path[:2]] = []
            inner.append((path[2:], span))
    layouts: dict[tuple[Path, ...], KeyLayout] = {}
    return {path: pack_key_spans(spans, layouts) for path, spans in by_definition.items()}


def _inner_paths(folded: Folded) -> dict[Path, list[Path]]:
    """The paths under each definition that ``folded`` holds a span of, by ``(kind, name)``."""
    by_definition: dict[Path, list[Path]] = {}
    for spans in (folded.values, folded.keys):
        for path in spans:
            if len(path) > 2:
                inner = by_definition.get(path[:2])
                if inner is None:
                    inner = by_definition[path[:2]] = []
                inner.append(path)
    return by_definition


def _forget(folded: Folded, paths: typing.Iterable[Path]) -> None:
    """Let the spans at ``paths`` go from ``folded`` (a definition decoded: its key spans are
    packed in it, its values' spans placed in its expressions)."""
    for path in paths:
        folded.values.pop(path, None)
        folded.keys.pop(path, None)


def _listing(names: typing.Iterable[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


# --------------------------------------------------------------------------- error translation


def _translate(
    exc: ValidationError, model: type[BaseModel], body: object, base: Path, folded: Folded
) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    errors = exc.errors(include_url=False)
    # A misspelt key is most likely the required key that is missing beside it.
    missing: dict[Path, list[str]] = {}
    for err in errors:
        if err["type"] == "missing":
            loc = _data_path(body, err["loc"])
            missing.setdefault(loc[:-1], []).append(str(err["loc"][-1]))
    for err in errors:
        loc = _data_path(body, err["loc"])
        path = (*base, *loc)
        kind = err["type"]
        if kind == "extra_forbidden":
            written = _keys_at(body, loc[:-1])
            out.append(_unknown_key(model, loc, path, folded, missing.get(loc[:-1], []), written))
        elif kind == "missing":
            key = str(err["loc"][-1])
            span = folded.span_for(path[:-1], prefer_key=True) or Span.point(str(base[0]))
            out.append(error("OS102", f"missing required key `{key}`", span))
        elif kind in ("literal_error", "enum"):
            out.append(_bad_choice(err, path, folded))
        elif kind.endswith("_type") or kind in ("model_attributes_type", "dict_type", "list_type"):
            span = folded.span_for(path) or Span.point(str(base[0]))
            hint = _value_hint(base, loc)
            out.append(error("OS103", f"`{_dotted(loc)}`: {_message(err)}", span, suggestion=hint))
        else:
            span = folded.span_for(path) or Span.point(str(base[0]))
            where = f"`{_dotted(loc)}`: " if loc else ""
            hint = _value_hint(base, loc)
            out.append(error("OS104", f"{where}{_message(err)}", span, suggestion=hint))
    return out


#: what a definition's own key takes, for a value it refuses: by (kind, key)
_VALUE_HINTS: typing.Final = {
    (kind, "concurrency"): "a cap is a whole number of at least 1, e.g. `concurrency = 2`; "
    "leave the key out for no cap"
    for kind in ("workflow", "agent", "team", "skill")
}


def _value_hint(base: Path, loc: Path) -> str | None:
    """The hint for a refused value of a definition's own key ``loc`` (``base``: its kind and
    name), if that key has one."""
    if len(loc) != 1 or not base:
        return None
    return _VALUE_HINTS.get((str(base[0]), str(loc[0])))


def _message(err: Any) -> str:
    msg = str(err["msg"])
    for prefix in ("Value error, ", "Assertion failed, "):
        msg = msg.removeprefix(prefix)
    return msg[:1].lower() + msg[1:]


def _dotted(loc: Path) -> str:
    return ".".join(str(p) for p in loc) or "(top)"


_UNION_TAGS = ("function-", "union", "json-", "nullable", "tagged")


def _data_path(body: object, loc: tuple[int | str, ...]) -> Path:
    """Keep only the parts of pydantic's location that exist in the data (drop union tags)."""
    path: list[str | int] = []
    node = body
    for part in loc:
        present = (isinstance(node, dict) and part in node) or (
            isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        )
        if present:
            path.append(part)
            node = node[part]  # type: ignore[index]
        elif isinstance(part, str) and not part.startswith(_UNION_TAGS):
            # A key that is absent (missing or extra at this level) ends the walk.
            path.append(part)
            break
    return tuple(path)


def _unknown_key(
    model: type[BaseModel],
    loc: Path,
    path: Path,
    folded: Folded,
    missing: list[str],
    written: set[str],
) -> Diagnostic:
    key = str(loc[-1]) if loc else "?"
    allowed = _allowed_keys(model, loc[:-1])
    span = folded.span_for(path, prefer_key=True) or Span.point(str(path[0]) if path else "?")
    listing = f"; allowed keys: {_listing(allowed)}" if allowed else ""
    # Prefer a required key that is missing, then one not written, then any.
    absent = [k for k in allowed if k not in written]
    suggestion = None
    for candidates in (missing, absent, allowed):
        suggestion = did_you_mean(key, candidates) if candidates else None
        if suggestion is not None:
            break
    return error("OS101", f"unknown key `{key}`{listing}", span, suggestion=suggestion)


def _keys_at(body: object, loc: Path) -> set[str]:
    """The keys written in the mapping at ``loc`` inside ``body``."""
    node = body
    for part in loc:
        in_list = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if not (in_list or (isinstance(node, dict) and part in node)):
            return set()
        node = node[part]  # type: ignore[index]
    return {str(k) for k in node} if isinstance(node, dict) else set()


def _bad_choice(err: Any, path: Path, folded: Folded) -> Diagnostic:
    span = folded.span_for(path) or Span.point(str(path[0]) if path else "?")
    expected = str(err.get("ctx", {}).get("expected", ""))
    choices = [
        c.strip().strip("'\"") for c in expected.replace(" or ", ", ").split(",") if c.strip()
    ]
    given = err.get("input")
    return error(
        "OS104",
        f"`{given}` is not allowed here; expected one of {_listing(choices)}",
        span,
        suggestion=did_you_mean(str(given), choices) if isinstance(given, str) else None,
    )


def _allowed_keys(model: type[BaseModel], loc: Path) -> list[str]:
    """The field names of the model reached by following ``loc`` from ``model``."""
    current: Any = model
    for part in loc:
        current = _step(current, part)
        if current is None:
            return []
    current = unwrap(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


def _step(annotation: Any, part: str | int) -> Any:
    annotation = unwrap(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        info = annotation.model_fields.get(str(part))
        return info.annotation if info else None
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is dict and len(args) == 2:
        return args[1]
    if origin is list and args:
        return args[0]
    return None
