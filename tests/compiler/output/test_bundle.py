"""Bundles: deterministic files, a manifest with source digests, verified reads."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jsonschema
import pytest

from openseal import compiler
from openseal.canonical import sha256_digest
from openseal.compiler.output.bundle import (
    MANIFEST,
    BundleError,
    read_bundle,
    write_bundle,
)
from openseal.compiler.output.schemas import manifest_schema
from tests.compiler.compile_support import compile_texts, project_text


def _bundle(tmp_path: Path, out: Path) -> dict[str, object]:
    """The compiler's face writes a compile result with its sources' digests."""
    result = compile_texts(tmp_path / "src", {"all.hcl": project_text()})
    return compiler.write_bundle(result, out, tmp_path)


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_layout_and_manifest(tmp_path: Path) -> None:
    out = tmp_path / "build"
    manifest = _bundle(tmp_path, out)
    assert set(_tree(out)) == {
        "manifest.json",
        "model/m.json",
        "skill/lookup.json",
        "agent/helper.json",
        "binding/helper_looks_up.json",
        "workflow/answer.json",
    }
    on_disk = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    assert on_disk == manifest
    jsonschema.validate(on_disk, manifest_schema())
    assert on_disk["definitions"]["workflow.answer"]["path"] == "workflow/answer.json"
    source = (tmp_path / "src" / "all.hcl").read_bytes()
    assert on_disk["sources"] == {"src/all.hcl": sha256_digest(source)}


def test_source_digests_are_not_in_documents(tmp_path: Path) -> None:
    out = tmp_path / "build"
    _bundle(tmp_path, out)
    text = (out / "workflow" / "answer.json").read_text(encoding="utf-8")
    assert "all.hcl" not in text and "sources" not in json.loads(text)


def test_writing_twice_gives_identical_bytes(tmp_path: Path) -> None:
    _bundle(tmp_path, tmp_path / "one")
    _bundle(tmp_path, tmp_path / "two")
    assert _tree(tmp_path / "one") == _tree(tmp_path / "two")


def test_read_bundle_round_trips_digests(tmp_path: Path) -> None:
    result = compile_texts(tmp_path / "src", {"all.hcl": project_text()})
    write_bundle(result.documents, tmp_path / "b")
    bundle = read_bundle(tmp_path / "b")
    assert {k: e.digest for k, e in bundle.entries.items()} == {
        k: d.digest for k, d in result.documents.items()
    }
    assert bundle.documents == {k: d.document for k, d in result.documents.items()}


def test_a_tampered_document_is_refused(tmp_path: Path) -> None:
    _bundle(tmp_path, tmp_path / "b")
    path = tmp_path / "b" / "skill" / "lookup.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    document["spec"]["effect"] = "destructive"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(BundleError, match=r"lookup\.json does not match its digest"):
        read_bundle(tmp_path / "b")


def test_reformatting_a_document_file_still_verifies(tmp_path: Path) -> None:
    _bundle(tmp_path, tmp_path / "b")
    path = tmp_path / "b" / "skill" / "lookup.json"
    path.write_text(json.dumps(json.loads(path.read_text(encoding="utf-8"))), encoding="utf-8")
    assert "skill.lookup" in read_bundle(tmp_path / "b").entries


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda m: m.pop("definitions"), "`definitions` must be an object"),
        (lambda m: m.update(apiVersion="v0"), "not an openseal bundle manifest"),
        (
            lambda m: m["definitions"]["skill.lookup"].update(path="../../etc/passwd.json"),
            "must be <kind>/<name>.json",
        ),
        (lambda m: m["definitions"]["skill.lookup"].update(digest="md5:x"), "not a sha256"),
        (lambda m: m["definitions"]["skill.lookup"].update(name="other"), "do not match the key"),
    ],
)
def test_a_malformed_manifest_is_a_clear_error(tmp_path: Path, edit: object, message: str) -> None:
    _bundle(tmp_path, tmp_path / "b")
    path = tmp_path / "b" / MANIFEST
    manifest = json.loads(path.read_text(encoding="utf-8"))
    edit(manifest)  # type: ignore[operator]
    path.write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(BundleError, match=message):
        read_bundle(tmp_path / "b")


def test_missing_manifest_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="no such file"):
        read_bundle(tmp_path)
    _bundle(tmp_path, tmp_path / "b")
    (tmp_path / "b" / "agent" / "helper.json").unlink()
    with pytest.raises(BundleError, match=r"helper\.json: no such file"):
        read_bundle(tmp_path / "b")
    (tmp_path / "b" / MANIFEST).write_text("{not json", encoding="utf-8")
    with pytest.raises(BundleError, match="not valid JSON"):
        read_bundle(tmp_path / "b")


def test_stale_files_it_owns_are_removed_others_kept(tmp_path: Path) -> None:
    out = tmp_path / "b"
    _bundle(tmp_path, out)
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    result = compile_texts(tmp_path / "src", {"all.hcl": project_text()})
    smaller = {k: d for k, d in result.documents.items() if k != "skill.lookup"}
    manifest = write_bundle(smaller, out)
    assert not (out / "skill").exists()
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert "skill.lookup" not in manifest["definitions"]
    assert set(read_bundle(out).entries) == set(smaller)


def _with_a_name_too_long(documents: dict[str, object]) -> dict[str, object]:
    """The documents plus one whose file name the file system refuses (past 255 bytes), as
    only a document made without the compiler (which refuses such names, OS110) can be."""
    model = documents["model.m"]
    long = dataclasses.replace(model, name="m" * 300)  # type: ignore[type-var]
    return {**documents, "model." + "m" * 300: long}


def test_a_failed_write_leaves_the_previous_bundle_untouched(tmp_path: Path) -> None:
    out = tmp_path / "build"
    _bundle(tmp_path, out)
    before = _tree(out)
    result = compile_texts(tmp_path / "next", {"all.hcl": project_text().replace("10s", "20s")})
    with pytest.raises(BundleError, match="cannot write the bundle"):
        write_bundle(_with_a_name_too_long(dict(result.documents)), out)  # type: ignore[arg-type]
    assert _tree(out) == before  # not one new document, and no staging left behind
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["manifest.json", "model", "skill", "agent", "binding", "workflow"]
    )
    read_bundle(out)


def test_a_failed_first_write_leaves_no_directory(tmp_path: Path) -> None:
    result = compile_texts(tmp_path / "src", {"all.hcl": project_text()})
    out = tmp_path / "build"
    with pytest.raises(BundleError, match="cannot write the bundle"):
        write_bundle(_with_a_name_too_long(dict(result.documents)), out)  # type: ignore[arg-type]
    assert not out.exists()
