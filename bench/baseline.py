"""A git revision's own code, measured beside the current code in the same run.

``OPENSEAL_BENCH_BASELINE=<revision>`` names the revision. On a shared, noisy machine, figures
taken at different times cannot be compared, so the benchmarks that read it run that revision's
code interleaved with the current code and report the current figures against its.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
from collections.abc import Sequence
from pathlib import Path

BASELINE_ENV = "OPENSEAL_BENCH_BASELINE"
REPOSITORY = Path(__file__).resolve().parents[1]


def checkout(revision: str, directory: Path, paths: Sequence[str] = ("openseal",)) -> Path:
    """``paths`` (top-level packages) of ``revision``, extracted under ``directory``."""
    archive = subprocess.run(
        ["git", "-C", str(REPOSITORY), "archive", "--format=tar", revision, *paths],
        check=True, capture_output=True,
    ).stdout  # fmt: skip
    directory.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(directory, filter="data")
    return directory
