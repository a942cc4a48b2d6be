"""Semantic diff on crafted pairs: what is reported, and what widens authority."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.compiler.output.diff import Change, DiffReport, diff_documents, rename_states
from openseal.compiler.pipeline import compile_paths
from tests.compiler.compile_support import (
    AGENT,
    BINDING,
    MODEL,
    SKILL,
    WORKFLOW_ITEMS,
    compile_texts,
    project_text,
    workflow_text,
)

EXAMPLES = Path(__file__).resolve().parents[3] / "definitions"

SEND = """skill "send" {
  description = "Send a message."
  effect      = "external"
  input       = object({ to = string })

  adapter "http" {
    method = "POST"
    url    = "https://example.org/send"
    body   = args
  }

  idempotency {
    key_header     = "Idempotency-Key"
    same_key_retry = true
  }

  approval {
    required   = true
    approvers  = ["ops"]
    expires_in = "1h"
  }
}
"""


def _docs(tmp_path: Path, name: str, text: str) -> dict[str, dict[str, object]]:
    result = compile_texts(tmp_path / name, {"all.hcl": text})
    return {key: doc.document for key, doc in result.documents.items()}


def _diff(tmp_path: Path, old: str, new: str) -> DiffReport:
    return diff_documents(_docs(tmp_path, "old", old), _docs(tmp_path, "new", new))


def _kinds(report: DiffReport) -> list[tuple[str, str, bool]]:
    return [(c.definition, c.kind, c.widening) for c in report.changes]


def _only(report: DiffReport, kind: str) -> Change:
    matches = [c for c in report.changes if c.kind == kind]
    assert len(matches) == 1, _kinds(report)
    return matches[0]


def test_identical_inputs_have_no_changes(tmp_path: Path) -> None:
    report = _diff(tmp_path, project_text(), project_text())
    assert report.changes == () and not report.risk_widening
    assert report.unchanged == 5


def test_a_new_binding_is_a_risk_widening_grant(tmp_path: Path) -> None:
    old = "\n".join(
        [MODEL, SKILL, SEND, AGENT.replace('"read"', '"external"'), BINDING, workflow_text()]
    )
    grant = 'binding "helper_sends" {\n  skill = skill.send\n  to    = agent.helper\n}\n'
    report = _diff(tmp_path, old, old + "\n" + grant)
    assert report.added == ("binding.helper_sends",)
    change = _only(report, "grant_added")
    assert change.widening and change.after == {"skill": "skill.send", "to": "agent.helper"}
    assert report.risk_widening
    assert report.to_dict()["risk_widening"] is True


def test_a_turn_skill_added_widens(tmp_path: Path) -> None:
    extra = SEND.replace('"send"', '"fetch"').replace('"external"', '"read"')
    base = "\n".join([MODEL, SKILL, extra, AGENT, BINDING])
    grant = 'binding "helper_fetches" {\n  skill = skill.fetch\n  to    = agent.helper\n}\n'
    items = [i.replace("[skill.lookup]", "[skill.lookup, skill.fetch]") for i in WORKFLOW_ITEMS]
    report = _diff(tmp_path, base + grant + workflow_text(), base + grant + workflow_text(items))
    kinds = {c.kind: c for c in report.changes if c.definition == "workflow.answer"}
    assert kinds["turn_skill_added"].widening and kinds["turn_skill_added"].after == "skill.fetch"
    assert kinds["grant_added"].widening
    assert report.risk_widening


def test_a_renamed_state_is_shown_as_a_rename(tmp_path: Path) -> None:
    renamed = (
        project_text()
        .replace('state "done"', 'state "finished"')
        .replace("state.done", "state.finished")
    )
    report = _diff(tmp_path, project_text(), renamed)
    change = _only(report, "state_renamed")
    assert (change.before, change.after) == ("done", "finished")
    assert {c.kind for c in report.changes} == {"state_renamed"}
    assert not report.risk_widening


def test_a_renamed_state_referenced_by_expressions_is_still_one_rename(tmp_path: Path) -> None:
    renamed = (
        project_text()
        .replace('state "think"', 'state "ponder"')
        .replace("state.think", "state.ponder")
    )
    report = _diff(tmp_path, project_text(), renamed)
    assert [c.kind for c in report.changes] == ["state_renamed"], _kinds(report)


def test_removed_skill_approval_widens(tmp_path: Path) -> None:
    old = "\n".join([MODEL, SKILL, SEND])
    new = old.replace("required   = true", "required   = false")
    change = _only(_diff(tmp_path, old, new), "approval_removed")
    assert change.widening and change.definition == "skill.send"
    assert change.path == "spec.approval"


def test_longer_expiry_and_extra_approvers_widen(tmp_path: Path) -> None:
    old = "\n".join([MODEL, SKILL, SEND])
    new = old.replace('"1h"', '"24h"').replace('["ops"]', '["ops", "interns"]')
    report = _diff(tmp_path, old, new)
    assert _only(report, "approval_expiry_lengthened").widening
    assert _only(report, "approvers_added").widening
    shorter = _diff(tmp_path, new, old)
    assert not shorter.risk_widening
    assert {c.kind for c in shorter.changes} == {"approval_expiry_shortened", "approvers_removed"}


def test_raising_a_risk_ceiling_widens_and_lowering_does_not(tmp_path: Path) -> None:
    old = "\n".join([MODEL, AGENT])
    new = old.replace('max_risk     = "read"', 'max_risk     = "production"')
    up = _only(_diff(tmp_path, old, new), "risk_raised")
    assert up.widening and (up.before, up.after) == ("read", "production")
    down = _diff(tmp_path, new, old)
    assert not down.risk_widening and _only(down, "risk_lowered")


def test_raising_a_skill_effect_widens(tmp_path: Path) -> None:
    old = "\n".join([MODEL, SEND])
    new = old.replace('effect      = "external"', 'effect      = "production"')
    assert _only(_diff(tmp_path, old, new), "risk_raised").widening


def test_budget_lowered_is_not_widening_raised_is(tmp_path: Path) -> None:
    items = ["budget {\n  turns = 5\n}", *WORKFLOW_ITEMS]
    lower = [i.replace("turns = 5", "turns = 3") for i in items]
    base = "\n".join([MODEL, SKILL, AGENT, BINDING])
    down = _diff(tmp_path, base + workflow_text(items), base + workflow_text(lower))
    change = _only(down, "budget_lowered")
    assert (change.before, change.after, change.widening) == (5, 3, False)
    assert not down.risk_widening
    up = _diff(tmp_path, base + workflow_text(lower), base + workflow_text(items))
    assert _only(up, "budget_raised").widening and up.risk_widening


def test_removing_a_budget_limit_is_raising_it(tmp_path: Path) -> None:
    items = ["budget {\n  turns = 5\n}", *WORKFLOW_ITEMS]
    base = "\n".join([MODEL, SKILL, AGENT, BINDING])
    report = _diff(tmp_path, base + workflow_text(items), base + workflow_text(WORKFLOW_ITEMS))
    change = _only(report, "budget_raised")
    assert (change.before, change.after) == (5, None)


def test_guard_change_and_transition_retarget(tmp_path: Path) -> None:
    new = project_text().replace('answer != ""', 'answer != "none"')
    change = _only(_diff(tmp_path, project_text(), new), "guard_changed")
    assert change.path == "graph.transitions.check.done.0.guard"
    swapped = project_text().replace("next = state.failed", "next = state.done")
    swapped = swapped.replace('state "failed" {\n  end = "failed"\n}', "")
    report = _diff(tmp_path, project_text(), swapped)
    kinds = {c.kind for c in report.changes}
    assert kinds == {"transition_retargeted", "state_removed"}, _kinds(report)


def test_procurement_approval_removed_is_widening() -> None:
    """Deleting the review state and wiring draft straight to submit bypasses approval.

    The compiler refuses such a workflow (OS504), so the new side is the old
    compiled document edited by hand, as a tampered or older bundle could be.
    """
    import copy

    result = compile_paths([EXAMPLES / "procurement" / "hcl"])
    old = {k: d.document for k, d in result.documents.items()}
    new = copy.deepcopy(old)
    graph = new["workflow.procure_laptops"]["graph"]
    del graph["states"]["review"]
    graph["transitions"] = [
        {**t, "to": "submit" if t["to"] == "review" else t["to"]}
        for t in graph["transitions"]
        if t["from"] != "review"
    ]
    report = diff_documents(old, new)
    kinds = {c.kind: c for c in report.changes}
    assert kinds["approval_state_removed"].widening
    assert kinds["approval_bypassed"].widening and kinds["approval_bypassed"].path.endswith(
        "submit"
    )
    assert report.risk_widening
    assert report.changed == ("workflow.procure_laptops",)


def test_binding_narrowing_and_widening(tmp_path: Path) -> None:
    base = "\n".join([MODEL, SKILL, AGENT])
    wide = 'binding "b" {\n  skill = skill.lookup\n  to = agent.helper\n}\n'
    narrow = wide.replace("}\n", '  constraints = [args.q != ""]\n}\n')
    removed = _diff(tmp_path, base + narrow, base + wide)
    assert _only(removed, "constraint_removed").widening
    added = _diff(tmp_path, base + wide, base + narrow)
    assert not added.risk_widening and _only(added, "constraint_added")


def test_removed_definitions_are_reported_not_widening(tmp_path: Path) -> None:
    report = _diff(tmp_path, "\n".join([MODEL, SKILL]), MODEL)
    assert report.removed == ("skill.lookup",)
    assert not report.risk_widening


def test_rename_states_rewrites_references_only() -> None:
    value = {
        "a": {"node": "ref", "root": "state", "path": ["x", "output"]},
        "b": {"node": "ref", "root": "input", "path": ["x"]},
        "c": "state.x",
        "d": "state.xy",
    }
    assert rename_states(value, {"x": "y"}) == {
        "a": {"node": "ref", "root": "state", "path": ["y", "output"]},
        "b": {"node": "ref", "root": "input", "path": ["x"]},
        "c": "state.y",
        "d": "state.xy",
    }


@pytest.mark.parametrize(
    ("old", "new", "widening"),
    [
        ("required_reviews = 2", "required_reviews = 1", True),
        ("required_reviews = 1", "required_reviews = 2", False),
    ],
)
def test_governance_loosening(tmp_path: Path, old: str, new: str, widening: bool) -> None:
    text = 'governance "g" {\n  deciders = ["lead"]\n  %s\n}\n'
    report = _diff(tmp_path, text % old, text % new)
    assert report.risk_widening is widening


# -- triggers: work that starts by itself --------------------------------------------------

HOURLY = {
    "workflow": "workflow.small",
    "schedule": {"cron": None, "every": 3600, "time_zone": "UTC"},
    "event": None,
    "input": {},
    "overlap": "skip",
    "catch_up": "latest",
    "catch_up_limit": 10,
    "grace": 60,
    "description": None,
}
ON_EVENT = {**HOURLY, "schedule": None, "event": {"name": "stock.low", "filter": None}}


def _trigger(spec: dict[str, object]) -> dict[str, dict[str, object]]:
    return {"trigger.t": {"kind": "trigger", "name": "t", "spec": spec}}


def test_a_new_trigger_widens_risk() -> None:
    report = diff_documents({}, _trigger(HOURLY))
    assert report.risk_widening
    assert _only(report, "trigger_added").message == (
        "trigger added: starts workflow.small on a schedule"
    )


@pytest.mark.parametrize(
    ("old", "new", "kind", "widening"),
    [
        (HOURLY, {**HOURLY, "schedule": {**HOURLY["schedule"], "every": 60}},  # type: ignore[dict-item]
         "trigger_fires_more_often", True),
        (HOURLY, {**HOURLY, "schedule": {"cron": "0 9 * * *", "every": None, "time_zone": "UTC"}},
         "changed", False),  # daily: less often
        ({**HOURLY, "schedule": {"cron": "0 9 * * MON-FRI", "every": None, "time_zone": "UTC"}},
         {**HOURLY, "schedule": {"cron": "0 9 * * *", "every": None, "time_zone": "UTC"}},
         "trigger_fires_more_often", True),
        (ON_EVENT, {**ON_EVENT, "event": {"name": "stock.out", "filter": None}},
         "trigger_event_added", True),
        (HOURLY, ON_EVENT, "trigger_event_added", True),
        (ON_EVENT, HOURLY, "trigger_fires_more_often", True),
        (ON_EVENT, {**ON_EVENT, "event": {"name": "stock.low", "filter": {"node": "literal"}}},
         "trigger_filter_added", False),
        ({**ON_EVENT, "event": {"name": "stock.low", "filter": {"node": "literal"}}}, ON_EVENT,
         "trigger_filter_changed", True),
        (HOURLY, {**HOURLY, "catch_up": "all"}, "trigger_catch_up_widened", True),
        ({**HOURLY, "catch_up": "all"}, {**HOURLY, "catch_up": "all", "catch_up_limit": 20},
         "trigger_catch_up_widened", True),
        ({**HOURLY, "catch_up": "none"}, {**HOURLY, "catch_up": "none", "grace": 600},
         "trigger_catch_up_widened", True),
        ({**HOURLY, "catch_up": "all"}, HOURLY, "changed", False),
        (HOURLY, {**HOURLY, "overlap": "queue"}, "trigger_overlap_widened", True),
        ({**HOURLY, "overlap": "allow"}, HOURLY, "trigger_overlap_narrowed", False),
        (HOURLY, {**HOURLY, "workflow": "workflow.other"}, "trigger_retargeted", True),
    ],
)  # fmt: skip
def test_a_trigger_widens_when_it_starts_more_work(
    old: dict[str, object], new: dict[str, object], kind: str, widening: bool
) -> None:
    report = diff_documents(_trigger(old), _trigger(new))
    assert kind in {c.kind for c in report.changes}
    assert report.risk_widening is widening


def test_a_trigger_in_another_time_zone_fires_as_often() -> None:
    daily = {"cron": "0 9 * * *", "every": None, "time_zone": "UTC"}
    old = {**HOURLY, "schedule": daily}
    new = {**HOURLY, "schedule": {**daily, "time_zone": "Europe/Berlin"}}
    report = diff_documents(_trigger(old), _trigger(new))
    assert not report.risk_widening
    assert [c.path for c in report.changes] == ["spec.schedule.time_zone"]


def test_raising_or_removing_a_concurrency_cap_widens_lowering_narrows(tmp_path: Path) -> None:
    items = ["concurrency = 3", *WORKFLOW_ITEMS]
    base = "\n".join([MODEL, SKILL, AGENT, BINDING])
    capped = base + workflow_text(items)
    lower = base + workflow_text([i.replace("= 3", "= 2") for i in items])
    down = _diff(tmp_path, capped, lower)
    change = _only(down, "concurrency_lowered")
    assert (change.before, change.after, change.widening) == (3, 2, False)
    assert not down.risk_widening
    assert _only(_diff(tmp_path, lower, capped), "concurrency_raised").widening
    removed = _only(
        _diff(tmp_path, capped, base + workflow_text(WORKFLOW_ITEMS)), "concurrency_raised"
    )
    assert (removed.before, removed.after, removed.widening) == (3, None, True)
    agent_capped = capped.replace(AGENT, AGENT.rstrip().rstrip("}") + "  concurrency = 4\n}\n")
    assert agent_capped != capped
    assert _only(_diff(tmp_path, agent_capped, capped), "concurrency_raised").widening
