"""The ``migrate`` block: one model in both syntaxes, checked against the earlier version's
compiled graph (``OS6xx``), located in the new version's source."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from openseal.compiler import CompileResult, check_migrations, compile_paths, find_earlier

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "definitions" / "procurement"
WORKFLOW = "workflow.procure_laptops"

MAPPED = """  migrate {
    version = "%(version)s"
    state "review" {
      to    = state.review
      carry = { research = state.research.output }
    }
    leave = ["submit"]
  }
"""

MAPPED_YAML = """    migrate:
      version: "%(version)s"
      state:
        review:
          to: state.review
          carry: {research: "${state.research.output}"}
      leave: [submit]
"""

#: a second approval after the order is submitted (an effect before it)
CONFIRM = """  state "confirm" {
    approval {
      proposal  = proposal.order
      approvers = ["requester"]
    }
    on "approved" {
      next = state.done
    }
    on "rejected" {
      next = state.done
    }
    on "changes_requested" {
      next = state.done
    }
    on "expired" {
      next = state.done
    }
  }
"""


@pytest.fixture(name="earlier")
def earlier_fixture(tmp_path: Path) -> tuple[Path, dict[str, Mapping[str, Any]]]:
    """A project copied from the procurement example, and its compiled workflow by digest."""
    root = tmp_path / "procurement"
    shutil.copytree(EXAMPLE, root)
    (root / ".git").mkdir()
    result = compile_paths([root / "hcl"])
    assert result.ok
    document = result.documents[WORKFLOW]
    return root, {document.digest: document.document}


def _digest(versions: Mapping[str, Any]) -> str:
    return next(iter(versions)).removeprefix("sha256:")


def _write(root: Path, block: str, *, replace: tuple[str, str] | None = None) -> Path:
    path = root / "hcl" / "workflow.hcl"
    text = path.read_text(encoding="utf-8")
    if replace is not None:
        assert replace[0] in text
        text = text.replace(*replace)
    path.write_text(text.replace('  state "done" {', block + '\n  state "done" {'), "utf-8")
    return path


def _compile(root: Path, versions: Mapping[str, Mapping[str, Any]]) -> CompileResult:
    return compile_paths([root / "hcl"], earlier=lambda name: versions)


def _codes(result: CompileResult) -> list[str]:
    return [d.code for d in result.diagnostics]


def test_a_mapped_migration_compiles_alike_in_both_syntaxes(
    earlier: tuple[Path, dict[str, Mapping[str, Any]]],
) -> None:
    root, versions = earlier
    version = _digest(versions)[:10]
    _write(root, MAPPED % {"version": version})
    yaml = root / "yaml" / "workflow.yaml"
    yaml.write_text(yaml.read_text("utf-8") + MAPPED_YAML % {"version": version}, "utf-8")
    hcl, from_yaml = _compile(root, versions), compile_paths([root / "yaml"])
    assert hcl.ok and from_yaml.ok, hcl.diagnostics + from_yaml.diagnostics
    assert hcl.documents[WORKFLOW].digest == from_yaml.documents[WORKFLOW].digest
    assert hcl.documents[WORKFLOW].digest not in versions  # the block is part of the version
    [block] = hcl.documents[WORKFLOW].document["spec"]["migrate"]
    assert block["state"]["review"]["to"] == "state.review"
    assert block["leave"] == ["submit"]


def test_an_unmapped_waiting_state_is_refused_at_the_block(
    earlier: tuple[Path, dict[str, Mapping[str, Any]]],
) -> None:
    root, versions = earlier
    block = MAPPED % {"version": _digest(versions)[:8]}
    path = _write(root, block.replace('    leave = ["submit"]\n', ""))
    result = _compile(root, versions)
    [found] = result.diagnostics
    assert found.code == "OS602"
    assert "`submit`" in found.message and found.suggestion == 'leave = ["submit"]'
    lines = path.read_text("utf-8").splitlines()
    assert lines[found.span.line - 1].strip().startswith("version")
    assert result.documents == {}


def test_a_carried_value_of_the_wrong_type_is_refused_where_it_is_written(
    earlier: tuple[Path, dict[str, Mapping[str, Any]]],
) -> None:
    root, versions = earlier
    block = MAPPED % {"version": _digest(versions)}
    path = _write(root, block.replace("state.research.output }", "state.research.output.vendor }"))
    result = _compile(root, versions)
    [found] = result.diagnostics
    assert found.code == "OS604"
    assert "`state.research.output.vendor` is string" in found.message
    line = path.read_text("utf-8").splitlines()[found.span.line - 1]
    assert line[found.span.column - 1 :].startswith("state.research.output.vendor")


def test_a_move_past_an_effect_is_refused(
    earlier: tuple[Path, dict[str, Mapping[str, Any]]],
) -> None:
    root, versions = earlier
    block = MAPPED % {"version": _digest(versions)}
    _write(
        root,
        CONFIRM + block.replace("to    = state.review", "to    = state.confirm"),
        replace=("      proposal = proposal.order\n    }\n    next = state.done",
                 "      proposal = proposal.order\n    }\n    next = state.confirm"),
    )  # fmt: skip
    result = _compile(root, versions)
    [found] = result.diagnostics
    assert found.code == "OS605"
    assert "state `submit` (skill `submit_purchase_order`) before `confirm`" in found.message


def test_unknown_states_versions_and_kinds_that_cannot_move(
    earlier: tuple[Path, dict[str, Mapping[str, Any]]],
) -> None:
    root, versions = earlier
    block = MAPPED % {"version": _digest(versions)}
    block = block.replace("to    = state.review", "to    = state.reveiw")
    block = block.replace('leave = ["submit"]', 'leave = ["sumbit"]\n    state "submit" {\n'
                          "      to = state.submit\n    }")  # fmt: skip
    _write(root, block)
    result = _compile(root, versions)
    codes = sorted(_codes(result))
    assert codes == ["OS603", "OS603", "OS606"], result.diagnostics
    hints = {d.suggestion for d in result.diagnostics if d.code == "OS603"}
    assert hints == {"did you mean `review`?", "did you mean `submit`?"}
    other = compile_paths([root / "hcl"], earlier=lambda name: {})
    assert _codes(other) == ["OS601"]


def test_the_check_runs_on_compiled_documents_alone(
    earlier: tuple[Path, dict[str, Mapping[str, Any]]],
) -> None:
    root, versions = earlier
    _write(root, (MAPPED % {"version": _digest(versions)}).replace('    leave = ["submit"]\n', ""))
    new = compile_paths([root / "hcl"]).documents[WORKFLOW].document  # unchecked without earlier
    [found] = check_migrations(new, versions)
    assert found.code == "OS602"
    assert str(found.span) == "workflow procure_laptops (compiled):1:1"


def test_a_version_is_named_by_a_unique_prefix_of_six_digits() -> None:
    versions: dict[str, Mapping[str, Any]] = {"abcdef01": {}, "abcdef02": {}}
    assert find_earlier("abcdef01", versions) == ("abcdef01", "")
    assert find_earlier("sha256:ABCDEF02", versions) == ("abcdef02", "")
    assert find_earlier("abcdef", versions)[0] is None
    assert "at least 6" in find_earlier("abc", versions)[1]


def test_validate_against_a_bundle_reports_at_the_block_and_exits_1(
    earlier: tuple[Path, dict[str, Mapping[str, Any]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from openseal.cli.main import main

    root, versions = earlier
    bundle = tmp_path / "bundle"
    assert main(["compile", str(root / "hcl"), "--out", str(bundle)]) == 0
    block = MAPPED % {"version": _digest(versions)[:8]}
    path = _write(root, block.replace('    leave = ["submit"]\n', ""))
    capsys.readouterr()
    with pytest.raises(SystemExit) as ended:
        main(["validate", str(root / "hcl"), "--against", str(bundle)])
    assert ended.value.code == 1
    said = "".join(capsys.readouterr())
    assert "error[OS602]" in said
    line = next(ln for ln in said.splitlines() if "error[OS602]" in ln)
    assert line.split(":")[0].endswith(str(path.relative_to(root.parent))), line
    # without --against nothing is compared here: deploy checks it against the store
    assert main(["validate", str(root / "hcl")]) == 0
    assert main(["validate", str(root / "hcl"), "--against", str(root)]) == 2


def test_compile_against_a_bundle_writes_only_a_migration_that_checks(
    earlier: tuple[Path, dict[str, Mapping[str, Any]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from openseal.cli.main import main

    root, versions = earlier
    bundle, nxt = tmp_path / "bundle", tmp_path / "next"
    assert main(["compile", str(root / "hcl"), "--out", str(bundle)]) == 0
    path = _write(root, (MAPPED % {"version": _digest(versions)[:8]}).replace(
        '    leave = ["submit"]\n', ""))  # fmt: skip
    capsys.readouterr()
    with pytest.raises(SystemExit) as ended:
        main(["compile", str(root / "hcl"), "--against", str(bundle), "--out", str(nxt)])
    assert ended.value.code == 1
    said = "".join(capsys.readouterr())
    line = next(ln for ln in said.splitlines() if "error[OS602]" in ln)
    where = line.split(": error")[0]
    assert where.rsplit(":", 2)[0].endswith(str(path.relative_to(root.parent))), line
    assert len(where.rsplit(":", 2)) == 3  # file:line:col
    assert not nxt.exists()  # nothing written
    # the block that leaves `submit` behind checks, and the next bundle is written; against
    # itself (--out the same bundle) too, read before it is overwritten
    _write(root, "", replace=("  migrate {\n", '  migrate {\n    leave = ["submit"]\n'))
    assert main(["compile", str(root / "hcl"), "--against", str(bundle), "--out", str(nxt)]) == 0
    assert (nxt / "manifest.json").exists()
    assert main(["compile", str(root / "hcl"), "--against", str(root), "--check"]) == 2


def test_a_state_where_runs_wait_only_for_capacity_maps_to_one_of_its_kind(
    earlier: tuple[Path, dict[str, Mapping[str, Any]]],
) -> None:
    root, versions = earlier
    research = '    state "research" {\n      to = state.research\n    }\n'
    block = MAPPED % {"version": _digest(versions)}
    block = block.replace("    leave =", research + "    leave =")
    path = _write(root, block)
    assert _codes(_compile(root, versions)) == []
    text = path.read_text("utf-8")
    path.write_text(text.replace("to = state.research", "to = state.check_budget"), "utf-8")
    [found] = _compile(root, versions).diagnostics
    assert (found.code, found.message) == (
        "OS606",
        "runs waiting in `research` (turn) can only move to a turn state; "
        "`check_budget` is a decision state",
    )
