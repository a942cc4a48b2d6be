"""``python -m bench.counted_worker ARGS``: ``openseal ARGS`` in a process that counts the SQL
statements it sends (each a round trip to the server) and writes the count, at exit, to the
file named by ``OPENSEAL_BENCH_STATEMENTS``. Whichever ``openseal`` package comes first on the
path is run, so a benchmark can run an earlier version of it the same way."""

from __future__ import annotations

import atexit
import os
import sys
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

STATEMENTS_ENV = "OPENSEAL_BENCH_STATEMENTS"
_sent = [0]


def _count(*_args: Any) -> None:
    _sent[0] += 1


def _write() -> None:
    Path(os.environ[STATEMENTS_ENV]).write_text(str(_sent[0]), encoding="utf-8")


def main() -> int:
    event.listen(sa.engine.Engine, "before_cursor_execute", _count)
    if os.environ.get(STATEMENTS_ENV):
        atexit.register(_write)
    from openseal.cli.main import main as openseal

    return int(openseal(sys.argv[1:]) or 0)


if __name__ == "__main__":
    sys.exit(main())
