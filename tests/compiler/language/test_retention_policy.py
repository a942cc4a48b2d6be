"""A workflow's ``retention`` block: both syntaxes, one digest; a period under an hour is a
located diagnostic; a workflow without one keeps the digest it had before the block existed."""

from __future__ import annotations

import shutil
from pathlib import Path

from openseal.compiler.pipeline import compile_paths
from tests.compiler.language.test_objective_policy import HCL, YAML, compile_text

SUCCESS = "output.total <= input.budget"
RETENTION_HCL = '  retention {\n    keep_ended_runs = "PERIOD"\n  }\n  objective {'
RETENTION_YAML = "    retention: {keep_ended_runs: PERIOD}\n    objective:"


def hcl(period: str | None) -> str:
    text = HCL.replace("SUCCESS", SUCCESS)
    if period is None:
        return text
    return text.replace("  objective {", RETENTION_HCL.replace("PERIOD", period), 1)


def test_the_retention_block_compiles_to_one_digest_in_both_syntaxes(tmp_path: Path) -> None:
    with_hcl = compile_text(tmp_path, "a.hcl", hcl("90d"))
    with_yaml = compile_text(
        tmp_path, "b.yaml", YAML.replace("    objective:", RETENTION_YAML.replace("PERIOD", "90d"))
    )
    assert with_hcl.ok and with_yaml.ok, [
        d.message for d in (*with_hcl.diagnostics, *with_yaml.diagnostics)
    ]
    quote = with_hcl.documents["workflow.quote"]
    assert quote.digest == with_yaml.documents["workflow.quote"].digest
    assert quote.document["spec"]["retention"] == {"keep_ended_runs": 90 * 86400}
    without = compile_text(tmp_path, "c.hcl", hcl(None)).documents["workflow.quote"]
    assert "retention" not in without.document["spec"]
    assert without.digest != quote.digest


def test_a_retention_under_an_hour_is_refused_where_it_is_written(tmp_path: Path) -> None:
    result = compile_text(tmp_path, "a.hcl", hcl("30m"))
    assert not result.ok
    [found] = [d for d in result.diagnostics if "keep_ended_runs" in d.message]
    line = [i for i, text in enumerate(hcl("30m").splitlines(), 1) if "keep_ended_runs" in text]
    assert found.span is not None and [found.span.line] == line
    assert "3600" in found.message


def test_a_skill_declares_its_destination_s_idempotency_window_in_both_syntaxes(
    tmp_path: Path,
) -> None:
    example = Path(__file__).resolve().parents[3] / "definitions" / "procurement"
    before = compile_paths([example / "hcl"]).documents["skill.submit_purchase_order"]
    assert "window" not in before.document["spec"]["idempotency"]  # its digest is kept
    copy = tmp_path / "procurement"
    shutil.copytree(example, copy)
    (copy / ".git").mkdir()  # a repository root: file("../prompts/...") reads under it
    hcl_file, yaml_file = copy / "hcl" / "skills.hcl", copy / "yaml" / "skills.yaml"
    hcl_file.write_text(
        hcl_file.read_text().replace(
            "same_key_retry = true", 'same_key_retry = true\n    window         = "30d"', 1
        )
    )
    yaml_file.write_text(
        yaml_file.read_text().replace(
            "      same_key_retry: true", "      same_key_retry: true\n      window: 30d", 1
        )
    )
    from_hcl = compile_paths([copy / "hcl"]).documents["skill.submit_purchase_order"]
    from_yaml = compile_paths([copy / "yaml"]).documents["skill.submit_purchase_order"]
    assert from_hcl.digest == from_yaml.digest != before.digest
    assert from_hcl.document["spec"]["idempotency"]["window"] == 30 * 86400
