"""Version identity: what changes a digest and what does not."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openseal.canonical import (
    canonical_bytes,
    digest_of,
    is_digest,
    normalise,
    pretty,
)
from openseal.compiler.analysis.build import build
from openseal.compiler.analysis.ir import Analysis
from openseal.compiler.definitions.specs import EFFECT_ORDER
from openseal.compiler.load import load_definitions
from openseal.compiler.output.emit import emit
from openseal.compiler.pipeline import compile_paths
from openseal.errors import CompileError
from tests.compiler.compile_support import (
    AGENT,
    BINDING,
    MODEL,
    SKILL,
    WORKFLOW_ITEMS,
    compile_texts,
    digests,
    project_text,
    workflow_text,
)

EXAMPLES = Path(__file__).resolve().parents[3] / "definitions"


# --------------------------------------------------------------------------- canonical JSON


def test_canonical_bytes_sort_keys_and_normalise_numbers() -> None:
    assert canonical_bytes({"b": 1, "a": [10.0, 0.5]}) == b'{"a":[10,0.5],"b":1}'
    assert digest_of({"a": 10}) == digest_of({"a": 10.0})
    assert digest_of({"a": 10}) != digest_of({"a": "10"})
    assert is_digest(digest_of({}))
    assert normalise({"x": (1.0, 2)}) == {"x": [1, 2]}


def test_pretty_text_has_the_same_canonical_bytes() -> None:
    document = {"z": 1.0, "a": {"é": [1, 2.5, None, True]}}
    import json

    assert canonical_bytes(json.loads(pretty(document))) == canonical_bytes(document)
    assert pretty(document).endswith("\n")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 2**60])
def test_values_json_cannot_carry_are_a_compile_error(value: object) -> None:
    with pytest.raises(CompileError, match="canonical JSON"):
        canonical_bytes({"x": value})


# --------------------------------------------------------------------------- parity


@pytest.mark.parametrize("example", ["procurement", "release_note", "budget_check"])
def test_hcl_and_yaml_twins_have_the_same_digests(example: str) -> None:
    hcl = compile_paths([EXAMPLES / example / "hcl"])
    yml = compile_paths([EXAMPLES / example / "yaml"])
    assert hcl.ok and yml.ok
    assert digests(hcl) == digests(yml)
    assert {k: d.canonical for k, d in hcl.documents.items()} == {
        k: d.canonical for k, d in yml.documents.items()
    }
    assert len(hcl.documents) >= 5


def test_moving_a_definition_to_another_file_keeps_its_digest(tmp_path: Path) -> None:
    one = compile_texts(tmp_path / "one", {"all.hcl": project_text()})
    split = {
        "a.hcl": MODEL + "\n" + AGENT,
        "b.hcl": SKILL,
        "sub/c.hcl": BINDING,
        "w.hcl": workflow_text(),
    }
    (tmp_path / "two" / "sub").mkdir(parents=True)
    two = compile_texts(tmp_path / "two", split)
    assert digests(one) == digests(two)


def test_rewriting_in_yaml_keeps_the_digest(tmp_path: Path) -> None:
    hcl = compile_texts(tmp_path / "h", {"all.hcl": project_text()})
    yaml_text = """
model:
  m: {provider: scripted, model: scripted-small}
skill:
  lookup:
    description: Look something up.
    effect: read
    input: "object({ q = string })"
    output: "object({ answer = string })"
    timeout: 10s
    adapter:
      http: {method: GET, url: "https://example.org/lookup?q=${args.q}"}
agent:
  helper: {model: model.m, instructions: Answer the question., max_risk: read}
binding:
  helper_looks_up: {skill: skill.lookup, to: agent.helper}
workflow:
  answer:
    owner: agent.helper
    start: state.think
    input:
      question: {type: string}
    state:
      failed: {end: failed}
      done: {end: completed}
      check:
        decision: {}
        branch:
          - {when: '${state.think.output.answer != ""}', next: state.done}
          - {next: state.failed}
      think:
        turn:
          agent: agent.helper
          goal: "Answer ${input.question}"
          skills: [skill.lookup]
          output: "object({ answer = string })"
        next: state.check
"""
    yml = compile_texts(tmp_path / "y", {"all.yaml": yaml_text})
    assert digests(hcl) == digests(yml)


_TRANSFORM = """state "shape" {
  transform {
    output = %s
  }
  next = state.think
}"""


@pytest.mark.parametrize(
    "objects",
    [
        ("{ x = 2, y = 1 }", "{ y = 1, x = 2 }"),
        (
            '{ b = { d = [{ f = 1, e = 2 }], c = "${input.question}" }, a = 0 }',
            '{ a = 0, b = { c = "${input.question}", d = [{ e = 2, f = 1 }] } }',
        ),
        ("{ x = 2, y = 1 }", '{ "y" = 1, "x" = 2 }'),
    ],
)
def test_object_key_order_does_not_change_the_digest(
    tmp_path: Path, objects: tuple[str, str]
) -> None:
    found = []
    for index, written in enumerate(objects):
        items = [*WORKFLOW_ITEMS, _TRANSFORM % written]
        items[1] = "start = state.shape"
        text = "\n".join([MODEL, SKILL, AGENT, BINDING, workflow_text(items)])
        found.append(digests(compile_texts(tmp_path / str(index), {"all.hcl": text})))
    assert found[0] == found[1]


def test_yaml_twin_with_object_keys_in_another_order_has_the_hcl_digest(tmp_path: Path) -> None:
    skill = SKILL.replace(
        'url    = "https://example.org/lookup?q=${args.q}"',
        'url    = "https://example.org/lookup"\n    body   = { q = args.q, limit = 3 }',
    )
    hcl = compile_texts(tmp_path / "h", {"s.hcl": skill})
    yaml_text = """
skill:
  lookup:
    description: Look something up.
    effect: read
    input: "object({ q = string })"
    output: "object({ answer = string })"
    timeout: 10s
    adapter:
      http: {method: GET, url: "https://example.org/lookup", body: {limit: 3, q: "${args.q}"}}
"""
    yml = compile_texts(tmp_path / "y", {"s.yaml": yaml_text})
    assert digests(hcl) == digests(yml)


# --------------------------------------------------------------------------- formatting


FILLERS = ["", "# a comment", "// another comment", "/* block comment */", "   "]


def _noisy(text: str, noise: list[str]) -> str:
    """Insert blank lines and comments between lines (never inside a line)."""
    out: list[str] = []
    for i, line in enumerate(text.splitlines()):
        out.append(line)
        if noise:
            out.append(noise[i % len(noise)])
    return "\n".join(out) + "\n"


def _compile_once(text: str) -> dict[str, str]:
    with (
        tempfile.TemporaryDirectory() as tmp,
        mock.patch.dict(os.environ, {"OPENSEAL_CACHE": "off"}),
    ):
        root = Path(tmp)
        (root / "openseal.project").write_text("", encoding="utf-8")
        (root / "defs.hcl").write_text(text, encoding="utf-8")
        result = compile_paths([root])
        assert result.ok, [str(d.message) for d in result.diagnostics]
        return digests(result)


BASELINE = _compile_once(project_text())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    blocks=st.permutations([MODEL, SKILL, AGENT, BINDING, "WORKFLOW"]),
    items=st.permutations(WORKFLOW_ITEMS),
    noise=st.lists(st.sampled_from(FILLERS), max_size=6),
)
def test_whitespace_comments_and_block_order_do_not_change_digests(
    blocks: list[str], items: list[str], noise: list[str]
) -> None:
    parts = [workflow_text(items) if b == "WORKFLOW" else b for b in blocks]
    text = _noisy("\n".join(parts), noise)
    assert _compile_once(text) == BASELINE


# --------------------------------------------------------------------------- every field counts


SMALL_YAML: dict[str, Any] = {
    "model": {"m": {"provider": "scripted", "model": "small", "parameters": {"temperature": 0}}},
    "skill": {
        "notify": {
            "description": "Notify someone.",
            "effect": "external",
            "input": "object({ to = string })",
            "credential": "mail",
            "timeout": "10s",
            "adapter": {"http": {"method": "POST", "url": "https://x.example/${args.to}"}},
            "retry": {"attempts": 2, "backoff": "2s"},
            "idempotency": {"key_header": "Idempotency-Key", "same_key_retry": True},
            "approval": {"required": True, "approvers": ["ops"], "expires_in": "1h"},
        }
    },
    "agent": {
        "a": {
            "model": "model.m",
            "instructions": "Be careful.",
            "max_risk": "external",
            "budget": {"turns": 3, "tokens": 1000},
        }
    },
    "binding": {"b": {"skill": "skill.notify", "to": "agent.a", "max_risk": "external"}},
    "workflow": {
        "w": {
            "owner": "agent.a",
            "start": "state.go",
            "budget": {"turns": 5},
            "input": {"who": {"type": "string", "description": "recipient"}},
            "state": {
                "go": {
                    "proposal": {"p": {"skill": "skill.notify", "args": {"to": "${input.who}"}}},
                    "next": "state.ok",
                },
                "ok": {"end": "completed"},
            },
        }
    },
}


def _emit_yaml(data: dict[str, Any]) -> dict[str, str] | None:
    """Digests of ``data`` as one YAML file (emit only: mutations need not resolve)."""
    with (
        tempfile.TemporaryDirectory() as tmp,
        mock.patch.dict(os.environ, {"OPENSEAL_CACHE": "off"}),
    ):
        path = Path(tmp) / "defs.yaml"
        path.write_text(yaml.safe_dump(data), encoding="utf-8")
        loaded = load_definitions([path])
        if not loaded.ok:
            return None
        analysis = Analysis({d.key: d for d in loaded.definitions})
        return {k: d.digest for k, d in emit(analysis, build(analysis)).items()}


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _leaves(v, (*path, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _leaves(v, (*path, i))]
    return [path]


def _mutated(data: dict[str, Any], path: tuple[Any, ...]) -> dict[str, Any]:
    import copy

    out = copy.deepcopy(data)
    node = out
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = _mutate(node[path[-1]])
    return out


def _mutate(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if value in EFFECT_ORDER:
        return EFFECT_ORDER[(EFFECT_ORDER.index(value) + 1) % len(EFFECT_ORDER)]
    if value in ("POST", "GET"):
        return "PUT"
    if value == "scripted":
        return "openai"
    if value in ("string", "object({ to = string })"):
        return "number" if value == "string" else "object({ to = number })"
    if isinstance(value, str) and value.endswith(("s", "h")) and value[:-1].isdigit():
        return f"{int(value[:-1]) + 1}{value[-1]}"
    if isinstance(value, str) and value.startswith(("state.", "model.", "skill.", "agent.")):
        return value + "x"
    return f"{value}x"


def test_changing_any_single_leaf_changes_some_digest() -> None:
    baseline = _emit_yaml(SMALL_YAML)
    assert baseline is not None and len(baseline) == 5
    leaves = _leaves(SMALL_YAML)
    tested = 0
    for path in leaves:
        mutated = _emit_yaml(_mutated(SMALL_YAML, path))
        if mutated is None:
            continue  # the mutation made the definition invalid; nothing to compare
        tested += 1
        owner = f"{path[0]}.{path[1]}"
        assert mutated[owner] != baseline[owner], f"changing {path} did not change {owner}"
    assert tested >= len(leaves) - 2, f"only {tested} of {len(leaves)} leaves could be mutated"


# --------------------------------------------------------------------------- dependencies


def test_a_dependency_change_changes_every_user_digest(tmp_path: Path) -> None:
    before = digests(compile_texts(tmp_path / "a", {"all.hcl": project_text()}))
    changed_skill = SKILL.replace("Look something up.", "Look something up, politely.")
    text = "\n".join([MODEL, changed_skill, AGENT, BINDING, workflow_text()])
    after = digests(compile_texts(tmp_path / "b", {"all.hcl": text}))
    assert after["skill.lookup"] != before["skill.lookup"]
    assert after["binding.helper_looks_up"] != before["binding.helper_looks_up"]
    assert after["workflow.answer"] != before["workflow.answer"]
    assert after["model.m"] == before["model.m"]
    assert after["agent.helper"] == before["agent.helper"]


def test_a_model_change_reaches_the_workflow_through_the_agent(tmp_path: Path) -> None:
    before = digests(compile_texts(tmp_path / "a", {"all.hcl": project_text()}))
    text = project_text().replace('"scripted-small"', '"scripted-large"')
    after = digests(compile_texts(tmp_path / "b", {"all.hcl": text}))
    assert {k for k in before if before[k] != after[k]} == {
        "model.m",
        "agent.helper",
        "binding.helper_looks_up",
        "workflow.answer",
    }


def test_compiling_twice_gives_identical_bytes() -> None:
    first = compile_paths([EXAMPLES / "procurement" / "hcl"])
    second = compile_paths([EXAMPLES / "procurement" / "hcl"])
    assert {k: d.canonical for k, d in first.documents.items()} == {
        k: d.canonical for k, d in second.documents.items()
    }
