"""Filing a change proposal from posted compiled documents (versions by digest:
:mod:`.versions`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import jsonschema

from openseal.canonical import canonical_bytes, sha256_digest
from openseal.compiler import (
    KIND_MODELS,
    Bundle,
    BundleEntry,
    BundleError,
    compiled_document_schema,
)
from openseal.errors import OpenSealError, UsageError
from openseal.runtime.caller import Caller
from openseal.runtime.governance import flow as gov
from openseal.runtime.requests import Deployment
from openseal.runtime.service.governance import with_in_use
from openseal.runtime.store import Store, store_key

#: compiled-document validators by kind, built once
_validators: dict[str, jsonschema.Draft202012Validator] = {}


def deploy_documents(store: Store, request: Deployment, caller: Caller) -> gov.DeployResult:
    """File a change proposal for the compiled documents ``request.source`` (a list of them, as
    ``openseal compile`` writes them).

    Each document is checked against its kind's compiled JSON Schema and its version id is
    computed here from its canonical JSON; every dependency it names by digest must be among
    the documents or already stored. Then it is :func:`openseal.runtime.governance.flow.deploy`.
    """
    entries: dict[str, BundleEntry] = {}
    for index, document in enumerate(request.source):
        entry = _entry(index, document)
        if entry.key in entries and entries[entry.key].digest != entry.digest:
            raise BundleError(f"documents[{index}]: {entry.key} appears twice with other content")
        entries[entry.key] = entry
    if not entries:
        raise UsageError("no documents: post the compiled definitions to deploy")
    _check_dependencies(store, entries)
    bundle = Bundle(Path("<posted>"), {"definitions": sorted(entries)}, entries)
    scope = caller.grant.home() or "default"
    result = gov.deploy(store, bundle, caller.actor, message=request.message, scope=scope)
    return with_in_use(store, result)


def _entry(index: int, document: object) -> BundleEntry:
    where = f"documents[{index}]"
    if not isinstance(document, dict):
        raise BundleError(f"{where}: a compiled document must be a JSON object")
    kind, name = document.get("kind"), document.get("name")
    if not isinstance(kind, str) or kind not in KIND_MODELS:
        kinds = ", ".join(KIND_MODELS)
        raise BundleError(f"{where}: `kind` must be one of {kinds}")
    validator = _validators.get(kind)
    if validator is None:
        validator = _validators[kind] = jsonschema.Draft202012Validator(
            compiled_document_schema(kind)
        )
    error = jsonschema.exceptions.best_match(validator.iter_errors(document))
    if error is not None:
        path = "/".join(str(p) for p in error.absolute_path) or "(document)"
        raise BundleError(
            f"{where} ({kind}.{name}) is not a compiled {kind}: {path}: {error.message[:300]}"
        )
    try:
        digest = sha256_digest(canonical_bytes(document))
    except OpenSealError as exc:
        raise BundleError(f"{where}: {exc}") from None
    return BundleEntry(kind, str(name), digest, document)


def _check_dependencies(store: Store, entries: Mapping[str, BundleEntry]) -> None:
    posted = {store_key(e.digest) for e in entries.values()}
    for entry in entries.values():
        for dependency, digest in sorted((entry.document.get("dependencies") or {}).items()):
            key = store_key(str(digest))
            if key in posted:
                continue
            try:
                store.definitions.get(key)
            except OpenSealError:
                raise BundleError(
                    f"{entry.key} depends on {dependency} {digest}, which is neither posted "
                    "nor stored; post every compiled document of the bundle"
                ) from None
