"""Semantic diff of two sets of compiled documents, flagging risk-widening changes.

``diff_documents(old, new)`` compares documents keyed by ``kind.name`` (from two
bundles, or two compiles) and lists what a reviewer needs to see: definitions
added or removed; states added, removed or renamed; transitions and guards;
skill grants; risk ceilings; approval requirements; budgets. A change
*widens* authority when after it something may happen that could not happen
before, or with less oversight: a new grant, a higher risk ceiling or effect, a
removed or loosened approval, an extra approver, a higher budget, an action
that can now be reached without passing an approval, or work that starts by
itself: a new trigger, or one that starts another workflow, fires on another
event or on more of them, fires more often, catches up more or overlaps more.

>>> report = diff_documents(old_bundle.documents, new_bundle.documents)  # doctest: +SKIP
>>> report.risk_widening                                                 # doctest: +SKIP
True
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import islice
from typing import Any
from zoneinfo import ZoneInfo

from cronsim import CronSim, CronSimError

from openseal.compiler.definitions.specs import EFFECT_ORDER

Doc = Mapping[str, Any]

#: A missing ceiling (``None``) means "as high as the skill goes": above every effect.
_UNBOUNDED = len(EFFECT_ORDER)
_BUDGET_FIELDS = ("turns", "model_calls", "tool_calls", "tokens", "spend")
#: how much a trigger's overlap policy lets start while its last objective is open
_OVERLAP_ORDER = ("skip", "queue", "allow")
#: a schedule's pace: how long its first occurrences after a fixed Monday take
_PACE_OCCURRENCES = 20
_PACE_FROM = datetime(2026, 1, 5, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Change:
    """One semantic change to one definition."""

    definition: str
    kind: str
    path: str
    before: Any
    after: Any
    widening: bool
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "definition": self.definition,
            "kind": self.kind,
            "path": self.path,
            "before": self.before,
            "after": self.after,
            "widening": self.widening,
            "message": self.message,
        }


@dataclass(frozen=True, slots=True)
class DiffReport:
    changes: tuple[Change, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]
    unchanged: int

    @property
    def risk_widening(self) -> bool:
        return any(c.widening for c in self.changes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "risk_widening": self.risk_widening,
            "definitions": {
                "added": list(self.added),
                "removed": list(self.removed),
                "changed": list(self.changed),
                "unchanged": self.unchanged,
            },
            "changes": [c.to_dict() for c in self.changes],
        }


def diff_documents(old: Mapping[str, Doc], new: Mapping[str, Doc]) -> DiffReport:
    """Compare two sets of compiled documents keyed by ``kind.name``."""
    changes: list[Change] = []
    added = sorted(set(new) - set(old))
    removed = sorted(set(old) - set(new))
    changed = sorted(k for k in set(old) & set(new) if _canonical(old[k]) != _canonical(new[k]))
    for key in added:
        changes.extend(_added(key, new[key]))
    for key in removed:
        changes.append(Change(key, "definition_removed", key, key, None, False, f"removed {key}"))
    for key in changed:
        changes.extend(_Differ(key).definition(old[key], new[key]))
    unchanged = len(set(old) & set(new)) - len(changed)
    return DiffReport(tuple(changes), tuple(added), tuple(removed), tuple(changed), unchanged)


def _canonical(document: Doc) -> bytes:
    from openseal.canonical import canonical_bytes

    return canonical_bytes(document)


def _added(key: str, document: Doc) -> Iterator[Change]:
    yield Change(key, "definition_added", key, None, key, False, f"added {key}")
    if document.get("kind") == "trigger":
        spec = document.get("spec", {})
        event = (spec.get("event") or {}).get("name")
        fires = f"on event {event}" if event else "on a schedule"
        yield Change(
            key,
            "trigger_added",
            "spec",
            None,
            {"workflow": spec.get("workflow"), "event": event, "schedule": spec.get("schedule")},
            True,
            f"trigger added: starts {spec.get('workflow')} {fires}",
        )
    if document.get("kind") == "binding":
        spec = document.get("spec", {})
        skill, to = spec.get("skill"), spec.get("to")
        yield Change(
            key,
            "grant_added",
            "spec",
            None,
            {"skill": skill, "to": to},
            True,
            f"grant added: {skill} to {to}",
        )


# --------------------------------------------------------------------------- helpers


def _rank(effect: object) -> int:
    for rank, known in enumerate(EFFECT_ORDER):
        if effect == known:
            return rank
    return _UNBOUNDED


def _limit(value: object) -> float:
    """A budget limit; ``None`` is no limit at all."""
    return float(value) if isinstance(value, int | float) else float("inf")


def _is_expression(value: object) -> bool:
    return isinstance(value, Mapping) and isinstance(value.get("node"), str)


def _approval_required(policy: object) -> bool:
    return isinstance(policy, Mapping) and bool(policy.get("required", True))


def _pace(schedule: object) -> float:
    """Seconds between a schedule's first and last of its first occurrences after a fixed
    start (less: it fires more often); no schedule never fires."""
    if not isinstance(schedule, Mapping):
        return float("inf")
    every = schedule.get("every")
    if isinstance(every, int | float):
        return (_PACE_OCCURRENCES - 1) * float(every)
    try:
        start = _PACE_FROM.astimezone(ZoneInfo(str(schedule.get("time_zone") or "UTC")))
        times = list(islice(CronSim(str(schedule.get("cron")), start), _PACE_OCCURRENCES))
    except (CronSimError, ValueError, LookupError):
        return float("inf")
    return (times[-1] - times[0]).total_seconds() if len(times) > 1 else float("inf")


def _catch_up(spec: Mapping[str, Any]) -> float:
    """How many missed occurrences a trigger fires after a downtime."""
    policy = spec.get("catch_up", "latest")
    if policy == "all":
        return float(spec.get("catch_up_limit", 10))
    return 1.0 if policy == "latest" else 0.0


def _expiry(value: object) -> float:
    """``expires_in``; ``None`` never expires."""
    return float(value) if isinstance(value, int | float) else float("inf")


def rename_states(value: Any, renames: Mapping[str, str]) -> Any:
    """Rewrite ``state.<old>`` references in compiled JSON (expression ASTs, dotted strings)."""
    if isinstance(value, Mapping):
        if value.get("node") == "ref" and value.get("root") == "state":
            path = list(value.get("path") or [])
            if path and path[0] in renames:
                return {**value, "path": [renames[path[0]], *path[1:]]}
        return {k: rename_states(v, renames) for k, v in value.items()}
    if isinstance(value, list):
        return [rename_states(v, renames) for v in value]
    if isinstance(value, str) and value.startswith("state."):
        head, _, rest = value[len("state.") :].partition(".")
        if head in renames:
            return "state." + renames[head] + (f".{rest}" if rest else "")
    return value


# --------------------------------------------------------------------------- the differ


class _Differ:
    """Collects the changes of one definition present on both sides."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.changes: list[Change] = []

    def add(
        self, kind: str, path: str, before: Any, after: Any, widening: bool, message: str
    ) -> None:
        self.changes.append(Change(self.key, kind, path, before, after, widening, message))

    def definition(self, old: Doc, new: Doc) -> list[Change]:
        kind = new.get("kind")
        old_spec, new_spec = dict(old.get("spec") or {}), dict(new.get("spec") or {})
        handled: set[str] = set()
        if kind == "skill":
            handled = self.skill(old_spec, new_spec)
        elif kind == "binding":
            handled = self.binding(old_spec, new_spec)
        elif kind == "agent":
            handled = self.agent(old_spec, new_spec)
        elif kind == "team":
            handled = self.team(old_spec, new_spec)
        elif kind == "workflow":
            handled = self.workflow(old, new)
        elif kind == "runbook":
            handled = self.runbook(old, new)
        elif kind == "governance":
            handled = self.governance(old_spec, new_spec)
        elif kind == "trigger":
            handled = self.trigger(old_spec, new_spec)
        for field in sorted((set(old_spec) | set(new_spec)) - handled):
            self.leaves(f"spec.{field}", old_spec.get(field), new_spec.get(field))
        self.dependencies(old.get("dependencies") or {}, new.get("dependencies") or {})
        return self.changes

    # ---- generic

    def leaves(self, path: str, before: Any, after: Any) -> None:
        """A ``changed`` entry for every differing leaf (an expression counts as a leaf)."""
        if before == after:
            return
        if (
            isinstance(before, Mapping)
            and isinstance(after, Mapping)
            and not _is_expression(before)
            and not _is_expression(after)
        ):
            for k in sorted(set(before) | set(after)):
                self.leaves(f"{path}.{k}", before.get(k), after.get(k))
            return
        if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
            for i, (b, a) in enumerate(zip(before, after, strict=True)):
                self.leaves(f"{path}[{i}]", b, a)
            return
        self.add("changed", path, before, after, False, f"{path} changed")

    def dependencies(self, old: Mapping[str, str], new: Mapping[str, str]) -> None:
        for dep in sorted(set(old) | set(new)):
            if old.get(dep) != new.get(dep):
                self.add(
                    "dependency_changed",
                    f"dependencies.{dep}",
                    old.get(dep),
                    new.get(dep),
                    False,
                    f"uses a changed {dep}"
                    if dep in old and dep in new
                    else f"{'now uses' if dep in new else 'no longer uses'} {dep}",
                )

    def approval(self, path: str, old: object, new: object) -> None:
        was, now = _approval_required(old), _approval_required(new)
        if was and not now:
            self.add(
                "approval_removed", path, old, new, True, f"{path}: approval no longer required"
            )
            return
        if now and not was:
            self.add("approval_added", path, old, new, False, f"{path}: approval now required")
            return
        if not (was and now):
            return
        assert isinstance(old, Mapping) and isinstance(new, Mapping)
        self.approvers(f"{path}.approvers", old.get("approvers"), new.get("approvers"))
        self.expiry(f"{path}.expires_in", old.get("expires_in"), new.get("expires_in"))

    def approvers(self, path: str, old: object, new: object) -> None:
        before, after = set(old or []), set(new or [])  # type: ignore[call-overload]
        if after - before:
            self.add(
                "approvers_added",
                path,
                sorted(before),
                sorted(after),
                True,
                f"{path}: may now also be approved by {', '.join(sorted(after - before))}",
            )
        if before - after:
            self.add(
                "approvers_removed",
                path,
                sorted(before),
                sorted(after),
                False,
                f"{path}: no longer approved by {', '.join(sorted(before - after))}",
            )

    def expiry(self, path: str, old: object, new: object) -> None:
        if _expiry(new) > _expiry(old):
            self.add(
                "approval_expiry_lengthened",
                path,
                old,
                new,
                True,
                f"{path}: approvals now stay valid longer ({old} s → {new} s)",
            )
        elif _expiry(new) < _expiry(old):
            self.add(
                "approval_expiry_shortened",
                path,
                old,
                new,
                False,
                f"{path}: approvals now expire sooner ({old} s → {new} s)",
            )

    def ceiling(self, path: str, old: object, new: object, what: str) -> None:
        if _rank(new) > _rank(old):
            self.add(
                "risk_raised", path, old, new, True, f"{what} raised: {old} → {new or 'unbounded'}"
            )
        elif _rank(new) < _rank(old):
            self.add(
                "risk_lowered",
                path,
                old,
                new,
                False,
                f"{what} lowered: {old or 'unbounded'} → {new}",
            )

    def budget(self, path: str, old: object, new: object) -> None:
        before = old if isinstance(old, Mapping) else {}
        after = new if isinstance(new, Mapping) else {}
        for field in _BUDGET_FIELDS:
            b, a = before.get(field), after.get(field)
            if _limit(a) > _limit(b):
                self.add(
                    "budget_raised",
                    f"{path}.{field}",
                    b,
                    a,
                    True,
                    f"{path}.{field} raised: {b} → {a if a is not None else 'unlimited'}",
                )
            elif _limit(a) < _limit(b):
                self.add(
                    "budget_lowered",
                    f"{path}.{field}",
                    b,
                    a,
                    False,
                    f"{path}.{field} lowered: {b if b is not None else 'unlimited'} → {a}",
                )
        self.leaves(f"{path}.currency", before.get("currency"), after.get("currency"))

    def concurrency(self, old: Doc, new: Doc) -> None:
        """A concurrency cap raised or removed lets more run at once: widening."""
        b, a = old.get("concurrency"), new.get("concurrency")
        if _limit(a) > _limit(b):
            shown = a if a is not None else "unlimited"
            self.add("concurrency_raised", "spec.concurrency", b, a, True,
                     f"concurrency cap raised: {b} → {shown}")  # fmt: skip
        elif _limit(a) < _limit(b):
            shown = b if b is not None else "unlimited"
            self.add("concurrency_lowered", "spec.concurrency", b, a, False,
                     f"concurrency cap lowered: {shown} → {a}")  # fmt: skip

    # ---- per kind

    def skill(self, old: Doc, new: Doc) -> set[str]:
        self.ceiling("spec.effect", old.get("effect"), new.get("effect"), "effect")
        self.approval("spec.approval", old.get("approval"), new.get("approval"))
        self.concurrency(old, new)
        return {"effect", "approval", "concurrency"}

    def binding(self, old: Doc, new: Doc) -> set[str]:
        for field in ("skill", "to"):
            if old.get(field) != new.get(field):
                self.add(
                    "grant_changed",
                    f"spec.{field}",
                    old.get(field),
                    new.get(field),
                    True,
                    f"grant now gives {new.get('skill')} to {new.get('to')} "
                    f"(was {old.get('skill')} to {old.get('to')})",
                )
        self.ceiling(
            "spec.max_risk", old.get("max_risk"), new.get("max_risk"), "binding risk ceiling"
        )
        self.approval("spec.approval", old.get("approval"), new.get("approval"))
        self.constraints(old.get("constraints") or [], new.get("constraints") or [])
        return {"skill", "to", "max_risk", "approval", "constraints"}

    def constraints(self, old: list[Any], new: list[Any]) -> None:
        for item in old:
            if item not in new:
                self.add(
                    "constraint_removed",
                    "spec.constraints",
                    item,
                    None,
                    True,
                    "a binding constraint was removed",
                )
        for item in new:
            if item not in old:
                self.add(
                    "constraint_added",
                    "spec.constraints",
                    None,
                    item,
                    False,
                    "a binding constraint was added",
                )

    def agent(self, old: Doc, new: Doc) -> set[str]:
        self.ceiling(
            "spec.max_risk", old.get("max_risk"), new.get("max_risk"), "agent risk ceiling"
        )
        self.budget("spec.budget", old.get("budget"), new.get("budget"))
        self.concurrency(old, new)
        return {"max_risk", "budget", "concurrency"}

    def team(self, old: Doc, new: Doc) -> set[str]:
        old_roles, new_roles = old.get("role") or {}, new.get("role") or {}
        for role in sorted(set(old_roles) | set(new_roles)):
            b, a = old_roles.get(role), new_roles.get(role)
            if b is not None and a is not None and b != a:
                self.add(
                    "role_changed",
                    f"spec.role.{role}",
                    b,
                    a,
                    True,
                    f"role {role} is now played by {a.get('agent')} (was {b.get('agent')})",
                )
            elif b != a:
                self.add(
                    "role_added" if b is None else "role_removed",
                    f"spec.role.{role}",
                    b,
                    a,
                    False,
                    f"role {role} {'added' if b is None else 'removed'}",
                )
        old_policy, new_policy = old.get("policy") or {}, new.get("policy") or {}
        self.approvers(
            "spec.policy.approvers", old_policy.get("approvers"), new_policy.get("approvers")
        )
        b, a = old_policy.get("approval_required_from"), new_policy.get("approval_required_from")
        if _rank(a) > _rank(b):
            self.add(
                "approval_loosened",
                "spec.policy.approval_required_from",
                b,
                a,
                True,
                f"approval now required only from {a} (was {b})",
            )
        elif _rank(a) < _rank(b):
            self.add(
                "approval_tightened",
                "spec.policy.approval_required_from",
                b,
                a,
                False,
                f"approval now required from {a} (was {b})",
            )
        self.budget("spec.policy.budget", old_policy.get("budget"), new_policy.get("budget"))
        self.concurrency(old, new)
        return {"role", "policy", "concurrency"}

    def workflow(self, old: Doc, new: Doc) -> set[str]:
        old_graph, new_graph = old.get("graph") or {}, new.get("graph") or {}
        for change in diff_workflow_graph(old_graph, new_graph):
            self.add(*change)
        self.grants(old.get("skills") or {}, new.get("skills") or {})
        self.budget("spec.budget", old["spec"].get("budget"), new["spec"].get("budget"))
        self.concurrency(old["spec"], new["spec"])
        return {"state", "start", "budget", "concurrency"}

    def grants(self, old: Doc, new: Doc) -> None:
        def flat(skills: Doc) -> set[tuple[str, str, str]]:
            return {
                (skill, str(g.get("actor")), str(g.get("granted_by")))
                for skill, entry in skills.items()
                for g in entry.get("grants") or []
            }

        before, after = flat(old), flat(new)
        for skill, actor, binding in sorted(after - before):
            self.add(
                "grant_added",
                f"skills.{skill}",
                None,
                {"actor": actor, "binding": binding},
                True,
                f"skill.{skill} now used by {actor} (granted by binding {binding})",
            )
        for skill, actor, binding in sorted(before - after):
            self.add(
                "grant_removed",
                f"skills.{skill}",
                {"actor": actor, "binding": binding},
                None,
                False,
                f"skill.{skill} no longer used by {actor}",
            )

    def governance(self, old: Doc, new: Doc) -> set[str]:
        """Fewer reviews, more deciders or automatic approval loosen change control."""
        self.approvers("spec.deciders", old.get("deciders"), new.get("deciders"))
        b, a = old.get("required_reviews"), new.get("required_reviews")
        if isinstance(a, int) and isinstance(b, int) and a != b:
            self.add(
                "reviews_lowered" if a < b else "reviews_raised",
                "spec.required_reviews",
                b,
                a,
                a < b,
                f"required reviews {b} → {a}",
            )
        if new.get("auto_approve_narrowing") and not old.get("auto_approve_narrowing"):
            self.add(
                "auto_approval_enabled",
                "spec.auto_approve_narrowing",
                False,
                True,
                True,
                "narrowing changes are now approved automatically",
            )
        return {"deciders", "required_reviews", "auto_approve_narrowing"}

    def trigger(self, old: Doc, new: Doc) -> set[str]:
        """Work that starts by itself: another workflow, another event or more of them, a
        faster schedule, more catch-up or more overlap widen what runs without anyone asking."""
        if old.get("workflow") != new.get("workflow"):
            self.add(
                "trigger_retargeted", "spec.workflow", old.get("workflow"), new.get("workflow"),
                True, f"the trigger now starts {new.get('workflow')}",
            )  # fmt: skip
        before, after = old.get("event") or {}, new.get("event") or {}
        if after.get("name") not in (None, before.get("name")):
            self.add(
                "trigger_event_added", "spec.event.name", before.get("name"), after.get("name"),
                True, f"the trigger now fires on event {after.get('name')}",
            )  # fmt: skip
        elif after and before.get("filter") != after.get("filter"):
            narrower = before.get("filter") is None
            self.add(
                "trigger_filter_added" if narrower else "trigger_filter_changed",
                "spec.event.filter", before.get("filter"), after.get("filter"), not narrower,
                "the trigger's filter " + ("added" if narrower else "changed: it may match more"),
            )  # fmt: skip
        b, a = _pace(old.get("schedule")), _pace(new.get("schedule"))
        if a < b:
            self.add(
                "trigger_fires_more_often", "spec.schedule", old.get("schedule"),
                new.get("schedule"), True, "the trigger's schedule now fires more often",
            )  # fmt: skip
        else:
            self.leaves("spec.schedule", old.get("schedule"), new.get("schedule"))
        catch_up = ("catch_up", "catch_up_limit", "grace")
        widened = _catch_up(new) > _catch_up(old) or (
            new.get("catch_up") == old.get("catch_up") == "none"
            and float(new.get("grace", 60)) > float(old.get("grace", 60))
        )
        if widened:
            self.add(
                "trigger_catch_up_widened", "spec.catch_up",
                {k: old.get(k) for k in catch_up}, {k: new.get(k) for k in catch_up}, True,
                "the trigger now catches up more after a downtime",
            )  # fmt: skip
        else:
            for field in catch_up:
                self.leaves(f"spec.{field}", old.get(field), new.get(field))
        was, now = old.get("overlap", "skip"), new.get("overlap", "skip")
        if was != now:
            wider = _OVERLAP_ORDER.index(now) > _OVERLAP_ORDER.index(was)
            self.add(
                "trigger_overlap_widened" if wider else "trigger_overlap_narrowed",
                "spec.overlap", was, now, wider, f"the trigger's overlap is now {now} (was {was})",
            )  # fmt: skip
        return {"workflow", "event", "schedule", "overlap", *catch_up}

    def runbook(self, old: Doc, new: Doc) -> set[str]:
        old_steps = (old.get("graph") or {}).get("steps") or {}
        new_steps = (new.get("graph") or {}).get("steps") or {}
        for step in sorted(set(old_steps) | set(new_steps)):
            b, a = old_steps.get(step), new_steps.get(step)
            if b is None:
                self.add("step_added", f"graph.steps.{step}", None, a, False, f"step {step} added")
            elif a is None:
                self.add(
                    "step_removed", f"graph.steps.{step}", b, None, False, f"step {step} removed"
                )
            else:
                self.leaves(f"graph.steps.{step}", b, a)
        old_edges = {tuple(e) for e in (old.get("graph") or {}).get("edges") or []}
        new_edges = {tuple(e) for e in (new.get("graph") or {}).get("edges") or []}
        for a, b in sorted(new_edges - old_edges):
            self.add(
                "dependency_added", "graph.edges", None, [a, b], False, f"step {b} now needs {a}"
            )
        for a, b in sorted(old_edges - new_edges):
            self.add(
                "dependency_removed",
                "graph.edges",
                [a, b],
                None,
                False,
                f"step {b} no longer needs {a}",
            )
        return {"step"}


# --------------------------------------------------------------------------- workflow graphs

_Raw = tuple[str, str, Any, Any, bool, str]


def find_renames(old_states: Doc, new_states: Doc) -> dict[str, str]:
    """Removed → added state names whose content is identical (first match by name)."""
    removed = sorted(set(old_states) - set(new_states))
    added = sorted(set(new_states) - set(old_states))
    renames: dict[str, str] = {}
    for name in removed:
        for candidate in added:
            if candidate not in renames.values() and old_states[name] == new_states[candidate]:
                renames[name] = candidate
                break
    return renames


def diff_workflow_graph(old: Doc, new: Doc) -> list[_Raw]:
    """Changes between two compiled workflow graphs, renames first.

    After pairing renamed states, the old graph is rewritten with the new names
    (states, transitions, ``state.*`` references), so a rename shows once and
    not as a removal, an addition and every transition around them.
    """
    renames = find_renames(old.get("states") or {}, new.get("states") or {})
    old = rename_graph(old, renames)
    out: list[_Raw] = [
        ("state_renamed", f"graph.states.{a}", a, b, False, f"state {a} renamed to {b}")
        for a, b in sorted(renames.items())
    ]
    out += _state_changes(old.get("states") or {}, new.get("states") or {})
    if old.get("initial") != new.get("initial"):
        out.append(
            (
                "initial_changed",
                "graph.initial",
                old.get("initial"),
                new.get("initial"),
                False,
                f"the workflow now starts at {new.get('initial')}",
            )
        )
    out += _transition_changes(old.get("transitions") or [], new.get("transitions") or [])
    out += _bypassed_approvals(old, new)
    return out


def rename_graph(graph: Doc, renames: Mapping[str, str]) -> dict[str, Any]:
    if not renames:
        return dict(graph)

    def name(state: Any) -> Any:
        return renames.get(state, state)

    renamed: dict[str, Any] = dict(rename_states(dict(graph), renames))
    renamed["states"] = {name(k): v for k, v in renamed.get("states", {}).items()}
    renamed["ends"] = {name(k): v for k, v in renamed.get("ends", {}).items()}
    renamed["initial"] = name(renamed.get("initial"))
    renamed["transitions"] = [
        {**t, "from": name(t.get("from")), "to": name(t.get("to"))}
        for t in renamed.get("transitions", [])
    ]
    return renamed


def _state_changes(old: Doc, new: Doc) -> Iterator[_Raw]:
    for state in sorted(set(old) | set(new)):
        b, a = old.get(state), new.get(state)
        path = f"graph.states.{state}"
        if b is None:
            kind = a.get("kind") if a else None
            yield ("state_added", path, None, a, False, f"state {state} added ({kind})")
        elif a is None:
            approval = b.get("kind") == "approval"
            yield (
                "approval_state_removed" if approval else "state_removed",
                path,
                b,
                None,
                approval,
                f"{'approval ' if approval else ''}state {state} removed",
            )
        elif b != a:
            yield from _state_changed(path, state, b, a)


def _state_changed(path: str, state: str, old: Doc, new: Doc) -> Iterator[_Raw]:
    if old.get("kind") != new.get("kind"):
        widening = old.get("kind") == "approval"
        yield (
            "state_kind_changed",
            f"{path}.kind",
            old.get("kind"),
            new.get("kind"),
            widening,
            f"state {state} is now a {new.get('kind')} state (was {old.get('kind')})",
        )
        return
    differ = _Differ("")
    old_config, new_config = dict(old.get("config") or {}), dict(new.get("config") or {})
    if new.get("kind") == "approval":
        differ.approvers(
            f"{path}.config.approvers",
            old_config.pop("approvers", None),
            new_config.pop("approvers", None),
        )
        differ.expiry(
            f"{path}.config.expires_in",
            old_config.pop("expires_in", None),
            new_config.pop("expires_in", None),
        )
    if new.get("kind") == "turn":
        before, after = old_config.pop("skills", []) or [], new_config.pop("skills", []) or []
        for skill in sorted(set(after) - set(before)):
            differ.add(
                "turn_skill_added",
                f"{path}.config.skills",
                None,
                skill,
                True,
                f"state {state}: the turn may now call {skill}",
            )
        for skill in sorted(set(before) - set(after)):
            differ.add(
                "turn_skill_removed",
                f"{path}.config.skills",
                skill,
                None,
                False,
                f"state {state}: the turn may no longer call {skill}",
            )
    rest_old = {**old, "config": old_config}
    rest_new = {**new, "config": new_config}
    differ.leaves(path, rest_old, rest_new)
    for c in differ.changes:
        yield (c.kind, c.path, c.before, c.after, c.widening, c.message)


def _transition_key(t: Doc) -> tuple[str, str, int]:
    return (str(t.get("from")), str(t.get("event")), int(t.get("order") or 0))


def _transition_changes(old: list[Doc], new: list[Doc]) -> Iterator[_Raw]:
    before = {_transition_key(t): t for t in old}
    after = {_transition_key(t): t for t in new}
    for key in sorted(set(before) | set(after)):
        b, a = before.get(key), after.get(key)
        source, event, order = key
        label = f"{source} --{event}{f'#{order}' if order else ''}-->"
        path = f"graph.transitions.{source}.{event}.{order}"
        if b is None:
            target = a.get("to") if a else None
            yield ("transition_added", path, None, a, False, f"transition added: {label} {target}")
        elif a is None:
            yield (
                "transition_removed",
                path,
                b,
                None,
                False,
                f"transition removed: {label} {b['to']}",
            )
        else:
            if b.get("to") != a.get("to"):
                yield (
                    "transition_retargeted",
                    path,
                    b.get("to"),
                    a.get("to"),
                    False,
                    f"transition {label} now goes to {a.get('to')} (was {b.get('to')})",
                )
            if b.get("guard") != a.get("guard"):
                yield (
                    "guard_changed",
                    f"{path}.guard",
                    b.get("guard"),
                    a.get("guard"),
                    False,
                    f"guard of {label} changed",
                )


def _ungated_actions(graph: Doc) -> set[str]:
    """Action states reachable from the initial state without passing an approval state."""
    states = graph.get("states") or {}
    successors: dict[str, set[str]] = {}
    for t in graph.get("transitions") or []:
        successors.setdefault(str(t.get("from")), set()).add(str(t.get("to")))
    seen: set[str] = set()
    stack = [graph.get("initial")] if graph.get("initial") in states else []
    while stack:
        state = str(stack.pop())
        if state in seen:
            continue
        seen.add(state)
        if (states.get(state) or {}).get("kind") == "approval":
            continue
        stack.extend(successors.get(state, ()))
    return {s for s in seen if (states.get(s) or {}).get("kind") == "action"}


def _bypassed_approvals(old: Doc, new: Doc) -> Iterator[_Raw]:
    existed = set(old.get("states") or {}) & set(new.get("states") or {})
    newly = (_ungated_actions(new) - _ungated_actions(old)) & existed
    for state in sorted(newly):
        yield (
            "approval_bypassed",
            f"graph.states.{state}",
            None,
            None,
            True,
            f"action state {state} can now be reached without passing an approval",
        )
