"""A small, valid project used by the emit, digest, bundle, diff and CLI tests."""

from __future__ import annotations

from pathlib import Path

from openseal.compiler.pipeline import CompileResult, compile_paths

MODEL = """model "m" {
  provider = "scripted"
  model    = "scripted-small"
}
"""

SKILL = """skill "lookup" {
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
"""

AGENT = """agent "helper" {
  model        = model.m
  instructions = "Answer the question."
  max_risk     = "read"
}
"""

BINDING = """binding "helper_looks_up" {
  skill = skill.lookup
  to    = agent.helper
}
"""

#: The workflow as a header and items (attributes and blocks), so tests can reorder them.
WORKFLOW_HEADER = 'workflow "answer" {'
WORKFLOW_ITEMS = [
    "owner = agent.helper",
    "start = state.think",
    """input "question" {
  type = string
}""",
    """state "think" {
  turn {
    agent  = agent.helper
    goal   = "Answer ${input.question}"
    skills = [skill.lookup]
    output = object({ answer = string })
  }
  next = state.check
}""",
    """state "check" {
  decision {}
  branch {
    when = state.think.output.answer != ""
    next = state.done
  }
  branch {
    next = state.failed
  }
}""",
    """state "done" {
  end = "completed"
}""",
    """state "failed" {
  end = "failed"
}""",
]


def workflow_text(items: list[str] | None = None) -> str:
    body = "\n".join(items if items is not None else WORKFLOW_ITEMS)
    return f"{WORKFLOW_HEADER}\n{body}\n}}\n"


def project_text() -> str:
    return "\n".join([MODEL, SKILL, AGENT, BINDING, workflow_text()])


def write_project(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "openseal.project").write_text("", encoding="utf-8")
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def compile_texts(root: Path, files: dict[str, str]) -> CompileResult:
    """Write ``files`` into a project at ``root`` and compile it; assert it compiled."""
    result = compile_paths([write_project(root, files)])
    assert result.ok, [f"{d.code} {d.message} at {d.span}" for d in result.diagnostics]
    return result


def digests(result: CompileResult) -> dict[str, str]:
    return {key: doc.digest for key, doc in result.documents.items()}
