"""The ``python`` skills the benchmarks call: a no-op, and a slow one that counts its calls."""

from __future__ import annotations

import os
import time

#: the file :func:`slow` appends one line per call to (for counting double executions)
EXECUTIONS_ENV = "OPENSEAL_BENCH_EXECUTIONS"


def noop(q: str = "") -> dict[str, str]:
    """Called with the validated arguments as keywords; returns at once."""
    return {"answer": q}


def slow(q: str = "") -> dict[str, str]:
    """Wait 20 ms, as a call to a remote service would, and note the call.

    Each call appends ``q`` and a newline with one ``write`` on an ``O_APPEND`` file, so lines
    from several worker processes never interleave.
    """
    time.sleep(0.02)
    path = os.environ.get(EXECUTIONS_ENV)
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{q}\n".encode())
        finally:
            os.close(fd)
    return {"answer": q}
