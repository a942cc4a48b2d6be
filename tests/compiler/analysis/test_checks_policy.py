"""Authority and policy checks: one golden per code, plus the examples stay clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.compiler.analysis.build import build
from openseal.compiler.analysis.checks import CHECKS, policy
from openseal.compiler.analysis.checks.graph import GRAPH_CHECKS, Check
from openseal.compiler.analysis.checks.policy import POLICY_CHECKS, looks_secret, secret_shapes
from openseal.compiler.analysis.ir import Analysis
from openseal.compiler.analysis.resolve import resolve
from openseal.compiler.analysis.typecheck import typecheck
from openseal.compiler.diagnostics import Diagnostic
from openseal.compiler.load import LoadResult, load_definitions
from openseal.compiler.output.render_diagnostics import render_human
from tests.golden_helper import assert_golden

ROOT = Path(__file__).resolve().parents[3]
INPUTS = Path("tests/golden/policy/inputs")
EXAMPLES = Path("definitions")

CASES: list[tuple[Check, str, str]] = [
    (policy.check_skills_are_bound, "OS501", "os501_skills_are_bound.hcl"),
    (policy.check_risk_ceiling, "OS502", "os502_risk_ceiling.hcl"),
    (policy.check_effects_are_reconcilable, "OS503", "os503_effects_are_reconcilable.hcl"),
    (
        policy.check_external_actions_need_approval,
        "OS504",
        "os504_external_actions_need_approval.hcl",
    ),
    (policy.check_bindings_only_narrow, "OS505", "os505_bindings_only_narrow.hcl"),
    (policy.check_no_literal_secrets, "OS506", "os506_no_literal_secrets.hcl"),
    (
        policy.check_runbook_skills_need_no_approval,
        "OS508",
        "os508_runbook_skills_need_no_approval.hcl",
    ),
    (policy.check_turn_skills_only_read, "OS509", "os509_turn_skills_only_read.hcl"),
    (policy.check_retry_can_apply, "OS510", "os510_retry_can_apply.hcl"),
    (policy.check_role_names, "OS511", "os511_role_names.hcl"),
]


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    # Spans name files relative to the working directory; keep goldens machine-independent.
    monkeypatch.chdir(ROOT)


def analyse(*paths: Path) -> tuple[LoadResult, Analysis, list[Diagnostic]]:
    """Load, resolve and typecheck; returns the diagnostics of those stages."""
    loaded = load_definitions(list(paths))
    assert loaded.ok, loaded.diagnostics
    analysis, diagnostics = resolve(loaded.definitions)
    return loaded, analysis, diagnostics + typecheck(analysis)


def run(checks: tuple[Check, ...], analysis: Analysis) -> list[Diagnostic]:
    graphs = build(analysis)
    return [d for check in checks for d in check(analysis, graphs)]


def codes(diagnostics: list[Diagnostic]) -> list[str]:
    return [d.code for d in diagnostics]


@pytest.mark.parametrize(("check", "code", "name"), CASES, ids=[c[1] for c in CASES])
def test_golden_policy_check(check: Check, code: str, name: str) -> None:
    loaded, analysis, earlier = analyse(INPUTS / name)
    # The input is wrong in one way only: earlier stages and the graph checks are clean.
    assert earlier == []
    assert run(GRAPH_CHECKS, analysis) == []
    found = check(analysis, build(analysis))
    assert found, f"{check.__name__} found nothing in {name}"
    assert {d.code for d in found} == {code}
    # No other policy check piles on.
    assert sorted(run(POLICY_CHECKS, analysis), key=str) == sorted(found, key=str)
    text = render_human(found, loaded.sources, color=False, file_count=1)
    assert_golden(text, f"policy/{Path(name).with_suffix('.txt')}")


@pytest.mark.parametrize("example", ["procurement", "release_note", "budget_check"])
@pytest.mark.parametrize("syntax", ["hcl", "yaml"])
def test_examples_pass_every_check(example: str, syntax: str) -> None:
    _, analysis, earlier = analyse(EXAMPLES / example / syntax)
    assert earlier == []
    assert run(CHECKS, analysis) == []
    assert set(POLICY_CHECKS) <= set(CHECKS)


def test_examples_grants_are_normalised() -> None:
    _, analysis, _ = analyse(EXAMPLES / "procurement" / "hcl")
    assert {(g.binding, g.skill, g.grantee) for g in analysis.grants} == {
        ("buyer_submits_orders", "skill.submit_purchase_order", "team.procurement.role.buyer"),
        ("researcher_searches_vendors", "skill.search_vendors", "team.procurement.role.researcher"),
    }


def test_team_grant_does_not_cover_a_role_and_vice_versa() -> None:
    _, analysis, _ = analyse(INPUTS / "os501_skills_are_bound.hcl")
    found = policy.check_skills_are_bound(analysis, build(analysis))
    messages = " ".join(d.message for d in found)
    assert "`team.shop.role.researcher`" in messages
    assert "covers the team, not its roles" in messages
    assert "do not cover the team acting as a whole" in messages
    assert len(found) == 2


def test_bypass_path_is_named() -> None:
    _, analysis, _ = analyse(INPUTS / "os504_external_actions_need_approval.hcl")
    found = policy.check_external_actions_need_approval(analysis, build(analysis))
    by_text = {d.message.split("`")[1]: d.message for d in found}
    assert "draft → check → submit" in by_text["submit"]
    assert len(found) == 3  # direct, shortcut, team_rule


def test_approved_transition_is_the_only_way_through(tmp_path: Path) -> None:
    # An approval whose *rejection* also leads to the action does not protect it.
    text = (ROOT / "definitions/release_note/hcl/release_note.hcl").read_text(encoding="utf-8")
    broken = text.replace(
        'on "rejected" {\n      next = state.withdrawn', 'on "rejected" {\n      next = state.send'
    )
    assert broken != text
    path = tmp_path / "release_note.hcl"
    path.write_text(broken, encoding="utf-8")
    _, analysis, _ = analyse(path)
    found = policy.check_external_actions_need_approval(analysis, build(analysis))
    assert codes(found) == ["OS504"]
    assert "draft → propose → review → send" in found[0].message


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("api_key", True),
        ("Authorization", True),
        ("X-Api-Key", True),
        ("client_secret", True),
        ("password", True),
        ("access_token", True),
        ("max_tokens", False),
        ("key_header", False),
        ("token_url", False),
        ("temperature", False),
    ],
)
def test_secret_like_keys(key: str, secret: bool) -> None:
    assert looks_secret(key) is secret


@pytest.mark.parametrize(
    ("text", "shape"),
    [
        ("key sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", "an API key (`sk-...`)"),
        ("sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345", "an API key (`sk-...`)"),
        (
            "https://hooks.slack.com/services/T0123ABCD/B0456EFGH/abcdefghijkl",
            "a Slack webhook URL",
        ),
        ("xoxb-123456789012-abcdefghijkl", "a Slack token"),
        ("AKIAIOSFODNN7EXAMPLE", "an AWS access key id"),
        (
            "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "an AWS secret access key",
        ),
        ("ghp_" + "a1" * 18, "a GitHub token"),
        ("glpat-abcdefghij0123456789", "a GitLab token"),
        ("AIza" + "B" * 35, "a Google API key"),
        ("sk_live_" + "4" * 24, "a Stripe key"),
        ("hf_" + "x" * 34, "a Hugging Face token"),
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abcdefghijkl", "a JSON web token"),
        ("-----BEGIN RSA PRIVATE KEY-----", "a private key"),
        ("Authorization: Bearer abcdefghijklmnopqrstuvwxyz", "a bearer token"),
        ("postgresql://app:s3cret@db.example.org/app", "a password in a URL"),
    ],
)
def test_secret_shapes_are_recognised(text: str, shape: str) -> None:
    assert shape in secret_shapes(text)


@pytest.mark.parametrize(
    "text",
    [
        "Never ask the user for their password or API key.",
        "Compare sk-style keys with the task-sk-1 label.",
        "Bearer ${credential.token}",
        "https://example.org/path?token=${args.token}",
        "https://user@example.org/",
        "mailto:someone@example.org",
        "AKIA is the prefix of an AWS access key id",
    ],
)
def test_ordinary_text_is_not_a_secret(text: str) -> None:
    assert secret_shapes(text) == []


SMALL = """
model "m" {
  provider = "scripted"
  model    = "scripted-m"
}
agent "clerk" {
  model        = model.m
  instructions = "x"
  max_risk     = "read"
}
agent "boss" {
  model        = model.m
  instructions = "x"
  max_risk     = "destructive"
}
skill "note" {
  description = "Write a note."
  effect      = "write"
  adapter "python" {
    entry_point = "n:write"
  }
  idempotency {
    key_header = "Idempotency-Key"
  }
  %(approval)s
}
binding "clerk_notes" {
  skill = skill.note
  to    = agent.clerk
}
workflow "w" {
  owner = agent.boss
  start = state.first
  %(states)s
  state "done" {
    end = "completed"
  }
}
"""


def policy_of(tmp_path: Path, states: str, approval: str = "") -> list[Diagnostic]:
    path = tmp_path / "w.hcl"
    path.write_text(SMALL % {"states": states, "approval": approval}, encoding="utf-8")
    _, analysis, earlier = analyse(path)
    assert earlier == []
    return run(POLICY_CHECKS, analysis)


def test_turn_skills_respect_the_agent_ceiling(tmp_path: Path) -> None:
    states = """state "first" {
    turn {
      agent  = agent.clerk
      goal   = "x"
      skills = [skill.note]
    }
    next = state.done
  }"""
    found = policy_of(tmp_path, states)
    assert codes(found) == ["OS502"]
    assert "risk ceiling `read` of agent `clerk`" in found[0].message


def test_action_with_its_own_actor_needs_its_own_grant(tmp_path: Path) -> None:
    states = """state "first" {
    action {
      skill = skill.note
      actor = agent.boss
    }
    next = state.done
  }"""
    found = policy_of(tmp_path, states)
    assert codes(found) == ["OS501"]
    assert "`agent.boss`" in found[0].message


def test_skill_approval_policy_applies_below_the_threshold(tmp_path: Path) -> None:
    # `write` is below the default threshold, but the skill asks for approval itself,
    # and an action inside a parallel branch is no way around it.
    states = """state "first" {
    parallel {
      branch "a" {
        action {
          skill = skill.note
          actor = agent.clerk
        }
      }
    }
    next = state.done
  }"""
    approval = "approval {\n    required = true\n  }"
    assert codes(policy_of(tmp_path, states)) == ["OS502"]  # the clerk may only read
    found = policy_of(tmp_path, states, approval)
    assert sorted(codes(found)) == ["OS502", "OS504"]
    (os504,) = [d for d in found if d.code == "OS504"]
    assert "`skill.note` requires approval" in os504.message
