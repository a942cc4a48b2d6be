"""Small compiled definition sets for the governance tests: one workflow, its agent, a policy."""

from __future__ import annotations

from pathlib import Path

from openseal.compiler.output.document import CompiledDocument
from openseal.compiler.pipeline import compile_paths

WORKFLOW = "answer"

DEFINITIONS = """model "m" {
  provider = "scripted"
  model    = "scripted-small"
}

skill "lookup" {
  description = "Look something up."
  effect      = "read"
  input       = object({ q = string })
  output      = object({ answer = string })
  timeout     = "10s"
  adapter "http" {
    method = "GET"
    url    = "https://example.org/lookup?q=${args.q}"
  }
}

agent "helper" {
  model        = model.m
  instructions = "%(instructions)s"
  max_risk     = "%(max_risk)s"
}

binding "helper_looks_up" {
  skill = skill.lookup
  to    = agent.helper
}

workflow "answer" {
  owner = agent.helper
  start = state.think
  input "question" {
    type = string
  }
  state "think" {
    turn {
      agent  = agent.helper
      goal   = "Answer ${input.question}"
      skills = [skill.lookup]
      output = object({ answer = string })
    }
    next = state.done
  }
  state "done" {
    end = "completed"
  }
}
"""


def governance_yaml(
    *,
    reviewers: tuple[str, ...] = ("user:bob",),
    deciders: tuple[str, ...] = ("user:carol",),
    required_reviews: int = 1,
    auto_approve_narrowing: bool = False,
    name: str = "production",
) -> str:
    def items(values: tuple[str, ...]) -> str:
        return "[" + ", ".join(f'"{v}"' for v in values) + "]"

    return (
        f"governance:\n  {name}:\n"
        f"    reviewers: {items(reviewers)}\n"
        f"    deciders: {items(deciders)}\n"
        f"    required_reviews: {required_reviews}\n"
        f"    auto_approve_narrowing: {'true' if auto_approve_narrowing else 'false'}\n"
    )


def compile_set(
    directory: Path,
    *,
    max_risk: str = "write",
    instructions: str = "Answer the question.",
    governance: str | None = None,
    triggers: str = "",
) -> dict[str, CompiledDocument]:
    """Compile the definitions (and optionally a governance YAML file) written into ``directory``.

    ``max_risk`` is the lever: raising it widens risk, lowering it narrows.
    """
    directory.mkdir(parents=True, exist_ok=True)
    text = DEFINITIONS % {"max_risk": max_risk, "instructions": instructions} + triggers
    (directory / "defs.hcl").write_text(text, encoding="utf-8")
    if governance is not None:
        (directory / "governance.yaml").write_text(governance, encoding="utf-8")
    result = compile_paths([directory])
    assert result.ok, [str(d) for d in result.diagnostics]
    return result.documents


def key(documents: dict[str, CompiledDocument], ref: str) -> str:
    """The store key (bare hex digest) of ``ref`` (``kind.name``) in a compile result."""
    return documents[ref].digest.removeprefix("sha256:")


def without_lookup(directory: Path) -> dict[str, CompiledDocument]:
    """The test workflow without its skill, its binding and its model (another one instead)."""
    text = DEFINITIONS % {"max_risk": "write", "instructions": "Answer."}
    skill_start = text.index('skill "lookup"')
    text = text[:skill_start] + text[text.index('agent "helper"') :]
    binding_start = text.index('binding "helper_looks_up"')
    text = text[:binding_start] + text[text.index('workflow "answer"') :]
    text = text.replace("skills = [skill.lookup]", "skills = []")
    text = text.replace('model "m" {', 'model "m2" {').replace("model.m\n", "model.m2\n")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "defs.hcl").write_text(text, encoding="utf-8")
    result = compile_paths([directory])
    assert result.ok, [str(d) for d in result.diagnostics]
    return result.documents
