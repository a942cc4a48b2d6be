"""Errors the store raises on purpose, each a :class:`StoreError` with a stable code."""

from __future__ import annotations

from openseal.errors import StoreError


class NotFound(StoreError):
    code = "not_found"


class InvalidStatus(StoreError):
    """The entity's current status does not allow the operation."""

    code = "invalid_status"


class IdempotencyConflict(StoreError):
    """A request key, digest or activity id was reused for different content."""

    code = "idempotency_conflict"


class StaleRevision(StoreError):
    """A mutation named an ``expected_revision`` the entity is no longer at."""

    code = "stale_revision"


class StaleEpoch(StoreError):
    """A write was fenced off: another claim (or a cancel/pause) took the run over.

    The engine must stop working on the run at once; its work is not lost because everything
    accepted so far is in events and activities.
    """

    code = "stale_epoch"

    def __init__(self, message: str, *, run_id: str, claim_epoch: int, run_epoch: int) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.claim_epoch = claim_epoch
        self.run_epoch = run_epoch


class ArtifactCorrupt(StoreError):
    """An artefact's bytes no longer hash to its digest."""

    code = "artifact_corrupt"


__all__ = [
    "ArtifactCorrupt",
    "IdempotencyConflict",
    "InvalidStatus",
    "NotFound",
    "StaleEpoch",
    "StaleRevision",
    "StoreError",
]
