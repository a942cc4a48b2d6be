"""Benchmarks that print ratios against baselines measured in the same run.

``python -m bench`` runs them all, ``python -m bench NAME ...`` the named ones; see
``docs/performance.md`` for what each measures and the latest figures.
"""

from __future__ import annotations

#: benchmark name → the module whose ``run(options) -> Report`` measures it
BENCHMARKS: dict[str, str] = {
    "compiler": "bench.compiler",
    "cache": "bench.cache",
    "startup": "bench.startup",
    "sqlite_floor": "bench.sqlite_floor",
    "durable": "bench.durable",
    "latency": "bench.latency",
    "scale": "bench.scale",
    "scale_pg": "bench.scale_pg",
    "workers": "bench.workers",
    "archive": "bench.archive",
    "replay": "bench.replay",
    "capacity": "bench.capacity",
    "rate_limit": "bench.rate_limit",
}
