"""Generated definitions for the compiler and cache benchmarks, in HCL and YAML.

A workflow of N states: one model turn, then transforms with a decision every tenth
state and at the end (so guards and typed references are exercised, not only blocks), ending in
``done`` or ``failed``. The HCL and YAML forms describe the same project.
"""

from __future__ import annotations

from pathlib import Path

from openseal.compiler.pipeline import compile_paths

PREAMBLE_HCL = """model "m" {
  provider = "scripted"
  model    = "scripted-small"
}

skill "lookup" {
  description = "Look something up."
  effect      = "read"
  input       = object({ q = string })
  output      = object({ answer = string })
  timeout     = "10s"
  adapter "python" {
    entry_point = "bench.skills:noop"
  }
}

agent "helper" {
  model        = model.m
  instructions = "Answer the question."
  max_risk     = "read"
}

binding "helper_looks_up" {
  skill = skill.lookup
  to    = agent.helper
}
"""

PREAMBLE_YAML = """model:
  m: {provider: scripted, model: scripted-small}
skill:
  lookup:
    description: Look something up.
    effect: read
    input: object({ q = string })
    output: object({ answer = string })
    timeout: 10s
    adapter: {python: {entry_point: "bench.skills:noop"}}
agent:
  helper: {model: model.m, instructions: Answer the question., max_risk: read}
binding:
  helper_looks_up: {skill: skill.lookup, to: agent.helper}
"""


def _middle_names(states: int) -> list[str]:
    if states < 4:
        raise ValueError("a generated workflow needs at least 4 states")
    return [f"s{i}" for i in range(states - 2)]


def _is_decision(names: list[str], i: int) -> bool:
    # the last middle state always branches, so `failed` is reachable in every size
    return i % 10 == 0 or i == len(names) - 1


def _next(names: list[str], i: int) -> str:
    return names[i + 1] if i + 1 < len(names) else "done"


def workflow_hcl(states: int, name: str = "generated") -> str:
    names = _middle_names(states)
    parts = [
        f'workflow "{name}" {{',
        "  owner = agent.helper",
        f"  start = state.{names[0]}",
        '  input "question" {\n    type = string\n  }',
        f'  state "{names[0]}" {{\n    turn {{\n      agent  = agent.helper\n'
        '      goal   = "Answer ${input.question}"\n      skills = [skill.lookup]\n'
        "      output = object({ answer = string, score = number })\n    }\n"
        f"    next = state.{_next(names, 0)}\n  }}",
    ]
    for i in range(1, len(names)):
        following = _next(names, i)
        if _is_decision(names, i):
            parts.append(
                f'  state "{names[i]}" {{\n    decision {{}}\n'
                f"    branch {{\n      when = state.s0.output.score > {i}\n"
                f"      next = state.{following}\n    }}\n"
                "    branch {\n      next = state.failed\n    }\n  }"
            )
        else:
            parts.append(
                f'  state "{names[i]}" {{\n    transform {{\n'
                f"      output = {{ total = state.s0.output.score + {i}, "
                f'label = "${{input.question}}-{i}" }}\n'
                f"    }}\n    next = state.{following}\n  }}"
            )
    parts.append('  state "done" {\n    end = "completed"\n  }')
    parts.append('  state "failed" {\n    end = "failed"\n  }')
    return "\n".join(parts) + "\n}\n"


def workflow_yaml(states: int, name: str = "generated") -> str:
    names = _middle_names(states)
    lines = [
        "workflow:",
        f"  {name}:",
        "    owner: agent.helper",
        f"    start: state.{names[0]}",
        "    input: {question: {type: string}}",
        "    state:",
        f"      {names[0]}:",
        "        turn:",
        "          agent: agent.helper",
        "          goal: Answer ${input.question}",
        "          skills: [skill.lookup]",
        "          output: object({ answer = string, score = number })",
        f"        next: state.{_next(names, 0)}",
    ]
    for i in range(1, len(names)):
        following = _next(names, i)
        lines.append(f"      {names[i]}:")
        if _is_decision(names, i):
            lines += [
                "        decision: {}",
                "        branch:",
                f"          - {{when: '${{state.s0.output.score > {i}}}', "
                f"next: state.{following}}}",
                "          - {next: state.failed}",
            ]
        else:
            lines += [
                "        transform:",
                f"          output: {{total: '${{state.s0.output.score + {i}}}', "
                f"label: '${{input.question}}-{i}'}}",
                f"        next: state.{following}",
            ]
    lines += ["      done: {end: completed}", "      failed: {end: failed}"]
    return "\n".join(lines) + "\n"


def write_project(directory: Path, states: int, syntax: str) -> Path:
    """One project directory holding one file with the preamble and the workflow."""
    directory.mkdir(parents=True, exist_ok=True)
    if syntax == "hcl":
        text = PREAMBLE_HCL + "\n" + workflow_hcl(states)
    else:
        text = PREAMBLE_YAML + workflow_yaml(states)
    path = directory / f"workflow_{states}.{syntax}"
    path.write_text(text, encoding="utf-8")
    return path


def write_many(directory: Path, files: int) -> list[Path]:
    """``files`` HCL files forming one project: the preamble, then small workflows."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / "preamble.hcl"]
    paths[0].write_text(PREAMBLE_HCL, encoding="utf-8")
    for i in range(1, files):
        path = directory / f"workflow_{i:04d}.hcl"
        path.write_text(workflow_hcl(5, name=f"w{i:04d}"), encoding="utf-8")
        paths.append(path)
    return paths


def write_large_file(directory: Path, size: int) -> Path:
    """One project directory holding one HCL file of about ``size`` bytes.

    The preamble, then as many small workflows as fit: many definitions in one
    file, which is what made decoding quadratic.
    """
    directory.mkdir(parents=True, exist_ok=True)
    parts = [PREAMBLE_HCL]
    total = len(PREAMBLE_HCL)
    index = 0
    while total < size:
        index += 1
        part = "\n" + workflow_hcl(5, name=f"w{index:06d}")
        parts.append(part)
        total += len(part)
    path = directory / f"large_{size}.hcl"
    path.write_text("".join(parts), encoding="utf-8")
    return path


def compile_once(project: Path) -> None:
    """Compile ``project``; a generated project that does not compile is a benchmark bug."""
    result = compile_paths([project])
    if not result.ok:
        first = result.diagnostics[0]
        raise RuntimeError(f"generated project does not compile: {first.code} {first.message}")
