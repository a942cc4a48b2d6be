"""The definitions repository: versions (immutable, content-addressed) and deployments
(name → active version, with the history of every activation)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from openseal.canonical import canonical_json
from openseal.errors import StoreError
from openseal.runtime.clock import new_id
from openseal.runtime.store.db.errors import IdempotencyConflict, NotFound
from openseal.runtime.store.repos.repository import Repository
from openseal.runtime.store.tables import schema
from openseal.runtime.store.tables.records import Activation, DefinitionVersion, Deployment
from openseal.runtime.store.tables.versions import Versions

if TYPE_CHECKING:
    from openseal.runtime.store.db.base import StoreBase

versions = schema.definition_versions
deployments = schema.deployments
activations = schema.deployment_activations


class Definitions(Repository):
    """``store.definitions``: compiled versions and the deployments pointing at them."""

    def __init__(self, store: StoreBase, versions: Versions) -> None:
        super().__init__(store)
        #: versions by digest, parsed once (versions are immutable), shared with objectives
        self._versions = versions

    def put(self, digest: str, kind: str, name: str, document: dict[str, Any]) -> DefinitionVersion:
        """Store a compiled definition under its digest. Idempotent; versions never change.

        The same digest with a different kind, name or document is refused
        (``idempotency_conflict``): a digest names exactly one document forever.
        """
        text = canonical_json(document)
        try:
            with self._store.write() as conn:
                stored = self._stored_version(conn, digest, kind, name, text)
                if stored is not None:
                    return stored
                now = self._store.now()
                conn.execute(
                    sa.insert(versions).values(
                        digest=digest, kind=kind, name=name, document=text, created_at=now
                    )
                )
        except sa.exc.IntegrityError:
            # Another writer stored this digest first (two CI jobs deploying one commit):
            # what it stored is the answer, as if it had been there all along.
            with self._store.read() as conn:
                stored = self._stored_version(conn, digest, kind, name, text)
            if stored is None:
                raise
            return stored
        return DefinitionVersion(digest, kind, name, json.loads(text), now)

    def put_in(
        self, conn: sa.Connection, digest: str, kind: str, name: str, document: dict[str, Any]
    ) -> DefinitionVersion:
        """:meth:`put` inside the caller's transaction."""
        text = canonical_json(document)
        stored = self._stored_version(conn, digest, kind, name, text)
        if stored is not None:
            return stored
        now = self._store.now()
        # Both dialects spell "insert unless the digest is there" alike; a concurrent writer
        # of the same digest stored the same document (a digest names one document). The
        # dialect packages are imported here, not at start-up (PostgreSQL's is heavy).
        from sqlalchemy.dialects import postgresql, sqlite

        insert = (postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert)(
            versions
        )
        conn.execute(
            insert.values(
                digest=digest, kind=kind, name=name, document=text, created_at=now
            ).on_conflict_do_nothing(index_elements=["digest"])
        )
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

    def get(self, digest: str) -> DefinitionVersion:
        cached = self._versions.cached(digest)
        if cached is not None:
            return cached
        with self._store.read() as conn:
            return self._versions.get(conn, digest)

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
        with self._store.write() as conn:
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
            conn.execute(
                self._store.for_update(sa.select(deployments).where(deployments.c.name == name))
            )
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
            at=self._store.now(),
        )
        conn.execute(sa.insert(activations).values(**activation.__dict__))
        return activation

    def deployment(self, name: str) -> Deployment | None:
        with self._store.read() as conn:
            row = conn.execute(sa.select(deployments).where(deployments.c.name == name))
            found = row.mappings().one_or_none()
        return None if found is None else Deployment(**found)

    def active_version(self, name: str) -> DefinitionVersion | None:
        """The version deployment ``name`` currently points at, or None if never activated."""
        with self._store.read() as conn:
            return self._versions.active(conn, name)

    def active_version_in(
        self, conn: sa.Connection, name: str, read: Mapping[str, str | None] | None = None
    ) -> DefinitionVersion | None:
        """:meth:`active_version` read in the caller's transaction (admission checks it);
        ``read``: active digests by deployment name that the transaction already read."""
        if read is not None and name in read:
            digest = read[name]
            return None if digest is None else self._versions.get(conn, digest)
        return self._versions.active(conn, name)

    def history(self, name: str) -> tuple[Activation, ...]:
        """Every activation of ``name``, oldest first."""
        with self._store.read() as conn:
            return self.history_in(conn, name)

    def history_in(self, conn: sa.Connection, name: str) -> tuple[Activation, ...]:
        """:meth:`history` read in the caller's transaction."""
        rows = conn.execute(
            sa.select(activations)
            .where(activations.c.name == name)
            .order_by(activations.c.at, activations.c.id)
        ).mappings()
        return tuple(Activation.from_row(row) for row in rows)

    # -- what governance plans against -------------------------------------------------

    def document(self, conn: sa.Connection, digest: str) -> tuple[str, dict[str, Any]] | None:
        """``("<kind>.<name>", document)`` of version ``digest``, or None if not stored."""
        row = conn.execute(
            sa.select(versions.c.kind, versions.c.name, versions.c.document).where(
                versions.c.digest == digest
            )
        ).one_or_none()
        if row is None:
            return None
        return f"{row.kind}.{row.name}", json.loads(row.document)

    def versions_named(self, conn: sa.Connection, kind: str, name: str) -> dict[str, Any]:
        """Digest → document of every stored version of ``kind.name`` (a migration's earlier
        versions)."""
        rows = conn.execute(
            sa.select(versions.c.digest, versions.c.document).where(
                versions.c.kind == kind, versions.c.name == name
            )
        )
        return {r.digest: json.loads(r.document) for r in rows}

    def kind_of(self, conn: sa.Connection, digest: str) -> str:
        """The kind of stored version ``digest``."""
        found = conn.execute(sa.select(versions.c.kind).where(versions.c.digest == digest))
        return str(found.scalar_one())

    def active_in(self, conn: sa.Connection, names: Iterable[str]) -> dict[str, tuple[str, str]]:
        """Deployment name → (active digest, kind) for those of ``names`` that are deployed."""
        rows = conn.execute(
            sa.select(deployments.c.name, deployments.c.active_digest, versions.c.kind)
            .join(versions, versions.c.digest == deployments.c.active_digest)
            .where(deployments.c.name.in_(sorted(set(names))))
        )
        return {row.name: (row.active_digest, row.kind) for row in rows}

    def active_documents(self, conn: sa.Connection, kind: str) -> list[tuple[str, dict[str, Any]]]:
        """(digest, document) of every active version of ``kind``."""
        rows = conn.execute(
            sa.select(versions.c.digest, versions.c.document)
            .join(deployments, deployments.c.active_digest == versions.c.digest)
            .where(versions.c.kind == kind)
        )
        return [(r.digest, json.loads(r.document)) for r in rows]

    def active_digests(self, conn: sa.Connection, kind: str) -> list[str]:
        """The active digests of ``kind``, sorted."""
        found = conn.execute(
            sa.select(deployments.c.active_digest)
            .join(versions, deployments.c.active_digest == versions.c.digest)
            .where(versions.c.kind == kind)
            .order_by(deployments.c.active_digest)
        ).scalars()
        return list(found)

    def deployments_in(self, conn: sa.Connection) -> list[tuple[Deployment, str]]:
        """Every deployment with the kind of its active version, by name."""
        rows = conn.execute(
            sa.select(deployments, versions.c.kind)
            .join(versions, versions.c.digest == deployments.c.active_digest)
            .order_by(deployments.c.name)
        ).mappings()
        return [
            (Deployment(row["name"], row["active_digest"], row["revision"]), row["kind"])
            for row in rows
        ]
