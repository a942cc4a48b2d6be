"""The compile cache: what an unchanged input already produced is not computed again.

Two kinds of entry share one directory, outside the working tree: the
``compile/`` folder of the user cache directory (``~/.cache/openseal/compile``
on Linux; ``OPENSEAL_CACHE_DIR`` moves it, ``OPENSEAL_CACHE=off`` turns it off):

* ``files/``: one file's decoded definitions and diagnostics, keyed by its path,
  syntax, content digest and project root (see
  :func:`openseal.compiler.load.load_file`);
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

An entry is a pickle of our own frozen dataclasses and pydantic models, and
unpickling runs code, so **no entry is unpickled unless it is authenticated**:
each one carries an HMAC-SHA256 of its key and bytes under a per-machine key
(:func:`machine_key`: 32 random bytes in an owner-only file in the user cache
directory, never beside the entries, never in the working tree). A file planted
in the cache directory — by a pull request, say, if ``OPENSEAL_CACHE_DIR`` points
into the checkout — is a miss, whatever it holds. Without a usable key the
cache is off. The parser tables lark builds are kept the same way
(:func:`load_parser`).

Anything wrong with an entry — forged, truncated, corrupt, another format
version, another key, unreadable — makes it a miss: the result is computed
again and the entry rewritten. The cache never makes a compile fail.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import io
import os
import pickle
import secrets
import stat
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING

from openseal import __version__
from openseal.compiler.syntax.file_text import MAX_INCLUDED_BYTES, read_bounded

if TYPE_CHECKING:
    from lark import Lark

#: Bump when the layout of an entry changes.
FORMAT_VERSION = 4
_OFF = {"0", "off", "false", "no"}
#: Every authenticated file starts with this, then the MAC, then the payload.
_MAGIC = b"openseal-cache\x00"
_MAC_BYTES = hashlib.sha256().digest_size
#: Bytes before the payload of an authenticated file.
HEADER_BYTES = len(_MAGIC) + _MAC_BYTES
_KEY_BYTES = 32

#: Libraries whose behaviour shapes loaded files (parse trees, pickled models). All
#: are imported by the loaders anyway; the libraries only compiling uses (networkx,
#: rfc8785) join the project key instead, so ``openseal validate`` never imports them.
_LIBRARIES = ("lark", "hcl2", "yaml", "pydantic", "pydantic_core")


def user_cache_root() -> Path:
    """openseal's user cache directory (``$XDG_CACHE_HOME/openseal`` on Linux)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("openseal"))


def cache_directory() -> Path | None:
    """Where compile entries are kept, or ``None`` when caching is off (or has no key)."""
    if os.environ.get("OPENSEAL_CACHE", "").strip().lower() in _OFF:
        return None
    if machine_key() is None:
        return None
    override = os.environ.get("OPENSEAL_CACHE_DIR")
    return Path(override) if override else user_cache_root() / "compile"


# --------------------------------------------------------------------------- the machine key


def key_file() -> Path:
    return user_cache_root() / "cache-key"


def machine_key() -> bytes | None:
    """The key that signs this machine's cache entries, created on first use.

    ``None`` when it cannot be read or created, or when the file holding it is
    not a regular file owned by this user and private to them: then nothing
    is cached, rather than trusting a key someone else could know.
    """
    return _key_at(key_file())


@functools.lru_cache(maxsize=8)
def _key_at(path: Path) -> bytes | None:
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    except OSError:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=".key-", dir=path.parent)  # created 0600
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(secrets.token_bytes(_KEY_BYTES))
            os.link(tmp, path)  # never replaces a key another process just made
        except FileExistsError:
            pass
        finally:
            Path(tmp).unlink(missing_ok=True)
        return _read_key(path)
    except OSError:
        return None


def _read_key(path: Path) -> bytes | None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        private = stat.S_ISREG(info.st_mode) and not info.st_mode & 0o077
        if not private or info.st_uid != os.geteuid() or info.st_size != _KEY_BYTES:
            return None
        data = os.read(fd, _KEY_BYTES + 1)
    finally:
        os.close(fd)
    return data if len(data) == _KEY_BYTES else None


def _mac(key: bytes, name: str, payload: bytes) -> bytes:
    message = name.encode("utf-8", "surrogatepass") + b"\0" + payload
    return hmac.new(key, message, hashlib.sha256).digest()


def read_signed(path: Path, name: str) -> bytes | None:
    """The payload stored at ``path`` for ``name``, if its MAC proves this machine wrote it."""
    key = machine_key()
    if key is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head = HEADER_BYTES
    if len(data) < head or not data.startswith(_MAGIC):
        return None
    payload = data[head:]
    if not hmac.compare_digest(data[len(_MAGIC) : head], _mac(key, name, payload)):
        return None
    return payload


def write_signed(path: Path, name: str, payload: bytes) -> None:
    """Store ``payload`` for ``name`` with its MAC, atomically; never raises."""
    key = machine_key()
    if key is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(_MAGIC + _mac(key, name, payload) + payload)
            os.replace(tmp, path)
        finally:
            Path(tmp).unlink(missing_ok=True)
    except OSError:
        return  # a cache that cannot be written is only a slower compile


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
            data = read_bounded(Path(self.path), MAX_INCLUDED_BYTES)
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return False
        return len(data) <= MAX_INCLUDED_BYTES and text_digest(text) == self.digest


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def all_unchanged(reads: Iterable[Read]) -> bool:
    return all(read.unchanged() for read in reads)


# --------------------------------------------------------------------------- entries


def entry_path(root: Path, namespace: str, name: str) -> Path:
    return root / namespace / name[:2] / f"{name}.entry"


def read_entry(entry: Path, key: str) -> object | None:
    """The payload stored at ``entry`` under ``key``, or ``None`` for any kind of miss.

    Nothing is unpickled unless its MAC proves this machine wrote it for ``key``.
    Callers check the payload's type: a valid entry of the wrong shape is a miss too.
    """
    data = read_signed(entry, key)
    if data is None:
        return None
    try:
        stored = pickle.loads(data)  # authenticated: written by write_entry on this machine
        version, stored_key, payload = stored
    except Exception:  # any damage at all means "rebuild"
        return None
    if version != FORMAT_VERSION or stored_key != key:
        return None
    return payload  # type: ignore[no-any-return]


def write_entry(entry: Path, key: str, payload: object) -> None:
    """Store ``payload`` atomically and signed; never raises."""
    try:
        data = pickle.dumps((FORMAT_VERSION, key, payload), protocol=5)
    except (pickle.PicklingError, RecursionError, TypeError, AttributeError):
        return
    write_signed(entry, key, data)


# --------------------------------------------------------------------------- parser tables


def parser_directory() -> Path:
    """Where lark's parser tables are kept: the user cache directory.

    Not ``OPENSEAL_CACHE_DIR``: the tables depend only on the grammars and
    library versions, so pointing the compile cache elsewhere (a fresh
    directory per CI job, say) never makes a process build them again.
    """
    return user_cache_root() / "parsers"


def load_parser(name: str, grammar: str, options: Mapping[str, object]) -> Lark:
    """A lark parser for ``grammar``, from signed tables when this machine has built them.

    Building the LALR tables takes seconds; loading them, milliseconds. The
    tables are a pickle (lark's own format), so they are authenticated like
    every entry; anything wrong with them means building again.
    """
    import lark

    described = repr(sorted((k, repr(v)) for k, v in options.items() if k != "postlex"))
    # The tables pickle the post-lexer by its import path, so the path is part of the key:
    # tables saved by another layout of the code are never tried, let alone rebuilt in turn.
    postlex = type(options.get("postlex"))
    keyed = "\0".join(
        [
            grammar,
            described,
            f"{postlex.__module__}.{postlex.__qualname__}",
            lark.__version__,
            sys.version,
        ]
    )
    digest = hashlib.sha256(keyed.encode("utf-8")).hexdigest()
    path = parser_directory() / f"{name}-{digest[:24]}.lark"
    tables = read_signed(path, digest)
    if tables is not None:
        try:
            return lark.Lark.load(io.BytesIO(tables))  # authenticated: saved below on this machine
        except Exception:
            pass  # tables of another shape: build them again
    parser = lark.Lark(grammar, **options)
    buffer = io.BytesIO()
    try:
        parser.save(buffer)
    except Exception:
        return parser
    write_signed(path, digest, buffer.getvalue())
    return parser


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
    for entry in root.glob("**/*.entry"):
        try:
            entry.unlink()
            removed += 1
        except OSError:
            pass
    return removed
