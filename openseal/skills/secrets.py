"""A wrapper that keeps a credential value out of reprs, JSON, pickles and logs.

:class:`Secret` shows ``Secret('***')`` however it is printed and refuses to be
serialised; only :meth:`Secret.reveal` gives the value, so every place that
uses one is easy to find. :func:`redact` and :class:`SecretFilter` scrub values
from text that might leave the process (error messages, log records).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable
from typing import NoReturn

MASK = "***"


class Secret:
    """A credential value. ``str()``, ``repr()`` and f-strings show ``Secret('***')``."""

    __slots__ = ("_value",)
    _value: str

    def __init__(self, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError("a Secret wraps a string")
        object.__setattr__(self, "_value", value)

    def reveal(self) -> str:
        """The value itself: use it for the request, never store or log it."""
        return self._value

    def __repr__(self) -> str:
        return f"Secret('{MASK}')"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError("a Secret is immutable")

    # Pickling is how values leak into queues, caches and databases; refuse it.
    def __reduce_ex__(self, protocol: object) -> NoReturn:
        raise TypeError("a Secret cannot be pickled or serialised")

    def __getstate__(self) -> NoReturn:
        raise TypeError("a Secret cannot be pickled or serialised")

    # copies stay in the process, so they are harmless: share the immutable object
    def __copy__(self) -> Secret:
        return self

    def __deepcopy__(self, memo: object) -> Secret:
        return self


def redact(text: str, secrets: Iterable[Secret]) -> str:
    """``text`` with every occurrence of every secret's value replaced by ``***``."""
    pattern = _pattern({s.reveal() for s in secrets})
    return text if pattern is None else pattern.sub(MASK, text)


def _pattern(values: Iterable[str]) -> re.Pattern[str] | None:
    # longest first, so a value containing another is masked whole
    ordered = sorted((v for v in values if v), key=len, reverse=True)
    return re.compile("|".join(map(re.escape, ordered))) if ordered else None


class SecretFilter(logging.Filter):
    """Redacts registered secret values from log records (message, exception, stack).

    Attach it to *handlers* (a filter on a logger does not see records that
    propagate from child loggers)::

        scrub = SecretFilter()
        for handler in logging.getLogger().handlers:
            handler.addFilter(scrub)
        context = RuntimeContext.load(path, log_filter=scrub)
    """

    def __init__(self, secrets: Iterable[Secret] = ()) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._values: set[str] = set()
        self._compiled: re.Pattern[str] | None = None
        for secret in secrets:
            self.register(secret)

    def register(self, secret: Secret) -> None:
        """Redact ``secret``'s value from every record from now on."""
        value = secret.reveal()
        with self._lock:
            if value and value not in self._values:
                self._values.add(value)
                self._compiled = _pattern(self._values)

    def filter(self, record: logging.LogRecord) -> bool:
        pattern = self._compiled
        if pattern is None:
            return True
        try:
            message = record.getMessage()
        except Exception:  # a malformed record still must not leak
            message = f"{record.msg} {record.args}"
        record.msg, record.args = pattern.sub(MASK, message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = pattern.sub(MASK, record.exc_text)
            # formatters fall back to exc_text; a custom one reading exc_info would see values
            record.exc_info = None
        if record.stack_info:
            record.stack_info = pattern.sub(MASK, record.stack_info)
        return True
