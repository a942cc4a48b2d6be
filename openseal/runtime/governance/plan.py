"""What a change proposal is diffed against: active versions and their dependency closure.

Deployment names map to active digests; each document names the versions it depends on by
digest, so the closure of a set of roots is every document a reviewer's diff must compare.
Digests are stored as bare hex (the compiler's ``sha256:`` prefix dropped, see
:func:`openseal.runtime.store.store_key`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from openseal.compiler import diff_documents
from openseal.runtime.governance.policy import (
    GOVERNANCE_KIND,
    GovernanceVersion,
    Policy,
    resolve_policy,
)
from openseal.runtime.store import Connection, Store, Target, store_key

Documents = dict[str, dict[str, Any]]
#: store key → (``kind.name``, document), or None when unknown
Lookup = Callable[[str], "tuple[str, dict[str, Any]] | None"]


@dataclass(frozen=True)
class Plan:
    """A diff against the active versions, its base and the policy that rules it."""

    base: dict[str, str | None]
    diff: dict[str, Any]
    risk_widening: bool
    policy: Policy


def make_plan(
    store: Store, conn: Connection, targets: list[Target], lookup: Lookup | None = None
) -> Plan:
    """Diff ``targets`` against the active versions and resolve the policy that rules them."""

    def stored(key: str) -> tuple[str, dict[str, Any]] | None:
        return store.definitions.document(conn, key)

    def incoming(key: str) -> tuple[str, dict[str, Any]] | None:
        found = lookup(key) if lookup is not None else None
        return found if found is not None else stored(key)

    active = store.definitions.active_in(conn, [t.name for t in targets])
    base = {t.name: active[t.name][0] if t.name in active else None for t in targets}
    old = closure([d for d in base.values() if d is not None], stored)
    new = closure([t.digest for t in targets], incoming)
    report = diff_documents(with_active(store, conn, old, new), new)
    bundled = []
    for target in targets:
        found = incoming(target.digest) if target.kind == GOVERNANCE_KIND else None
        if found is not None:
            bundled.append(GovernanceVersion.from_document(target.digest, found[1]))
    policy = resolve_policy(
        active_governance(store, conn), bundled, [(t.name, t.kind) for t in targets]
    )
    return Plan(base, report.to_dict(), report.risk_widening, policy)


def with_active(store: Store, conn: Connection, old: Documents, new: Documents) -> Documents:
    """``old`` with the active version of each definition ``new`` holds and ``old`` does not:
    a new deployment that uses a model profile, skill or team another deployment already
    runs is diffed against that version, so what is active is never shown as added."""
    missing = new.keys() - old.keys()
    if not missing:
        return old
    roots = [deployment.active_digest for deployment, _ in store.definitions.deployments_in(conn)]
    active = closure(roots, lambda key: store.definitions.document(conn, key))
    return {**old, **{ref: active[ref] for ref in missing if ref in active}}


def closure(roots: Iterable[str], lookup: Lookup) -> Documents:
    """The documents of ``roots`` and, transitively, every version they depend on by digest.

    A dependency missing from the store (a version put there by hand) is skipped: the diff
    then shows what it can rather than refusing the change.
    """
    documents: Documents = {}
    seen: set[str] = set()
    pending = list(roots)
    while pending:
        key = pending.pop()
        if key in seen:
            continue
        seen.add(key)
        found = lookup(key)
        if found is None:
            continue
        ref, document = found
        documents[ref] = document
        dependencies = document.get("dependencies") or {}
        pending.extend(store_key(d) for d in dependencies.values() if isinstance(d, str))
    return documents


def active_governance(store: Store, conn: Connection) -> list[GovernanceVersion]:
    """The active governance versions."""
    return [
        GovernanceVersion.from_document(digest, document)
        for digest, document in store.definitions.active_documents(conn, GOVERNANCE_KIND)
    ]
