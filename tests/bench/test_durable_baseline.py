"""``OPENSEAL_BENCH_BASELINE`` in the durable benchmark: a revision's own batches beside ours.

No timing assertions: the figures must be there, each with its ratio to the baseline.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.durable import CONCURRENCY

REPO = Path(__file__).resolve().parents[2]
#: nothing listens on port 1: the PostgreSQL figures are skipped, SQLite only
NO_POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:1/none"


@pytest.mark.slow  # about a minute: every durable batch twice, the peers' too when installed
def test_durable_measures_the_baseline_revision_beside_the_current_code(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "bench", "durable", "--quick", "--results", str(tmp_path)],
        cwd=REPO,
        env={
            **os.environ,
            "OPENSEAL_BENCH_BASELINE": "HEAD",
            "OPENSEAL_BENCH_DATABASE_URL": NO_POSTGRES,
        },
        capture_output=True,
        text=True,
        timeout=900,  # a hang guard only: about a minute
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    data = json.loads((tmp_path / "durable.json").read_text())
    assert data["parameters"]["baseline"] == "HEAD"
    figures = {f["name"]: f for f in data["figures"]}
    for current in ("openseal runs/s, concurrency 1", "openseal runs/s"):
        old = figures[f"{current} (HEAD)"]
        assert len(old["samples"]) == 2  # one batch of the baseline per repetition
        assert all(rate > 0 for rate in old["samples"])
        assert "concurrency" not in old["note"]  # HEAD's Batch takes the concurrency
        ratio = figures[f"{current}: current ÷ HEAD"]
        assert ratio["baseline"] == old["name"]
        assert ratio["ratio"] == ratio["median"] / old["median"]
        assert ratio["target"] is None
    # the baseline driver has no submit mode: those figures stand alone
    submit = [name for name in figures if "Engine.submit" in name]
    assert sorted(submit) == [
        "openseal runs/s, Engine.submit from 1 thread",
        f"openseal runs/s, Engine.submit from {CONCURRENCY} threads",
    ]
    assert figures["PostgreSQL: openseal runs/s"]["available"] is False
