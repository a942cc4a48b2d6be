"""What a replay reports: a summary first, then one verdict per run.

Deterministic: runs are ordered by id, groups by verdict and state, reasons by text, and
nothing in it depends on when it was made, so the same change and the same runs give
byte-identical output (:meth:`ReplayReport.to_json` with sorted keys, :meth:`render`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from openseal.runtime.replay.verdict import DIVERGES, SAME, UNSUPPORTED, VERDICTS, Verdict


@dataclass(frozen=True)
class RunVerdict:
    run_id: str
    workflow: str
    #: the version the run is pinned to
    version: str
    #: the run's status when it was read
    status: str
    verdict: Verdict

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run_id,
            "workflow": self.workflow,
            "version": self.version,
            "status": self.status,
            **self.verdict.to_json(),
        }


@dataclass(frozen=True)
class DiffLine:
    """One change of the proposal's diff: ``definition path: message``."""

    definition: str
    path: str
    message: str
    widening: bool

    def text(self) -> str:
        return f"{self.definition} {self.path}: {self.message}"


@dataclass(frozen=True)
class ReplayReport:
    """Verdicts of the runs replayed against ``subject`` (a change proposal's id, or
    ``pinned``: each run's own version), with the change's diff lines."""

    subject: str
    #: workflow name → the version replayed (a proposal's target; empty for ``pinned``)
    versions: dict[str, str]
    runs: tuple[RunVerdict, ...]
    diff: tuple[DiffLine, ...] = ()
    #: when the proposal migrates waiting runs: where each would move (its dry run), in the
    #: order the migration takes them; empty otherwise
    migration: tuple[Mapping[str, Any], ...] = ()

    def counts(self) -> dict[str, int]:
        found = Counter(r.verdict.verdict for r in self.runs)
        return {verdict: found.get(verdict, 0) for verdict in VERDICTS}

    @property
    def clean(self) -> bool:
        """Every run replayed the same (runs replay does not re-drive are not counted)."""
        counts = self.counts()
        return counts[DIVERGES] == 0 and counts["needs_input"] == 0

    def groups(self) -> list[dict[str, Any]]:
        """Runs that did not replay the same, by verdict and first differing state."""
        grouped: dict[tuple[str, str], list[RunVerdict]] = {}
        for run in self.runs:
            if run.verdict.verdict != SAME:
                grouped.setdefault((run.verdict.verdict, run.verdict.state), []).append(run)
        found = []
        for (verdict, state), runs in sorted(grouped.items()):
            reasons = Counter(r.verdict.why for r in runs)
            found.append(
                {
                    "verdict": verdict,
                    "state": state,
                    "runs": len(runs),
                    "run_ids": [r.run_id for r in runs],
                    "reasons": [{"why": w, "runs": n} for w, n in sorted(reasons.items())],
                    "risk_widening": [d.text() for d in self._widening(state)],
                }
            )
        return found

    def _widening(self, state: str) -> list[DiffLine]:
        """The widening lines of the diff that touch ``state`` (or no state in particular)."""
        marker = f"states.{state}"
        return [
            d for d in self.diff if d.widening and (marker in d.path or "states." not in d.path)
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "versions": dict(sorted(self.versions.items())),
            "summary": {
                "runs": len(self.runs),
                **self.counts(),
                "groups": self.groups(),
                "risk_widening": [d.text() for d in self.diff if d.widening],
            },
            "runs": [r.to_json() for r in self.runs],
            # only a proposal that migrates runs has it: other reports keep their bytes
            **({"migration": [dict(m) for m in self.migration]} if self.migration else {}),
        }

    def dumps(self) -> str:
        """The report as JSON text: sorted keys, so equal reports are equal bytes."""
        return json.dumps(self.to_json(), sort_keys=True, indent=2, ensure_ascii=False)

    def render(self) -> str:
        """The report for a terminal (see :func:`render`)."""
        return render(self.to_json())


def render(report: Mapping[str, Any]) -> str:
    """A report (:meth:`ReplayReport.to_json`, as a server answers it too) for a terminal:
    the summary, the groups by first differing state, then each run's verdict."""
    summary = report["summary"]
    counts = ", ".join(
        f"{summary[v]} {v.replace('_', ' ')}" for v in VERDICTS if summary[v] or v != UNSUPPORTED
    )
    lines = [f"{summary['runs']} run(s) replayed against {report['subject']}: {counts}"]
    if summary["risk_widening"]:
        lines.append("risk-widening changes:")
        lines.extend(f"  ! {text}" for text in summary["risk_widening"])
    for group in summary["groups"]:
        verdict = str(group["verdict"]).replace("_", " ")
        lines.append(f"{verdict} at {group['state']}: {group['runs']} run(s)")
        lines.extend(f"  - {r['why']} ({r['runs']})" for r in group["reasons"])
        lines.extend(f"  ! {text}" for text in group["risk_widening"])
    if report["runs"]:
        lines.append("")
    for run in report["runs"]:
        lines.append(f"{run['run']}  {run['status']:<20} {_line(run)}")
    if report.get("migration"):
        lines.extend(["", "waiting runs the migration would move (at activation):"])
        lines.extend(_move_line(move) for move in report["migration"])
    return "\n".join(lines) + "\n"


def _move_line(move: Mapping[str, Any]) -> str:
    where = f"{move['from_state']} -> {move['to_version'][:12]}:{move['to_state'] or '-'}"
    outcome = str(move["outcome"]) + (f", approval {move['approval']}" if move["approval"] else "")
    return f"{move['run_id']}  {where}  {outcome}" + (
        f": {move['reason']}" if move["reason"] else ""
    )


def _line(run: Mapping[str, Any]) -> str:
    verdict = Verdict(str(run["verdict"]), run.get("state") or "", run.get("why") or "")
    return verdict.line()
