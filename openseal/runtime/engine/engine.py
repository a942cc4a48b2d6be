"""The persistent engine: claim a run, keep its lease alive, execute its turns.

Embedding and tests use it directly::

    engine = Engine(store, fixed(ScriptedProvider.from_file(Path("responses.yaml"))))
    engine.run_until_idle()

``step()`` claims one runnable run and executes turns until the run waits, ends, needs
attention, or ``max_turns_per_claim`` is reached (then the lease is released so other runs get
a turn). A heartbeat thread extends the lease every third of it; when the claim is lost
(takeover after expiry, pause, cancel) the turn is dropped: the next fenced write raises
``StaleEpoch`` and nothing partial is kept beyond recorded activities.
"""

from __future__ import annotations

import logging
import os
import random
import socket
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from openseal.errors import ClaimLost, OpenSealError, RuntimeFailure
from openseal.observability import metrics
from openseal.runtime import telemetry
from openseal.runtime.caller import Caller
from openseal.runtime.engine.capacity import CapacityPoll, SlotsRefused, wake_free
from openseal.runtime.engine.cascade import Cascade
from openseal.runtime.engine.catalog import WorkflowCatalog
from openseal.runtime.engine.objectives import create_objective
from openseal.runtime.engine.outage import OutageLog
from openseal.runtime.engine.states.base import HeldForRecovery
from openseal.runtime.engine.tools import GatewayTools, ToolRunner
from openseal.runtime.engine.triggers import Scheduler
from openseal.runtime.engine.turns import Begun, TurnExecutor, TurnReport
from openseal.runtime.faults import (
    Hook,
    batch_hook_from_env,
    commit_hook_from_env,
    hook_from_env,
    trigger_hook_from_env,
)
from openseal.runtime.providers import ProviderFactory, default_provider_factory
from openseal.runtime.requests import StartObjective
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import (
    Claim,
    DatabaseFailure,
    DriverFailure,
    FencedTx,
    GroupCommit,
    InRecoveryMode,
    NewObjective,
    Store,
    UnwrittenRun,
    describe_fault,
    transient,
)
from openseal.skills.credentials import RuntimeContext

log = logging.getLogger("openseal.engine")

DEFAULT_LEASE_SECONDS = 30.0
#: runs whose writes share one commit at most, and how long a batch waits for more
#: (docs/decisions/0006); a batch of one thread alone commits at once
DEFAULT_BATCH_SIZE, DEFAULT_BATCH_WINDOW = 8, 0.002
#: the batch size by the store's dialect, where it is not :data:`DEFAULT_BATCH_SIZE`: on
#: PostgreSQL a batch's statements run one after the other on its one connection while the
#: server lets concurrent connections' commits share their WAL flushes, so smaller batches
#: on more connections pay: from 8 threads, batches of 2 did 1.2–1.4× the runs/s of
#: batches of 4 (docs/performance.md)
DIALECT_BATCH_SIZES = {"postgresql": 2}


def default_batch_size(store: Store) -> int:
    """How many runs' writes share one commit at most on ``store`` unless told otherwise."""
    return DIALECT_BATCH_SIZES.get(store.dialect, DEFAULT_BATCH_SIZE)


#: seconds after a lease's expiry that an idle thread waiting for it looks
LEASE_EXPIRY_MARGIN = 0.05

#: retries after ordinary faults: exponential from half a second, capped at a minute
RETRY_FIRST_SECONDS, RETRY_CAP_SECONDS = 0.5, 60.0


def backoff(n: int) -> float:
    """Seconds before the ``n``-th consecutive retry: capped exponential, full jitter on the
    upper half so runs that failed together do not come back together."""
    ceiling = min(RETRY_CAP_SECONDS, RETRY_FIRST_SECONDS * 2 ** max(0, n - 1))
    return float(ceiling * random.uniform(0.5, 1.0))


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def _in_recovery(what: str) -> RuntimeFailure:
    """The refusal of work while the store is in recovery mode (invariant 18)."""
    return RuntimeFailure(
        f"the store is in recovery mode after a restore: {what} could send an action "
        "before it is reconciled; see `openseal db recovery status`",
        code="recovery_mode",
    )


@dataclass
class StepReport:
    """One claim: the run, the turns executed under it, and how the claim ended."""

    run_id: str
    turns: list[TurnReport] = field(default_factory=list)
    status: RunStatus | None = None
    #: ``done`` (the run left running), ``released``, ``lost`` (fenced off or lease lost),
    #: ``retrying`` (an ordinary fault dropped the turn; the run sleeps until its retry),
    #: ``recovery`` (the store entered recovery mode before an action was sent: the run was
    #: given back, nothing sent)
    ending: str = "done"


class Heartbeats:
    """One thread per engine that extends the lease of every claim the engine holds.

    Each claim is renewed every third of the lease; ``hold(claim)`` returns the event set once
    that claim is gone (takeover after expiry, pause, cancel). One shared thread rather than
    one per claim: starting a thread costs more than a short turn.
    """

    def __init__(self, store: Store, lease_seconds: float, outage: OutageLog) -> None:
        self.store = store
        self.lease_seconds = lease_seconds
        self.outage = outage
        self._lock = threading.Lock()
        self._held: dict[tuple[str, int], tuple[Claim, threading.Event]] = {}
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def hold(self, claim: Claim) -> threading.Event:
        """Renew ``claim`` until :meth:`release`; the event is set once the claim is gone.

        A pair of calls rather than a context manager: it is taken once a claim, and a
        generator's context manager costs more than the rest of it."""
        lost = threading.Event()
        with self._lock:
            self._held[(claim.run_id, claim.epoch)] = (claim, lost)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._beat, name="openseal-heartbeat", daemon=True
                )
                self._thread.start()
        return lost

    def release(self, claim: Claim) -> None:
        with self._lock:
            self._held.pop((claim.run_id, claim.epoch), None)

    def _beat(self) -> None:
        while True:
            self._wake.wait(self.lease_seconds / 3)
            with self._lock:
                held = list(self._held.values())
                if not held:  # nothing to renew: the next hold() starts a new thread
                    self._thread = None
                    return
            failed: list[str] = []
            fault = ""
            for index, (claim, lost) in enumerate(held):
                if lost.is_set():
                    continue
                try:
                    alive = self.store.leases.heartbeat(claim, lease_seconds=self.lease_seconds)
                except Exception as exc:  # a transient database error: try again next beat
                    failed.append(claim.run_id)
                    fault = describe_fault(exc)
                    if transient(exc):  # the database is away: each of the others would wait
                        # out the same deadline in turn, and the beat would last that many
                        failed.extend(
                            c.run_id for c, gone in held[index + 1 :] if not gone.is_set()
                        )
                        break
                    continue
                if not alive:
                    lost.set()
                else:
                    metrics.HEARTBEATS.labels(worker=claim.worker_id).inc()
                    metrics.worker_seen(claim.worker_id)
            if failed:  # one line for the beat, however many runs are held
                runs = f"run {failed[0]}" if len(failed) == 1 else f"{len(failed)} runs"
                self.outage.fault(f"heartbeat for {runs} failed: {fault}")


class Engine:
    """Executes runs from ``store``. Thread-safe: a worker shares one Engine among threads."""

    def __init__(
        self,
        store: Store,
        provider_factory: ProviderFactory | None = None,
        *,
        worker_id: str | None = None,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        tools: ToolRunner | None = None,
        hook: Hook | None = None,
        max_turns_per_claim: int = 100,
        max_repairs: int = 2,
        on_turn: Callable[[TurnReport], None] | None = None,
        context: RuntimeContext | None = None,
        retry_delay: Callable[[int], float] | None = None,
        batch_size: int | None = None,
        batch_window: float = DEFAULT_BATCH_WINDOW,
    ) -> None:
        #: seconds before the ``n``-th consecutive retry of a run after an ordinary fault
        self.retry_delay = retry_delay or backoff
        #: credential sources and adapter configuration (``--context``); None means empty
        self.context = context
        self.store = store
        self.worker_id = worker_id or default_worker_id()
        self.lease_seconds = lease_seconds
        self.max_turns_per_claim = max_turns_per_claim
        self.on_turn = on_turn
        self.stopping = threading.Event()
        #: where the engine says what its loop waits for (recovery mode); a worker sets its log
        self.notice: Callable[[str], None] = log.warning
        self._notice_lock = threading.Lock()
        self._recovery_said = False
        #: database faults of this engine's threads, written once per beat while they last
        self.outage = OutageLog(log, lease_seconds / 3)
        self.heartbeats = Heartbeats(store, lease_seconds, self.outage)
        #: the threads stepping this engine share commits (``batch_size`` 1: each its own;
        #: None: :func:`default_batch_size`)
        if batch_size is None:
            batch_size = default_batch_size(store)
        self.group: GroupCommit | None = (
            GroupCommit(store, size=batch_size, window=batch_window, hook=batch_hook_from_env())
            if batch_size > 1
            else None
        )
        # A crash test's orchestration points are reached in the store's own transactions
        # (whichever fenced transaction ends a run), so the store calls that hook.
        commit_hook = commit_hook_from_env()
        if commit_hook is not None:
            store.leases.commit_hook = commit_hook
        #: fires schedule triggers that are due (one per engine, shared by its threads)
        self.triggers = Scheduler(store, before_commit=trigger_hook_from_env())
        #: cancels child runs that a cancel decided on and its process did not reach
        self.cascade = Cascade(store)
        self.executor = TurnExecutor(
            store,
            WorkflowCatalog(store),
            telemetry.observed_providers(
                provider_factory
                or default_provider_factory(credentials=context.credentials if context else None)
            ),
            tools or GatewayTools(),
            telemetry.observed_hook(hook or hook_from_env()),
            max_repairs=max_repairs,
            context=context,
        )
        #: wakes runs waiting for capacity that no claim's end woke, reads operators' settings
        self.capacity = CapacityPoll(store, self.executor.admission)

    def step(self, run_id: str | None = None) -> StepReport | None:
        """Claim one runnable run (``run_id`` only, when given) and work on it; None when
        nothing is runnable. Refused (``recovery_mode``) while the store is in recovery mode:
        a restored store claims nothing before its actions are reconciled (invariant 18). The
        statement that looks for the run reads the marker too."""
        return self._stepped(run_id, refuse=True)

    def _stepped(self, run_id: str | None, *, refuse: bool = False) -> StepReport | None:
        """:meth:`step`; with ``refuse``, refused in recovery mode, else for a caller that has
        looked at recovery mode itself."""
        try:
            if self.group is None:
                return self._step(run_id, refuse)
            with self.group.member():
                return self._step(run_id, refuse)
        except InRecoveryMode:
            raise _in_recovery("claiming a run") from None

    def _refuse_in_recovery(self, what: str) -> None:
        if self.store.recoveries.active() is not None:
            raise _in_recovery(what)

    def submit(
        self, request: StartObjective, caller: Caller
    ) -> tuple[NewObjective, StepReport | None]:
        """Start an objective (as ``service.create_objective``) and work on its run at once.

        The objective's creation, the claim of its run and the run's first turn (with the pure
        states after it) share one commit, which writes the run once, claimed; the turns after
        it are worked on as :meth:`step` does. The report is None when the run was not runnable
        (an idempotent request that returned an existing objective whose run is elsewhere) or
        there is none (a draft). Refused (``recovery_mode``), with nothing created, while the
        store is in recovery mode: the statement that looks the workflow up reads the marker
        too, so the check costs no statement of its own."""
        what = "starting and working on an objective"
        try:
            if self.group is None:
                created = self._create(request, caller, what)
                claimed = self._claim(created.run.id) if created.run else None
                return created, None if claimed is None else self._run_claim(*claimed)
            with self.group.member():
                with self.group.together():
                    # a run created here is written by its claim, in the same transaction
                    created = self._create(request, caller, what, write_run=False)
                    unwritten = created.unwritten
                    # the version the creation found active and that the store is not in
                    # recovery mode, read in this transaction: for an admission and the mark
                    # of a dispatch in the claim's (docs/decisions/0013), as a fence reads them
                    objective = created.objective
                    active = {objective.workflow_name: objective.workflow_digest}
                    claimed = (
                        self._claim(created.run.id, unwritten, active if unwritten else None)
                        if created.run
                        else None
                    )
                return created, None if claimed is None else self._run_claim(*claimed)
        except InRecoveryMode:
            raise _in_recovery(what) from None

    def _create(
        self, request: StartObjective, caller: Caller, what: str, *, write_run: bool = True
    ) -> NewObjective:
        """Create the objective :meth:`submit` works on; refused in recovery mode, and so is
        an earlier request's objective returned again (its run would be claimed)."""
        created = create_objective(
            self.store, request, caller, write_run=write_run, refuse_in_recovery=True
        )
        if not created.created and created.run is not None:
            self._refuse_in_recovery(what)  # a replay read no marker: one read, not per run
        return created

    def _step(self, run_id: str | None, refuse: bool = False) -> StepReport | None:
        claimed = self._claim(run_id, refuse=refuse)
        return None if claimed is None else self._run_claim(*claimed)

    def _claim(
        self,
        run_id: str | None = None,
        unwritten: UnwrittenRun | None = None,
        active: Mapping[str, str] | None = None,
        *,
        refuse: bool = False,
    ) -> tuple[Claim, Begun | None, list[TurnReport]] | None:
        """Claim a runnable run (``run_id``, or the one that changed longest ago) with its first
        turn saved; the turns that ended in that commit (pure states) come with it.
        ``unwritten``: the run, created and not written by the transaction the claim joins,
        which the claim writes (see ``Leases.claim_and_start``); ``active``: deployments'
        active digests that transaction read (``FencedTx.active_digests``), with the marker
        of recovery mode, which it found absent; ``refuse``: nothing is claimed in recovery mode
        (``InRecoveryMode``, read by the claim's statement)."""
        ended: list[TurnReport] = []
        admission = self.executor.admission
        #: the slots the turns take are counted before they go on (else sent with the write)
        counted = False

        def start(tx: FencedTx) -> Begun | None:
            ended.clear()
            if active is not None:  # read with the creation this claim joins
                tx.active_digests.update(active)
                tx.in_recovery = False
            with admission.claiming(tx, count_first=counted):
                return self.executor.begin(tx, chain=lambda: self._more(len(ended)), done=ended)

        def claim_and_start() -> tuple[Claim, Begun | None] | None:
            # The claim and the first turn's save commit together.
            return self.store.leases.claim_and_start(
                self.worker_id,
                start,
                lease_seconds=self.lease_seconds,
                run_id=run_id,
                unwritten=unwritten,
                refuse_in_recovery=refuse,
            )

        try:
            try:
                found = claim_and_start()
            except SlotsRefused as refused:
                # A cap had no room after all, and the claim was rolled back with the take its
                # write carried: claim again, the slots counted first (the run waits then).
                log.debug("%s; claiming again, counting the slots first", refused)
                counted = True
                found = claim_and_start()
        except (DriverFailure, InRecoveryMode):
            raise  # the database is unreachable or busy (the caller retries), or recovering
        except Exception as exc:
            # Beginning the turn failed unexpectedly (and took the claim with it, and the run's
            # row when the claim was to write it): claim alone, so the failure is met again in
            # a turn and the run is stopped, not retried forever.
            log.debug("claim with first turn failed (%s); claiming alone", exc)
            ended.clear()
            claim = self.store.leases.claim(
                self.worker_id, lease_seconds=self.lease_seconds, run_id=run_id,
                unwritten=unwritten,
            )  # fmt: skip
            found = None if claim is None else (claim, None)
        if found is None:
            return None
        return found[0], found[1], ended

    def _run_claim(self, claim: Claim, begun: Begun | None, ended: list[TurnReport]) -> StepReport:
        metrics.CLAIMS.inc()
        report = StepReport(claim.run_id)
        lost = self.heartbeats.hold(claim)
        try:
            self._work(claim, lost, report, begun, ended)
        finally:
            self.heartbeats.release(claim)
            self._give_back(claim)
        return report

    def _give_back(self, claim: Claim) -> None:
        """The claim has ended, and its slots with it: wake the runs waiting for them (a
        failure here is left to the workers' periodic look, :class:`CapacityPoll`)."""
        keys = self.executor.admission.release(claim.run_id, claim.epoch)
        if not keys:
            return
        try:
            if self.store.capacity.any_waiting(keys):
                wake_free(self.store, keys, self.executor.admission.active())
        except Exception as exc:
            log.info("run %s: waking runs waiting for capacity failed: %s", claim.run_id, exc)

    def _more(self, turns: int, lost: threading.Event | None = None) -> bool:
        """Whether a claim that has ended ``turns`` turns works on one more (and saves it with
        the last one)."""
        return (
            turns < self.max_turns_per_claim
            and not self.stopping.is_set()
            and not (lost is not None and lost.is_set())
        )

    def _work(
        self,
        claim: Claim,
        lost: threading.Event,
        report: StepReport,
        begun: Begun | None,
        ended: list[TurnReport],
    ) -> None:
        def more() -> bool:
            """Whether the next turn is worked on under this claim (and saved with this one):
            the turn being executed and those that ended with it count."""
            return self._more(len(report.turns) + 1 + len(ended), lost)

        self._record_all(report, ended)
        while True:
            if isinstance(begun, TurnReport):  # the turn ended as it began (budget, document)
                self._record(report, begun)
                return
            if begun is None and report.turns:  # the turns in the last commit were all pure
                if report.status != RunStatus.RUNNING:
                    return
                if not self._more(len(report.turns), lost):
                    break
            try:
                with telemetry.turn(claim) as span:
                    turn, begun = self.executor.execute(claim, lost, begun, chain=more, done=ended)
                    telemetry.turn_done(span, turn)
            except HeldForRecovery:
                # Recovery mode began while this claim worked: the action was not sent. The run
                # goes back to the queue; recovery looks its action up before anyone sends it.
                log.warning("run %s: the store is in recovery mode; given back", claim.run_id)
                report.ending = "recovery" if self.store.leases.release(claim) else "lost"
                return
            except ClaimLost as exc:  # StaleEpoch or LeaseLost
                # Another worker (or an operator) owns the run now; drop this turn.
                metrics.CLAIMS_LOST.labels(reason=exc.code).inc()
                log.info("run %s: claim lost, turn dropped (%s)", claim.run_id, exc)
                report.ending = "lost"
                return
            except Exception as exc:
                ended.clear()
                if transient(exc):
                    # An ordinary fault (invariant 13): the turn is dropped and retried later;
                    # the lease, the epoch and replay make that safe. No one is asked.
                    self.executor.hook("turn.faulted", claim)
                    report.ending = self._retry_later(claim, exc)
                    return
                # A bug or a malformed document must stop this run, not the worker thread.
                log.error(
                    "run %s: turn failed unexpectedly: %s", claim.run_id, describe_fault(exc),
                    exc_info=bool(os.environ.get("OPENSEAL_DEBUG")),
                )  # fmt: skip
                report.ending = self.executor.give_up(claim, describe_fault(exc))
                return
            self._record(report, turn)
            self._record_all(report, ended)
            if report.status != RunStatus.RUNNING:
                return
            if begun is None and not self._more(len(report.turns), lost):
                break
        report.ending = "released" if self.store.leases.release(claim) else "lost"

    def _retry_later(self, claim: Claim, exc: BaseException) -> str:
        reason = describe_fault(exc)
        try:
            retry_at = self.store.leases.release_for_retry(claim, reason, self.retry_delay)
        except Exception as again:  # the database is still away: the lease will expire
            self.outage.fault(
                f"run {claim.run_id}: {reason}; the turn is dropped, the lease expires in "
                f"{self.lease_seconds:g}s ({describe_fault(again)})"
            )
            return "lost"
        if retry_at is None:
            return "lost"
        log.warning(
            "run %s: %s; the turn is dropped and retried at %s",
            claim.run_id, reason, retry_at.isoformat(timespec="milliseconds"),
        )  # fmt: skip
        return "retrying"

    def _record_all(self, report: StepReport, ended: list[TurnReport]) -> None:
        """Record the turns that ended inside the last commit (pure states), in order."""
        for turn in ended:
            self._record(report, turn)
        ended.clear()

    def _record(self, report: StepReport, turn: TurnReport) -> None:
        report.turns.append(turn)
        report.status = turn.status
        if self.on_turn is not None:
            self.on_turn(turn)

    def run_until_idle(self, *, max_steps: int = 10_000) -> list[StepReport]:
        """Step until no run is runnable now (sleeping runs due later are not waited for)."""
        reports: list[StepReport] = []
        for n in range(max_steps):
            if self.stopping.is_set():
                break
            # the first claim's statement reads the marker of recovery mode: refused then
            report = self._stepped(None, refuse=n == 0)
            if report is None:
                break
            reports.append(report)
            if report.ending == "recovery":
                break
        self.store.rate_limits.settle()  # idle: what the calls owe their limits is written
        return reports

    def run_forever(self, *, poll_interval: float = 1.0, idle_exit: bool = False) -> None:
        """Step until :attr:`stopping` is set, sleeping on the store's wake-up when idle.

        A wake-up that names a run is answered by claiming that run alone: if it is gone (another
        worker took it), the thread sleeps on instead of searching (docs/decisions/0008)."""
        hint: str | None = None
        mark: int | None = None
        recovery_checked = False
        #: the thread waited since its last claim: that claim's statement reads the marker of
        #: recovery mode (a recovery begun meanwhile is seen at no statement of its own)
        woken = False
        while not self.stopping.is_set():
            metrics.worker_seen(self.worker_id)
            if mark is None:  # taken before looking: work committed after it ends the wait
                mark = self.store.work_mark()
            run_id, hint = hint, None
            refuse, woken = woken, False
            try:
                if not recovery_checked and not self._recovered(poll_interval, idle_exit):
                    return
                recovery_checked = True
                self.triggers.poll()
                self.cascade.poll()
                self.capacity.poll()
                report = self._stepped(run_id, refuse=refuse)
            except OpenSealError as exc:  # e.g. the database is unreachable for a while
                if refuse and exc.code == "recovery_mode":  # wait for it, saying so once
                    recovery_checked, mark = False, None
                    continue
                self.outage.fault(f"worker {self.worker_id}: {exc}; retrying")
                mark = None
                self.stopping.wait(poll_interval)
                continue
            except ClaimLost as exc:  # not an Exception: lost runs are dropped, not fatal
                log.info("worker %s: %s; going on", self.worker_id, exc)
                mark = None
                continue
            except DatabaseFailure as exc:
                self.outage.fault(
                    f"worker {self.worker_id}: database error {describe_fault(exc)}; retrying"
                )
                mark = None
                self.stopping.wait(poll_interval)
                continue
            except Exception as exc:  # never let one bad claim end the worker thread quietly
                log.error(
                    "worker %s: %s; retrying", self.worker_id, describe_fault(exc),
                    exc_info=bool(os.environ.get("OPENSEAL_DEBUG")),
                )  # fmt: skip
                mark = None
                self.stopping.wait(poll_interval)
                continue
            self.outage.recovered()
            if report is not None:
                mark = None  # look again, from a fresh mark
                if report.ending == "recovery":  # wait for it before claiming again
                    recovery_checked = False
                continue
            if idle_exit:
                return
            try:
                wake = self.store.wait_for_work(self._idle_wait(poll_interval), since=mark)
            except Exception as exc:  # a broken wake-up channel must not end the worker
                self.outage.fault(f"worker {self.worker_id}: waiting for work failed: {exc}")
                mark = None
                self.stopping.wait(poll_interval)
                continue
            # The next look (the named run, or any) counts wake-ups from the wake's mark on.
            hint, mark = wake.run_id, wake.mark
            woken = True  # idle: a recovery started meanwhile is seen by the next claim

    def _recovered(self, poll_interval: float, idle_exit: bool) -> bool:
        """Wait while the store is in recovery mode (invariant 18: a restored store claims no
        run before its actions are reconciled), saying so once; False when stopped meanwhile
        (or at once with ``idle_exit``: nothing may be claimed)."""
        while self.store.recoveries.active() is not None:
            metrics.worker_seen(self.worker_id)  # alive, and waiting on purpose
            with self._notice_lock:
                said, self._recovery_said = self._recovery_said, True
            if not said:
                self.notice(
                    "the store is in recovery mode after a restore: claiming nothing until "
                    "`openseal db recovery finish`"
                )
            if idle_exit or self.stopping.wait(max(poll_interval, 0.5)):
                return False
        with self._notice_lock:
            said, self._recovery_said = self._recovery_said, False
        if said:
            self.notice("recovery mode has ended: claiming runs")
        return True

    def _idle_wait(self, poll_interval: float) -> float:
        """How long an idle thread sleeps unless woken: until the earliest lease held now
        expires (its holder may have died: nobody announces that), and for no longer than a
        lease, so a lease taken meanwhile is found in time; within the poll interval."""
        bound = min(poll_interval, self.lease_seconds)
        expiry = self.store.leases.next_expiry()
        if expiry is not None:
            # the claim takes a lease strictly past its expiry: a moment after it
            until = (expiry - self.store.now()).total_seconds() + LEASE_EXPIRY_MARGIN
            bound = min(bound, max(LEASE_EXPIRY_MARGIN, until))
        return bound

    def stop(self) -> None:
        """Finish the current turns, release the leases, then return from the loops."""
        self.stopping.set()
        self.store.interrupt_waits()  # idle threads stop now, not at the end of their wait
