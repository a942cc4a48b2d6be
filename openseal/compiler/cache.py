"""The compile cache: what an unchanged input already produced is not computed again.

Two kinds of entry share one directory (``.openseal/cache/`` in the working
directory; ``OPENSEAL_CACHE_DIR`` moves it, ``OPENSEAL_CACHE=off`` turns it off):

* ``files/``: one file's decoded definitions and diagnostics, keyed by its path,
  syntax and content digest (see :func:`openseal.compiler.load.load_file`);
* ``projects/``: one project's compiled documents and diagnostics, keyed by the
  path and content digest of every file in it (see
  :func:`openseal.compiler.pipeline.compile_paths`). There is one slot per
  project location, so editing a project replaces its entry instead of adding one.

Every key also holds :func:`compiler_fingerprint` (the compiler's own source and
the versions of the libraries whose output is cached), so a new release or an
edit to the compiler in a checkout never serves a stale result. Files read
through ``file("...")`` are not known before decoding, so an entry records them
with the digest of the text that was read (:class:`Read`) and a hit is served
only while every one of them still reads the same.

An entry is a pickle written by this module only, of our own frozen dataclasses
and pydantic models. Anything wrong with an entry — truncated, corrupt, another
format version, another key, unreadable — makes it a miss: the result is
computed again and the entry rewritten. The cache never makes a compile fail.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import import_module
from pathlib import Path

from openseal import __version__

#: Bump when the layout of an entry changes.
FORMAT_VERSION = 2
DEFAULT_DIRECTORY = Path(".openseal") / "cache"
_OFF = {"0", "off", "false", "no"}

#: Libraries whose behaviour shapes loaded files (parse trees, pickled models). All
#: are imported by the loaders anyway; the libraries only compiling uses (networkx,
#: rfc8785) join the project key instead, so ``openseal validate`` never imports them.
_LIBRARIES = ("lark", "hcl2", "yaml", "pydantic", "pydantic_core")


def cache_directory() -> Path | None:
    """Where entries are kept, or ``None`` when caching is turned off."""
    if os.environ.get("OPENSEAL_CACHE", "").strip().lower() in _OFF:
        return None
    override = os.environ.get("OPENSEAL_CACHE_DIR")
    return Path(override) if override else DEFAULT_DIRECTORY


@cache
def compiler_fingerprint() -> str:
    """A digest of everything besides the input that decides what is cached.

    That is the compiler package's source (``*.py`` and grammars), the openseal
    version, the Python version and the versions of the libraries in
    ``_LIBRARIES``. Computed once per process: a few dozen small files.
    """
    digest = hashlib.sha256(f"{__version__}\0{sys.version}\0{FORMAT_VERSION}".encode())
    digest.update(library_versions(_LIBRARIES).encode())
    here = Path(__file__).parent
    sources = sorted(p for p in here.rglob("*") if p.suffix in (".py", ".lark"))
    for path in [*sources, here.parent / "errors.py"]:
        digest.update(b"\0" + path.relative_to(here.parent).as_posix().encode())
        try:
            digest.update(path.read_bytes())
        except OSError:
            digest.update(b"\0unreadable")
    return digest.hexdigest()


def library_versions(names: Iterable[str]) -> str:
    """``name=version`` of each library, for keys (imports each one: pass loaded ones)."""
    return "\0".join(f"{name}={_library_version(name)}" for name in names)


def _library_version(name: str) -> str:
    try:
        module = import_module(name)
    except ImportError:
        return "absent"
    return str(getattr(module, "__version__", None) or getattr(module, "VERSION", "?"))


def key_of(*parts: str) -> str:
    """An entry key: the digest of ``parts`` and of the compiler fingerprint."""
    joined = "\0".join([compiler_fingerprint(), *parts])
    return hashlib.sha256(joined.encode("utf-8", "surrogatepass")).hexdigest()


def content_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- file() reads


@dataclass(frozen=True, slots=True)
class Read:
    """A file read through ``file("...")``: its path and the digest of the text read."""

    path: str
    digest: str

    @classmethod
    def of(cls, path: Path, text: str) -> Read:
        return cls(str(path), text_digest(text))

    def unchanged(self) -> bool:
        """Whether the file still reads as the same text (the way ``file()`` reads it)."""
        try:
            text = Path(self.path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return False
        return text_digest(text) == self.digest


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def all_unchanged(reads: Iterable[Read]) -> bool:
    return all(read.unchanged() for read in reads)


# --------------------------------------------------------------------------- entries


def entry_path(root: Path, namespace: str, name: str) -> Path:
    return root / namespace / name[:2] / f"{name}.pickle"


def read_entry(entry: Path, key: str) -> object | None:
    """The payload stored at ``entry`` under ``key``, or ``None`` for any kind of miss.

    Callers check the payload's type: a valid pickle of the wrong shape is a miss too.
    """
    try:
        data = entry.read_bytes()
    except OSError:
        return None
    try:
        stored = pickle.loads(data)  # our own entries only; see the module docstring
        version, stored_key, payload = stored
    except Exception:  # any damage at all means "rebuild"
        return None
    if version != FORMAT_VERSION or stored_key != key:
        return None
    return payload  # type: ignore[no-any-return]


def write_entry(entry: Path, key: str, payload: object) -> None:
    """Store ``payload`` atomically (write a temporary file, then rename); never raises."""
    try:
        data = pickle.dumps((FORMAT_VERSION, key, payload), protocol=5)
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=entry.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, entry)
        finally:
            Path(tmp).unlink(missing_ok=True)
    except (OSError, pickle.PicklingError, RecursionError, TypeError, AttributeError):
        return  # a cache that cannot be written is only a slower compile


def is_sequence_of(value: object, kind: type) -> bool:
    """``value`` is a tuple whose items are all ``kind`` (for checking loaded payloads)."""
    return isinstance(value, tuple) and all(isinstance(item, kind) for item in value)


def sequence_keys(items: Sequence[tuple[str, str]]) -> list[str]:
    """Flatten (name, digest) pairs into key parts (names cannot contain NUL)."""
    return [part for pair in items for part in pair]


def clear(directory: Path | None = None) -> int:
    """Remove every entry; return how many were removed."""
    root = directory if directory is not None else cache_directory()
    if root is None or not root.is_dir():
        return 0
    removed = 0
    for entry in root.glob("**/*.pickle"):
        try:
            entry.unlink()
            removed += 1
        except OSError:
            pass
    return removed
