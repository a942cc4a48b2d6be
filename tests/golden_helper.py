"""Compare text with a golden file under ``tests/golden/``.

Set ``OPENSEAL_UPDATE_GOLDEN=1`` (or run ``make golden``) to rewrite the files
instead of comparing; review the diff before committing.
"""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent / "golden"


def assert_golden(text: str, relative: str) -> None:
    """Assert that ``text`` equals ``tests/golden/<relative>``."""
    path = GOLDEN / relative
    if os.environ.get("OPENSEAL_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
        return
    assert path.exists(), f"missing golden file {path}; run with OPENSEAL_UPDATE_GOLDEN=1"
    expected = path.read_text(encoding="utf-8")
    assert text == expected, f"output differs from {relative}; run with OPENSEAL_UPDATE_GOLDEN=1"
