"""Flow control's decisions: which limits a turn needs, a run waiting for capacity, waking it.

A turn needs a slot of each concurrency cap that applies to it (invariant 20):

- ``workflow:<name>`` — the run's workflow declares ``concurrency``;
- ``agent:<name>``, ``team:<name>`` — the agent or team acting in the turn's state (the state's
  ``agent`` or ``actor``, else the workflow's owner; a team role's turn is both its team's and
  its agent's) declares ``concurrency``, or an operator paused it (a cap of 0);
- ``scope:<name>`` — an operator set a cap on the run's scope (``openseal scopes limit``).

The slots are taken in the transaction that claims the turn (``store.capacity.take``, after
the run's row: invariant 15) and count while that claim holds the run; whatever ends the claim
gives them back in its own transaction. A turn over a limit moves its run to
``waiting_for_capacity`` instead, holding no lease, with what it waits for (:class:`WaitsFor`,
the shape every flow-control wait shares) in ``runs.waiting``. It is made ``queued`` again
when a slot of that key frees (:func:`wake_free`, called by the worker whose claim ended, and
by every worker's periodic :meth:`CapacityPoll.poll`, which also catches slots freed by a
takeover, an operator's cancel or a resume), higher priority first.

A skill's cap (``skill:<name>``) counts calls, not turns (:meth:`Admission.take_call`,
:meth:`Admission.take_tool_call`): an action's slot is taken in the transaction that marks it
dispatched and counts while its outcome is open (docs/decisions/0021); a read a turn calls
takes one where its budget is reserved and gives it back with its result. Its waiters are
woken by the same functions.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from openseal.contract import CapacityLimit, CapacityWait
from openseal.runtime.clock import new_id
from openseal.runtime.compiled import CompiledWorkflow, DefinitionError, version_key
from openseal.runtime.engine import quotas
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import FencedTx, Run, Store, Taking
from openseal.skills import Skill

#: how many waiters one look wakes for a key with no cap (a paused agent resumed)
WAKE_BATCH: Final = 200
#: how often a worker looks for waiters it can wake, and reads the operators' settings
POLL_SECONDS: Final = 1.0
#: claims whose slots a process remembers (a claim's later turns need not take them again)
HELD_KEPT: Final = 4096
#: how long after a process last knew of a waiting run its claims' ends look for runs to wake
#: (a claim refused here, or a periodic look that found some); past it, no run waited
#: anywhere at the last look, and a new waiter of another process is woken by its look
WAITERS_SEEN_FOR: Final = 3 * POLL_SECONDS


class SlotsRefused(Exception):
    """A claim's slots, sent with its write on the assumption that they were free
    (:meth:`Admission.claiming`), were not all free: ``key`` was full. Nothing of the claim may
    commit (its write went with the take); the run is claimed again with its slots counted
    first, and waits for ``key`` if it is still full."""

    def __init__(self, run_id: str, key: str) -> None:
        super().__init__(f"run {run_id}: {key} was full")
        self.run_id = run_id
        self.key = key


@dataclass(frozen=True)
class WaitsFor:
    """What a run in ``waiting_for_capacity`` waits for: the limit's ``kind``
    (``concurrency``, ``paused``; other flow-control limits add theirs), its key
    (``limit``), and what is known of it (``detail``: the cap and the slots in use)."""

    kind: str
    limit: str
    detail: Mapping[str, Any] = field(default_factory=dict)

    def waiting(self) -> CapacityWait:
        """The run's ``waiting`` record."""
        limit: CapacityLimit = {"kind": self.kind, "limit": self.limit}
        if "max" in self.detail:
            limit["max"] = int(self.detail["max"])
        if "in_use" in self.detail:
            limit["in_use"] = int(self.detail["in_use"])
        if "used" in self.detail:
            limit["used"] = int(self.detail["used"])
        if "resets_at" in self.detail:
            limit["resets_at"] = str(self.detail["resets_at"])
        if "needs" in self.detail:
            limit["needs"] = int(self.detail["needs"])
        return {"kind": "capacity", "waits_for": limit}

    @property
    def waiter_key(self) -> str:
        """The key the run waits under: the limit's, or for an action's spend over a quota,
        one per amount (:func:`~openseal.runtime.engine.quotas.waiter_key`)."""
        needs = self.detail.get("needs")
        return self.limit if needs is None else quotas.waiter_key(self.limit, int(needs))

    def describe(self) -> str:
        if self.kind == "paused":
            return f"{self.limit} is paused"
        if self.kind == "quota":
            used, cap = self.detail.get("used"), self.detail.get("max")
            needs = self.detail.get("needs")
            wants = "" if needs is None else f", {needs} more needed"
            return (
                f"{self.limit}: {used} of {cap} used{wants}, "
                f"resets at {self.detail.get('resets_at')}"
            )
        cap, in_use = self.detail.get("max"), self.detail.get("in_use")
        return f"{self.limit}: {in_use} of {cap} slots in use"


def resumed(waiting: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """What the turn a run is about to start must read as its ``waiting`` record: the record
    itself, or, when it is a capacity wait, the record that wait keeps (``resumes``)."""
    if waiting is None:
        return None
    if waiting.get("kind") == "capacity":
        kept = waiting.get("resumes")
        return None if kept is None else dict(kept)
    return dict(waiting)


def wait_for_capacity(store: Store, tx: FencedTx, waits_for: WaitsFor) -> Run:
    """Move the claimed run of ``tx`` to ``waiting_for_capacity`` (releasing its lease and any
    slot it holds) and register it as a waiter of ``waits_for.limit``, in ``tx``.

    The run's ``waiting`` record says what woke it (a delivered event, a decided approval, a
    timer due...); the turn it could not start is the one that reads it, so the capacity wait
    keeps it (``resumes``) and the wake-up gives it back (``store.capacity.wake``)."""
    run = tx.run()
    # a run this transaction creates is written first: the wait refers to its row
    conn = tx.row_conn if tx.row_stored else tx.conn
    store.capacity.wait(conn, run.id, waits_for.waiter_key, run.priority, tx.now)
    document = waits_for.waiting()
    kept = resumed(run.waiting)
    if kept is not None:
        document["resumes"] = kept
    return tx.update_run(
        status=RunStatus.WAITING_FOR_CAPACITY,
        waiting=document,
        wake_at=None,
        event="capacity.waiting",
    )


def _actor_keys(workflow: CompiledWorkflow, state: str) -> list[tuple[str, str, str]]:
    """``(key, document kind, name)`` of the agents and teams acting in ``state``."""
    config = workflow.state(state).config
    raw = config.get("agent") or config.get("actor")
    ref = str(raw or (workflow.document.get("spec") or {}).get("owner") or "")
    parts = ref.split(".")
    found: list[tuple[str, str, str]] = []
    if parts[0] == "team" and len(parts) >= 2:
        found.append((f"team:{parts[1]}", "team", parts[1]))
        if len(parts) == 4:
            team = workflow.dependency(f"team.{parts[1]}")
            role = ((team.get("spec") or {}).get("role") or {}).get(parts[3]) or {}
            agent = str(role.get("agent") or "")
            if agent.startswith("agent."):
                found.append((f"agent:{agent[6:]}", "agent", agent[6:]))
    elif parts[0] == "agent" and len(parts) == 2:
        found.append((f"agent:{parts[1]}", "agent", parts[1]))
    return found


def declared_caps(workflow: CompiledWorkflow, state: str) -> dict[str, int | None]:
    """The limit keys a turn in ``state`` counts against, each with the cap its definition
    declares (None: none declared, but an operator may pause it)."""
    caps: dict[str, int | None] = {}
    own = (workflow.document.get("spec") or {}).get("concurrency")
    if own is not None:
        caps[f"workflow:{workflow.name}"] = int(own)
    for key, kind, name in _actor_keys(workflow, state):
        try:
            document = workflow.dependency(f"{kind}.{name}")
        except DefinitionError:
            document = {}
        cap = (document.get("spec") or {}).get("concurrency")
        caps[key] = None if cap is None else int(cap)
    return caps


#: an active version that declares no cap on its key (the key then has none)
_UNCAPPED: Final = -1


def active_caps(store: Store, documents: dict[str, dict[str, Any]]) -> dict[str, int]:
    """The caps the active versions declare, by key: each deployed workflow's own
    (``workflow:<name>``) and those of the agents, teams and skills its active version depends on
    (:data:`_UNCAPPED` where the active version declares none). Where two active workflows
    depend on different versions of one agent or team (a rollout under way), the smaller cap
    holds. ``documents``: documents by digest already read (versions never change)."""
    found: dict[str, int] = {}

    def document(conn: Any, digest: str) -> dict[str, Any]:
        if digest not in documents:
            stored = store.definitions.document(conn, digest)
            documents[digest] = {} if stored is None else stored[1]
        return documents[digest]

    def declare(key: str, cap: Any) -> None:
        value = _UNCAPPED if cap is None else int(cap)
        if key not in found or (
            value != _UNCAPPED and (found[key] == _UNCAPPED or value < found[key])
        ):
            found[key] = value

    with store.read() as conn:
        for deployment, kind in store.definitions.deployments_in(conn):
            if kind != "workflow" or deployment.active_digest is None:
                continue
            workflow = document(conn, deployment.active_digest)
            spec = workflow.get("spec") or {}
            declare(f"workflow:{deployment.name}", spec.get("concurrency"))
            for dependency, pinned in (workflow.get("dependencies") or {}).items():
                kind, _, dependency_name = str(dependency).partition(".")
                if kind in ("agent", "team", "skill") and pinned:
                    spec = document(conn, version_key(str(pinned))).get("spec") or {}
                    declare(f"{kind}:{dependency_name}", spec.get("concurrency"))
    return found


def capped_skills(store: Store) -> list[str]:
    """The keys of the skills whose calls count against a cap now: those an active version
    caps (:func:`active_caps`), and those whose calls hold a slot still."""
    capped = {
        key
        for key, cap in active_caps(store, {}).items()
        if key.startswith("skill:") and cap != _UNCAPPED
    }
    with store.read() as conn:
        capped.update(store.capacity.call_keys(conn))
    return sorted(capped)


class Admission:
    """Takes the slots a turn needs, in the transaction that claims it (one per engine).

    A definition's cap is a cap on the workflow, agent or team as a resource, not on one of
    its versions: a run counts against the cap its key's *active* version declares
    (:func:`active_caps`, read again every :data:`POLL_SECONDS`), so a cap lowered by a new
    version holds for the runs pinned to older ones too; a key no active version names keeps
    the cap of the version the run is pinned to."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._lock = threading.Lock()
        #: by workflow digest and state: :func:`declared_caps` (documents never change)
        self._declared: dict[tuple[str, str], dict[str, int | None]] = {}
        #: by (run, epoch): the keys that claim took
        self._held: dict[tuple[str, int], frozenset[str]] = {}
        #: ``time.monotonic()`` when this process last knew that some run waited for capacity
        self.waiters_seen = float("-inf")
        #: ``time.monotonic()`` by key, when this process last found it full or saw a run
        #: waiting for it: for :data:`WAITERS_SEEN_FOR` its slots are counted before a claim
        #: goes on (:meth:`claiming`)
        self._bound: dict[str, float] = {}
        #: this thread's claim transaction and the takes sent with its write (:meth:`claiming`)
        self._local = threading.local()
        #: :func:`active_caps`, as last read (None: not yet)
        self._active: dict[str, int] | None = None
        self._documents: dict[str, dict[str, Any]] = {}

    def active(self) -> dict[str, int]:
        """:func:`active_caps` as last read (read now if never)."""
        return self._active if self._active is not None else self.refresh()

    def refresh(self) -> dict[str, int]:
        """Read the caps of the active versions afresh."""
        found = active_caps(self.store, self._documents)
        self._active = found
        return found

    def caps(self, workflow: CompiledWorkflow, state: str, scope: str) -> dict[str, int]:
        """The caps a turn in ``state`` of a run in ``scope`` needs a slot of now."""
        known = self._declared.get((workflow.digest, state))
        if known is None:
            known = declared_caps(workflow, state)
            with self._lock:
                self._declared[(workflow.digest, state)] = known
        active = self.active()
        settings = self.store.capacity.settings(max_age=float("inf"))
        caps: dict[str, int] = {}
        own = f"workflow:{workflow.name}"
        if own in active and own not in known:
            known = {own: None, **known}
        for key, declared in known.items():
            cap = declared
            if key in active:
                cap = None if active[key] == _UNCAPPED else active[key]
            setting = settings.get(key)
            if setting is not None and setting.paused:
                caps[key] = 0
            elif cap is not None:
                caps[key] = cap
        scope_setting = settings.get(f"scope:{scope}")
        if scope_setting is not None and scope_setting.max_slots is not None:
            caps[f"scope:{scope}"] = scope_setting.max_slots
        return caps

    def admit(self, tx: FencedTx, run: Run, workflow: CompiledWorkflow, state: str) -> bool:
        """Take the slots a turn of ``run`` in ``state`` needs (those its claim holds already
        are not taken again); False when a limit is full: the run then waits for it (moved in
        ``tx``) and the turn does not start."""
        caps = self.caps(workflow, state, run.scope)
        claim = tx.claim
        held = self._held.get((claim.run_id, claim.epoch), frozenset())
        missing = {key: cap for key, cap in caps.items() if key not in held}
        taken: dict[str, Any] = {"limits": sorted(missing), "epoch": claim.epoch}
        if missing and not self._sent_with_claim(tx, missing):
            conn = tx.row_conn if tx.row_stored else tx.conn  # a run created here: written first
            now = self.store.now()
            full = self.store.capacity.take(conn, claim.run_id, claim.epoch, missing, now)
            if full is not None:
                kind = "paused" if full.max_slots == 0 else "concurrency"
                detail = {} if kind == "paused" else {"max": full.max_slots, "in_use": full.in_use}
                wait_for_capacity(self.store, tx, WaitsFor(kind, full.key, detail))
                self.waiters_seen = self._bound[full.key] = time.monotonic()
                return False
            # when the slots were counted: after the keys' locks, so after the end of any
            # claim whose slot this one may reuse (what a check of the events relies on)
            taken["taken_at"] = time.time()
        if run.current_state is None and quotas.of_scope(self.store, run.scope):
            over = quotas.admit(self.store, tx, run, self.store.now())
            if over is not None:  # the slots just taken count for nothing once it waits
                wait_for_capacity(self.store, tx, WaitsFor("quota", over.quota.key, over.detail()))
                self.waiters_seen = time.monotonic()
                return False
        if not missing:
            return True
        # slots sent with the claim's write are counted by a statement that runs no later than
        # the one writing this event: the server's clock then is as late as the count
        tx.append_event(
            "capacity.slot_taken", taken, stamp=None if "taken_at" in taken else "taken_at"
        )
        with self._lock:
            if len(self._held) >= HELD_KEPT:
                del self._held[next(iter(self._held))]
            self._held[(claim.run_id, claim.epoch)] = held | frozenset(missing)
        return True

    def _sent_with_claim(self, tx: FencedTx, missing: Mapping[str, int]) -> bool:
        """Send the take of ``missing`` with the claim's write, assumed free (checked by
        :meth:`claiming`): when ``tx`` is this thread's claim transaction, on PostgreSQL (on
        SQLite the count costs no round trip), and no key is paused or was found full lately.
        Whether it was sent."""
        claiming = getattr(self._local, "claim", None)
        if (
            claiming is None
            or claiming.tx is not tx
            or claiming.count_first
            or self.store.dialect != "postgresql"
        ):
            return False
        lately = time.monotonic() - WAITERS_SEEN_FOR
        bound = self._bound
        if any(cap <= 0 or bound.get(key, lately) > lately for key, cap in missing.items()):
            return False
        claim = tx.claim
        now = self.store.now()
        claiming.takings.append(
            self.store.capacity.take_with_flush(tx, claim.run_id, claim.epoch, missing, now)
        )
        return True

    def claiming(self, tx: FencedTx, *, count_first: bool = False) -> _Claiming:
        """A block that saves the first turns of a claim in ``tx``, the claim's own transaction:
        on PostgreSQL the slots they take are sent with the claim's write, assumed free, so no
        round trip waits for the count (:meth:`Capacity.take_with_flush`), unless
        ``count_first``. Once the block is done, the write is sent, and a key whose slot was
        not free after all raises :class:`SlotsRefused`: the caller rolls the claim back and
        claims the run again, and this time the key's slots are counted first (for
        :data:`WAITERS_SEEN_FOR`). A block that raises (its claim is rolled back) leaves no
        slot remembered as held by the claim: the claim made again in its place has its epoch."""
        return _Claiming(self, tx, count_first)

    def _confirm(self, tx: FencedTx, takings: list[Taking]) -> None:
        """Send ``tx``'s write, which carries ``takings``; :class:`SlotsRefused` when a key was
        full."""
        tx.flush()
        refused = [key for taking in takings if (key := taking.refused()) is not None]
        if not refused:
            return
        self._undone(tx, takings)
        with self._lock:
            self._bound.update(dict.fromkeys(refused, time.monotonic()))
        raise SlotsRefused(tx.claim.run_id, refused[0])

    def _undone(self, tx: FencedTx, takings: list[Taking]) -> None:
        """The claim of ``tx`` is rolled back, with ``takings``: it holds no slot."""
        claim = tx.claim
        with self._lock:
            self._held.pop((claim.run_id, claim.epoch), None)
        for taking in takings:
            self.store.capacity.rolled_back(taking)

    def bound(self, keys: Iterable[str]) -> None:
        """Runs wait for ``keys``: their slots are counted before a claim goes on, for a while."""
        now = time.monotonic()
        with self._lock:
            self._bound.update(dict.fromkeys(keys, now))

    def skill_cap(self, skill: str, declared: int | None) -> int | None:
        """The cap on calls in flight to ``skill`` now: its active version's, else
        ``declared`` (the version a run pinned); None: none."""
        active = self.active().get(f"skill:{skill}")
        if active is None:
            return declared
        return None if active == _UNCAPPED else active

    def caps_skill(self, skill: str, spec: Skill) -> bool:
        """Whether a call of ``skill`` (``spec``: the version a run pinned) takes a slot."""
        return self.skill_cap(skill, spec.concurrency) is not None

    def take_call(self, tx: FencedTx, skill: str, declared: int | None, action_id: str) -> bool:
        """Take a slot of skill ``skill``'s cap for ``action_id``, in ``tx``, the transaction
        about to mark it ``dispatched``; False when the cap is full: the run then waits for it
        (moved in ``tx``) and the action stays ``admitted``. ``declared``: the cap of the
        version the run pinned, which the skill's active version's overrides (as for the
        other caps, see :class:`Admission`); a skill with neither takes nothing.

        The slot is the action's, not the claim's: it is given back by whatever settles the
        action (``store.capacity.take_call``). The claim remembers the key so that its end
        wakes runs waiting for the skill (its action has settled by then, or will be
        announced by the periodic look)."""
        full = self._take_call(tx, skill, declared, action_id, None)
        if full is None:
            return True
        wait_for_capacity(self.store, tx, full)
        return False

    def take_tool_call(self, tx: FencedTx, skill: str, declared: int | None) -> str | WaitsFor:
        """Take a slot of skill ``skill``'s cap for a read a turn is about to call, in ``tx``,
        the transaction that reserves the call: the call's id (its slot, held by the claim,
        given back by :meth:`give_back_tool_call` with the call's result; "" when the skill has
        no cap), or, when the cap is full, what the run is to wait for (nothing taken)."""
        call_id = new_id()
        full = self._take_call(tx, skill, declared, call_id, tx.claim.epoch)
        if full is not None:
            return full
        return call_id if self.skill_cap(skill, declared) is not None else ""

    def give_back_tool_call(self, tx: FencedTx, skill: str, call_id: str) -> None:
        """The read ``call_id`` took a slot for is over (its result recorded, or not sent)."""
        if call_id:
            self.store.capacity.give_back_call(tx.conn, f"skill:{skill}", call_id)

    def _take_call(
        self, tx: FencedTx, skill: str, declared: int | None, holder: str, epoch: int | None
    ) -> WaitsFor | None:
        """Take a slot of ``skill``'s cap (if it has one) for ``holder``; what to wait for when
        it is full."""
        key = f"skill:{skill}"
        cap = self.skill_cap(skill, declared)
        if cap is None:
            return None
        claim = tx.claim
        conn = tx.row_conn if tx.row_stored else tx.conn
        full = self.store.capacity.take_call(
            conn, key, cap, action_id=holder, run_id=claim.run_id, now=self.store.now(),
            epoch=epoch,
        )  # fmt: skip
        if full is not None:
            self.waiters_seen = time.monotonic()
            return WaitsFor("concurrency", key, {"max": full.max_slots, "in_use": full.in_use})
        holder_field = "action_id" if epoch is None else "call_id"
        tx.append_event(
            "capacity.slot_taken",
            {"limits": [key], holder_field: holder, "epoch": claim.epoch,
             "taken_at": time.time()},
        )  # fmt: skip
        with self._lock:
            held = self._held.get((claim.run_id, claim.epoch), frozenset())
            if len(self._held) >= HELD_KEPT and (claim.run_id, claim.epoch) not in self._held:
                del self._held[next(iter(self._held))]
            self._held[(claim.run_id, claim.epoch)] = held | {key}
        return None

    def release(self, run_id: str, epoch: int) -> frozenset[str]:
        """Forget the keys claim ``(run_id, epoch)`` took (it has ended); returns them when runs
        may wait for them (:data:`WAITERS_SEEN_FOR`), else none."""
        with self._lock:
            keys = self._held.pop((run_id, epoch), frozenset())
        if time.monotonic() - self.waiters_seen > WAITERS_SEEN_FOR:
            return frozenset()
        return keys


class _Claiming:
    """:meth:`Admission.claiming`'s block (a class, not a generator: it is entered on every
    claim, caps or none, and costs a third of the Python calls)."""

    __slots__ = ("admission", "count_first", "takings", "tx")

    def __init__(self, admission: Admission, tx: FencedTx, count_first: bool) -> None:
        self.admission = admission
        self.tx = tx
        self.count_first = count_first
        self.takings: list[Taking] = []

    def __enter__(self) -> None:
        self.admission._local.claim = self

    def __exit__(self, kind: type[BaseException] | None, *_rest: object) -> None:
        self.admission._local.claim = None
        if kind is not None:
            self.admission._undone(self.tx, self.takings)
        elif self.takings:
            self.admission._confirm(self.tx, self.takings)


def effective_cap(
    store: Store, key: str, recorded: Mapping[str, int], active: Mapping[str, int] | None = None
) -> int | None:
    """A key's cap as a waker counts it: 0 while paused, an operator's cap, the cap its active
    version declares (``active``: :func:`active_caps`), else the cap its last taker recorded;
    None: no cap (wake a batch)."""
    setting = store.capacity.settings(max_age=float("inf")).get(key)
    if setting is not None and setting.paused:
        return 0
    if setting is not None and setting.max_slots is not None:
        return setting.max_slots
    if active is not None and key in active:
        return None if active[key] == _UNCAPPED else active[key]
    cap = recorded.get(key)
    return cap or None  # 0: its last taker found it paused, and it is not paused now


def wake_free(store: Store, keys: Iterable[str], active: Mapping[str, int] | None = None) -> int:
    """Wake, for each key, as many of its waiters as it has free slots, higher priority first;
    returns how many runs were woken. A woken run is ``queued``: its claim takes the slot (or
    waits again if another claim took it first). Each run is woken in a transaction of its
    own, so no two runs are ever locked together here (invariant 15)."""
    wanted = sorted(set(keys))
    if not wanted:
        return 0
    woken = 0
    for key in [k for k in wanted if k.startswith("quota:")]:
        left = quotas.room(store, key, store.now())
        if left != 0:
            woken += wake_waiters(store, key, WAKE_BATCH if left < 0 else left)
    wanted = [k for k in wanted if not k.startswith("quota:")]
    if not wanted:
        return woken
    with store.read() as conn:
        recorded = store.capacity.caps(conn, wanted)
        in_use = store.capacity.in_use(conn, wanted)
    for key in wanted:
        cap = effective_cap(store, key, recorded, active)
        free = WAKE_BATCH if cap is None else cap - in_use[key]
        if free > 0:
            woken += wake_waiters(store, key, free)
    return woken


def wake_waiters(store: Store, key: str, free: int) -> int:
    """Wake up to ``free`` waiters of ``key``, in order; a waiter that no longer waits (it was
    canceled or paused meanwhile) loses its place and takes no slot. For any flow-control
    limit whose waiters :func:`wait_for_capacity` registered under ``key`` (a quota, a rate):
    its owner decides how many may go on."""
    woken = 0
    while woken < free:
        with store.read() as conn:
            found = store.capacity.waiters(conn, key, free - woken)
        if not found:
            break
        for run_id in found:
            # alone, even in a worker whose threads share their commits: the batch may hold
            # a key's lock another thread's claim took, and a claim waiting for that lock may
            # hold this run's row (invariant 15: the run before the key)
            with store.write_alone() as conn:
                woken += store.capacity.wake(conn, run_id, key, store.now())
    return woken


class CapacityPoll:
    """Every :data:`POLL_SECONDS`, one of an engine's threads reads the operators' settings
    afresh, wakes waiters whose limits have free slots (what no claim's end announced), and
    writes the rate limits' corrections its process owes (``store.rate_limits.settle``)."""

    def __init__(self, store: Store, admission: Admission) -> None:
        self.store = store
        self.admission = admission
        self._lock = threading.Lock()
        self._next = 0.0

    def poll(self) -> int:
        now = time.monotonic()
        with self._lock:
            if now < self._next:
                return 0
            self._next = now + POLL_SECONDS
        self.store.capacity.settings(max_age=0)
        self.admission.refresh()
        self.store.rate_limits.settle()
        with self.store.read() as conn:
            keys = self.store.capacity.waiting_keys(conn)
        if keys:
            self.admission.waiters_seen = time.monotonic()
            self.admission.bound(keys)
        return wake_free(self.store, keys, self.admission.active())
