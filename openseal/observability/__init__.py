"""Seeing openseal run: Prometheus metrics, OpenTelemetry traces and structured logs.

- :mod:`~openseal.observability.metrics`: the counters and histograms recorded in-process
  (turns, claims, model and tool calls, actions) and the Prometheus text exposition;
- :mod:`~openseal.observability.tracing`: spans per turn, model call, tool call and action,
  only when an OTLP endpoint is configured (nothing is imported otherwise);
- :mod:`~openseal.observability.logs`: ``--log-format json``, one line per event, secrets
  redacted.

This package imports nothing else of openseal but :mod:`openseal.errors`: the runtime, the
skills, the API and the CLI all report through it. See ``docs/operations.md``.
"""
