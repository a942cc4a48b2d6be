"""Which versions of a workflow runs still use, and what a change removes from them.

A run keeps the version it started on (invariant 12), so a change that drops a skill, a
binding, an agent or a model from a workflow leaves every run pinned to an older version
holding it. Reviewers need the count before they activate the change, and an operator needs
to know which old versions still have live runs before retiring anything: both are read here,
from the store, at the moment they are asked (runs end and start all the time; nothing is
stored with the proposal).
"""

from __future__ import annotations

from dataclasses import dataclass

from openseal.runtime.compiled import version_key
from openseal.runtime.governance.queries import DeploymentInfo, list_deployments
from openseal.runtime.store import ChangeProposal, NotFound, Store

#: the kinds of definition a workflow pins that a change can remove from it
CAPABILITY_KINDS = ("skill", "binding", "agent", "team", "model")


@dataclass(frozen=True)
class VersionRuns:
    """Live (not ended) runs pinned to one version of a workflow."""

    digest: str
    runs: int


@dataclass(frozen=True)
class CapabilityInUse:
    """A capability the change removes from ``workflow`` that live runs still pin.

    ``capability`` is ``kind.name`` (``skill.submit_order``); ``runs`` counts the live runs of
    every version in ``versions`` (each version that has it, with its own count).
    """

    workflow: str
    capability: str
    kind: str
    runs: int
    versions: tuple[VersionRuns, ...]


def live_versions(store: Store, workflow: str) -> tuple[VersionRuns, ...]:
    """The versions of ``workflow`` with live runs, most runs first."""
    return tuple(VersionRuns(d, n) for d, n in store.runs.live_by_version(workflow))


def removed_in_use(store: Store, proposal: ChangeProposal) -> tuple[CapabilityInUse, ...]:
    """What ``proposal`` removes from each of its workflows that live runs still pin, with
    how many runs of which version use it; empty when it removes nothing in use."""
    closures = _Closures(store)
    found: list[CapabilityInUse] = []
    for target in proposal.targets:
        if target.kind != "workflow":
            continue
        kept = closures.of(target.digest)
        by_capability: dict[str, list[VersionRuns]] = {}
        for pinned in live_versions(store, target.name):
            if version_key(pinned.digest) == version_key(target.digest):
                continue
            for capability in sorted(closures.of(pinned.digest) - kept):
                by_capability.setdefault(capability, []).append(pinned)
        found.extend(_in_use(target.name, c, v) for c, v in sorted(by_capability.items()))
    return tuple(found)


def _in_use(workflow: str, capability: str, versions: list[VersionRuns]) -> CapabilityInUse:
    kind = capability.split(".", 1)[0]
    total = sum(v.runs for v in versions)
    return CapabilityInUse(workflow, capability, kind, total, tuple(versions))


class _Closures:
    """Every capability (``kind.name``) a version pins, directly or through what it pins (a
    team's agents, an agent's model), read once per digest."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._pins: dict[str, dict[str, str]] = {}

    def of(self, digest: str) -> frozenset[str]:
        seen: set[str] = set()
        todo = [version_key(digest)]
        done: set[str] = set()
        while todo:
            key = todo.pop()
            if key in done:
                continue
            done.add(key)
            for name, pinned in self._dependencies(key).items():
                if name.split(".", 1)[0] in CAPABILITY_KINDS:
                    seen.add(name)
                todo.append(version_key(pinned))
        return frozenset(seen)

    def _dependencies(self, key: str) -> dict[str, str]:
        cached = self._pins.get(key)
        if cached is None:
            try:
                document = self._store.definitions.get(key).document
            except NotFound:  # a pinned version is never deleted; nothing to follow if it were
                document = {}
            deps = document.get("dependencies") or {}
            cached = {str(k): str(v) for k, v in deps.items()} if isinstance(deps, dict) else {}
            self._pins[key] = cached
        return cached


@dataclass(frozen=True)
class DeploymentVersions:
    """A deployment with the versions its live runs are pinned to (``deployments show``)."""

    deployment: DeploymentInfo
    #: versions with live runs, most runs first; the active one is among them when it has any
    live: tuple[VersionRuns, ...]
    #: live runs of every version together
    live_runs: int


def deployment_versions(store: Store, name: str) -> DeploymentVersions:
    """Deployment ``name`` with the versions that have live runs, and how many each."""
    found = [d for d in list_deployments(store) if d.name == name]
    if not found:
        raise NotFound(f"deployment {name} not found")
    live = live_versions(store, name) if found[0].kind == "workflow" else ()
    return DeploymentVersions(found[0], live, sum(v.runs for v in live))
