"""Rate limits shared by every worker: a model profile's requests and tokens, a skill's calls.

The limits are declared where the endpoint is (a model profile's or a skill's ``rate_limit``)
and kept in the store's buckets (:mod:`openseal.runtime.store.repos.rate_limits`), so every
worker process on every host draws on the same ones. A call takes its units before it is
sent, and only then: a recorded answer that is replayed takes nothing. A model call takes them
in the transaction that reserves its budget where the store allows it (SQLite, and PostgreSQL
outside a batch of group commit: :func:`take_with_reservation`), else in a short transaction
of its own just before it is sent.

A model call waits for its turn inside the turn when that comes within
:data:`~openseal.runtime.providers.retry.IN_TURN_WAIT`; otherwise it takes nothing and fails
as :class:`~openseal.runtime.providers.base.ModelUnavailable` (``over_rate_limit``), which the
turn turns into a sleeping run, holding no worker, until the limit has room. An endpoint that
answers ``429`` (or says with ``x-ratelimit-remaining-*: 0`` that it has no room left) holds
the profile's bucket back for every worker until the wait it asked for has passed.

A skill call (a read in a turn, an action's dispatch) takes its place the same way: within a
turn's wait it waits in the worker, further off it takes nothing and its run sleeps
(:class:`SkillOverRateLimit`). An action of a limited skill takes its place before it is
marked dispatched, so a run that sleeps for it leaves the action admitted, not sent; one that
then finds its skill's concurrency cap full gives its place back (:func:`give_back_place`).
A read in a turn takes its slot of the cap first, and its place only then.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from openseal.runtime.providers import retry
from openseal.runtime.providers.base import ModelUnavailable
from openseal.runtime.store import Bucket, Connection, Store, Taken
from openseal.skills import Skill

#: how long an endpoint that answered ``429`` without saying how long to wait is left alone
DEFAULT_HOLD_BACK = 1.0


@dataclass(frozen=True)
class ModelLimits:
    """The buckets of one model profile: its requests (always: it holds a ``429`` back even
    when no rate is declared) and, when declared, its tokens."""

    name: str
    requests: Bucket
    tokens: Bucket | None

    @classmethod
    def of(cls, model: Mapping[str, Any]) -> ModelLimits:
        """The limits of a compiled model profile (``{"name", ..., "rate_limit"}``)."""
        name = str(model.get("name") or model.get("model") or "model")
        limit = model.get("rate_limit") or {}
        per = float(limit.get("per") or 0)
        requests, tokens = limit.get("requests"), limit.get("tokens")
        key = f"model:{name}"
        request_bucket = (
            Bucket(key, per / requests, float(limit.get("burst") or requests))
            if requests
            else Bucket(key)
        )
        token_bucket = Bucket(f"{key}:tokens", per / tokens, float(tokens)) if tokens else None
        return cls(name, request_bucket, token_bucket)


def skill_bucket(name: str, spec: Skill) -> Bucket | None:
    """The bucket of a skill that declares a ``rate_limit``; None otherwise."""
    limit = spec.rate_limit
    if limit is None:
        return None
    return Bucket(f"skill:{name}", limit.per / limit.requests, float(limit.burst))


class OverRateLimit(ModelUnavailable):
    """A model call that the profile's shared limit lets go only after more than a turn may
    wait: nothing was sent (nor taken)."""


def _wanted(limits: ModelLimits, tokens: int) -> list[tuple[Bucket, float]]:
    wanted = [(limits.requests, 1.0)]
    if limits.tokens is not None:
        wanted.append((limits.tokens, float(tokens)))
    return wanted


def take_with_reservation(
    store: Store, limits: ModelLimits, tokens: int, conn: Connection
) -> Taken | None:
    """Take one request and ``tokens`` of ``limits`` in the transaction that reserves the
    call's budget (``conn``), where the store takes in it (``store.rate_limits.rides``: the
    place then costs no commit of its own, and is taken exactly when the call is reserved);
    None where it does not (PostgreSQL, in a batch of group commit): :func:`before_model_call`
    takes it then."""
    if not store.rate_limits.rides(conn):
        return None
    wanted = _wanted(limits, tokens)
    return store.rate_limits.take_all(wanted, within=retry.IN_TURN_WAIT, conn=conn)


def before_model_call(
    store: Store,
    limits: ModelLimits,
    tokens: int,
    lost: threading.Event,
    taken: Taken | None = None,
) -> None:
    """Take one request and ``tokens`` of ``limits`` (unless ``taken`` already, by
    :func:`take_with_reservation`), waiting (cut short when the claim is ``lost``) for their
    turn; :class:`OverRateLimit` when that is further off than a turn waits.

    A call that waited for its place looks again before it goes: when another worker's
    ``429`` held the endpoint back meanwhile, the place is void (it was given before the
    endpoint spoke) and the call takes a new one, behind the hold.
    """
    key = limits.requests.key
    wanted = _wanted(limits, tokens)
    while not lost.is_set():
        if taken is None:
            taken = store.rate_limits.take_all(wanted, within=retry.IN_TURN_WAIT)
        if not taken.taken:
            raise OverRateLimit(
                f"model profile {limits.name!r} is at its rate limit: the next call may go in "
                f"{taken.wait:.1f}s",
                code="over_rate_limit",
                retry_after=taken.wait,
            )
        if taken.wait <= 0:
            return
        lost.wait(taken.wait)
        # the place stands unless an endpoint held the key back again meanwhile (compared as
        # the hold's end, not as time left: the store's clock need not be this one)
        if store.rate_limits.held_until(key) == taken.held_until:
            return
        taken = None


def after_model_call(store: Store, limits: ModelLimits, taken: int, used: int | None) -> None:
    """Correct the tokens taken before the call by what it ``used`` (None: unknown, keep): with
    the profile's next take in this process, or within a second (``store.rate_limits.settle``,
    called by the worker's loop)."""
    if limits.tokens is not None and used is not None and used != taken:
        store.rate_limits.give_back_later(limits.tokens, taken - used)


def hold_back(store: Store, limits: ModelLimits, seconds: float | None) -> None:
    """The endpoint asked every caller to wait ``seconds`` (its ``Retry-After``, or the reset
    of a limit it reports used up)."""
    wait = DEFAULT_HOLD_BACK if seconds is None else min(seconds, retry.MAX_RETRY_AFTER)
    store.rate_limits.hold_back(limits.requests, wait)


class SkillOverRateLimit(Exception):
    """A skill call that the skill's shared limit lets go only after more than a turn may
    wait: nothing was sent (nor taken). The caller puts its run to sleep for ``wait``."""

    def __init__(self, skill: str, wait: float) -> None:
        super().__init__(
            f"skill {skill!r} is at its rate limit: the next call may go in {wait:.1f}s"
        )
        self.wait = wait


def before_skill_call(store: Store, bucket: Bucket | None, lost: threading.Event) -> None:
    """Take one call of a skill's shared limit and wait for its turn (cut short when the
    claim is ``lost``) when that comes within a turn's wait
    (:data:`~openseal.runtime.providers.retry.IN_TURN_WAIT`);
    :class:`SkillOverRateLimit` when it is further off: nothing is taken, and the run sleeps
    rather than hold its worker."""
    if bucket is None:
        return
    taken = store.rate_limits.take(bucket, within=retry.IN_TURN_WAIT)
    if not taken.taken:
        raise SkillOverRateLimit(bucket.key.removeprefix("skill:"), taken.wait)
    if taken.wait > 0:
        lost.wait(taken.wait)


def give_back_place(store: Store, bucket: Bucket | None) -> None:
    """Give back the place a skill call took (:func:`before_skill_call`) and did not use: the
    call found its skill's concurrency cap full and was not sent. A unit given back lets the
    next caller go one interval sooner, never more than the burst at once."""
    if bucket is not None:
        store.rate_limits.give_back(bucket, 1.0)
