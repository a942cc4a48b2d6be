"""What types mean for values: JSON Schema, conformance, defaults, assignability.

Rules shared by every function here (and so by the runtime and runbooks):

* ``null`` is a value only of ``any`` and of optional object fields, where it
  means "absent" (as in Terraform); everywhere else it is a problem.
* objects are closed: a key that is not a field is a problem;
* numbers are ints or finite floats, never booleans; a set is a JSON list of
  distinct values.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping, Sequence

from openseal.compiler.diagnostics import did_you_mean
from openseal.compiler.lang.functions import is_list, is_number, kind
from openseal.compiler.lang.type_ast import (
    Field,
    ListType,
    MapType,
    ObjectType,
    Primitive,
    SetType,
    TupleType,
    TypeExpr,
)

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
#: conforms() stops collecting after this many problems.
MAX_PROBLEMS = 20

_JSON_TYPES = {"string": "string", "number": "number", "bool": "boolean"}


# --- JSON Schema ------------------------------------------------------------------


def to_json_schema(t: TypeExpr, *, dialect: bool = False) -> dict[str, object]:
    """The JSON Schema (draft 2020-12) a value of type ``t`` satisfies.

    With ``dialect=True`` the result names its dialect in ``$schema``.
    """
    schema = _schema(t)
    return {"$schema": JSON_SCHEMA_DIALECT, **schema} if dialect else schema


def _schema(t: TypeExpr) -> dict[str, object]:
    match t:
        case Primitive(name="any"):
            return {}
        case Primitive(name=name):
            return {"type": _JSON_TYPES[name]}
        case ListType(element=e):
            return {"type": "array", "items": _schema(e)}
        case SetType(element=e):
            return {"type": "array", "items": _schema(e), "uniqueItems": True}
        case TupleType(elements=elements):
            return {
                "type": "array",
                "prefixItems": [_schema(e) for e in elements],
                "items": False,
                "minItems": len(elements),
                "maxItems": len(elements),
            }
        case MapType(element=e):
            return {"type": "object", "additionalProperties": _schema(e)}
        case ObjectType(fields=fields):
            return {
                "type": "object",
                "properties": {f.name: _field_schema(f) for f in fields},
                "required": [f.name for f in fields if not f.optional],
                "additionalProperties": False,
            }
    raise TypeError(f"not a type: {t!r}")  # pragma: no cover - exhaustive match


def _field_schema(f: Field) -> dict[str, object]:
    schema = _schema(f.type)
    if not f.optional:
        return schema
    # An optional field may be null (meaning absent); `any` already allows null.
    nullable: dict[str, object] = schema if not schema else {"anyOf": [schema, {"type": "null"}]}
    if f.default is not None:
        nullable = {**nullable, "default": f.default}
    return nullable


# --- conformance ------------------------------------------------------------------------


def conforms(value: object, t: TypeExpr) -> list[str]:
    """Problems that stop ``value`` (JSON-like) from being a ``t``; empty when it is.

    Each problem names where it is: ``request.quantity: expected number, got string``.
    """
    problems: list[str] = []
    _check(value, t, "", problems)
    return problems[:MAX_PROBLEMS]


def _where(path: str) -> str:
    return path or "value"


def _check(value: object, t: TypeExpr, path: str, problems: list[str]) -> None:
    if len(problems) >= MAX_PROBLEMS:
        return
    match t:
        case Primitive(name="any"):
            return
        case Primitive(name=name):
            _check_primitive(value, name, path, problems)
        case ListType(element=e) | SetType(element=e):
            if not is_list(value):
                problems.append(f"{_where(path)}: expected {_name(t)}, got {kind(value)}")
                return
            assert isinstance(value, Sequence)
            for i, item in enumerate(value):
                _check(item, e, f"{path}[{i}]", problems)
            if isinstance(t, SetType) and len({_identity(v) for v in value}) != len(value):
                problems.append(f"{_where(path)}: a set cannot hold the same value twice")
        case TupleType(elements=elements):
            if not is_list(value) or len(value) != len(elements):  # type: ignore[arg-type]
                got = f"a list of {len(value)}" if is_list(value) else kind(value)  # type: ignore[arg-type]
                problems.append(f"{_where(path)}: expected a list of {len(elements)}, got {got}")
                return
            assert isinstance(value, Sequence)
            for i, (item, element) in enumerate(zip(value, elements, strict=True)):
                _check(item, element, f"{path}[{i}]", problems)
        case MapType(element=e):
            if not _is_map(value, path, problems):
                return
            assert isinstance(value, Mapping)
            for key, item in value.items():
                _check(item, e, _child(path, key), problems)
        case ObjectType():
            if _is_map(value, path, problems):
                assert isinstance(value, Mapping)
                _check_object(value, t, path, problems)


def _check_primitive(value: object, name: str, path: str, problems: list[str]) -> None:
    ok = (
        (name == "string" and isinstance(value, str))
        or (name == "bool" and isinstance(value, bool))
        or (name == "number" and is_number(value))
    )
    if not ok:
        problems.append(f"{_where(path)}: expected {name}, got {kind(value)}")
    elif isinstance(value, float) and not math.isfinite(value):
        problems.append(f"{_where(path)}: expected a finite number")


def _is_map(value: object, path: str, problems: list[str]) -> bool:
    if not isinstance(value, Mapping):
        problems.append(f"{_where(path)}: expected an object, got {kind(value)}")
        return False
    bad = [k for k in value if not isinstance(k, str)]
    if bad:
        problems.append(f"{_where(path)}: keys must be strings, got {bad[0]!r}")
        return False
    return True


def _check_object(
    value: Mapping[str, object], t: ObjectType, path: str, problems: list[str]
) -> None:
    names = [f.name for f in t.fields]
    for f in t.fields:
        item = value.get(f.name)
        if item is not None:
            _check(item, f.type, _child(path, f.name), problems)
        elif not f.optional:
            state = "is null" if f.name in value else "is missing"
            problems.append(f"{_where(path)}: required field `{f.name}` {state}")
    for key in value:
        if key not in names:
            hint = did_you_mean(key, names)
            problems.append(
                f"{_where(path)}: unexpected field `{key}`" + (f"; {hint}" if hint else "")
            )


def _child(path: str, key: str) -> str:
    if key.isidentifier():
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


def _identity(value: object) -> str:
    """A key equal for equal values (1 and 1.0 included), for set checks."""

    def normal(v: object) -> object:
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, Mapping):
            return {str(k): normal(x) for k, x in v.items()}
        if is_list(v):
            assert isinstance(v, Sequence)
            return [normal(x) for x in v]
        return v

    return json.dumps(normal(value), sort_keys=True, default=repr)


def _name(t: TypeExpr) -> str:
    return "a set (list)" if isinstance(t, SetType) else "a list"


# --- defaults ---------------------------------------------------------------------------


def apply_defaults(value: object, t: TypeExpr) -> object:
    """A copy of ``value`` with absent (or null) optional fields set to their
    defaults, at every depth. Parts that do not fit ``t`` are left as they are
    (``conforms`` reports them). The input is not modified."""
    match t:
        case ObjectType(fields=fields) if isinstance(value, Mapping):
            out = dict(value)
            for f in fields:
                if out.get(f.name) is not None:
                    out[f.name] = apply_defaults(out[f.name], f.type)
                elif f.optional:
                    default = copy.deepcopy(f.default)
                    out[f.name] = None if default is None else apply_defaults(default, f.type)
            return out
        case ListType(element=e) | SetType(element=e) if is_list(value):
            assert isinstance(value, Sequence)
            return [apply_defaults(item, e) for item in value]
        case TupleType(elements=elements) if is_list(value):
            assert isinstance(value, Sequence)
            items = list(value)
            return [
                apply_defaults(v, elements[i]) if i < len(elements) else v
                for i, v in enumerate(items)
            ]
        case MapType(element=e) if isinstance(value, Mapping):
            return {k: apply_defaults(v, e) for k, v in value.items()}
    return value


# --- assignability ------------------------------------------------------------------------


def is_assignable(source: TypeExpr, target: TypeExpr) -> bool:
    """Whether every value of ``source`` is a value of ``target``.

    ``any`` on either side is assignable (a value of unknown type is checked
    when it exists). No conversions: a number is not a string.
    """
    if _is_any(source) or _is_any(target):
        return True
    match target:
        case Primitive(name=name):
            return isinstance(source, Primitive) and source.name == name
        case ListType(element=e):
            return _elements_fit(source, e, (ListType,))
        case SetType(element=e):
            return _elements_fit(source, e, (SetType,))
        case MapType(element=e):
            if isinstance(source, MapType):
                return is_assignable(source.element, e)
            return isinstance(source, ObjectType) and all(
                is_assignable(f.type, e) and not f.optional for f in source.fields
            )
        case TupleType(elements=elements):
            return (
                isinstance(source, TupleType)
                and len(source.elements) == len(elements)
                and all(is_assignable(s, t) for s, t in zip(source.elements, elements, strict=True))
            )
        case ObjectType():
            return isinstance(source, ObjectType) and _object_fits(source, target)
    return False  # pragma: no cover - exhaustive match


def _is_any(t: TypeExpr) -> bool:
    return isinstance(t, Primitive) and t.name == "any"


def _elements_fit(source: TypeExpr, element: TypeExpr, kinds: tuple[type, ...]) -> bool:
    if isinstance(source, kinds) and isinstance(source, ListType | SetType):
        return is_assignable(source.element, element)
    if isinstance(source, TupleType):  # a list literal's type
        return all(is_assignable(s, element) for s in source.elements)
    return False


def _object_fits(source: ObjectType, target: ObjectType) -> bool:
    target_names = {f.name for f in target.fields}
    if any(f.name not in target_names for f in source.fields):
        return False  # objects are closed
    for wanted in target.fields:
        given = source.field(wanted.name)
        if given is None:
            if not wanted.optional:
                return False
        elif (given.optional and not wanted.optional) or not is_assignable(given.type, wanted.type):
            return False
    return True
