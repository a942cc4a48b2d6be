"""What every peer script shares: arguments, SQLite pragma probing and the JSON it prints.

Runs inside the peers' own virtual environment, so it imports nothing from openseal.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path


def arguments(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--runs", type=int, default=1000, help="workflow runs per repetition")
    parser.add_argument("--repeat", type=int, default=5, help="timed repetitions")
    parser.add_argument("--warmup", type=int, default=20, help="untimed runs before timing")
    parser.add_argument("--dir", type=Path, required=True, help="where the databases go")
    return parser.parse_args()


def pragmas(path: Path) -> dict[str, object]:
    """The journal mode and synchronous level a fresh connection sees (what durability means)."""
    with sqlite3.connect(path) as conn:
        journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
        synchronous = conn.execute("PRAGMA synchronous").fetchone()[0]
    levels = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
    return {"journal_mode": journal, "synchronous_default": levels.get(synchronous, synchronous)}


def timed(runs: int, one: Callable[[int], object]) -> float:
    started = time.perf_counter()
    for i in range(runs):
        one(i)
    return time.perf_counter() - started


def emit(report: dict[str, object]) -> None:
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")
