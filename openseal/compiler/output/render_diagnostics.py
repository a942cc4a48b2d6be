"""Rendering diagnostics for people (terminal), machines (JSON) and CI (SARIF, GitHub).

Every renderer is a pure function from diagnostics to text; the CLI decides where
the text goes. Diagnostics are always rendered sorted by file, line and column so
the output is stable whatever order the stages reported them in. Each renderer's
text ends with a newline unless it is empty, so callers write it as is.

Lines and columns are 1-based and counted in Unicode code points (that is what
:class:`~openseal.compiler.syntax.spans.Span` holds); ``end_column`` is exclusive.
"""

from __future__ import annotations

import json
import os
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import quote

# each SARIF rule's ``helpUri`` points into the diagnostics page of openseal's published
# documentation, when it has a published address (openseal.REPOSITORY_URL)
from openseal import DOCS_URL
from openseal.compiler.diagnostics import CODE_GROUPS, CODES, Diagnostic, Severity, sort_key
from openseal.compiler.syntax.spans import Span

__all__ = [
    "DOCS_URL",
    "SARIF_SCHEMA",
    "capped",
    "hidden_line",
    "render_github",
    "render_human",
    "render_json",
    "render_sarif",
    "summary_line",
    "use_color",
]

SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)


#: Tabs in source lines are expanded to stops this far apart, so carets line up.
TAB_WIDTH = 4
#: The widest source excerpt shown (display columns); a longer line shows a window of it,
#: :data:`EXCERPT_LEAD` columns of it before the caret.
EXCERPT_WIDTH = 120
EXCERPT_LEAD = 40


def _sorted(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    return sorted(diagnostics, key=sort_key)


def _counts(diagnostics: Iterable[Diagnostic]) -> Counter[Severity]:
    return Counter(d.severity for d in diagnostics)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def summary_line(diagnostics: Iterable[Diagnostic], file_count: int) -> str:
    """One line for the end of a run, e.g. ``2 errors, 1 warning in 3 files``."""
    counts = _counts(diagnostics)
    parts = [
        _plural(counts[severity], str(severity))
        for severity in (Severity.ERROR, Severity.WARNING, Severity.NOTE)
        if counts[severity]
    ]
    found = ", ".join(parts) if parts else "no problems"
    return f"{found} in {_plural(file_count, 'file')}"


# --- colour ------------------------------------------------------------------


class _Stream(Protocol):
    def isatty(self) -> bool: ...


def use_color(stream: _Stream, environ: Mapping[str, str] | None = None) -> bool:
    """Whether to colour output written to ``stream``.

    ``NO_COLOR`` (any non-empty value) always turns colour off. Otherwise a
    non-empty ``FORCE_COLOR`` other than ``0`` or ``false`` turns it on, even
    when piped (useful in CI logs that render ANSI). Otherwise colour is used
    only when ``stream`` is a terminal and ``TERM`` is not ``dumb``.
    """
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR", "").strip().lower() not in ("", "0", "false"):
        return True
    if env.get("TERM") == "dumb":
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        # A closed or unusual stream is not a terminal.
        return False


@dataclass(frozen=True, slots=True)
class _Style:
    color: bool

    def __call__(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color and text else text


_SEVERITY_STYLE = {Severity.ERROR: "1;31", Severity.WARNING: "1;33", Severity.NOTE: "1;36"}
_BOLD = "1"
_GUTTER = "34"
_HINT = "32"


# --- human -------------------------------------------------------------------


def _clean(text: str, keep: str = "\t") -> str:
    """Replace control characters so text from definition files cannot drive the terminal."""
    return "".join(
        "\ufffd" if ch not in keep and unicodedata.category(ch) == "Cc" else ch for ch in text
    )


def _clean_prose(text: str) -> str:
    # Messages and hints may span lines (parser errors often do); source lines may not.
    return _clean(text, keep="\t\n")


def _char_width(ch: str) -> int:
    if unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def _display(line: str) -> tuple[str, list[int]]:
    """The line as shown (tabs expanded) and the display column where each character starts.

    The returned list has one extra entry: the display width of the whole line.
    """
    shown: list[str] = []
    starts: list[int] = []
    col = 0
    for ch in _clean(line):
        starts.append(col)
        if ch == "\t":
            width = TAB_WIDTH - col % TAB_WIDTH
            shown.append(" " * width)
        else:
            width = _char_width(ch)
            shown.append(ch)
        col += width
    starts.append(col)
    return "".join(shown), starts


class _Lines:
    """Source lines by file, split once per render (a file may have many diagnostics)."""

    def __init__(self, sources: Mapping[str, str]) -> None:
        self._sources = sources
        self._split: dict[str, list[str]] = {}

    def get(self, span: Span) -> str | None:
        if span.file not in self._split:
            text = self._sources.get(span.file)
            if text is None:
                return None
            # Split on "\n" only: the loaders count lines that way, str.splitlines() does not.
            self._split[span.file] = text.split("\n")
        lines = self._split[span.file]
        if not 1 <= span.line <= len(lines):
            return None
        return lines[span.line - 1].removesuffix("\r")


def _excerpt(line: str, first: int, last: int) -> tuple[str, int, int]:
    """``line`` as shown, with the display columns where characters ``first`` to ``last``
    (exclusive) start and end. A line wider than :data:`EXCERPT_WIDTH` (minified YAML, a long
    string) is cut to a window that starts :data:`EXCERPT_LEAD` columns before ``first``;
    ``…`` marks each cut."""
    shown, starts = _display(line)
    if starts[-1] <= EXCERPT_WIDTH:
        return shown, starts[first], starts[last]
    begin = first
    while begin > 0 and starts[first] - starts[begin - 1] <= EXCERPT_LEAD:
        begin -= 1
    stop = begin
    while stop < len(line) and starts[stop + 1] - starts[begin] <= EXCERPT_WIDTH:
        stop += 1
    shown, starts = _display(line[begin:stop])
    lead = "…" if begin else ""
    trail = "…" if stop < len(line) else ""
    end = starts[min(last, stop) - begin] if last > first else starts[first - begin]
    return lead + shown + trail, len(lead) + starts[first - begin], len(lead) + end


def _snippet(span: Span, lines: _Lines, gutter: int, caret_style: str, style: _Style) -> list[str]:
    """The source line and a caret underline, or nothing when the span does not fit the source."""
    line = lines.get(span)
    # A column one past the end is a real place (e.g. "missing `}` at end of line").
    if line is None or not 1 <= span.column <= len(line) + 1:
        return []
    first = span.column - 1
    if span.end_line > span.line:
        last = len(line)  # multi-line span: underline to the end of its first line
    elif span.end_column > span.column:
        last = min(span.end_column, len(line) + 1) - 1
    else:
        last = first
    shown, start, end = _excerpt(line, first, last)
    carets = "^" * max(1, end - start)
    bar = style("|", _GUTTER)
    number = style(str(span.line).rjust(gutter), _GUTTER)
    return [
        f"{number} {bar} {shown}".rstrip(),
        f"{' ' * gutter} {bar} {' ' * start}{style(carets, caret_style)}",
    ]


def _header(span: Span, label: str, message: str, style: _Style) -> str:
    return f"{style(_clean(str(span)), _BOLD)}: {label}: {style(_clean_prose(message), _BOLD)}"


def _render_one(d: Diagnostic, lines: _Lines, style: _Style) -> list[str]:
    severity_style = _SEVERITY_STYLE[d.severity]
    gutter = max(len(str(s.line)) for s in (d.span, *(r.span for r in d.related)))
    label = style(f"{d.severity}[{d.code}]", severity_style)
    out = [_header(d.span, label, d.message, style)]
    out += _snippet(d.span, lines, gutter, severity_style, style)
    if d.suggestion:
        hint = f"{style('hint', _HINT)}: {_clean_prose(d.suggestion)}"
        out.append(f"{' ' * gutter} {style('=', _GUTTER)} {hint}")
    note_style = _SEVERITY_STYLE[Severity.NOTE]
    for related in d.related:
        out.append(_header(related.span, style("note", note_style), related.message, style))
        out += _snippet(related.span, lines, gutter, note_style, style)
    return out


def capped(diagnostics: Iterable[Diagnostic], limit: int | None) -> tuple[list[Diagnostic], int]:
    """At most ``limit`` diagnostics (``None`` or 0: all), in order, and how many were left out.

    When some must go, errors are kept before warnings and warnings before notes,
    so a flood of warnings never hides an error.
    """
    items = _sorted(diagnostics)
    if not limit or len(items) <= limit:
        return items, 0
    rank = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.NOTE: 2}
    kept = sorted(items, key=lambda d: rank[d.severity])[:limit]  # stable: file order within
    return _sorted(kept), len(items) - limit


def hidden_line(hidden: int, limit: int) -> str:
    """The line that says how many diagnostics a capped report left out."""
    return f"... {_plural(hidden, 'more diagnostic')} not shown (showing the first {limit})"


def render_human(
    diagnostics: Iterable[Diagnostic],
    sources: Mapping[str, str],
    *,
    color: bool,
    file_count: int | None = None,
    limit: int | None = None,
) -> str:
    """Diagnostics as people read them: a header, the source line, a caret underline.

    ``sources`` maps a span's file name to that file's text; a file that is
    missing, or a span that does not fit its text, is rendered without a snippet.
    Diagnostics are separated by a blank line. With ``limit`` at most that many
    are shown (see :func:`capped`), then a line saying how many were left out.
    With ``file_count`` the :func:`summary_line`, which counts every diagnostic,
    is appended. Example::

        agent.hcl:2:3: error[OS101]: unknown key `modle`
        2 |   modle = "gpt"
          |   ^^^^^
          = hint: did you mean `model`?
    """
    items = _sorted(diagnostics)
    shown, hidden = capped(items, limit)
    style, lines = _Style(color), _Lines(sources)
    blocks = ["\n".join(_render_one(d, lines, style)) + "\n" for d in shown]
    if hidden and limit:
        blocks.append(hidden_line(hidden, limit) + "\n")
    if file_count is not None:
        blocks.append(summary_line(items, file_count) + "\n")
    return "\n".join(blocks)


# --- JSON --------------------------------------------------------------------


def render_json(diagnostics: Iterable[Diagnostic]) -> str:
    """``{"diagnostics": [...], "summary": {"errors", "warnings", "notes"}}``, indented."""
    items = _sorted(diagnostics)
    counts = _counts(items)
    document = {
        "diagnostics": [d.to_dict() for d in items],
        "summary": {
            "errors": counts[Severity.ERROR],
            "warnings": counts[Severity.WARNING],
            "notes": counts[Severity.NOTE],
        },
    }
    return json.dumps(document, indent=2) + "\n"


# --- SARIF -------------------------------------------------------------------

_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "note"}


def _uri(file: str) -> str:
    # Keep the path relative as given, but make it a valid URI reference: forward
    # slashes, and percent-encoding for spaces and a ':' that would look like a scheme.
    return quote(file.replace("\\", "/"), safe="/")


def _region(span: Span) -> dict[str, int]:
    # SARIF rejects regions that end before they start; clamp rather than emit one.
    start_line = max(1, span.line)
    start_column = max(1, span.column)
    end_line = max(start_line, span.end_line)
    end_column = span.end_column if end_line > start_line else max(start_column, span.end_column)
    return {
        "startLine": start_line,
        "startColumn": start_column,
        "endLine": end_line,
        "endColumn": max(1, end_column),
    }


def _physical(span: Span) -> dict[str, object]:
    return {"artifactLocation": {"uri": _uri(span.file)}, "region": _region(span)}


def _sarif_result(d: Diagnostic, rule_index: int) -> dict[str, object]:
    text = d.message if not d.suggestion else f"{d.message}\nhint: {d.suggestion}"
    result: dict[str, object] = {
        "ruleId": d.code,
        "ruleIndex": rule_index,
        "level": _SARIF_LEVEL[d.severity],
        "message": {"text": text},
        "locations": [{"physicalLocation": _physical(d.span)}],
    }
    if d.related:
        result["relatedLocations"] = [
            {"id": i, "physicalLocation": _physical(r.span), "message": {"text": r.message}}
            for i, r in enumerate(d.related)
        ]
    return result


def _sarif_rule(code: str, docs_url: str) -> dict[str, object]:
    """A rule as code scanning shows it: its title, what its group of codes is about, and
    where the codes are documented."""
    title, group = CODES[code], CODE_GROUPS[code[2]]
    uri = f"{docs_url}/diagnostics.md#codes" if docs_url else ""
    about = f"{code} ({code[:3]}xx: {group}): {title}."
    explained = "The result's message says what is wrong where it points, with a hint when "
    explained += "openseal has one."
    codes = "Every code is listed in openseal's documentation, docs/diagnostics.md."
    rule: dict[str, object] = {
        "id": code,
        "shortDescription": {"text": title},
        "fullDescription": {"text": about},
        "help": {
            "text": f"{about} {explained} " + (f"Every code: {uri}" if uri else codes),
            "markdown": f"**{code}** ({code[:3]}xx: {group}): {title}.\n\n{explained} "
            + (f"[Every diagnostic code]({uri})" if uri else codes),
        },
    }
    if uri:  # optional in SARIF: only an address the project publishes
        rule["helpUri"] = uri
    return rule


def render_sarif(
    diagnostics: Iterable[Diagnostic], *, tool_version: str, docs_url: str = DOCS_URL
) -> str:
    """A SARIF 2.1.0 log with one run, for code-scanning uploads.

    Rules are listed only for the codes that occur, in code order, each with the fields code
    scanning shows (``fullDescription``, ``help``, ``helpUri`` into ``docs_url``). Columns are
    declared as Unicode code points (SARIF's default is UTF-16 code units).
    """
    items = _sorted(diagnostics)
    codes = sorted({d.code for d in items})
    index = {code: i for i, code in enumerate(codes)}
    rules = [_sarif_rule(code, docs_url) for code in codes]
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "openseal", "version": tool_version, "rules": rules}},
                "columnKind": "unicodeCodePoints",
                "results": [_sarif_result(d, index[d.code]) for d in items],
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"


# --- GitHub Actions ----------------------------------------------------------

_GITHUB_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "notice"}


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _github_properties(d: Diagnostic) -> str:
    span = d.span
    line = max(1, span.line)
    end_line = max(line, span.end_line)
    col = max(1, span.column)
    props: list[tuple[str, object]] = [("file", span.file.replace("\\", "/")), ("line", line)]
    # The runner drops the whole annotation if columns are given for a multi-line range.
    if end_line == line:
        props += [("col", col), ("endLine", end_line), ("endColumn", max(col, span.end_column))]
    else:
        props.append(("endLine", end_line))
    props.append(("title", d.code))
    return ",".join(f"{key}={_escape_property(str(value))}" for key, value in props)


def _github_message(d: Diagnostic) -> str:
    lines = [d.message]
    if d.suggestion:
        lines.append(f"hint: {d.suggestion}")
    lines += [f"note: {r.span}: {r.message}" for r in d.related]
    return "\n".join(lines)


def render_github(diagnostics: Iterable[Diagnostic], *, limit: int | None = None) -> str:
    """GitHub Actions workflow commands, one annotation per diagnostic.

    Example: ``::error file=a.hcl,line=2,col=3,endLine=2,endColumn=8,title=OS101::unknown key``.
    The hint and related notes go into the message (as escaped newlines). With
    ``limit``, at most that many (see :func:`capped`) and a ``::notice`` saying
    how many were left out.
    """
    shown, hidden = capped(diagnostics, limit)
    text = "".join(_github_line(d) + "\n" for d in shown)
    if hidden and limit:
        text += f"::notice title=openseal::{_escape_data(hidden_line(hidden, limit))}\n"
    return text


def _github_line(d: Diagnostic) -> str:
    command = _GITHUB_COMMAND[d.severity]
    return f"::{command} {_github_properties(d)}::{_escape_data(_github_message(d))}"
