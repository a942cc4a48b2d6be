"""Proposals: the exact, canonical payload of a governed action (invariant 6).

A ``proposal`` state evaluates its ``args`` (and ``spend``) into one JSON document holding
every field that decides what the action does: the run, the proposal's name, the skill and
the digest of its pinned version, the acting agent or role, the arguments and the spend. The
document's RFC 8785 canonical bytes are stored as an immutable artefact and their sha256 is
the proposal's identity, its **hash**. Change any field and the hash changes: it is a new
proposal that needs its own approval.

A run refers to "its" proposal ``order`` through the output of the state that drafted it
(``state.<draft>.output.order.hash``), so re-entering the drafting state (after
``changes_requested``) replaces it and stale approvals stop matching.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from openseal.canonical import canonical_bytes
from openseal.contract import (
    ActionSettings,
    ProposalSettings,
    ProposalStepSettings,
    SpendSettings,
)
from openseal.runtime.compiled import CompiledWorkflow, DefinitionError, evaluate_json
from openseal.runtime.store import Proposal

FORMAT = "openseal.proposal/v1"
MEDIA_TYPE = "application/vnd.openseal.proposal+json"


@dataclass(frozen=True)
class Draft:
    """A proposal evaluated but not stored yet: its document, canonical bytes and hash."""

    name: str
    state: str
    document: dict[str, Any]
    data: bytes
    hash: str

    @property
    def skill(self) -> str:
        return str(self.document["skill"]["name"])

    @property
    def skill_digest(self) -> str:
        return str(self.document["skill"]["digest"])

    @property
    def actor(self) -> str:
        return str(self.document["actor"])


def draft(
    workflow: CompiledWorkflow,
    run_id: str,
    state: str,
    name: str,
    config: ProposalStepSettings,
    scope: Mapping[str, object],
) -> Draft:
    """Evaluate one ``proposal "name" {...}`` block of ``state`` into its canonical document."""
    skill = config["skill"].removeprefix("skill.")
    entry = (workflow.document.get("skills") or {}).get(skill)
    if not skill or not entry or not entry.get("digest"):
        raise DefinitionError(f"proposal {name} names skill {skill!r}, which is not pinned")
    args = {key: evaluate_json(value, scope) for key, value in sorted(config["args"].items())}
    actor = config["actor"] or (workflow.document.get("spec") or {}).get("owner")
    document = {
        "format": FORMAT,
        "run": run_id,
        "workflow": {"name": workflow.name, "version": workflow.digest},
        "name": name,
        "skill": {"name": skill, "digest": str(entry["digest"])},
        "actor": str(actor),
        "args": args,
        "spend": _spend(name, config["spend"], scope),
    }
    data = canonical_bytes(document)
    return Draft(name, state, document, data, hashlib.sha256(data).hexdigest())


def direct_step(action: ActionSettings) -> ProposalStepSettings:
    """An ``action`` that names a skill and args directly, as the proposal step it drafts."""
    return {
        "skill": action["skill"] or "",
        "actor": action["actor"],
        "args": action["args"],
        "spend": None,
    }


def _spend(
    name: str, config: SpendSettings | None, scope: Mapping[str, object]
) -> dict[str, Any] | None:
    if not config:
        return None
    amount = evaluate_json(config["amount"], scope)
    currency = evaluate_json(config["currency"], scope) if config["currency"] else None
    ok = isinstance(amount, int | float) and not isinstance(amount, bool)
    if not ok or not math.isfinite(float(amount)) or float(amount) < 0:  # type: ignore[arg-type]
        raise DefinitionError(
            f"proposal {name}: spend amount must be a number >= 0, got {amount!r}"
        )
    if currency is not None and not isinstance(currency, str):
        raise DefinitionError(f"proposal {name}: spend currency must be a string")
    return {"amount": amount, "currency": currency}


def drafting_state(workflow: CompiledWorkflow, name: str) -> str:
    """The ``proposal`` state that declares proposal ``name``."""
    for state in sorted(workflow.states.values(), key=lambda s: s.name):
        if state.kind == "proposal" and name in state.settings(ProposalSettings):
            return state.name
    raise DefinitionError(f"workflow {workflow.name} drafts no proposal {name!r}")


def proposal_name(reference: str) -> str:
    """``proposal.order`` → ``order``."""
    return reference.removeprefix("proposal.")


def current_hash(
    workflow: CompiledWorkflow, states: Mapping[str, Any], reference: str
) -> tuple[str, str]:
    """The name and hash of the run's current draft of ``proposal.<name>``.

    Raises :class:`DefinitionError` when the run has not drafted it (the drafting state has
    no output): an approval or action needs a stored proposal to bind to.
    """
    name = proposal_name(reference)
    state = drafting_state(workflow, name)
    output = states.get(state)
    entry = output.get(name) if isinstance(output, Mapping) else None
    if not isinstance(entry, Mapping) or not isinstance(entry.get("hash"), str):
        raise DefinitionError(f"proposal {name} has not been drafted (state {state} has no output)")
    return name, str(entry["hash"])


def output_of(proposal: Proposal) -> dict[str, Any]:
    """What ``state.<draft>.output.<name>`` holds: enough to find and show the proposal."""
    return {
        "id": proposal.id,
        "hash": proposal.hash,
        "skill": proposal.skill,
        "actor": proposal.actor,
        "args": proposal.args,
        "spend": proposal.spend,
    }
