"""What the model is given besides the prompt: the generated reference and the catalogue."""

from __future__ import annotations

import json
from pathlib import Path

from openseal.authoring.catalogue import catalogue, governance_policy
from openseal.authoring.drafts import compile_draft, read_answer
from openseal.authoring.reference import language_guide, language_reference
from openseal.compiler.pipeline import compile_paths
from tests.authoring.support import GOOD, ROOT

SCHEMA = ROOT / "schemas" / "definitions.schema.json"


def test_the_reference_is_the_guide_and_the_committed_schema() -> None:
    reference = language_reference()
    guide = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
    assert language_guide() == guide
    assert guide.strip() in reference
    committed = json.loads(SCHEMA.read_text(encoding="utf-8"))
    compact = json.dumps(committed, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert compact in reference


def test_the_catalogue_gives_each_skill_its_risk_and_hides_endpoints() -> None:
    result = compile_paths([ROOT / "definitions" / "release_note" / "hcl"])
    documents = {key: doc.document for key, doc in result.documents.items()}
    entries = {e["reference"]: e for e in catalogue(documents)}
    send = entries["skill.send_email"]
    assert send["effect"] == "external" and send["risk"] == "3 of 5"
    assert send["approval"]["approvers"] == ["release-managers"]
    assert send["input"]["required"] == ["body", "subject", "to"]
    assert entries["binding.writer_sends_email"]["to"] == "agent.release_writer"
    assert entries["workflow.release_note"]["owner"] == "agent.release_writer"
    assert entries["model.writer_default"] == {
        "kind": "model", "name": "writer_default", "reference": "model.writer_default",
        "provider": "scripted",
    }  # fmt: skip
    assert governance_policy(documents) == []


def test_an_answer_outside_the_required_shape_lists_its_problems(tmp_path: Path) -> None:
    assert read_answer("prose", syntax="hcl", existing=None, overwrite=False).problems
    answer = read_answer(
        {"files": [
            {"path": "../escape.hcl", "syntax": "hcl", "content": "x"},
            {"path": "a.yaml", "syntax": "hcl", "content": "x"},
            {"path": ".hidden/a.hcl", "syntax": "hcl", "content": "x"},
        ]},
        syntax="hcl", existing=tmp_path, overwrite=False,
    )  # fmt: skip
    assert answer.problems == (
        "../escape.hcl: a path is relative to the definitions and stays inside them",
        "a.yaml: a hcl file's name ends in .hcl",
        ".hidden/a.hcl: hidden files and directories are not read by the compiler",
    )
    extra = read_answer({"files": [], "notes": 1}, syntax="hcl", existing=None, overwrite=False)
    assert extra.problems and not extra.files


def test_a_draft_alone_compiles_in_memory_and_names_its_files_as_given(tmp_path: Path) -> None:
    model = 'model "m" {\n  provider = "scripted"\n  model = "x"\n}\n'
    draft = read_answer(
        {"files": [{"path": "agents/a.hcl", "syntax": "hcl",
                    "content": GOOD.replace("procurement_default", "m")},
                   {"path": "models.hcl", "syntax": "hcl", "content": model}]},
        syntax="hcl", existing=None, overwrite=False,
    )  # fmt: skip
    assert draft.problems == ()
    compiled = compile_draft(None, draft.files)
    assert compiled.ok, compiled.diagnostics
    assert sorted(compiled.documents) == ["agent.auditor", "model.m"]
    broken = compile_draft(tmp_path / "new", draft.files[:1])
    assert [d.code for d in broken.diagnostics] == ["OS201"]
    assert broken.diagnostics[0].span.file == f"{tmp_path / 'new'}/agents/a.hcl"
    assert list(tmp_path.iterdir()) == []  # nothing was written
