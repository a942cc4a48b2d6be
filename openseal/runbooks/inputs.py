"""Run inputs from the command line: ``--input k=v`` typed by the declared input, or a JSON file.

Two kinds of mistakes, two exit codes (see ``docs/runbooks.md``):

* :class:`InputUsageError` — the command line itself is malformed (no ``=``,
  an input the runbook does not declare, an unreadable or non-object input
  file). ``openseal run`` exits 2.
* :class:`InputTypeError` — a value does not fit the declared type, or a
  required input is missing. ``openseal run`` exits 1.

Both name the input they are about.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from openseal.compiler import Input, did_you_mean
from openseal.compiler import types as ty
from openseal.errors import RunbookError, UsageError


class InputUsageError(UsageError):
    code = "input_usage"


class InputTypeError(RunbookError):
    code = "input_type"


def parse_pairs(pairs: Sequence[str]) -> list[tuple[str, str]]:
    """``["a=1", "b=x=y"]`` → ``[("a", "1"), ("b", "x=y")]``."""
    out: list[tuple[str, str]] = []
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise InputUsageError(f"`{pair}` is not NAME=VALUE")
        out.append((name.strip(), value))
    return out


def read_input_file(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputUsageError(f"cannot read input file {path}: {exc.strerror}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputUsageError(f"input file {path} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InputUsageError(f"input file {path} must hold a JSON object of input name to value")
    return data


def convert(name: str, text: str, declared: Input | None) -> object:
    """The value of ``--input name=text``: shaped by the declared type, or guessed when untyped."""
    t = declared.type if declared is not None else ty.ANY
    match t:
        case ty.Primitive(name="string"):
            return text
        case ty.Primitive(name="number"):
            return _number(name, text)
        case ty.Primitive(name="bool"):
            if text in ("true", "false"):
                return text == "true"
            raise InputTypeError(f"input `{name}` expects true or false, got `{text}`")
        case ty.Primitive(name="any"):
            try:
                return json.loads(text)
            except ValueError:
                return text  # plain words are a string
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InputTypeError(
            f"input `{name}` expects {ty.to_source(t)} as JSON; `{text}` is not JSON ({exc})"
        ) from None


def _number(name: str, text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise InputTypeError(f"input `{name}` expects a number, got `{text}`") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise InputTypeError(f"input `{name}` expects a finite number, got `{text}`")
    return value


def gather(
    declared: Mapping[str, Input] | None,
    pairs: Sequence[str] = (),
    file_values: Mapping[str, object] | None = None,
) -> dict[str, object]:
    """Inputs from a file, overridden by ``--input`` pairs, typed and checked (:func:`check`)."""
    values: dict[str, object] = dict(file_values or {})
    for name, text in parse_pairs(pairs):
        _known(name, declared)
        values[name] = convert(name, text, (declared or {}).get(name))
    return check(declared, values)


def check(declared: Mapping[str, Input] | None, values: Mapping[str, object]) -> dict[str, object]:
    """``values`` with defaults applied, or :class:`InputTypeError` naming the first bad input.

    ``declared is None`` (the node/edge form) accepts any inputs.
    """
    if declared is None:
        return dict(values)
    for name in values:
        _known(name, declared)
    out: dict[str, object] = {}
    for name in sorted(declared):
        spec = declared[name]
        value = values.get(name, spec.default)
        if value is None and name not in values and not _accepts_null(spec):
            raise InputTypeError(f"input `{name}` is required ({ty.to_source(spec.type)})")
        value = ty.apply_defaults(value, spec.type)
        problems = ty.conforms(value, spec.type)
        if problems:
            raise InputTypeError(
                f"input `{name}` does not fit {ty.to_source(spec.type)}: " + "; ".join(problems)
            )
        out[name] = value
    return out


def _accepts_null(spec: Input) -> bool:
    return not ty.conforms(None, spec.type)


def _known(name: str, declared: Mapping[str, Input] | None) -> None:
    if declared is not None and name not in declared:
        listing = ", ".join(f"`{n}`" for n in sorted(declared)) or "none"
        hint = did_you_mean(name, declared)
        raise InputUsageError(
            f"this runbook has no input `{name}` (inputs: {listing})"
            + (f"; {hint}" if hint else "")
        )
