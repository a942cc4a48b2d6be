"""Service functions the HTTP API needs beyond :mod:`~openseal.runtime.service`: capabilities,
run commands guarded by an expected revision, definition versions by digest, and filing a change
proposal from posted compiled documents.

Like the other service modules, each takes an open store and plain arguments and raises an
:class:`~openseal.errors.OpenSealError` with a stable code; the CLI can call them as they are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from openseal.compiler.definitions.specs import KIND_MODELS
from openseal.compiler.output.bundle import Bundle, BundleEntry, BundleError
from openseal.compiler.output.canonical import canonical_bytes, sha256_digest
from openseal.compiler.output.schemas import compiled_document_schema
from openseal.errors import OpenSealError, UsageError
from openseal.runtime import governance as gov
from openseal.runtime.approvals import ApprovalAuthority, is_loopback
from openseal.runtime.proposal_plan import store_key
from openseal.runtime.store import DefinitionVersion, Store

# -- capabilities ----------------------------------------------------------------------

CAPABILITY_VERSION = "v1"


@dataclass(frozen=True)
class Capability:
    """One capability: what it offers (``operations``) and whether this server serves it."""

    name: str
    version: str
    operations: tuple[str, ...]
    available: bool
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "operations": list(self.operations),
            "available": self.available,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class CapabilityConfig:
    """What a server (or a CLI asking about one) is configured with.

    ``workers`` counts in-process engine workers; ``external_workers`` says the operator
    declared that ``openseal worker`` processes serve the same store. ``tokens`` says whether
    callers can identify themselves; ``listen_address`` is where requests arrive (the local
    operator decides only through a loopback address).
    """

    workers: int = 0
    external_workers: bool = False
    authority: ApprovalAuthority | None = None
    tokens: bool = False
    listen_address: str = "127.0.0.1"
    #: the complete model profile authoring uses (None: authoring is not served)
    authoring_model: str | None = None
    #: without ``authoring_model``: what is missing for authoring, in one sentence
    authoring_missing: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


#: capability → the operations (API operation ids) it covers
OPERATIONS: dict[str, tuple[str, ...]] = {
    "definitions": ("definitions.get",),
    "deployments": (
        "deployments.list", "deployments.history", "deployments.rollback",
        "proposals.list", "proposals.show", "proposals.file", "proposals.review",
        "proposals.decide", "proposals.activate", "proposals.refresh",
    ),
    "objectives": ("objectives.list", "objectives.show"),
    "run_creation": ("objectives.create",),
    "runs": ("runs.list", "runs.show", "runs.events", "runs.events_stream"),
    "run_control": ("runs.pause", "runs.resume", "runs.cancel", "runs.intervene"),
    "approvals": ("approvals.list", "approvals.show"),
    "approval_decisions": ("approvals.decide",),
    "actions": ("actions.list", "actions.show", "actions.reconcile", "actions.resolve"),
    "inbound_events": ("events.deliver",),
    "authoring": ("authoring.draft",),
}  # fmt: skip


def capabilities(config: CapabilityConfig) -> tuple[Capability, ...]:
    """Every capability with its availability, computed from ``config``.

    Store-only capabilities are always available. Run creation needs workers (in-process or
    declared external): a run nobody executes is a promise the server cannot keep. Approval
    decisions need an approval authority through which somebody can actually decide. Authoring
    needs a complete model profile.
    """
    reasons = {
        "run_creation": _run_creation_reason(config),
        "approval_decisions": _decisions_reason(config),
        "authoring": _authoring_reason(config),
    }
    return tuple(
        Capability(name, CAPABILITY_VERSION, ops, reasons.get(name) is None, reasons.get(name))
        for name, ops in OPERATIONS.items()
    )


def capability_of(operation: str) -> str:
    """The capability an operation id belongs to."""
    for name, ops in OPERATIONS.items():
        if operation in ops:
            return name
    raise KeyError(operation)


def _run_creation_reason(config: CapabilityConfig) -> str | None:
    if config.workers > 0 or config.external_workers:
        return None
    return (
        "no workers: start the server with --workers N, or declare external workers "
        "(--external-workers) when `openseal worker` processes share this store"
    )


def _decisions_reason(config: CapabilityConfig) -> str | None:
    authority = config.authority
    if authority is None:
        return "no approval authority is configured (--authority FILE or <home>/approvals.yaml)"
    if config.tokens:
        return None
    if not authority.local_operator:
        return "the approval authority enables no local operator and no tokens are configured"
    if not is_loopback(config.listen_address):
        return (
            f"the local operator may only decide through a loopback address, and the server "
            f"listens on {config.listen_address}; configure tokens (--tokens FILE)"
        )
    return None


def _authoring_reason(config: CapabilityConfig) -> str | None:
    if config.authoring_model:
        return None
    return config.authoring_missing or "no complete model profile is configured for authoring"


# -- definition versions ---------------------------------------------------------------


def get_version(store: Store, digest: str) -> DefinitionVersion:
    """A stored definition version by digest (``sha256:`` prefix optional)."""
    key = store_key(digest.strip().lower())
    if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
        raise UsageError(f"{digest!r} is not a sha256 digest (64 hex characters)")
    return store.definitions.get(key)


# -- filing a change proposal from posted documents ------------------------------------

#: compiled-document validators by kind, built once
_validators: dict[str, jsonschema.Draft202012Validator] = {}


def deploy_documents(
    store: Store,
    documents: Iterable[object],
    actor: str,
    *,
    message: str | None = None,
) -> gov.DeployResult:
    """File a change proposal for compiled ``documents`` (as ``openseal compile`` writes them).

    Each document is checked against its kind's compiled JSON Schema and its version id is
    computed here from its canonical JSON; every dependency it names by digest must be among
    the documents or already stored. Then it is :func:`openseal.runtime.governance.deploy`.
    """
    entries: dict[str, BundleEntry] = {}
    for index, document in enumerate(documents):
        entry = _entry(index, document)
        if entry.key in entries and entries[entry.key].digest != entry.digest:
            raise BundleError(f"documents[{index}]: {entry.key} appears twice with other content")
        entries[entry.key] = entry
    if not entries:
        raise UsageError("no documents: post the compiled definitions to deploy")
    _check_dependencies(store, entries)
    bundle = Bundle(Path("<posted>"), {"definitions": sorted(entries)}, entries)
    return gov.deploy(store, bundle, actor, message=message)


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
