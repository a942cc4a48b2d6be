"""A parse cache: an unchanged file is not parsed again.

Entries live under ``.openseal/cache/`` in the working directory (override with
``OPENSEAL_CACHE_DIR``; ``OPENSEAL_CACHE=off`` turns the cache off). An entry is
keyed by the file's content sha256, its path (spans inside the tree name the
file), its syntax, the compiler version and a fingerprint of the loader's own
source, so editing the loader in a checkout never serves a stale tree.

An entry is a pickle of our own frozen dataclasses (the document tree and the
loader's diagnostics), written by this module only. Anything wrong with an
entry — truncated, corrupt, another format version, unreadable — makes it a
miss: the file is parsed again and the entry rewritten. The cache never makes
a load fail.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path

from openseal import __version__
from openseal.compiler.diagnostics import Diagnostic
from openseal.compiler.tree import Document

#: Bump when the layout of an entry changes.
FORMAT_VERSION = 1
DEFAULT_DIRECTORY = Path(".openseal") / "cache"
_OFF = {"0", "off", "false", "no"}

Loaded = tuple[Document | None, list[Diagnostic]]
Loader = Callable[[Path], Loaded]

#: Modules whose code decides what a loaded tree looks like.
_TREE_MODULES = (
    "tree.py",
    "spans.py",
    "source.py",
    "diagnostics.py",
    "load_hcl.py",
    "hcl_parser.py",
    "load_yaml.py",
)


def cache_directory() -> Path | None:
    """Where entries are kept, or ``None`` when caching is turned off."""
    if os.environ.get("OPENSEAL_CACHE", "").strip().lower() in _OFF:
        return None
    override = os.environ.get("OPENSEAL_CACHE_DIR")
    return Path(override) if override else DEFAULT_DIRECTORY


@cache
def loader_fingerprint() -> str:
    """A digest of the loader's source files (empty parts if a file cannot be read)."""
    digest = hashlib.sha256(__version__.encode())
    here = Path(__file__).parent
    for name in _TREE_MODULES:
        try:
            digest.update((here / name).read_bytes())
        except OSError:
            digest.update(b"-")
    return digest.hexdigest()


def entry_key(content: bytes, path: Path, syntax: str) -> str:
    parts = [
        hashlib.sha256(content).hexdigest(),
        str(path),
        syntax,
        __version__,
        loader_fingerprint(),
        str(FORMAT_VERSION),
    ]
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()


def cached_load(path: Path, syntax: str, loader: Loader, directory: Path | None = None) -> Loaded:
    """``loader(path)``, unless an entry for this exact content is cached.

    ``directory`` overrides :func:`cache_directory` (tests use a temporary one).
    """
    root = directory if directory is not None else cache_directory()
    if root is None:
        return loader(path)
    try:
        content = path.read_bytes()
    except OSError:
        return loader(path)  # the loader reports the unreadable file as a diagnostic
    key = entry_key(content, path, syntax)
    entry = root / key[:2] / f"{key}.pickle"
    hit = _read(entry, key)
    if hit is not None:
        return hit
    loaded = loader(path)
    _write(entry, key, loaded)
    return loaded


def _read(entry: Path, key: str) -> Loaded | None:
    try:
        data = entry.read_bytes()
    except OSError:
        return None
    try:
        stored = pickle.loads(data)  # our own entries only; see the module docstring
        version, stored_key, document, diagnostics = stored
    except Exception:  # any damage at all means "rebuild"
        return None
    if version != FORMAT_VERSION or stored_key != key:
        return None
    if not (document is None or isinstance(document, Document)):
        return None
    if not isinstance(diagnostics, list) or not all(isinstance(d, Diagnostic) for d in diagnostics):
        return None
    return document, list(diagnostics)


def _write(entry: Path, key: str, loaded: Loaded) -> None:
    document, diagnostics = loaded
    try:
        payload = pickle.dumps((FORMAT_VERSION, key, document, diagnostics), protocol=5)
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=entry.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(payload)
            os.replace(tmp, entry)
        finally:
            Path(tmp).unlink(missing_ok=True)
    except (OSError, pickle.PicklingError, RecursionError, TypeError):
        return  # a cache that cannot be written is only a slower compile


def clear(directory: Path | None = None) -> int:
    """Remove every entry; return how many were removed."""
    root = directory if directory is not None else cache_directory()
    if root is None or not root.is_dir():
        return 0
    removed = 0
    for entry in root.glob("*/*.pickle"):
        try:
            entry.unlink()
            removed += 1
        except OSError:
            pass
    return removed
