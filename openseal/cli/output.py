"""How every command prints: the ``-o/--output text|json|yaml`` option, data as JSON or YAML,
errors as one JSON/YAML object, and diagnostics in the formats CI tools read.

One vocabulary for every command: ``-o/--output`` chooses how the result is printed (``text``
for people, ``json`` and ``yaml`` for programs) and ``--out PATH`` names a file or directory to
write. With ``json`` or ``yaml`` a failure is printed on stdout as the API's error object,
``{"error": {"code": ..., "message": ..., "details": {}}}``, with the same stable codes.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import click

from openseal.wire import jsonable

if TYPE_CHECKING:
    from openseal.compiler import Diagnostic

F = TypeVar("F", bound=Callable[..., Any])

FORMATS = ("text", "json", "yaml")
#: earlier spellings still accepted, quietly
_ALIASES = {"human": "text"}

#: the format the running command was asked for, so an error can be printed in it
_requested: dict[str, str] = {}


class OutputFormat(click.Choice[str]):
    """``text|json|yaml``; a value that looks like a file name gets a hint to use ``--out``."""

    name = "format"

    def __init__(self) -> None:
        super().__init__(FORMATS)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value.lower() in _ALIASES:
            value = _ALIASES[value.lower()]
        if isinstance(value, str) and value.lower() not in FORMATS and _looks_like_path(value):
            self.fail(
                f"{value!r} is not an output format: -o/--output takes text, json or yaml; "
                f"to write to a file use --out {value}",
                param,
                ctx,
            )
        return super().convert(value, param, ctx)


def _looks_like_path(value: str) -> bool:
    return "/" in value or "." in value or "\\" in value


def _remember(ctx: click.Context, param: click.Parameter, value: str) -> str:
    _requested["format"] = value
    return value


def output_option(help: str = "How to print the result.") -> Callable[[F], F]:
    """The ``-o/--output text|json|yaml`` option (parameter name ``output``)."""
    return click.option(
        "-o",
        "--output",
        "output",
        type=OutputFormat(),
        default="text",
        show_default=True,
        callback=_remember,
        help=help,
    )


def forget_format() -> None:
    """Start a new command: no format asked for yet."""
    _requested.clear()


def requested_format() -> str:
    """The ``--output`` of the command being run (``text`` before options are parsed)."""
    return _requested.get("format", "text")


# -- data -----------------------------------------------------------------------------


def to_json(value: Any, *, indent: int | None = 2, sort_keys: bool = True) -> str:
    return json.dumps(jsonable(value), indent=indent, sort_keys=sort_keys, ensure_ascii=False)


def to_yaml(value: Any, *, sort_keys: bool = True) -> str:
    """YAML with multi-line strings (drawings, instructions) as readable ``|`` blocks."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def text_block(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
        style = "|" if "\n" in data and data == data.rstrip(" ") else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)

    Dumper.add_representer(str, text_block)
    text: str = yaml.dump(
        jsonable(value),
        Dumper=Dumper,
        sort_keys=sort_keys,
        allow_unicode=True,
        default_flow_style=False,
    )
    return text


def render(value: Any, fmt: str, *, sort_keys: bool = True) -> str:
    """``value`` as ``json`` or ``yaml`` text, ending with a newline (keys sorted unless their
    order means something, as a runbook's steps in execution order)."""
    if fmt == "yaml":
        return to_yaml(value, sort_keys=sort_keys)
    return to_json(value, sort_keys=sort_keys) + "\n"


def echo_data(value: Any, fmt: str, text: Callable[[], None] | None = None) -> None:
    """Print ``value`` as JSON or YAML, or call ``text`` to print it for people."""
    if fmt in ("json", "yaml") or text is None:
        click.echo(render(value, "yaml" if fmt == "yaml" else "json"), nl=False)
    else:
        text()


def echo_json(value: Any) -> None:
    click.echo(to_json(value))


def echo_item(value: Any, fmt: str) -> None:
    """One item of a stream: a JSON line, or one YAML document."""
    if fmt == "yaml":
        click.echo("---\n" + to_yaml(value), nl=False)
    else:
        click.echo(to_json(value, indent=None))


def echo_error(code: str, message: str, details: Mapping[str, Any] | None = None) -> bool:
    """With ``--output json|yaml``, print the error object on stdout and return True."""
    fmt = requested_format()
    if fmt not in ("json", "yaml"):
        return False
    body = {"error": {"code": code, "message": message, "details": dict(details or {})}}
    click.echo(render(body, fmt), nl=False)
    return True


def echo_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    shrink: Sequence[str] = (),
    empty: str = "nothing to show",
) -> None:
    """Rows under upper-case headers, in columns that fit the terminal's width (``COLUMNS``
    when piped). Only the ``shrink`` columns are cut (with ``…``) when the rows are too wide,
    the widest first; the others, ids above all, are always printed whole so they can be
    copied; no rows print ``empty``. (rich's tables drop whole columns, ids included, when
    space runs out.)"""
    import shutil

    if not rows:
        click.echo(empty)
        return
    width = shutil.get_terminal_size((100, 24)).columns
    widths = [max([len(h), *(len(row[i]) for row in rows)]) for i, h in enumerate(headers)]
    cuttable = [i for i, h in enumerate(headers) if h in shrink]
    while sum(widths) + 2 * (len(widths) - 1) > width and cuttable:
        widest = max(cuttable, key=lambda i: widths[i])
        if widths[widest] <= max(len(headers[widest]), 8):
            cuttable.remove(widest)
            continue
        widths[widest] -= 1

    def cell(text: str, size: int) -> str:
        return text if len(text) <= size else text[: size - 1] + "…"

    for row in [[h.upper() for h in headers], *rows]:
        line = "  ".join(
            cell(text, size).ljust(size) for text, size in zip(row, widths, strict=True)
        )
        click.echo(line.rstrip())


def handle(record_id: str | None) -> str:
    """How a list prints an id: its handle (docs/decisions/0019-handles.md), which every
    command takes in its place; ``-`` for none. JSON keeps the whole id."""
    from openseal.runtime.service import handle as handle_of

    return "-" if not record_id else handle_of(record_id)


def when(moment: datetime | str | None, *, milliseconds: bool = False) -> str:
    """A time as every list and show prints it: ISO 8601 in UTC, to the second, ending in
    ``Z`` (``2026-03-02T14:05:09Z``); with ``milliseconds`` (event and turn timings) to the
    millisecond. ``-`` for no time. A string is an ISO 8601 time as the API answers it."""
    if moment is None or moment == "":
        return "-"
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment)
    moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    spec = "milliseconds" if milliseconds else "seconds"
    return moment.replace(tzinfo=None).isoformat(timespec=spec) + "Z"


# -- diagnostics ----------------------------------------------------------------------

#: How many diagnostics the human and GitHub formats show unless told otherwise;
#: past this, a thousand errors are one mistake repeated, not a thousand things to read.
DEFAULT_LIMIT = 100

max_diagnostics_option = click.option(
    "--max-diagnostics",
    "limit",
    type=click.IntRange(0),
    default=DEFAULT_LIMIT,
    show_default=True,
    help="Show at most this many diagnostics in the human and github formats (errors "
    "first), then how many more there are; 0 shows all. json and sarif always hold all.",
)


def emit_diagnostics(
    diagnostics: Sequence[Diagnostic],
    sources: Mapping[str, str],
    file_count: int,
    fmt: str,
    version: str,
    limit: int = DEFAULT_LIMIT,
) -> None:
    """Print ``diagnostics`` in ``fmt``: json, yaml, sarif and github on stdout, human
    (``text``) on stderr.

    json, yaml and sarif are for machines and always hold every diagnostic; human and
    github show at most ``limit`` (0: all) and say how many more there are.
    """
    from openseal.compiler import (
        render_github,
        render_human,
        render_json,
        render_sarif,
        summary_line,
        use_color,
    )

    if fmt == "json":
        click.echo(render_json(diagnostics), nl=False)
    elif fmt == "yaml":
        click.echo(to_yaml(json.loads(render_json(diagnostics))), nl=False)
    elif fmt == "sarif":
        click.echo(render_sarif(diagnostics, tool_version=version), nl=False)
    elif fmt == "github":
        click.echo(render_github(diagnostics, limit=limit), nl=False)
        click.echo(summary_line(diagnostics, file_count), err=True)
    else:
        color = use_color(sys.stderr)
        text = render_human(diagnostics, sources, color=color, file_count=file_count, limit=limit)
        # click strips ANSI codes from non-terminals unless told; use_color already decided.
        click.echo(text, err=True, nl=False, color=color)
