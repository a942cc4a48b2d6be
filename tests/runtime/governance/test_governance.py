"""Governed definition changes on SQLite and PostgreSQL: deploy, review, decide, activate."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.compiler.output.document import CompiledDocument
from openseal.errors import UsageError
from openseal.runtime.governance import flow as gov
from openseal.runtime.governance.change_proposals import POLICY_ACTOR
from openseal.runtime.statuses import ChangeProposalStatus as S
from openseal.runtime.store import Store
from openseal.runtime.store.db.errors import InvalidStatus
from tests.runtime.governance_support import WORKFLOW, compile_set, governance_yaml, key

ALICE, BOB, CAROL = "user:alice", "user:bob", "user:carol"
Docs = dict[str, CompiledDocument]


def active_digest(store: Store, name: str = WORKFLOW) -> str | None:
    version = store.definitions.active_version(name)
    return None if version is None else version.digest


def file(store: Store, documents: Docs, actor: str = ALICE) -> gov.ChangeProposal:
    result = gov.deploy(store, documents, actor)
    assert result.proposal is not None, result.note
    return result.proposal


def push_through(store: Store, proposal: gov.ChangeProposal) -> gov.ChangeProposal:
    """Review, decide and activate under the test governance (bob reviews, carol decides)."""
    if proposal.status is not S.APPROVED:
        gov.review(store, proposal.id, BOB, "approve")
        gov.decide(store, proposal.id, CAROL, "approve")
    return gov.activate(store, proposal.id, CAROL)


@pytest.fixture
def v1_live(store: Store, tmp_path: Path) -> Docs:
    """Version 1 of the workflow and the governance policy, activated through a proposal."""
    docs = compile_set(tmp_path / "v1", governance=governance_yaml())
    push_through(store, file(store, docs))
    return docs


# --------------------------------------------------------------------------- lifecycle


def test_full_lifecycle_from_proposal_to_activation(store: Store, tmp_path: Path) -> None:
    docs = compile_set(tmp_path / "v1", governance=governance_yaml())
    result = gov.deploy(store, docs, ALICE, message="first version")
    proposal = result.proposal
    assert proposal is not None and result.created
    assert proposal.status is S.PROPOSED
    assert {t.name for t in proposal.targets} == {WORKFLOW, "production"}
    assert proposal.base == {WORKFLOW: None, "production": None}
    # Bootstrap: nothing is active, so the bundle's own governance rules the first change.
    assert proposal.policy["source"] == "bundle"
    assert "workflow.answer" in proposal.diff["definitions"]["added"]
    # Dependencies are stored as versions but are not deployments.
    assert store.definitions.get(key(docs, "agent.helper")).name == "helper"
    assert store.definitions.deployment("helper") is None

    reviewed = gov.review(store, proposal.id, BOB, "approve", comment="looks right")
    assert reviewed.status is S.IN_REVIEW
    decided = gov.decide(store, proposal.id, CAROL, "approve")
    assert decided.status is S.APPROVED
    assert decided.decision is not None and decided.decision["by"] == CAROL
    assert active_digest(store) is None  # a decision is not an activation

    activated = gov.activate(store, proposal.id, CAROL)
    assert activated.status is S.ACTIVATED
    assert activated.activated_at is not None
    assert active_digest(store) == key(docs, "workflow.answer")
    assert active_digest(store, "production") == key(docs, "governance.production")
    history = gov.deployment_history(store, WORKFLOW)
    assert [(a.previous_digest, a.actor, a.change_proposal_id) for a in history] == [
        (None, CAROL, proposal.id)
    ]
    assert history[0].reason is not None and "first version" in history[0].reason


def test_decision_without_activation_leaves_the_old_version_active(
    store: Store, tmp_path: Path, v1_live: Docs
) -> None:
    v1 = key(v1_live, "workflow.answer")
    docs = compile_set(tmp_path / "v2", max_risk="read")
    proposal = file(store, docs)
    gov.review(store, proposal.id, BOB, "approve")
    approved = gov.decide(store, proposal.id, CAROL, "approve")
    assert approved.status is S.APPROVED
    assert active_digest(store) == v1
    run = store.objectives.create("acme", WORKFLOW, {"question": "q"}, actor=ALICE).run
    assert run.workflow_digest == v1


def test_rejected_proposal_cannot_be_activated(store: Store, tmp_path: Path, v1_live: Docs) -> None:
    proposal = file(store, compile_set(tmp_path / "v2", max_risk="external"))
    rejected = gov.decide(store, proposal.id, CAROL, "reject", comment="too much")
    assert rejected.status is S.REJECTED
    with pytest.raises(InvalidStatus):
        gov.activate(store, proposal.id, CAROL)
    assert active_digest(store) == key(v1_live, "workflow.answer")


def test_pending_decision_blocks_activation_with_a_hint(
    store: Store, tmp_path: Path, v1_live: Docs
) -> None:
    proposal = file(store, compile_set(tmp_path / "v2", max_risk="external"))
    with pytest.raises(InvalidStatus, match="needs an approving decision"):
        gov.activate(store, proposal.id, CAROL)


# --------------------------------------------------------------------------- filing


def test_same_bundle_twice_returns_the_open_proposal(
    store: Store, tmp_path: Path, v1_live: Docs
) -> None:
    docs = compile_set(tmp_path / "v2", max_risk="external")
    first = gov.deploy(store, docs, ALICE)
    again = gov.deploy(store, docs, ALICE)
    assert first.created and not again.created
    assert first.proposal is not None and again.proposal is not None
    assert again.proposal.id == first.proposal.id
    assert len(gov.list_proposals(store, statuses=["proposed"])) == 1


def test_nothing_changed_files_no_proposal(store: Store, tmp_path: Path, v1_live: Docs) -> None:
    result = gov.deploy(store, v1_live, ALICE)
    assert result.proposal is None
    assert result.note is not None and "nothing changed" in result.note
    assert set(result.unchanged) == {WORKFLOW, "production"}


def test_dependency_change_shows_in_the_workflow_diff(
    store: Store, tmp_path: Path, v1_live: Docs
) -> None:
    proposal = file(store, compile_set(tmp_path / "v2", max_risk="production"))
    # Only the workflow is a target; the agent change is why its digest changed.
    assert [t.name for t in proposal.targets] == [WORKFLOW]
    assert proposal.risk_widening
    changes = proposal.diff["changes"]
    widening = [c for c in changes if c["widening"]]
    assert any(c["definition"] == "agent.helper" and c["kind"] == "risk_raised" for c in widening)
    assert proposal.base == {WORKFLOW: key(v1_live, "workflow.answer")}


def test_a_bundle_without_deployables_files_nothing(store: Store, tmp_path: Path) -> None:
    docs = compile_set(tmp_path / "v1")
    only_agent = {k: v for k, v in docs.items() if k == "agent.helper"}
    result = gov.deploy(store, only_agent, ALICE)
    assert result.proposal is None and result.note is not None
    assert "nothing to deploy" in result.note


# --------------------------------------------------------------------------- policy


def test_author_may_not_approve_their_own_risk_widening_change(
    store: Store, tmp_path: Path
) -> None:
    # No governance at all: the default policy still forbids self-approval of widening.
    first = file(store, compile_set(tmp_path / "v1", max_risk="write"))
    assert first.risk_widening  # a new binding grants a skill
    gov.activate(store, gov.decide(store, first.id, BOB, "approve").id, BOB)
    narrowing = file(store, compile_set(tmp_path / "v2", max_risk="read"))
    assert not narrowing.risk_widening
    gov.decide(store, narrowing.id, ALICE, "approve")  # the author may approve narrowing
    gov.activate(store, narrowing.id, ALICE)

    widening = file(store, compile_set(tmp_path / "v3", max_risk="external"))
    assert widening.risk_widening
    with pytest.raises(gov.NotAllowed) as refused:
        gov.decide(store, widening.id, ALICE, "approve")
    assert refused.value.code == "self_approval"
    assert gov.get_proposal(store, widening.id).status is S.PROPOSED
    assert gov.decide(store, widening.id, BOB, "approve").status is S.APPROVED


def test_reviewers_deciders_and_required_reviews_are_enforced(
    store: Store, tmp_path: Path, v1_live: Docs
) -> None:
    proposal = file(store, compile_set(tmp_path / "v2", max_risk="external"))
    with pytest.raises(gov.NotAllowed) as not_reviewer:
        gov.review(store, proposal.id, "user:mallory", "approve")
    assert not_reviewer.value.code == "not_allowed"
    with pytest.raises(gov.NotAllowed) as own:
        gov.review(store, proposal.id, ALICE, "approve")
    assert own.value.code == "self_review"
    with pytest.raises(gov.NotAllowed) as missing:
        gov.decide(store, proposal.id, CAROL, "approve")
    assert missing.value.code == "reviews_required"
    with pytest.raises(gov.NotAllowed) as not_decider:
        gov.decide(store, proposal.id, BOB, "approve")
    assert not_decider.value.code == "not_allowed"

    gov.review(store, proposal.id, BOB, "request_changes", comment="why external?")
    with pytest.raises(gov.NotAllowed) as blocked:
        gov.decide(store, proposal.id, CAROL, "approve")
    assert blocked.value.code == "changes_requested"
    gov.review(store, proposal.id, BOB, "approve")  # the later review replaces the earlier
    assert gov.decide(store, proposal.id, CAROL, "approve").status is S.APPROVED
    assert [r.verdict for r in gov.proposal_reviews(store, proposal.id)] == [
        "request_changes",
        "approve",
    ]


def test_a_change_cannot_loosen_its_own_governance(
    store: Store, tmp_path: Path, v1_live: Docs
) -> None:
    loose = governance_yaml(reviewers=(), deciders=(ALICE,), required_reviews=0)
    proposal = file(store, compile_set(tmp_path / "v2", governance=loose))
    assert [t.name for t in proposal.targets] == ["production"]
    # The active governance (bob reviews, carol decides) rules, not the proposed one.
    assert proposal.policy["source"] == "active"
    with pytest.raises(gov.NotAllowed):
        gov.decide(store, proposal.id, ALICE, "approve")
    activated = push_through(store, proposal)
    assert activated.status is S.ACTIVATED
    # From now on the new policy applies: alice decides, no review needed.
    next_change = file(store, compile_set(tmp_path / "v3", max_risk="read"), actor=BOB)
    assert next_change.policy["rules"][0]["deciders"] == [ALICE]
    assert gov.decide(store, next_change.id, ALICE, "approve").status is S.APPROVED


def test_narrowing_change_auto_approves_but_is_not_active_until_activated(
    store: Store, tmp_path: Path
) -> None:
    policy = governance_yaml(auto_approve_narrowing=True)
    v1 = compile_set(tmp_path / "v1", max_risk="write", governance=policy)
    push_through(store, file(store, v1))
    narrowing = file(store, compile_set(tmp_path / "v2", max_risk="read", governance=policy))
    assert not narrowing.risk_widening
    assert narrowing.status is S.APPROVED
    assert narrowing.decision is not None
    assert narrowing.decision["auto"] is True and narrowing.decision["by"] == POLICY_ACTOR
    assert active_digest(store) == key(v1, "workflow.answer")
    gov.activate(store, narrowing.id, CAROL)
    assert active_digest(store) != key(v1, "workflow.answer")

    widening = file(store, compile_set(tmp_path / "v3", max_risk="external", governance=policy))
    assert widening.risk_widening and widening.status is S.PROPOSED


def hourly(**options: str) -> str:
    """A trigger starting the workflow every hour; ``options`` are HCL values."""
    lines = "".join(f"  {k} = {v}\n" for k, v in options.items())
    return (
        f'trigger "hourly" {{\n  workflow = workflow.{WORKFLOW}\n  schedule {{ every = "1h" }}\n'
        f'  input = {{ question = "status?" }}\n{lines}}}\n'
    )


def test_a_new_or_wider_trigger_widens_risk_and_a_narrower_one_auto_approves(
    store: Store, tmp_path: Path
) -> None:
    policy = governance_yaml(auto_approve_narrowing=True)
    push_through(store, file(store, compile_set(tmp_path / "v1", governance=policy)))
    added = file(store, compile_set(tmp_path / "v2", governance=policy, triggers=hourly()))
    assert added.risk_widening and added.status is S.PROPOSED
    assert "trigger_added" in {c["kind"] for c in added.diff["changes"]}
    push_through(store, added)

    allowed = hourly(overlap='"allow"', catch_up='"all"')
    wider = file(store, compile_set(tmp_path / "v3", governance=policy, triggers=allowed))
    assert wider.risk_widening and wider.status is S.PROPOSED
    kinds = {c["kind"] for c in wider.diff["changes"] if c["widening"]}
    assert kinds == {"trigger_overlap_widened", "trigger_catch_up_widened"}
    push_through(store, wider)

    daily = hourly(overlap='"allow"', catch_up='"all"').replace('every = "1h"', 'every = "24h"')
    slower = file(store, compile_set(tmp_path / "v4", governance=policy, triggers=daily))
    assert not slower.risk_widening and slower.status is S.APPROVED


# --------------------------------------------------------------------------- staleness


def test_stale_proposal_is_refused_until_refreshed(
    store: Store, tmp_path: Path, v1_live: Docs
) -> None:
    first = file(store, compile_set(tmp_path / "v2", max_risk="read"))
    second = file(store, compile_set(tmp_path / "v3", max_risk="external"))
    push_through(store, first)
    gov.review(store, second.id, BOB, "approve")
    gov.decide(store, second.id, CAROL, "approve")
    with pytest.raises(gov.StaleProposal) as stale:
        gov.activate(store, second.id, CAROL)
    assert stale.value.code == "stale_proposal"
    assert "openseal proposals refresh" in str(stale.value)
    assert gov.get_proposal(store, second.id).status is S.APPROVED  # nothing half-done

    refreshed = gov.refresh(store, second.id, BOB)
    # The diff changed (read → external instead of write → external): reviews reset.
    assert refreshed.status is S.PROPOSED
    assert refreshed.round == 2 and refreshed.decision is None
    assert refreshed.base == {WORKFLOW: key_of(first)}
    with pytest.raises(gov.NotAllowed) as needs_review:
        gov.decide(store, second.id, CAROL, "approve")
    assert needs_review.value.code == "reviews_required"  # round-1 review no longer counts
    activated = push_through(store, refreshed)
    assert activated.status is S.ACTIVATED
    assert active_digest(store) == key_of(second)


def key_of(proposal: gov.ChangeProposal, name: str = WORKFLOW) -> str:
    return next(t.digest for t in proposal.targets if t.name == name)


def test_out_of_band_activation_makes_a_proposal_stale(
    store: Store, tmp_path: Path, v1_live: Docs
) -> None:
    proposal = file(store, compile_set(tmp_path / "v2", max_risk="external"))
    gov.review(store, proposal.id, BOB, "approve")
    gov.decide(store, proposal.id, CAROL, "approve")
    other = compile_set(tmp_path / "v3", max_risk="read")
    for doc in other.values():
        store.definitions.put(doc.digest.removeprefix("sha256:"), doc.kind, doc.name, doc.document)
    store.definitions.activate(WORKFLOW, key(other, "workflow.answer"), "user:ops")
    with pytest.raises(gov.StaleProposal):
        gov.activate(store, proposal.id, CAROL)


def test_refresh_without_changes_keeps_reviews_and_decision(
    store: Store, tmp_path: Path, v1_live: Docs
) -> None:
    proposal = file(store, compile_set(tmp_path / "v2", max_risk="external"))
    gov.review(store, proposal.id, BOB, "approve")
    approved = gov.decide(store, proposal.id, CAROL, "approve")
    refreshed = gov.refresh(store, proposal.id, BOB)
    assert refreshed.status is S.APPROVED and refreshed.round == approved.round
    assert refreshed.decision == approved.decision
    last = gov.proposal_events(store, proposal.id)[-1]
    assert last.type == "change_proposal.refreshed" and last.payload["reset"] is False


# --------------------------------------------------------------------------- superseding


def test_activating_a_newer_proposal_supersedes_older_open_ones(
    store: Store, tmp_path: Path, v1_live: Docs
) -> None:
    older = file(store, compile_set(tmp_path / "v2", max_risk="external"))
    newer = file(store, compile_set(tmp_path / "v3", max_risk="read"))
    push_through(store, newer)
    superseded = gov.get_proposal(store, older.id)
    assert superseded.status is S.SUPERSEDED
    assert superseded.superseded_by == newer.id
    event = gov.proposal_events(store, older.id)[-1]
    assert (event.type, event.actor, event.payload) == (
        "change_proposal.superseded",
        CAROL,
        {"by": newer.id},
    )
    with pytest.raises(InvalidStatus):
        gov.review(store, older.id, BOB, "approve")


# --------------------------------------------------------------------------- rollback


def test_rollback_goes_through_a_recorded_proposal(store: Store, tmp_path: Path) -> None:
    policy = governance_yaml(auto_approve_narrowing=True)
    v1 = compile_set(tmp_path / "v1", max_risk="read", governance=policy)
    push_through(store, file(store, v1))
    v2 = compile_set(tmp_path / "v2", max_risk="external", governance=policy)
    widening = file(store, v2)
    assert widening.risk_widening
    push_through(store, widening)
    assert active_digest(store) == key(v2, "workflow.answer")

    result = gov.rollback(store, WORKFLOW, ALICE, message="external was a mistake")
    proposal = result.proposal
    assert proposal is not None and proposal.kind == "rollback"
    assert [t.digest for t in proposal.targets] == [key(v1, "workflow.answer")]
    # Undoing a widening change narrows, so the policy may auto-approve it...
    assert not proposal.risk_widening and proposal.status is S.APPROVED
    assert active_digest(store) == key(v2, "workflow.answer")  # ...but not activate it.
    gov.activate(store, proposal.id, CAROL)
    assert active_digest(store) == key(v1, "workflow.answer")

    history = gov.deployment_history(store, WORKFLOW)
    assert [a.digest for a in history] == [
        key(v1, "workflow.answer"),
        key(v2, "workflow.answer"),
        key(v1, "workflow.answer"),
    ]
    assert history[-1].change_proposal_id == proposal.id
    assert history[-1].previous_digest == key(v2, "workflow.answer")
    # Old versions stay stored and loadable.
    assert store.definitions.get(key(v2, "workflow.answer")).kind == "workflow"


def test_rollback_to_an_explicit_digest_and_refusals(
    store: Store, tmp_path: Path, v1_live: Docs
) -> None:
    v1 = key(v1_live, "workflow.answer")
    with pytest.raises(gov.GovernanceError) as no_previous:
        gov.rollback(store, WORKFLOW, ALICE)
    assert no_previous.value.code == "no_previous_version"
    push_through(store, file(store, compile_set(tmp_path / "v2", max_risk="read")))
    push_through(store, file(store, compile_set(tmp_path / "v3", max_risk="external")))

    result = gov.rollback(store, WORKFLOW, ALICE, to="sha256:" + v1[:10])
    assert result.proposal is not None
    assert [t.digest for t in result.proposal.targets] == [v1]
    with pytest.raises(gov.GovernanceError) as unknown:
        gov.rollback(store, WORKFLOW, ALICE, to="0" * 64)
    assert unknown.value.code == "unknown_version"
    again = gov.rollback(store, WORKFLOW, ALICE, to=v1)
    assert again.proposal is not None and again.proposal.id == result.proposal.id
    assert not again.created


# --------------------------------------------------------------------------- pinning


def test_runs_keep_their_version_and_new_runs_use_the_activated_one(
    store: Store, tmp_path: Path, v1_live: Docs
) -> None:
    v1 = key(v1_live, "workflow.answer")
    before = store.objectives.create("acme", WORKFLOW, {"question": "a"}, actor=ALICE).run
    v2 = push_through(store, file(store, compile_set(tmp_path / "v2", max_risk="read")))
    after = store.objectives.create("acme", WORKFLOW, {"question": "b"}, actor=ALICE).run
    assert before.workflow_digest == v1
    assert store.runs.get(before.id).workflow_digest == v1
    assert after.workflow_digest == key_of(v2) != v1


# --------------------------------------------------------------------------- events


def test_every_step_is_an_event_with_its_actor(store: Store, tmp_path: Path) -> None:
    docs = compile_set(tmp_path / "v1", governance=governance_yaml())
    proposal = file(store, docs)
    gov.review(store, proposal.id, BOB, "request_changes", comment="hm")
    gov.review(store, proposal.id, BOB, "approve")
    gov.decide(store, proposal.id, CAROL, "approve")
    gov.refresh(store, proposal.id, BOB)
    gov.activate(store, proposal.id, CAROL)
    events = gov.proposal_events(store, proposal.id)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert [(e.type, e.actor) for e in events] == [
        ("change_proposal.filed", ALICE),
        ("change_proposal.reviewed", BOB),
        ("change_proposal.reviewed", BOB),
        ("change_proposal.decided", CAROL),
        ("change_proposal.refreshed", BOB),
        ("change_proposal.activated", CAROL),
    ]
    assert events[1].payload["verdict"] == "request_changes"
    assert events[5].payload["activations"][0]["previous"] is None
    assert gov.get_proposal(store, proposal.id).revision == len(events)


def test_stale_expected_revision_is_a_conflict(store: Store, tmp_path: Path, v1_live: Docs) -> None:
    proposal = file(store, compile_set(tmp_path / "v2", max_risk="external"))
    reviewed = gov.review(store, proposal.id, BOB, "approve", expected_revision=proposal.revision)
    with pytest.raises(gov.Conflict) as conflict:
        gov.decide(store, proposal.id, CAROL, "approve", expected_revision=proposal.revision)
    assert conflict.value.code == "conflict"
    decided = gov.decide(store, proposal.id, CAROL, "approve", expected_revision=reviewed.revision)
    assert decided.status is S.APPROVED


def test_proposals_resolve_by_unique_prefix_and_list_by_deployment(
    store: Store, tmp_path: Path, v1_live: Docs
) -> None:
    proposal = file(store, compile_set(tmp_path / "v2", max_risk="external"))
    assert gov.get_proposal(store, proposal.id[:20]).id == proposal.id
    listed = gov.list_proposals(store, deployment=WORKFLOW)
    assert listed[0].id == proposal.id
    assert gov.list_proposals(store, deployment="nope") == ()
    names = [d.name for d in gov.list_deployments(store)]
    assert names == [WORKFLOW, "production"]


def test_proposals_page_newest_first_by_cursor_and_since(
    store: Store, tmp_path: Path, v1_live: Docs
) -> None:
    first = file(store, compile_set(tmp_path / "v2", max_risk="external"))
    gov.decide(store, first.id, CAROL, "reject", comment="not now")
    second = file(store, compile_set(tmp_path / "v3", max_risk="production"))
    every = gov.list_proposals(store)
    assert [p.id for p in every][:2] == [second.id, first.id]
    [newest] = gov.list_proposals(store, limit=1)
    after = gov.list_proposals(store, after=newest.id)
    assert [p.id for p in (newest, *after)] == [p.id for p in every]
    assert gov.list_proposals(store, since="1h") == every
    assert gov.list_proposals(store, since="2999-01-01") == ()
    with pytest.raises(UsageError, match="since: expected"):
        gov.list_proposals(store, since="soon")


def test_a_deployment_name_belongs_to_one_kind(store: Store, tmp_path: Path) -> None:
    clash = compile_set(tmp_path / "v1", governance=governance_yaml(name=WORKFLOW))
    with pytest.raises(gov.GovernanceError) as refused:
        gov.deploy(store, clash, ALICE)
    assert refused.value.code == "kind_mismatch"
    assert gov.list_proposals(store) == ()


def test_an_actor_is_required(store: Store, tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        gov.deploy(store, compile_set(tmp_path / "v1"), " ")


# --------------------------------------------------------------------------- planning


def test_deploy_plans_its_diff_without_holding_the_write_lock(
    store: Store, tmp_path: Path, v1_live: Docs, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    if store.dialect != "sqlite":
        pytest.skip("only SQLite has a database-wide write lock")
    writable: list[bool] = []
    plan = gov.make_plan

    def planning(*args: object, **kwargs: object) -> object:
        other = sqlite3.connect(store.home / "openseal.db", timeout=0, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")  # another writer gets in while the diff is made
            other.rollback()
            writable.append(True)
        except sqlite3.OperationalError:
            writable.append(False)
        finally:
            other.close()
        return plan(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(gov, "make_plan", planning)
    file(store, compile_set(tmp_path / "v2", instructions="Answer briefly."))
    assert writable == [True]


def test_an_activation_while_a_deploy_plans_makes_it_plan_again(
    store: Store, tmp_path: Path, v1_live: Docs, monkeypatch: pytest.MonkeyPatch
) -> None:
    v2 = compile_set(tmp_path / "v2", instructions="Answer briefly.")
    v3 = compile_set(tmp_path / "v3", instructions="Answer at length.")
    plan = gov.make_plan
    interfered: list[bool] = []

    def planning(*args: object, **kwargs: object) -> object:
        result = plan(*args, **kwargs)  # type: ignore[arg-type]
        if not interfered:  # v2 goes live while the v3 deploy is planning
            interfered.append(True)
            push_through(store, file(store, v2))
        return result

    monkeypatch.setattr(gov, "make_plan", planning)
    proposal = file(store, v3)
    assert proposal.base[WORKFLOW] == key(v2, f"workflow.{WORKFLOW}")
