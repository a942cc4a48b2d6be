"""OpenTelemetry spans, only when configured.

Tracing is on when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set (``configure_from_env``, called by
``openseal serve`` and ``openseal worker``) or when embedding code calls :func:`configure`
with an exporter. Otherwise :func:`span` is a no-op and no OpenTelemetry module is imported.

Spans: ``openseal.turn``, ``openseal.model_call``, ``openseal.tool_call`` and
``openseal.action``, with ``openseal.run_id``, ``openseal.turn_seq``, ``openseal.action_key``
and the like as attributes. Outgoing HTTP skill calls carry the W3C ``traceparent`` header of
the span they are made in (:func:`inject`).

Example (tests, embedding)::

    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    exporter = InMemorySpanExporter()
    tracing.configure(exporter=exporter)
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from typing import Any, Protocol

from openseal.errors import UsageError

ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
SERVICE = "openseal"

Attributes = Mapping[str, str | int | float | bool]


class Span(Protocol):
    def set_attribute(self, key: str, value: Any) -> None: ...


class _NoSpan:
    """What :func:`span` yields when tracing is off."""

    def set_attribute(self, key: str, value: Any) -> None:
        return None


_NO_SPAN = _NoSpan()
#: what :func:`span` returns when tracing is off (reusable: it holds nothing)
_NO_SPAN_BLOCK = nullcontext(_NO_SPAN)
_lock = threading.Lock()
_tracer: Any = None
_provider: Any = None

#: attributes every span in this context carries (the run and turn a model call belongs to)
_inherited: ContextVar[Attributes | None] = ContextVar("openseal_span_attributes", default=None)


def enabled() -> bool:
    return _tracer is not None


def recording(span: Span) -> bool:
    """Whether ``span`` is a real one (not what :func:`span` yields when tracing is off), so
    attributes set on it are kept: a caller with several to set skips them all otherwise."""
    return span is not _NO_SPAN


def configure(*, exporter: Any = None, endpoint: str | None = None) -> None:
    """Turn tracing on: spans go to ``exporter`` (synchronously, for tests) or, by default,
    in batches to the OTLP/HTTP endpoint (``endpoint`` or the standard environment)."""
    global _tracer, _provider
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    except ImportError:
        raise UsageError(
            f"tracing is configured ({ENDPOINT_ENV}) but OpenTelemetry is not installed; "
            "install openseal[otel]"
        ) from None
    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE}))
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    else:
        provider.add_span_processor(BatchSpanProcessor(_otlp_exporter(endpoint)))
    with _lock:
        if _provider is not None:
            _provider.shutdown()
        _provider = provider
        _tracer = provider.get_tracer("openseal")


def _otlp_exporter(endpoint: str | None) -> Any:
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        raise UsageError(
            f"{ENDPOINT_ENV} is set but the OTLP exporter is not installed; install openseal[otel]"
        ) from None
    if endpoint is None:
        return OTLPSpanExporter()
    return OTLPSpanExporter(endpoint=endpoint.rstrip("/") + "/v1/traces")


def configure_from_env() -> bool:
    """Turn tracing on when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set; whether it is on."""
    if os.environ.get(ENDPOINT_ENV) and not enabled():
        configure()
    return enabled()


def shutdown() -> None:
    """Flush and stop: spans still buffered are exported. Tracing is off afterwards."""
    global _tracer, _provider
    with _lock:
        provider, _provider, _tracer = _provider, None, None
    if provider is not None:
        provider.shutdown()


def span(name: str, attributes: Attributes | None = None) -> AbstractContextManager[Span]:
    """A span named ``name`` around the block, a child of the current one; it carries the
    attributes of the spans it is inside (``openseal.run_id``...) and records an exception
    that leaves the block. A no-op when tracing is off (nothing is built then: a turn or a
    call costs no more than a ``with``)."""
    tracer = _tracer
    if tracer is None:
        return _NO_SPAN_BLOCK
    return _traced(tracer, name, attributes)


@contextmanager
def _traced(tracer: Any, name: str, attributes: Attributes | None) -> Iterator[Span]:
    merged = {**(_inherited.get() or {}), **(attributes or {})}
    token = _inherited.set(merged)
    try:
        with tracer.start_as_current_span(name, attributes=merged) as current:
            yield current
    finally:
        _inherited.reset(token)


def inject(headers: dict[str, str]) -> None:
    """Add the current span's W3C trace context (``traceparent``) to outgoing ``headers``."""
    if _tracer is None:
        return
    from opentelemetry.propagate import inject as otel_inject

    otel_inject(headers)
