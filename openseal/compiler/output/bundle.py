"""Bundles: a directory of compiled documents plus a manifest.

Layout::

    build/
      manifest.json              compiler, every definition's digest and path, source digests
      skill/search_vendors.json  one deterministic JSON file per compiled definition
      workflow/procure_laptops.json
      ...

Each document file is pretty-printed JSON with sorted keys; its RFC 8785
canonical form hashes to the digest the manifest records, which
:func:`read_bundle` verifies. Source file digests live in the manifest only —
never in a document — so moving a definition between files keeps its digest.
Writing the same compile result twice gives byte-identical files.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from openseal import __version__
from openseal.canonical import canonical_bytes, is_digest, pretty, sha256_digest
from openseal.compiler.definitions.specs import KIND_MODELS
from openseal.compiler.output.document import CompiledDocument
from openseal.compiler.output.emit import API_VERSION
from openseal.compiler.syntax.file_text import MAX_FILE_BYTES, read_bounded
from openseal.errors import OpenSealError

MANIFEST = "manifest.json"


class BundleError(OpenSealError):
    """A bundle directory is missing, malformed, or fails digest verification."""

    code = "bundle_error"


@dataclass(frozen=True, slots=True)
class BundleEntry:
    kind: str
    name: str
    digest: str
    document: dict[str, Any]

    @property
    def key(self) -> str:
        return f"{self.kind}.{self.name}"


@dataclass(frozen=True, slots=True)
class Bundle:
    """A verified bundle: the manifest and every document, keyed by ``kind.name``."""

    path: Path
    manifest: dict[str, Any]
    entries: Mapping[str, BundleEntry]

    @property
    def documents(self) -> dict[str, dict[str, Any]]:
        return {key: entry.document for key, entry in self.entries.items()}


def document_path(kind: str, name: str) -> str:
    """The bundle-relative path of a compiled definition (always ``/``-separated)."""
    return f"{kind}/{name}.json"


def build_manifest(
    documents: Mapping[str, CompiledDocument], sources: Mapping[str, str]
) -> dict[str, Any]:
    """The manifest for ``documents``; ``sources`` maps a relative file path to its digest."""
    return {
        "apiVersion": API_VERSION,
        "compiler": {"name": "openseal", "version": __version__},
        "definitions": {
            key: {
                "kind": doc.kind,
                "name": doc.name,
                "digest": doc.digest,
                "path": document_path(doc.kind, doc.name),
            }
            for key, doc in sorted(documents.items())
        },
        "sources": dict(sorted(sources.items())),
    }


def source_digests(files: list[str], texts: Mapping[str, str], root: Path) -> dict[str, str]:
    """Relative path (``/``-separated) → ``sha256:`` of the file's bytes, for every loaded file.

    A file that can no longer be read is hashed from the text the loader saw.
    """
    out: dict[str, str] = {}
    for file in files:
        path = Path(file)
        try:
            data = read_bounded(path, MAX_FILE_BYTES)
        except OSError:
            if file not in texts:
                continue
            data = texts[file].encode("utf-8")
        out[_relative(path, root)] = sha256_digest(data)
    return out


def _relative(path: Path, root: Path) -> str:
    resolved = path.resolve()
    try:
        return resolved.relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def write_bundle(
    documents: Mapping[str, CompiledDocument],
    out_dir: Path,
    sources: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Write ``documents`` and a manifest into ``out_dir``; return the manifest.

    Document files listed by a previous manifest in ``out_dir`` that are not
    part of this bundle are removed; nothing else in the directory is touched.
    Every file is written first into a staging directory inside ``out_dir`` and
    moved into place only when all of them are written, the manifest last, so
    a failure while writing (a full disk, a name the file system refuses)
    leaves the previous bundle as it was, or no directory at all if there was
    none, and a reader never sees half a file.
    """
    manifest = build_manifest(documents, sources or {})
    previous = _previous_paths(out_dir)
    created = not out_dir.exists()
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        root = out_dir.resolve()
        targets = {
            key: _inside(root, out_dir, document_path(doc.kind, doc.name))
            for key, doc in documents.items()
        }
        with tempfile.TemporaryDirectory(prefix=".staging-", dir=out_dir) as staging:
            staged = {key: Path(staging) / targets[key].relative_to(out_dir) for key in targets}
            for key in sorted(documents):
                _atomic_write(staged[key], pretty(documents[key].document))
            _atomic_write(Path(staging) / MANIFEST, pretty(manifest))
            for key in sorted(documents):
                targets[key].parent.mkdir(exist_ok=True)
                os.replace(staged[key], targets[key])
            current = {entry["path"] for entry in manifest["definitions"].values()}
            for stale in sorted(previous - current):
                try:
                    path = _inside(root, out_dir, stale)
                except BundleError:
                    continue  # never remove anything outside the bundle
                path.unlink(missing_ok=True)
                _remove_if_empty(path.parent, out_dir)
            os.replace(Path(staging) / MANIFEST, out_dir / MANIFEST)
    except OSError as exc:
        if created:
            _remove_if_empty(out_dir, out_dir.parent)
        raise BundleError(f"cannot write the bundle to {out_dir}: {exc.strerror or exc}") from exc
    return manifest


def _previous_paths(out_dir: Path) -> set[str]:
    try:
        data = json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))
        entries = data["definitions"].values()
        return {p for e in entries if isinstance(p := e.get("path"), str) and _safe_path(p)}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return set()


def _inside(root: Path, out_dir: Path, relative: str) -> Path:
    """``out_dir / relative``, refused unless it is ``<kind>/<file>.json`` resolving inside.

    Definition names are checked when they are decoded; this is the last line of
    defence against a name, or a directory symlinked inside ``out_dir``, that
    would write elsewhere.
    """
    path = out_dir / relative
    if _safe_path(relative) and path.resolve().is_relative_to(root):
        return path
    raise BundleError(f"refusing to write {relative!r}: it is not a file inside {out_dir}")


def _remove_if_empty(directory: Path, root: Path) -> None:
    if directory != root and directory.is_dir() and not any(directory.iterdir()):
        directory.rmdir()


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _safe_path(path: str) -> bool:
    """A manifest path must be ``<kind>/<file>.json`` inside the bundle, nothing else."""
    parts = PurePosixPath(path).parts
    return (
        len(parts) == 2
        and parts[0] in KIND_MODELS
        and parts[1].endswith(".json")
        and not parts[1].startswith(".")
        and "\\" not in path
    )


# --------------------------------------------------------------------------- reading


def read_bundle(directory: Path) -> Bundle:
    """Read a bundle and verify every document against the manifest's digest.

    Raises :class:`BundleError` with a one-line reason: no manifest, a
    malformed manifest, a missing or unreadable file, or a document whose
    digest differs from the manifest's (the file was edited after compiling).
    """
    manifest = _read_json(directory / MANIFEST, "manifest")
    if not isinstance(manifest, dict) or manifest.get("apiVersion") != API_VERSION:
        raise BundleError(
            f"{directory / MANIFEST} is not an openseal bundle manifest ({API_VERSION})"
        )
    definitions = manifest.get("definitions")
    if not isinstance(definitions, dict):
        raise BundleError(f"{directory / MANIFEST}: `definitions` must be an object")
    entries: dict[str, BundleEntry] = {}
    for key in sorted(definitions):
        entries[key] = _read_entry(directory, key, definitions[key])
    return Bundle(directory, manifest, entries)


def _read_entry(directory: Path, key: str, meta: object) -> BundleEntry:
    where = f"{directory / MANIFEST}: definition `{key}`"
    if not isinstance(meta, dict):
        raise BundleError(f"{where} must be an object")
    kind, name, digest, path = (meta.get(k) for k in ("kind", "name", "digest", "path"))
    if not (isinstance(kind, str) and isinstance(name, str) and f"{kind}.{name}" == key):
        raise BundleError(f"{where}: `kind` and `name` do not match the key")
    if not is_digest(digest):
        raise BundleError(f"{where}: `digest` is not a sha256 digest")
    if not isinstance(path, str) or not _safe_path(path):
        raise BundleError(f"{where}: `path` must be <kind>/<name>.json inside the bundle")
    document = _read_json(directory / path, f"`{key}`")
    try:
        actual = sha256_digest(canonical_bytes(document))
    except OpenSealError as exc:
        raise BundleError(f"{directory / path}: {exc}") from exc
    if actual != digest:
        raise BundleError(
            f"{directory / path} does not match its digest in the manifest "
            f"(expected {digest}, found {actual}); the file was changed after compiling"
        )
    if not isinstance(document, dict) or (document.get("kind"), document.get("name")) != (
        kind,
        name,
    ):
        raise BundleError(f"{directory / path} does not hold {key}")
    return BundleEntry(kind, name, str(digest), document)


def _read_json(path: Path, what: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BundleError(f"{path}: no such file ({what} of the bundle)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BundleError(f"{path}: cannot read the {what}: {exc}") from exc
    try:
        return json.loads(text)
    except ValueError as exc:
        raise BundleError(f"{path}: the {what} is not valid JSON ({exc})") from exc


def is_bundle(directory: Path) -> bool:
    return (directory / MANIFEST).is_file()
