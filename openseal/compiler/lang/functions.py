"""The built-in functions of the expression language and the value rules they share.

Values are JSON-like: ``None``, ``bool``, ``int``/``float`` (never ``bool``),
``str``, lists and string-keyed mappings. Functions never touch Python
attributes and never format arbitrary objects; a problem raises
:class:`FunctionError`, which the evaluator turns into a located
``EvaluationError``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

#: Longest string an expression may produce (templates, format, upper/lower).
MAX_STRING_CHARS = 1_000_000
#: Integers beyond this many bits are refused rather than computed further.
MAX_INT_BITS = 1024
_MAX_PRECISION = 20


class FunctionError(Exception):
    """A function refused its arguments; ``code`` is an EvaluationError code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_list(value: object) -> bool:
    return isinstance(value, list | tuple)


def kind(value: object) -> str:
    """The language's name for a value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if is_number(value):
        return "number"
    if isinstance(value, str):
        return "string"
    if is_list(value):
        return "list"
    if isinstance(value, Mapping):
        return "map"
    return "unsupported value"


def check_number(value: int | float) -> int | float:
    """Refuse numbers that are not finite or too large to keep computing with."""
    if isinstance(value, float) and not math.isfinite(value):
        raise FunctionError("number_out_of_range", "result is not a finite number")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise FunctionError("number_out_of_range", "result is too large")
    return value


def too_large() -> FunctionError:
    return FunctionError(
        "too_large", f"string result is longer than the limit of {MAX_STRING_CHARS} characters"
    )


def check_text(text: str) -> str:
    if len(text) > MAX_STRING_CHARS:
        raise too_large()
    return text


def number_text(value: int | float) -> str:
    """Numbers as text: whole floats print without a fraction (``10.0`` is ``10``)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(value)


def to_text(value: object) -> str:
    """The text of a value interpolated into a template or formatted with ``%s``."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if is_number(value):
        assert isinstance(value, int | float)
        return number_text(value)
    raise FunctionError("type_error", f"cannot convert {kind(value)} to text")


def equal(left: object, right: object) -> bool:
    """Strict structural equality: ``true`` is not ``1``; ``1`` equals ``1.0``.

    Iterative, so deeply nested values cannot exhaust the Python stack.
    """
    stack = [(left, right)]
    while stack:
        a, b = stack.pop()
        if is_number(a) and is_number(b):
            if a != b:
                return False
        elif is_list(a) and is_list(b):
            assert isinstance(a, Sequence) and isinstance(b, Sequence)
            if len(a) != len(b):
                return False
            stack.extend(zip(a, b, strict=True))
        elif isinstance(a, Mapping) and isinstance(b, Mapping):
            if set(a) != set(b):
                return False
            stack.extend((a[k], b[k]) for k in a)
        elif kind(a) != kind(b) or a != b:
            return False
    return True


# --- the functions --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Function:
    name: str
    min_args: int
    max_args: int | None  # None: variadic
    impl: Callable[[list[object]], object]
    signature: str


def _length(args: list[object]) -> object:
    (value,) = args
    if isinstance(value, str) or is_list(value) or isinstance(value, Mapping):
        assert isinstance(value, Sequence | Mapping)
        return len(value)
    raise FunctionError("type_error", f"length() needs a string, list or map, got {kind(value)}")


def _string_arg(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise FunctionError("type_error", f"{name}() needs a string, got {kind(value)}")
    return value


def _lower(args: list[object]) -> object:
    return check_text(_string_arg("lower", args[0]).lower())


def _upper(args: list[object]) -> object:
    return check_text(_string_arg("upper", args[0]).upper())


def _contains(args: list[object]) -> object:
    collection, value = args
    if is_list(collection):
        assert isinstance(collection, Sequence)
        return any(equal(item, value) for item in collection)
    if isinstance(collection, str):
        return _string_arg("contains", value) in collection
    raise FunctionError(
        "type_error", f"contains() needs a list or a string first, got {kind(collection)}"
    )


def _numbers(name: str, args: list[object]) -> list[int | float]:
    values: Sequence[object] = args
    if len(args) == 1 and is_list(args[0]):
        values = args[0]  # type: ignore[assignment]  # checked by is_list
    out: list[int | float] = []
    for value in values:
        if not is_number(value):
            raise FunctionError("type_error", f"{name}() needs numbers, got {kind(value)}")
        out.append(value)  # type: ignore[arg-type]  # checked by is_number
    return out


def _min(args: list[object]) -> object:
    values = _numbers("min", args)
    if not values:
        raise FunctionError("invalid_argument", "min() of an empty list")
    return min(values)


def _max(args: list[object]) -> object:
    values = _numbers("max", args)
    if not values:
        raise FunctionError("invalid_argument", "max() of an empty list")
    return max(values)


def _sum(args: list[object]) -> object:
    if not is_list(args[0]):
        raise FunctionError("type_error", f"sum() needs a list of numbers, got {kind(args[0])}")
    total: int | float = 0
    for value in _numbers("sum", args):
        total = check_number(total + value)
    return total


def _coalesce(args: list[object]) -> object:
    for value in args:
        if value is not None:
            return value
    raise FunctionError("invalid_argument", "coalesce() got only null arguments")


def _map_arg(name: str, value: object) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise FunctionError("type_error", f"{name}() needs a map, got {kind(value)}")
    return value


def _keys(args: list[object]) -> object:
    return sorted(_map_arg("keys", args[0]))


def _values(args: list[object]) -> object:
    mapping = _map_arg("values", args[0])
    return [mapping[key] for key in sorted(mapping)]


_VERB = re.compile(r"%(?:\.(\d+))?(.)?", re.DOTALL)


def _format(args: list[object]) -> object:
    template = _string_arg("format", args[0])
    values = list(args[1:])
    out: list[str] = []
    size = 0
    position = 0
    for match in _VERB.finditer(template):
        piece = template[position : match.start()] + _format_verb(match, values)
        position = match.end()
        size += len(piece)
        if size > MAX_STRING_CHARS:  # stop early instead of building a huge string
            raise too_large()
        out.append(piece)
    out.append(template[position:])
    if values:
        raise FunctionError(
            "invalid_argument", f"format() got {len(values)} more argument(s) than verbs"
        )
    return check_text("".join(out))


def _format_verb(match: re.Match[str], values: list[object]) -> str:
    precision, verb = match.group(1), match.group(2)
    if verb == "%" and precision is None:
        return "%"
    if verb not in ("s", "d", "f") or (precision is not None and verb != "f"):
        raise FunctionError("invalid_argument", f"unsupported format verb `{match.group(0)}`")
    if not values:
        raise FunctionError("invalid_argument", f"format() has no argument for `{match.group(0)}`")
    value = values.pop(0)
    if verb == "s":
        return to_text(value)
    if not is_number(value):
        raise FunctionError("type_error", f"`%{verb}` needs a number, got {kind(value)}")
    assert isinstance(value, int | float)
    if verb == "d":
        if isinstance(value, float) and not value.is_integer():
            raise FunctionError("type_error", f"`%d` needs a whole number, got {value!r}")
        return str(int(value))
    digits = 6 if precision is None else int(precision)
    if digits > _MAX_PRECISION:
        raise FunctionError("invalid_argument", f"precision is limited to {_MAX_PRECISION} digits")
    return f"{value:.{digits}f}"


FUNCTIONS: dict[str, Function] = {
    f.name: f
    for f in (
        Function("length", 1, 1, _length, "length(string | list | map) -> number"),
        Function("lower", 1, 1, _lower, "lower(string) -> string"),
        Function("upper", 1, 1, _upper, "upper(string) -> string"),
        Function("contains", 2, 2, _contains, "contains(list | string, value) -> bool"),
        Function("min", 1, None, _min, "min(number, ...) or min(list) -> number"),
        Function("max", 1, None, _max, "max(number, ...) or max(list) -> number"),
        Function("sum", 1, 1, _sum, "sum(list) -> number"),
        Function("format", 1, None, _format, "format(string, value, ...) -> string"),
        Function("coalesce", 1, None, _coalesce, "coalesce(value, ...) -> value"),
        Function("keys", 1, 1, _keys, "keys(map) -> list(string)"),
        Function("values", 1, 1, _values, "values(map) -> list"),
    )
}


def call(name: str, args: list[object]) -> object:
    """Apply built-in ``name``; raises :class:`FunctionError` on any problem."""
    function = FUNCTIONS.get(name)
    if function is None:
        raise FunctionError("unknown_function", f"unknown function `{name}`")
    count = len(args)
    if count < function.min_args or (function.max_args is not None and count > function.max_args):
        raise FunctionError(
            "invalid_argument", f"wrong number of arguments ({count}); usage: {function.signature}"
        )
    return function.impl(args)
