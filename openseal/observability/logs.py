"""``--log-format json``: one JSON object per line on stderr, secrets redacted.

Every record of every logger (openseal's, the HTTP server's access and error logs) becomes one
line: ``{"at": ..., "level": ..., "logger": ..., "message": ...}`` plus ``"exception"`` (one
string) when there is one. Before formatting, each record passes the given filters — the
runtime context's :class:`~openseal.skills.secrets.SecretFilter`, which knows the credential
values this process resolved — and :class:`BearerFilter`, which masks any ``Bearer`` token or
``Authorization`` value that made it into a message.

Example::

    configure("json", "info", filters=[SecretFilter()])
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, TextIO

MASK = "***"
#: credentials that look like credentials wherever they appear in a message
_CREDENTIALS = re.compile(
    r"(?i)(bearer\s+|authorization[\"']?\s*[:=]\s*[\"']?(?:bearer\s+)?|"
    r"(?:api[_-]?key|token|password|secret)[\"']?\s*[:=]\s*[\"']?)([^\s\"',;}]+)"
)


class BearerFilter(logging.Filter):
    """Masks bearer tokens, ``Authorization`` values and ``key=value`` credentials."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record still must not leak
            message = f"{record.msg} {record.args}"
        record.msg, record.args = redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


def redact(text: str) -> str:
    """``text`` with credential-looking values masked."""
    return _CREDENTIALS.sub(lambda m: m.group(1) + MASK, text)


class JsonFormatter(logging.Formatter):
    """One JSON object per record."""

    def format(self, record: logging.LogRecord) -> str:
        document: dict[str, Any] = {
            "at": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            document["exception"] = record.exc_text
        return json.dumps(document, ensure_ascii=False)


TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure(
    fmt: str,
    level: str = "info",
    *,
    filters: Iterable[logging.Filter] = (),
    stream: TextIO | None = None,
) -> logging.Handler:
    """Send every log record to ``stream`` (stderr) as ``fmt`` (``text`` or ``json``), through
    ``filters`` and :class:`BearerFilter`. Replaces the root logger's handlers; the HTTP
    server's loggers propagate to it. Returns the handler."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    for item in (*filters, BearerFilter()):
        handler.addFilter(item)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        server_logger = logging.getLogger(name)
        server_logger.handlers.clear()
        server_logger.propagate = True
    return handler
