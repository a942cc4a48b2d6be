"""Replay of recorded procurement runs against change proposals, on SQLite and PostgreSQL:
verdicts checked against hand-written expectations, nothing called, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from openseal.runtime import service
from openseal.runtime.engine import states
from openseal.runtime.engine.catalog import WorkflowCatalog
from openseal.runtime.engine.engine import Engine
from openseal.runtime.engine.states.base import Advance
from openseal.runtime.providers import ScriptedProvider, fixed
from openseal.runtime.replay import Selection, check_runs, replay_proposal
from openseal.runtime.replay.drive import Trace
from openseal.runtime.replay.history import Mark
from openseal.runtime.replay.verdict import judge
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from openseal.runtime.store.tables import schema
from openseal.simulator.procurement import ProcurementSimulator
from tests.runtime.action_support import simulator_fixture  # noqa: F401
from tests.runtime.engine_support import compile_files, register
from tests.runtime.replay_support import (
    BUDGET,
    CONSTRAINT,
    MANY_DECISIONS,
    MANY_SPEND,
    Recorded,
    changed_example,
    file_change,
    many_quantity,
    record_many,
    record_runs,
    verdicts,
)
from tests.runtime.support import eventually

TIGHTER = "args.total <= 10000"


@pytest.fixture
def recorded(store: Store, simulator: ProcurementSimulator, tmp_path: Path) -> Recorded:
    return record_runs(store, simulator, tmp_path)


def test_own_versions_replay_the_same(recorded: Recorded) -> None:
    report = check_runs(recorded.store, Selection())
    assert report.clean and report.counts()["same"] == len(recorded.runs), report.render()


def test_a_tampered_activity_or_reinterpreting_logic_fails_the_check(
    recorded: Recorded, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, large = recorded.store, recorded.runs["large"].id
    research = sa.and_(
        schema.activities.c.run_id == large,
        schema.activities.c.activity_id == "research:1:model:1",
    )
    with store.write() as conn:
        result = dict(conn.execute(sa.select(schema.activities.c.result).where(research)).one()[0])
        result["output"] = {**result["output"], "unit_price": 2000.0}  # 20000 EUR: over budget
        conn.execute(sa.update(schema.activities).where(research).values(result=result))
    report = check_runs(store, Selection())
    assert not report.clean
    assert [(r.run_id, r.verdict.line()) for r in report.runs if r.verdict.verdict != "same"] == [
        (large, "diverges at check_budget: the decision's expressions choose over_budget "
         "(recorded: draft)"),
    ]  # fmt: skip

    # a release whose decision states leave otherwise reads every history differently
    monkeypatch.setitem(states.HANDLERS, "decision", lambda ctx: Advance("reinterpreted"))
    again = check_runs(store, Selection())
    assert again.counts()["diverges"] == 5
    assert {r.verdict.state for r in again.runs} == {"check_budget"}


def test_a_tighter_constraint_diverges_where_an_order_over_it_was_admitted(
    recorded: Recorded, tmp_path: Path
) -> None:
    store = recorded.store
    before = {run.id: (run.revision, run.last_event_seq) for run in recorded.runs.values()}
    folder = changed_example(tmp_path, "tighter", {"team.hcl": (CONSTRAINT, TIGHTER)})
    proposal = file_change(store, folder)

    report = replay_proposal(store, proposal.id, Selection()).to_json()

    denied = "the action of order would be denied: binding buyer_submits_orders: constraint 1"
    assert verdicts(report, recorded.runs) == {
        "small": ("same", "", ""),  # 5745 EUR fits the tighter limit
        "large": ("diverges", "submit", f"{denied} does not hold"),  # 11490 EUR does not
        "waiting": ("same", "", ""),  # not admitted yet: nothing differs so far
        "rejected": ("same", "", ""),
        "over": ("same", "", ""),
    }
    summary = report["summary"]
    assert (summary["runs"], summary["same"], summary["diverges"]) == (5, 4, 1)
    [group] = summary["groups"]
    assert (group["verdict"], group["state"], group["run_ids"]) == (
        "diverges", "submit", [recorded.runs["large"].id],
    )  # fmt: skip
    # replay reads only: no run moved, no event was appended
    after = {run.id: (run.revision, run.last_event_seq) for run in map(store.runs.get, before)}
    assert after == before


def test_a_changed_payload_diverges_where_it_is_drafted(recorded: Recorded, tmp_path: Path) -> None:
    destination = 'destination = "O4"'
    folder = changed_example(
        tmp_path, "payload", {"workflow.hcl": (destination, 'destination = "O5"')}
    )
    proposal = file_change(recorded.store, folder)

    report = replay_proposal(recorded.store, proposal.id, Selection()).to_json()

    drafted = {name: verdict for name, verdict in verdicts(report, recorded.runs).items()}
    assert drafted.pop("over") == ("same", "", "")  # over budget: never drafted an order
    assert {v[:2] for v in drafted.values()} == {("diverges", "draft")}
    assert all(v[2].startswith("the payload of order changes: ") for v in drafted.values())


def test_a_different_target_says_when_an_approval_or_action_comes_or_goes(
    recorded: Recorded,
) -> None:
    workflow = WorkflowCatalog(recorded.store).workflow(recorded.runs["large"].workflow_digest)
    kinds = {name: spec.kind for name, spec in workflow.states.items()}

    def why(state: str, recorded_to: str, replayed_to: str) -> str:
        before = Mark.of(state, "advanced", event="done", to=recorded_to)
        after = Mark.of(state, "advanced", event="done", to=replayed_to)
        return judge([before], Trace([after]), workflow, kinds).why

    assert why("draft", "submit", "review") == (
        "an approval is newly asked: the transition leads to review (recorded: submit)"
    )
    assert why("draft", "review", "submit") == (
        "the approval is no longer asked: the transition leads to submit (recorded: review)"
    )
    assert why("check_budget", "over_budget", "draft") == (
        "the decision's expressions choose draft (recorded: over_budget)"
    )
    assert why("review", "rejected", "submit") == (
        "an action is added: the transition leads to submit (recorded: rejected)"
    )


def test_a_changed_prompt_needs_new_model_input(recorded: Recorded, tmp_path: Path) -> None:
    goal = 'goal   = "Compare approved vendors for'
    folder = changed_example(
        tmp_path, "prompt", {"workflow.hcl": (goal, 'goal   = "Compare vendors for')}
    )
    proposal = file_change(recorded.store, folder)

    report = replay_proposal(recorded.store, proposal.id, Selection()).to_json()

    asks = "would ask for model call research:1:model:1 (a recorded request that differs)"
    expected = {name: ("needs_input", "research", asks) for name in recorded.runs}
    assert verdicts(report, recorded.runs) == expected


def test_a_stricter_decision_takes_another_branch(recorded: Recorded, tmp_path: Path) -> None:
    old = "state.research.output.unit_price * input.request.quantity <= input.request.budget"
    new = "state.research.output.unit_price * input.request.quantity <= 9000"
    folder = changed_example(tmp_path, "branch", {"workflow.hcl": (old, new)})
    proposal = file_change(recorded.store, folder)

    report = replay_proposal(recorded.store, proposal.id, Selection()).to_json()

    branch = "the decision's expressions choose over_budget (recorded: draft)"
    assert verdicts(report, recorded.runs) == {
        "small": ("same", "", ""),
        "large": ("diverges", "check_budget", branch),
        "waiting": ("diverges", "check_budget", branch),
        "rejected": ("diverges", "check_budget", branch),
        "over": ("same", "", ""),
    }


def test_the_same_proposal_and_runs_give_the_same_bytes(recorded: Recorded, tmp_path: Path) -> None:
    folder = changed_example(tmp_path, "tighter", {"team.hcl": (CONSTRAINT, TIGHTER)})
    proposal = file_change(recorded.store, folder)
    first = replay_proposal(recorded.store, proposal.id, Selection())
    second = replay_proposal(recorded.store, proposal.id, Selection())
    assert first.dumps() == second.dumps() and first.render() == second.render()
    assert first.dumps().encode() == second.dumps().encode()


def test_a_selection_narrows_the_runs(recorded: Recorded, tmp_path: Path) -> None:
    folder = changed_example(tmp_path, "tighter", {"team.hcl": (CONSTRAINT, TIGHTER)})
    proposal = file_change(recorded.store, folder)
    large = recorded.runs["large"].id
    named = replay_proposal(recorded.store, proposal.id, Selection(run_ids=(large,)))
    assert [r.run_id for r in named.runs] == [large]
    newest = replay_proposal(recorded.store, proposal.id, Selection(runs=2))
    assert [r.run_id for r in newest.runs] == sorted(r.id for r in recorded.runs.values())[-2:]


@pytest.mark.slow
def test_a_thousand_recorded_runs_against_a_tighter_constraint(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    runs = record_many(store, simulator, tmp_path, 1000)
    folder = changed_example(
        tmp_path, "tighter", {"team.hcl": (CONSTRAINT, TIGHTER)}, team_spend=MANY_SPEND
    )
    proposal = file_change(store, folder)

    report = replay_proposal(store, proposal.id, Selection(runs=1000))

    denied = (
        "the action of order would be denied: "
        "binding buyer_submits_orders: constraint 1 does not hold"
    )
    expected = {}
    for index, run in enumerate(runs):
        total = many_quantity(index) * 1149
        admitted = MANY_DECISIONS[index % 4] == "approve" and total <= BUDGET
        # written out: an order admitted under the old limit and over the new one diverges
        over_new_limit = total > 10000
        verdict = (
            ("diverges", "submit", denied) if admitted and over_new_limit else ("same", "", "")
        )
        expected[run.id] = verdict
    got = {r.run_id: (r.verdict.verdict, r.verdict.state, r.verdict.why) for r in report.runs}
    assert got == expected
    counts = report.counts()
    # 9 to 13 laptops (5 of the 15 quantities) approved (2 of the 4 decisions): 10 runs in
    # each 60, 166 of the first 1000
    assert (counts["same"], counts["diverges"]) == (834, 166), counts
    assert [(g["state"], g["runs"]) for g in report.groups()] == [("submit", 166)]
    # and each run's own version replays it the same
    assert check_runs(store, Selection(runs=1000)).counts()["same"] == 1000


SHIPPING = Path(__file__).parents[1] / "replay_defs" / "shipping.hcl"


def test_waits_replay_from_their_recorded_wake_ups_and_deliveries(
    store: Store, tmp_path: Path
) -> None:
    register(store, compile_files(SHIPPING))
    runs = {
        name: service.create_objective(
            store, service.StartObjective("shipping", {"order": order, "urgent": urgent}),
            service.CLI,
        ).run
        for name, order, urgent in (
            ("urgent", "o-1", True), ("napped", "o-2", False), ("waiting", "o-3", True),
        )
    }  # fmt: skip
    engine = Engine(store, fixed(ScriptedProvider({})), worker_id="test-worker")
    engine.run_until_idle()
    store.inbound_events.deliver("shipment", {"order": "o-1"}, {"complete": True})

    def napped_and_waiting() -> bool:
        engine.run_until_idle()
        return store.runs.get(runs["napped"].id).status == RunStatus.WAITING_FOR_EVENT

    eventually(napped_and_waiting)
    store.inbound_events.deliver("shipment", {"order": "o-2"}, {"complete": False})
    engine.run_until_idle()
    statuses = {name: store.runs.get(run.id).status for name, run in runs.items()}
    assert statuses == {
        "urgent": RunStatus.COMPLETED,
        "napped": RunStatus.FAILED,
        "waiting": RunStatus.WAITING_FOR_EVENT,
    }
    assert check_runs(store, Selection()).counts()["same"] == 3

    # a version that reads the delivered payload the other way round
    changed = tmp_path / "shipping.hcl"
    text = SHIPPING.read_text(encoding="utf-8")
    when = "when = state.await.output.complete\n"
    changed.write_text(text.replace(when, "when = !state.await.output.complete\n"), "utf-8")
    proposal = file_change(store, changed.parent)
    report = replay_proposal(store, proposal.id, Selection()).to_json()
    branch = "the decision's expressions choose {} (recorded: {})"
    assert verdicts(report, runs) == {
        "urgent": ("diverges", "check", branch.format("partial", "done")),
        "napped": ("diverges", "check", branch.format("done", "partial")),
        "waiting": ("same", "", ""),
    }


def test_a_smaller_team_budget_is_counted_again_over_the_runs_replayed(
    recorded: Recorded, tmp_path: Path
) -> None:
    """The team's 30-day spend budget cut to 15000 EUR: the small order (5745 EUR, admitted
    first) still fits; the large one (11490 EUR) would take the team to 17235 EUR."""
    store = recorded.store
    folder = changed_example(tmp_path, "team_budget", {}, team_spend=15000)
    proposal = file_change(store, folder)

    report = replay_proposal(store, proposal.id, Selection()).to_json()

    denied = (
        "the action of order would be denied: spend budget exceeded: team.procurement "
        "would reach 17235.00 of 15000.00 EUR"
    )
    assert verdicts(report, recorded.runs) == {
        "small": ("same", "", ""),
        "large": ("diverges", "submit", denied),
        "waiting": ("same", "", ""),
        "rejected": ("same", "", ""),
        "over": ("same", "", ""),
    }
    # replayed alone, the large run still meets the small run's recorded spend
    alone = replay_proposal(store, proposal.id, Selection(run_ids=(recorded.runs["large"].id,)))
    assert [r.verdict.why for r in alone.runs] == [denied]
    # and a budget the runs fit replays them the same
    roomy = file_change(store, changed_example(tmp_path, "roomy", {}, team_spend=17235))
    assert replay_proposal(store, roomy.id, Selection()).clean


def test_a_run_spend_budget_refuses_the_order_over_it(recorded: Recorded, tmp_path: Path) -> None:
    limits = "    tool_calls  = 20\n  }"
    per_run = '    tool_calls  = 20\n    spend       = 10000\n    currency    = "EUR"\n  }'
    folder = changed_example(tmp_path, "run_budget", {"workflow.hcl": (limits, per_run)})
    proposal = file_change(recorded.store, folder)

    report = replay_proposal(recorded.store, proposal.id, Selection()).to_json()

    large = recorded.runs["large"].id
    denied = (
        "the action of order would be denied: spend budget exceeded: "
        f"run:{large} would reach 11490.00 of 10000.00 EUR"
    )
    assert verdicts(report, recorded.runs)["large"] == ("diverges", "submit", denied)
    assert report["summary"]["diverges"] == 1
