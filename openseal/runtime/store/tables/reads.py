"""What a command that only lists runs needs of a store: the store itself has it, and so do the
reads without SQLAlchemy (:class:`~openseal.runtime.store.sqlite_reads.SQLiteReads`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from openseal.runtime.store.tables.listing import ListQuery
    from openseal.runtime.store.tables.records import DefinitionVersion, Run


class RunPages(Protocol):
    def newest(self, query: ListQuery, *, objective_id: str | None = None) -> tuple[Run, ...]:
        """One page of runs, newest first."""
        ...


class Versions(Protocol):
    def get(self, digest: str) -> DefinitionVersion:
        """The stored definition version ``digest`` (64 hex characters); NotFound if none."""
        ...


class Reads(Protocol):
    """``store.runs.newest`` and ``store.definitions.get``."""

    @property
    def runs(self) -> RunPages: ...

    @property
    def definitions(self) -> Versions: ...
