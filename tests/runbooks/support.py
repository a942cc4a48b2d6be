"""Build plans from inline definitions for the executor tests."""

from __future__ import annotations

from pathlib import Path

from openseal.compiler.analysis.runbook_plan import Plan
from openseal.compiler.diagnostics import Diagnostic
from openseal.compiler.runbook_pipeline import prepare


def write_project(tmp_path: Path, text: str, name: str = "runbook.hcl") -> Path:
    (tmp_path / "openseal.project").write_text("")
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def plan_of(
    tmp_path: Path, text: str, name: str = "runbook.hcl", *, select: str | None = None
) -> Plan:
    prepared = prepare(write_project(tmp_path, text, name), select)
    assert prepared.plan is not None, [d.to_dict() for d in prepared.diagnostics]
    return prepared.plan


def diagnostics_of(tmp_path: Path, text: str, name: str = "runbook.hcl") -> list[Diagnostic]:
    prepared = prepare(write_project(tmp_path, text, name))
    assert prepared.plan is None
    return prepared.diagnostics


def runbook(body: str, *, header: str = "") -> str:
    """A runbook named ``r`` around ``body`` (steps, inputs, outputs, settings)."""
    return f'{header}\nrunbook "r" {{\n{body}\n}}\n'
