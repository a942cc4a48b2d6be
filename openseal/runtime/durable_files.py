"""Making what is written to a directory durable, for the store's artefact files and the
archive's folders alike."""

from __future__ import annotations

import os
from pathlib import Path


def sync_directory(directory: Path) -> None:
    """Make the entries of ``directory`` durable (fsync of the directory itself): a file
    created, linked or renamed into it survives a crash once this returns."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
