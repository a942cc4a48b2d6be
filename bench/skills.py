"""The no-op ``python`` skill the generated definitions and the durable benchmark call."""

from __future__ import annotations


def noop(q: str = "") -> dict[str, str]:
    """Called with the validated arguments as keywords; returns at once."""
    return {"answer": q}
