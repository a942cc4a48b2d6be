"""Definition versions (immutable, content-addressed) and deployments (name → active version)."""

from __future__ import annotations

import json
from typing import Any

import rfc8785
import sqlalchemy as sa

from openseal.errors import StoreError
from openseal.runtime import fastsql, schema
from openseal.runtime.clock import new_id
from openseal.runtime.records import Activation, DefinitionVersion, Deployment
from openseal.runtime.store_base import StoreBase
from openseal.runtime.store_errors import IdempotencyConflict, NotFound

versions = schema.definition_versions
deployments = schema.deployments
activations = schema.deployment_activations
ACTIVE_DIGEST = sa.select(deployments.c.active_digest).where(
    deployments.c.name == sa.bindparam("p_name")
)
VERSION = sa.select(versions).where(versions.c.digest == sa.bindparam("p_digest"))


def canonical_json(document: Any) -> str:
    """RFC 8785 canonical JSON text: the stored form, byte-identical for equal documents."""
    return rfc8785.dumps(document).decode("utf-8")


class DefinitionsMixin(StoreBase):
    def put_version(
        self, digest: str, kind: str, name: str, document: dict[str, Any]
    ) -> DefinitionVersion:
        """Store a compiled definition under its digest. Idempotent; versions never change.

        The same digest with a different kind, name or document is refused
        (``idempotency_conflict``): a digest names exactly one document forever.
        """
        text = canonical_json(document)
        try:
            with self.write() as conn:
                stored = self._stored_version(conn, digest, kind, name, text)
                if stored is not None:
                    return stored
                now = self.now()
                conn.execute(
                    sa.insert(versions).values(
                        digest=digest, kind=kind, name=name, document=text, created_at=now
                    )
                )
        except sa.exc.IntegrityError:
            # Another writer stored this digest first (two CI jobs deploying one commit):
            # what it stored is the answer, as if it had been there all along.
            with self.read() as conn:
                stored = self._stored_version(conn, digest, kind, name, text)
            if stored is None:
                raise
            return stored
        return DefinitionVersion(digest, kind, name, json.loads(text), now)

    def _stored_version(
        self, conn: sa.Connection, digest: str, kind: str, name: str, text: str
    ) -> DefinitionVersion | None:
        """Version ``digest`` if stored (None if not); a conflict if with other content."""
        row = conn.execute(sa.select(versions).where(versions.c.digest == digest))
        existing = row.mappings().one_or_none()
        if existing is None:
            return None
        stored = DefinitionVersion.from_row(existing)
        if (existing["document"], stored.kind, stored.name) != (text, kind, name):
            raise IdempotencyConflict(f"version {digest} already exists with different content")
        return stored

    def get_version(self, digest: str) -> DefinitionVersion:
        cached = self._versions.get(digest)
        if cached is not None:
            return cached
        with self.read() as conn:
            return self._cached_version(conn, digest)

    def activate(
        self,
        name: str,
        digest: str,
        actor: str,
        *,
        change_proposal_id: str | None = None,
        reason: str | None = None,
    ) -> Activation:
        """Point deployment ``name`` at version ``digest``; new objectives use it from now on.

        Runs already started keep their pinned version (invariant 12). A rollback is an
        activation of an earlier digest; the history keeps every switch and its predecessor.
        """
        with self.write() as conn:
            return self.activate_in(
                conn, name, digest, actor, change_proposal_id=change_proposal_id, reason=reason
            )

    def activate_in(
        self,
        conn: sa.Connection,
        name: str,
        digest: str,
        actor: str,
        *,
        change_proposal_id: str | None = None,
        reason: str | None = None,
    ) -> Activation:
        """:meth:`activate` inside the caller's write transaction (governance activates several
        deployments and its proposal in one commit)."""
        version = conn.execute(
            sa.select(versions.c.name).where(versions.c.digest == digest)
        ).scalar_one_or_none()
        if version is None:
            raise NotFound(f"definition version {digest} not found")
        if version != name:
            raise StoreError(
                f"version {digest} defines {version!r}, not {name!r}", code="name_mismatch"
            )
        current = (
            conn.execute(self.for_update(sa.select(deployments).where(deployments.c.name == name)))
            .mappings()
            .one_or_none()
        )
        if current is None:
            conn.execute(sa.insert(deployments).values(name=name, active_digest=digest, revision=1))
        else:
            conn.execute(
                sa.update(deployments)
                .where(deployments.c.name == name)
                .values(active_digest=digest, revision=deployments.c.revision + 1)
            )
        activation = Activation(
            id=new_id(),
            name=name,
            digest=digest,
            previous_digest=None if current is None else current["active_digest"],
            actor=actor,
            change_proposal_id=change_proposal_id,
            reason=reason,
            at=self.now(),
        )
        conn.execute(sa.insert(activations).values(**activation.__dict__))
        return activation

    def deployment(self, name: str) -> Deployment | None:
        with self.read() as conn:
            row = conn.execute(sa.select(deployments).where(deployments.c.name == name))
            found = row.mappings().one_or_none()
        return None if found is None else Deployment(**found)

    def active_version(self, name: str) -> DefinitionVersion | None:
        """The version deployment ``name`` currently points at, or None if never activated."""
        with self.read() as conn:
            return self._active_version(conn, name)

    def active_version_in(self, conn: sa.Connection, name: str) -> DefinitionVersion | None:
        """:meth:`active_version` read in the caller's transaction (admission checks it)."""
        return self._active_version(conn, name)

    def _active_version(self, conn: sa.Connection, name: str) -> DefinitionVersion | None:
        found = fastsql.one_or_none(fastsql.execute(conn, ACTIVE_DIGEST, {"p_name": name}))
        digest = None if found is None else found["active_digest"]
        return None if digest is None else self._cached_version(conn, digest)

    def _cached_version(self, conn: sa.Connection, digest: str) -> DefinitionVersion:
        """Version ``digest``, parsed once per store: versions never change (invariant 12)."""
        found = self._versions.get(digest)
        if found is None:
            row = conn.execute(VERSION, {"p_digest": digest}).mappings().one_or_none()
            if row is None:
                raise NotFound(f"definition version {digest} not found")
            found = self._versions[digest] = DefinitionVersion.from_row(row)
        return found

    def deployment_history(self, name: str) -> tuple[Activation, ...]:
        """Every activation of ``name``, oldest first."""
        with self.read() as conn:
            rows = conn.execute(
                sa.select(activations)
                .where(activations.c.name == name)
                .order_by(activations.c.at, activations.c.id)
            ).mappings()
            return tuple(Activation.from_row(row) for row in rows)
