"""A python skill that takes longer than its declared timeout, and its lookup.

Orders are kept in the JSON file named by ``OPENSEAL_TEST_SLOW_LEDGER`` so a test (and the
lookup) can see what was done, whichever thread or process did it.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

LEDGER_ENV = "OPENSEAL_TEST_SLOW_LEDGER"


def _ledger() -> Path:
    return Path(os.environ[LEDGER_ENV])


def _entries() -> list[dict[str, object]]:
    path = _ledger()
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else []


def submit(ref: str, seconds: float) -> dict[str, object]:
    time.sleep(seconds)
    entry = {"ref": ref, "entry": f"E-{len(_entries()) + 1}"}
    _ledger().write_text(json.dumps([*_entries(), entry]), encoding="utf-8")
    return entry


def lookup(ref: str, seconds: float) -> dict[str, object]:
    for entry in _entries():
        if entry["ref"] == ref:
            return entry
    return {}
