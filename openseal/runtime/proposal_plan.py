"""What a change proposal is diffed against: active versions and their dependency closure.

Deployment names map to active digests; each document names the versions it depends on by
digest, so the closure of a set of roots is every document a reviewer's diff must compare.
Digests are stored as bare hex (the compiler's ``sha256:`` prefix dropped, see
:func:`store_key`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from openseal.compiler.output.diff import diff_documents
from openseal.runtime import schema
from openseal.runtime.change_proposals import Target
from openseal.runtime.governance_policy import (
    GOVERNANCE_KIND,
    GovernanceVersion,
    Policy,
    resolve_policy,
)
from openseal.runtime.records import Activation

DIGEST_PREFIX = "sha256:"

versions = schema.definition_versions
deployments = schema.deployments
activations = schema.deployment_activations

Documents = dict[str, dict[str, Any]]
#: store key → (``kind.name``, document), or None when unknown
Lookup = Callable[[str], "tuple[str, dict[str, Any]] | None"]


def store_key(digest: str) -> str:
    """The store key of a compiled digest: bare hex (``sha256:`` dropped), as the runtime uses."""
    return digest.removeprefix(DIGEST_PREFIX)


@dataclass(frozen=True)
class Plan:
    """A diff against the active versions, its base and the policy that rules it."""

    base: dict[str, str | None]
    diff: dict[str, Any]
    risk_widening: bool
    policy: Policy


def make_plan(conn: sa.Connection, targets: list[Target], lookup: Lookup | None = None) -> Plan:
    """Diff ``targets`` against the active versions and resolve the policy that rules them."""

    def stored(key: str) -> tuple[str, dict[str, Any]] | None:
        return load_version(conn, key)

    def incoming(key: str) -> tuple[str, dict[str, Any]] | None:
        found = lookup(key) if lookup is not None else None
        return found if found is not None else stored(key)

    active = active_digests(conn, [t.name for t in targets])
    base = {t.name: active[t.name][0] if t.name in active else None for t in targets}
    old = closure([d for d in base.values() if d is not None], stored)
    new = closure([t.digest for t in targets], incoming)
    report = diff_documents(old, new)
    bundled = []
    for target in targets:
        found = incoming(target.digest) if target.kind == GOVERNANCE_KIND else None
        if found is not None:
            bundled.append(GovernanceVersion.from_document(target.digest, found[1]))
    policy = resolve_policy(active_governance(conn), bundled, [(t.name, t.kind) for t in targets])
    return Plan(base, report.to_dict(), report.risk_widening, policy)


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


def load_version(conn: sa.Connection, key: str) -> tuple[str, dict[str, Any]] | None:
    row = conn.execute(
        sa.select(versions.c.kind, versions.c.name, versions.c.document).where(
            versions.c.digest == key
        )
    ).one_or_none()
    if row is None:
        return None
    return f"{row.kind}.{row.name}", json.loads(row.document)


def active_digests(conn: sa.Connection, names: Iterable[str]) -> dict[str, tuple[str, str]]:
    """Deployment name → (active digest, kind) for those of ``names`` that are deployed."""
    rows = conn.execute(
        sa.select(deployments.c.name, deployments.c.active_digest, versions.c.kind)
        .join(versions, versions.c.digest == deployments.c.active_digest)
        .where(deployments.c.name.in_(sorted(set(names))))
    )
    return {row.name: (row.active_digest, row.kind) for row in rows}


def active_governance(conn: sa.Connection) -> list[GovernanceVersion]:
    rows = conn.execute(
        sa.select(versions.c.digest, versions.c.document)
        .join(deployments, deployments.c.active_digest == versions.c.digest)
        .where(versions.c.kind == GOVERNANCE_KIND)
    )
    return [GovernanceVersion.from_document(r.digest, json.loads(r.document)) for r in rows]


def activation_history(conn: sa.Connection, name: str) -> tuple[Activation, ...]:
    rows = conn.execute(
        sa.select(activations)
        .where(activations.c.name == name)
        .order_by(activations.c.at, activations.c.id)
    ).mappings()
    return tuple(Activation.from_row(row) for row in rows)
