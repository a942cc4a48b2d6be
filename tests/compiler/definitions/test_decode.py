"""The definition model: decoding both syntaxes, located errors, parity."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.compiler.definitions.decode import decode, written_keys
from openseal.compiler.definitions.labels import block_labels
from openseal.compiler.definitions.specs import SkillSpec, WorkflowSpec
from openseal.compiler.load import load_definitions
from openseal.compiler.syntax.fold import fold
from openseal.compiler.syntax.load_hcl import load_hcl

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "definitions"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def codes(result: object) -> list[str]:
    return [d.code for d in result.diagnostics]  # type: ignore[attr-defined]


@pytest.mark.parametrize("example", ["procurement", "release_note", "budget_check"])
def test_examples_are_clean_in_both_syntaxes(example: str) -> None:
    for syntax in ("hcl", "yaml"):
        result = load_definitions([EXAMPLES / example / syntax])
        assert result.diagnostics == [], (syntax, result.diagnostics)
        assert result.definitions


@pytest.mark.parametrize("example", ["procurement", "release_note", "budget_check"])
def test_hcl_and_yaml_give_equal_models(example: str) -> None:
    hcl = load_definitions([EXAMPLES / example / "hcl"])
    yaml = load_definitions([EXAMPLES / example / "yaml"])
    by_key_hcl = {d.key: d.spec for d in hcl.definitions}
    by_key_yaml = {d.key: d.spec for d in yaml.definitions}
    assert by_key_hcl.keys() == by_key_yaml.keys()
    for key, spec in by_key_hcl.items():
        assert spec == by_key_yaml[key], key


def test_parity_is_not_vacuous(tmp_path: Path) -> None:
    # A one-character difference between the syntaxes must make the models differ.
    hcl = write(tmp_path, "a.hcl", 'agent "a" {\n  model = model.m\n  instructions = "hi"\n}\n')
    yaml = write(tmp_path, "b.yaml", "agent:\n  a:\n    model: model.m\n    instructions: ho\n")
    left = load_definitions([hcl]).definitions[0].spec
    right = load_definitions([yaml]).definitions[0].spec
    assert left != right


def test_workflow_fields_are_parsed(tmp_path: Path) -> None:
    result = load_definitions([EXAMPLES / "procurement" / "hcl"])
    workflow = next(d.spec for d in result.definitions if d.key == "workflow.procure_laptops")
    assert isinstance(workflow, WorkflowSpec)
    assert workflow.start.root == "state" and workflow.start.path == ("research",)
    review = workflow.state["review"]
    assert review.kind == "approval"
    assert review.approval is not None and review.approval.expires_in == 72 * 3600
    assert set(review.on) == {"approved", "rejected", "changes_requested", "expired"}
    assert len(workflow.state["check_budget"].branch) == 2
    skill = next(d.spec for d in result.definitions if d.key == "skill.submit_purchase_order")
    assert isinstance(skill, SkillSpec)
    assert skill.idempotency is not None and skill.idempotency.key_header == "Idempotency-Key"


def test_instructions_from_file_are_read_relative_to_the_definition() -> None:
    result = load_definitions([EXAMPLES / "procurement" / "yaml"])
    agent = next(d.spec for d in result.definitions if d.key == "agent.researcher")
    assert "search_vendors" in agent.instructions  # type: ignore[attr-defined]


def test_unknown_key_names_allowed_keys_and_suggests(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "s.hcl",
        'skill "s" {\n  description = "d"\n  efect = "read"\n'
        '  adapter "python" {\n    entry_point = "m:f"\n  }\n}\n',
    )
    result = load_definitions([path])
    unknown = [d for d in result.diagnostics if d.code == "OS101"]
    assert len(unknown) == 1
    assert "`efect`" in unknown[0].message and "`effect`" in unknown[0].message
    assert unknown[0].suggestion == "did you mean `effect`?"
    assert (unknown[0].span.line, unknown[0].span.column) == (3, 3)


def test_unknown_key_in_yaml_points_at_the_key(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "s.yaml",
        "skill:\n  s:\n    description: d\n    effect: read\n    adapter:\n"
        "      python: {entry_point: 'm:f', entrypoint: x}\n",
    )
    result = load_definitions([path])
    (diag,) = [d for d in result.diagnostics if d.code == "OS101"]
    assert diag.span.line == 6
    assert diag.suggestion == "did you mean `entry_point`?"


def test_missing_key_and_bad_choice(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "s.hcl",
        'skill "s" {\n  effect = "reed"\n  adapter "python" {\n    entry_point = "m:f"\n  }\n}\n',
    )
    result = load_definitions([path])
    assert sorted(codes(result)) == ["OS102", "OS104"]
    bad = next(d for d in result.diagnostics if d.code == "OS104")
    assert bad.span.line == 2 and bad.suggestion == "did you mean `read`?"


def test_state_must_have_exactly_one_kind(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "w.yaml",
        "workflow:\n  w:\n    owner: agent.a\n    start: state.a\n    state:\n"
        "      a: {end: completed, transform: {output: 1}}\n",
    )
    result = load_definitions([path])
    (diag,) = result.diagnostics
    assert diag.code == "OS104" and "exactly one" in diag.message
    assert diag.span.line == 6


def test_unknown_kind(tmp_path: Path) -> None:
    path = write(tmp_path, "x.hcl", 'agnet "a" {\n}\n')
    (diag,) = load_definitions([path]).diagnostics
    assert diag.code == "OS109" and diag.suggestion == "did you mean `agent`?"


def test_duplicate_definition_across_files(tmp_path: Path) -> None:
    body = 'agent "a" {\n  model = model.m\n  instructions = "x"\n}\n'
    write(tmp_path, "one.hcl", body)
    write(tmp_path, "two.hcl", body)
    result = load_definitions([tmp_path])
    (diag,) = result.diagnostics
    assert diag.code == "OS105"
    assert diag.related and diag.related[0].span.file.endswith("one.hcl")


def test_project_markers_separate_namespaces(tmp_path: Path) -> None:
    body = 'agent "a" {\n  model = model.m\n  instructions = "x"\n}\n'
    for name in ("p1", "p2"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "openseal.project").write_text("")
        write(tmp_path / name, "a.hcl", body)
    assert load_definitions([tmp_path]).diagnostics == []


def test_duplicate_labelled_blocks(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "t.hcl",
        'team "t" {\n  role "r" {\n    agent = agent.a\n  }\n'
        '  role "r" {\n    agent = agent.b\n  }\n}\n',
    )
    (diag,) = load_definitions([path]).diagnostics
    assert diag.code == "OS011" and diag.span.line == 5
    assert diag.related[0].span.line == 2


def test_a_misspelt_key_in_a_dropped_duplicate_is_still_reported(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "a.hcl",
        'agent "r" {\n  model = model.m\n  instructions = "x"\n}\n\n'
        'agent "r" {\n  model = model.m\n  instrutcions = "y"\n}\n',
    )
    diagnostics = load_definitions([path]).diagnostics
    assert [d.code for d in diagnostics] == ["OS011", "OS101"]
    unknown = diagnostics[1]
    assert unknown.message.startswith("unknown key `instrutcions`; allowed keys: ")
    assert (unknown.span.line, unknown.span.column) == (8, 3)
    assert unknown.suggestion == "did you mean `instructions`?"


def test_a_duplicate_with_only_known_keys_is_one_diagnostic(tmp_path: Path) -> None:
    path = write(tmp_path, "a.hcl", 'agent "r" {\n  model = model.m\n  instructions = "x"\n}\n' * 2)
    assert [d.code for d in load_definitions([path]).diagnostics] == ["OS011"]


def test_bad_duration_and_reference(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "w.yaml",
        "workflow:\n  w:\n    owner: 1 + 2\n    start: state.a\n    state:\n"
        "      a:\n        wait: {timer: 3 days}\n        next: state.b\n"
        "      b: {end: completed}\n",
    )
    result = load_definitions([path])
    messages = {d.span.line: d.message for d in result.diagnostics}
    assert "reference" in messages[3]
    assert "duration" in messages[7]


def test_file_function_missing_file(tmp_path: Path) -> None:
    path = write(
        tmp_path, "a.hcl", 'agent "a" {\n  model = model.m\n  instructions = file("nope.md")\n}\n'
    )
    (diag,) = load_definitions([path]).diagnostics
    assert diag.code == "OS108" and diag.span.line == 3


def test_directory_without_definitions(tmp_path: Path) -> None:
    (diag,) = load_definitions([tmp_path]).diagnostics
    assert diag.code == "OS009"


def test_decoding_lets_each_definitions_data_go_and_still_locates_errors() -> None:
    text = (
        'agent "a" {\n  model = model.m\n  instructions = "x"\n}\n'
        'agent "b" {\n  model = model.m\n  instrucions = "x"\n}\n'
    )
    document, found = load_hcl(text, "a.hcl")
    assert document is not None and found == []
    folded, _ = fold(document.body, block_labels)
    definitions, diagnostics = decode(folded, "a.hcl")
    assert [d.name for d in definitions] == ["a"]
    assert folded.data == {"agent": {"a": None, "b": None}}
    assert written_keys(folded) == {"agent.a", "agent.b"}
    # the spans inside each definition went with it; its key spans are packed in it
    assert all(len(path) <= 2 for path in [*folded.keys, *folded.values])
    assert definitions[0].key_spans[("instructions",)].line == 3
    located = {(d.code, d.span.line, d.span.column) for d in diagnostics}
    assert ("OS101", 7, 3) in located and ("OS102", 5, 7) in located
