"""Which governance policy rules a change proposal, and what it allows.

A policy comes from compiled ``governance`` definitions
(:class:`openseal.compiler.definitions.specs.GovernanceSpec`). The rule that keeps a change
from loosening its own governance: the policy is taken from the **currently active** governance
versions when any is active; only when none is (the first deployment) does the bundle's own
governance apply; with neither, :data:`DEFAULT`.

Several rules can apply at once (one per matching governance definition); the strictest
combination wins: the highest ``required_reviews``, an actor must be allowed by *every* rule that
names reviewers (deciders), and narrowing changes auto-approve only if every rule says so.
A change that touches a governance deployment is ruled by every governance definition of the
source, whatever their ``deployments`` patterns say, so a governance change cannot escape review
by being named outside the patterns.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from openseal.runtime.access import named

GOVERNANCE_KIND = "governance"


@dataclass(frozen=True)
class PolicyRule:
    """One governance definition's say over a proposal."""

    governance: str
    digest: str
    reviewers: tuple[str, ...]
    deciders: tuple[str, ...]
    required_reviews: int
    auto_approve_narrowing: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "governance": self.governance,
            "digest": self.digest,
            "reviewers": list(self.reviewers),
            "deciders": list(self.deciders),
            "required_reviews": self.required_reviews,
            "auto_approve_narrowing": self.auto_approve_narrowing,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PolicyRule:
        return cls(
            governance=str(data["governance"]),
            digest=str(data["digest"]),
            reviewers=tuple(data.get("reviewers") or ()),
            deciders=tuple(data.get("deciders") or ()),
            required_reviews=int(data.get("required_reviews") or 0),
            auto_approve_narrowing=bool(data.get("auto_approve_narrowing")),
        )


@dataclass(frozen=True)
class Policy:
    """The effective policy of one proposal, recorded with it.

    ``source`` is ``active``, ``bundle`` or ``default``; ``basis`` maps every governance
    deployment active when the policy was resolved to its digest — if that set changes, the
    proposal is stale and must be refreshed before activation.
    """

    source: str
    basis: Mapping[str, str]
    rules: tuple[PolicyRule, ...]

    @property
    def required_reviews(self) -> int:
        return max((rule.required_reviews for rule in self.rules), default=0)

    @property
    def auto_approve_narrowing(self) -> bool:
        return bool(self.rules) and all(rule.auto_approve_narrowing for rule in self.rules)

    def may_review(self, actor: str, roles: Iterable[str] = ()) -> bool:
        """Every rule naming reviewers names ``actor``, or as ``role:R`` a role it holds."""
        return all(not rule.reviewers or named(actor, roles, rule.reviewers) for rule in self.rules)

    def may_decide(self, actor: str, roles: Iterable[str] = ()) -> bool:
        """Every rule naming deciders names ``actor``, or as ``role:R`` a role it holds."""
        return all(not rule.deciders or named(actor, roles, rule.deciders) for rule in self.rules)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "basis": dict(sorted(self.basis.items())),
            "rules": [rule.to_dict() for rule in self.rules],
            "required_reviews": self.required_reviews,
            "auto_approve_narrowing": self.auto_approve_narrowing,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Policy:
        return cls(
            source=str(data["source"]),
            basis=dict(data.get("basis") or {}),
            rules=tuple(PolicyRule.from_dict(rule) for rule in data.get("rules") or ()),
        )


#: With no governance anywhere: anyone may review and decide, no review is required, nothing
#: auto-approves. Risk-widening changes still need an explicit decision by someone other than
#: their author — that part is not policy, it always holds.
DEFAULT = Policy("default", {}, ())


@dataclass(frozen=True)
class GovernanceVersion:
    """A compiled governance definition: its name, store digest and spec."""

    name: str
    digest: str
    spec: Mapping[str, Any]

    @classmethod
    def from_document(cls, digest: str, document: Mapping[str, Any]) -> GovernanceVersion:
        return cls(str(document.get("name")), digest, document.get("spec") or {})

    def patterns(self) -> tuple[str, ...]:
        return tuple(self.spec.get("deployments") or ("*",))

    def rule(self) -> PolicyRule:
        return PolicyRule(
            governance=self.name,
            digest=self.digest,
            reviewers=tuple(self.spec.get("reviewers") or ()),
            deciders=tuple(self.spec.get("deciders") or ()),
            required_reviews=int(self.spec.get("required_reviews", 1)),
            auto_approve_narrowing=bool(self.spec.get("auto_approve_narrowing", False)),
        )


def resolve_policy(
    active: Iterable[GovernanceVersion],
    bundled: Iterable[GovernanceVersion],
    targets: Iterable[tuple[str, str]],
) -> Policy:
    """The policy for a change to ``targets`` (``(deployment name, kind)`` pairs).

    ``active`` are the governance versions active now, ``bundled`` the governance definitions
    the change itself brings (used only when nothing is active: the bootstrap).
    """
    active = sorted(active, key=lambda g: g.name)
    basis = {g.name: g.digest for g in active}
    if active:
        source, candidates = "active", active
    else:
        source, candidates = "bundle", sorted(bundled, key=lambda g: g.name)
    if not candidates:
        return Policy("default", basis, ())
    targets = list(targets)
    touches_governance = any(kind == GOVERNANCE_KIND for _, kind in targets)
    names = [name for name, _ in targets]
    rules = tuple(
        g.rule()
        for g in candidates
        if touches_governance or any(fnmatchcase(n, p) for n in names for p in g.patterns())
    )
    if not rules:
        return Policy("default", basis, ())
    return Policy(source, basis, rules)
