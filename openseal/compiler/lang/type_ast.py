"""Type constraints as frozen nodes, with their canonical JSON form and printer.

Terraform-style: ``string``, ``number``, ``bool``, ``any``, ``list(T)``,
``map(T)``, ``set(T)``, ``tuple([T, ...])`` and ``object({ name = T, ... })``
whose fields may be ``optional(T, default)``. Object fields are kept sorted by
name so that two spellings of one type are equal (``==`` ignores spans).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from openseal.compiler.lang.expr_ast import NO_SPAN, Expression, ListExpr, Literal, ObjectExpr
from openseal.compiler.lang.expr_print import key_source
from openseal.compiler.lang.expr_print import to_source as expression_source
from openseal.compiler.syntax.spans import Span
from openseal.errors import OpenSealError

PRIMITIVES = ("string", "number", "bool", "any")
CONSTRUCTORS = ("list", "map", "set", "tuple", "object", "optional")


@dataclass(frozen=True, slots=True)
class Primitive:
    name: str  # one of PRIMITIVES
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class ListType:
    element: TypeExpr
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class MapType:
    """A map with string keys and values of one type."""

    element: TypeExpr
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class SetType:
    """A list of distinct values (JSON has no sets)."""

    element: TypeExpr
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class TupleType:
    elements: tuple[TypeExpr, ...]
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class Field:
    """One object field. ``default`` (a JSON value, not to be mutated) applies
    only to optional fields; an optional field without one defaults to null."""

    name: str
    type: TypeExpr
    optional: bool = False
    default: object = field(default=None, hash=False)
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class ObjectType:
    fields: tuple[Field, ...]
    span: Span = field(default=NO_SPAN, compare=False)

    def field(self, name: str) -> Field | None:
        for f in self.fields:
            if f.name == name:
                return f
        return None


TypeExpr = Primitive | ListType | MapType | SetType | TupleType | ObjectType

STRING = Primitive("string")
NUMBER = Primitive("number")
BOOL = Primitive("bool")
ANY = Primitive("any")


def object_type(fields: list[Field] | tuple[Field, ...], span: Span = NO_SPAN) -> ObjectType:
    """An :class:`ObjectType` with its fields in canonical (name) order."""
    return ObjectType(tuple(sorted(fields, key=lambda f: f.name)), span)


class TypeFormatError(OpenSealError):
    """A stored type (canonical JSON) is malformed."""

    code = "invalid_type_json"


# --- printing -------------------------------------------------------------------


def to_source(t: TypeExpr) -> str:
    """The canonical spelling, e.g. ``object({ item = string, n = optional(number, 1) })``."""
    match t:
        case Primitive(name=name):
            return name
        case ListType(element=e):
            return f"list({to_source(e)})"
        case MapType(element=e):
            return f"map({to_source(e)})"
        case SetType(element=e):
            return f"set({to_source(e)})"
        case TupleType(elements=elements):
            return "tuple([" + ", ".join(to_source(e) for e in elements) + "])"
        case ObjectType(fields=fields):
            if not fields:
                return "object({})"
            return "object({ " + ", ".join(_field_source(f) for f in fields) + " })"
    raise TypeError(f"not a type: {t!r}")  # pragma: no cover - exhaustive match


def _field_source(f: Field) -> str:
    text = to_source(f.type)
    if f.optional:
        default = "" if f.default is None else ", " + expression_source(value_expression(f.default))
        text = f"optional({text}{default})"
    return f"{key_source(f.name)} = {text}"


def value_expression(value: object) -> Expression:
    """A JSON value as a constant expression (for printing defaults)."""
    if isinstance(value, Mapping):
        return ObjectExpr(tuple((str(k), value_expression(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ListExpr(tuple(value_expression(v) for v in value))
    if value is None or isinstance(value, str | int | float | bool):
        return Literal(value)
    raise TypeError(f"not a JSON value: {value!r}")


# --- canonical JSON ---------------------------------------------------------------


def to_json(t: TypeExpr) -> dict[str, object]:
    """The span-free canonical JSON form of a type."""
    match t:
        case Primitive(name=name):
            return {"type": name}
        case ListType(element=e) | MapType(element=e) | SetType(element=e):
            return {"type": _CONTAINER_NAMES[type(t)], "element": to_json(e)}
        case TupleType(elements=elements):
            return {"type": "tuple", "elements": [to_json(e) for e in elements]}
        case ObjectType(fields=fields):
            return {"type": "object", "fields": [_field_json(f) for f in fields]}
    raise TypeError(f"not a type: {t!r}")  # pragma: no cover - exhaustive match


#: The one-element container types by name.
CONTAINERS: dict[str, type[ListType] | type[MapType] | type[SetType]] = {
    "list": ListType,
    "map": MapType,
    "set": SetType,
}
_CONTAINER_NAMES: dict[type, str] = {cls: name for name, cls in CONTAINERS.items()}


def _field_json(f: Field) -> dict[str, object]:
    return {"name": f.name, "type": to_json(f.type), "optional": f.optional, "default": f.default}


def from_json(data: object, _depth: int = 0) -> TypeExpr:
    """Rebuild a type from :func:`to_json` output; raises :class:`TypeFormatError`."""
    if _depth > 100:
        raise TypeFormatError("stored type is nested too deeply")
    node = _mapping(data)
    name = node.get("type")
    if name in PRIMITIVES:
        assert isinstance(name, str)
        return Primitive(name)
    if name in ("list", "map", "set"):
        element = from_json(node.get("element"), _depth + 1)
        return CONTAINERS[str(name)](element)
    if name == "tuple":
        return TupleType(tuple(from_json(e, _depth + 1) for e in _list(node.get("elements"))))
    if name == "object":
        return object_type([_field_from_json(f, _depth + 1) for f in _list(node.get("fields"))])
    raise TypeFormatError(f"unknown type {name!r} in stored type")


def _field_from_json(data: object, depth: int) -> Field:
    node = _mapping(data)
    name, optional = node.get("name"), node.get("optional", False)
    if not isinstance(name, str) or not isinstance(optional, bool):
        raise TypeFormatError("stored object field needs a string name and a boolean optional")
    default = node.get("default")
    _check_json_value(default)
    return Field(name, from_json(node.get("type"), depth), optional, default)


def _check_json_value(value: object) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, float) and not math.isfinite(item):
            raise TypeFormatError("stored default is not a finite number")
        elif item is not None and not isinstance(item, str | int | float | bool):
            raise TypeFormatError(f"stored default is not a JSON value: {item!r}")


def _mapping(data: object) -> Mapping[str, object]:
    if not isinstance(data, Mapping):
        raise TypeFormatError(f"expected a type object, got {type(data).__name__}")
    return data


def _list(data: object) -> list[object]:
    if not isinstance(data, list | tuple):
        raise TypeFormatError(f"expected a list, got {type(data).__name__}")
    return list(data)
