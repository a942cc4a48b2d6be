"""Change proposals in the runtime: the refusals governance raises, finding a proposal by id
prefix, and reading the reviewers' verdicts. The rows are the store's
(``store.change_proposals``)."""

from __future__ import annotations

from openseal.errors import RuntimeFailure
from openseal.runtime.id_prefix import handle_suffix
from openseal.runtime.store import Connection, NotFound, Review, StaleRevision, Store, Verdict

#: The actor of decisions the policy makes by itself (auto-approval of narrowing changes).
POLICY_ACTOR = "system:governance"


class GovernanceError(RuntimeFailure):
    """A governance operation was refused; ``code`` says why."""

    code = "governance_error"


class Conflict(StaleRevision, GovernanceError):
    """``expected_revision`` no longer matches: someone else changed the proposal first.

    The same refusal as :class:`StaleRevision` (``except StaleRevision`` catches both); it
    keeps the code ``conflict`` that the API has always answered for change proposals.
    """

    code = "conflict"


class StaleProposal(GovernanceError):
    """The active versions (or governance) changed since the proposal was diffed."""

    code = "stale_proposal"


class NotAllowed(GovernanceError):
    """The actor may not do this under the proposal's policy (``code`` is more specific)."""

    code = "not_allowed"


def resolve_id(store: Store, conn: Connection, reference: str) -> str:
    """A full proposal id from an id, its handle (:mod:`openseal.runtime.id_prefix`) or a
    unique prefix of at least six characters."""
    matches = store.change_proposals.matching_ids(conn, reference)
    suffix = handle_suffix(reference)
    if suffix is not None:
        ending = store.change_proposals.ids_ending_with(conn, suffix)
        matches = list(dict.fromkeys([*ending, *matches]))
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise GovernanceError(
            f"change proposal handle or id prefix {reference!r} is ambiguous; give the id",
            code="ambiguous_id",
        )
    raise NotFound(f"change proposal {reference} not found")


def current_verdicts(reviews_: tuple[Review, ...], round_: int) -> dict[str, Verdict]:
    """Each reviewer's latest verdict in ``round_`` (a later review replaces an earlier one)."""
    latest: dict[str, Verdict] = {}
    for review in reviews_:
        if review.round == round_:
            latest[review.reviewer] = review.verdict
    return latest
