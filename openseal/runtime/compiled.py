"""The runtime's pure view of a compiled workflow document (never of HCL or YAML).

A run pins the digest of its workflow version (invariant 12). :class:`CompiledWorkflow` reads
that document's graph, budgets and skills, and the agents, teams, models and skills it names
through ``dependencies`` (each by digest, so a run sees the dependency versions it was
compiled against) from a :class:`Documents` source; the store-backed one is
:class:`~openseal.runtime.engine.catalog.WorkflowCatalog`. The graph has the shapes of
:mod:`openseal.contract`: a handler reads its state's settings typed by kind
(``ctx.state.settings(TurnSettings)["agent"]``). Guards and expressions are evaluated from
their JSON AST with the compiler's pure evaluator. Nothing here reads the store or the clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, cast

from openseal.compiler import EvaluationError, evaluate
from openseal.compiler import expr as ex
from openseal.contract import STATE_SETTINGS, JSONSchema, StateSettings, WorkflowGraph
from openseal.errors import RuntimeFailure

Settings = TypeVar("Settings")
Decoded = TypeVar("Decoded")

DIGEST_PREFIX = "sha256:"


def version_key(digest: str) -> str:
    """The store key of a compiled digest: the bare hex (the column holds 64 characters)."""
    return digest.removeprefix(DIGEST_PREFIX)


class DefinitionError(RuntimeFailure):
    """A compiled document lacks something the runtime needs (a dependency, a state...)."""

    code = "definition_error"


@dataclass(frozen=True)
class Transition:
    source: str
    target: str
    event: str
    guard: ex.Expression | None
    order: int


@dataclass(frozen=True)
class StateSpec:
    name: str
    kind: str
    #: the settings of its kind (``STATE_SETTINGS[kind]``); read them with :meth:`settings`
    config: StateSettings
    output_schema: JSONSchema | None

    def settings(self, shape: type[Settings]) -> Settings:
        """The state's settings typed as ``shape``, the contract's settings of its kind.

        ``state.settings(WaitSettings)["timer"]``; raises :class:`DefinitionError` when the
        state is of another kind. Nothing is parsed: the document's dict is returned.
        """
        if STATE_SETTINGS.get(self.kind) is not shape:
            raise DefinitionError(f"state {self.name} is a {self.kind}, not read as {shape}")
        return cast(Settings, self.config)


@dataclass(frozen=True)
class AgentProfile:
    """Who acts in a turn: the agent's instructions and its model profile."""

    ref: str
    name: str
    instructions: str
    model: dict[str, Any]


class Documents(Protocol):
    """Where a compiled workflow finds the documents it pins, by digest."""

    def document(self, digest: str) -> dict[str, Any]: ...


class ByIdentity(Generic[Decoded]):
    """A part of a compiled document decoded once (an expression's AST, a skill's spec) rather
    than at every turn that reads it.

    Pinned documents are immutable and the catalog serves the same objects turn after turn,
    so the decoding is kept by the identity of the part it came from. The part is held with
    it, so its id cannot be reused by another object while the entry lives; at :attr:`LIMIT`
    entries the cache starts again (parts that are not a cached document's stay bounded).
    """

    LIMIT = 4096

    def __init__(self, decode: Callable[[Any], Decoded]) -> None:
        self._decode = decode
        self._decoded: dict[int, tuple[Any, Decoded]] = {}

    def __call__(self, part: Any) -> Decoded:
        found = self._decoded.get(id(part))
        if found is not None and found[0] is part:
            return found[1]
        decoded = self._decode(part)
        if len(self._decoded) >= self.LIMIT:
            self._decoded = {}
        self._decoded[id(part)] = (part, decoded)
        return decoded


class CompiledWorkflow:
    """One pinned workflow version plus lookups into its dependencies."""

    def __init__(
        self, name: str, digest: str, document: dict[str, Any], documents: Documents
    ) -> None:
        self.name = name
        #: the pinned version's digest (``sha256:...``)
        self.digest = digest
        self.document = document
        self._catalog = documents
        graph: WorkflowGraph = self.document["graph"]
        self.initial = graph["initial"]
        self.states = {
            name: StateSpec(name, entry["kind"], entry["config"], entry.get("output_schema"))
            for name, entry in graph["states"].items()
        }
        self.transitions = tuple(
            Transition(
                t["from"],
                t["to"],
                t["event"],
                ex.from_json(t["guard"]) if t["guard"] is not None else None,
                t["order"],
            )
            for t in graph["transitions"]
        )
        self.ends: dict[str, str] = dict(graph["ends"])
        #: transitions by source and event, in the order :meth:`choose` tries them
        self._leaving: dict[tuple[str, str], tuple[Transition, ...]] = {}
        for transition in sorted(self.transitions, key=lambda t: (t.event, t.order, t.target)):
            key = (transition.source, transition.event)
            self._leaving[key] = (*self._leaving.get(key, ()), transition)
        self._budget_limits = _budget_limits(self.document)

    # -- graph -----------------------------------------------------------------------

    def state(self, name: str) -> StateSpec:
        try:
            return self.states[name]
        except KeyError:
            raise DefinitionError(f"workflow {self.name} has no state {name!r}") from None

    def outgoing(self, state: str, event: str | None = None) -> list[Transition]:
        found = [t for t in self.transitions if t.source == state]
        if event is not None:
            found = [t for t in found if t.event == event]
        return sorted(found, key=lambda t: (t.event, t.order, t.target))

    def choose(self, state: str, event: str, scope: Mapping[str, object]) -> str | None:
        """The target of the first transition for ``event`` whose guard holds, if any."""
        for transition in self._leaving.get((state, event), ()):
            if transition.guard is None or evaluate(transition.guard, scope) is True:
                return transition.target
        return None

    # -- budgets -----------------------------------------------------------------------

    def budget_limits(self) -> dict[str, int]:
        return dict(self._budget_limits)

    def on_budget_exhausted(self) -> str:
        return str((self.document.get("budgets") or {}).get("on_exhausted") or "needs_attention")

    # -- objectives --------------------------------------------------------------------

    def success_criterion(self) -> Any:
        """The stored expression (JSON AST) a completed run's objective must satisfy, if any."""
        policy = (self.document.get("spec") or {}).get("objective") or {}
        return policy.get("success")

    # -- dependencies ------------------------------------------------------------------

    def dependency(self, key: str, owner: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The compiled document ``key`` (``kind.name``) as pinned by ``owner`` (default: us)."""
        deps = (owner or self.document).get("dependencies") or {}
        digest = deps.get(key)
        if digest is None:
            raise DefinitionError(f"workflow {self.name} does not pin a version of {key}")
        return self._catalog.document(digest)

    def agent(self, ref: str) -> AgentProfile:
        """Resolve ``agent.x`` or ``team.t.role.r`` to the agent and its model profile."""
        parts = ref.split(".")
        holder: Mapping[str, Any] = self.document
        if parts[0] == "team" and len(parts) == 4:
            team = self.dependency(f"team.{parts[1]}")
            role = ((team.get("spec") or {}).get("role") or {}).get(parts[3]) or {}
            agent_key = role.get("agent")
            if not agent_key:
                raise DefinitionError(f"team {parts[1]} has no role {parts[3]!r}")
            holder = team
        elif parts[0] == "agent" and len(parts) == 2:
            agent_key = ref
        else:
            raise DefinitionError(f"{ref!r} does not name an agent or a team role")
        agent = self.dependency(agent_key, holder)
        spec = agent.get("spec") or {}
        model = self.dependency(spec.get("model", ""), agent) if spec.get("model") else {}
        return AgentProfile(
            ref=ref,
            name=str(agent.get("name")),
            instructions=str(spec.get("instructions") or ""),
            model={"name": model.get("name"), **(model.get("spec") or {})},
        )

    def skill_tool(self, skill: str) -> dict[str, Any]:
        """A skill as a model tool: name, description and the JSON Schema of its input."""
        name = skill.removeprefix("skill.")
        entry = (self.document.get("skills") or {}).get(name) or {}
        description, schema = "", {"type": "object"}
        digest = entry.get("digest")
        if digest:
            document = self._catalog.document(digest)
            description = str((document.get("spec") or {}).get("description") or "")
            schema = document.get("inputs") or schema
        return {"name": name, "description": description, "input_schema": schema}


def _budget_limits(document: Mapping[str, Any]) -> dict[str, int]:
    budgets = document.get("budgets") or {}
    workflow = budgets.get("workflow") or {}
    return {k: int(v) for k, v in workflow.items() if k != "currency" and isinstance(v, int)}


def _expression(node: Any) -> ex.Expression:
    try:
        return ex.from_json(node)
    except ex.ExpressionFormatError as exc:
        raise DefinitionError(f"stored expression is malformed: {exc}") from None


#: stored expressions, read from their JSON AST once
_expressions = ByIdentity(_expression)


def evaluate_json(node: Any, scope: Mapping[str, object]) -> object:
    """Evaluate a stored expression (JSON AST); raises EvaluationError or DefinitionError."""
    return evaluate(_expressions(node), scope)


#: what a delegation asks of its callee: the same callee asked the same may answer with the
#: request it already has (replay takes its recorded answer; a migration keeps it)
DELEGATION_ASKS = ("goal", "input", "output_type", "review", "budget")


def delegation_request(
    workflow: CompiledWorkflow, state: StateSpec, scope: Mapping[str, object]
) -> dict[str, Any]:
    """The request a visit of ``delegate`` state ``state`` makes of its callee in ``scope``."""
    config: Any = state.config
    request: dict[str, Any] = {
        "goal": evaluate_json(config["goal"], scope),
        "input": {k: evaluate_json(v, scope) for k, v in sorted(config["input"].items())},
        "output_type": config["output"],
        "output_schema": state.output_schema,
        "review": config["review"],
        "workflow": workflow.name,
        "state": state.name,
        "caller": str((workflow.document.get("spec") or {}).get("owner") or ""),
    }
    budget = config.get("budget") or {}
    if budget:
        request["budget"] = budget
    return request


def same_request(before: Any, after: Mapping[str, Any]) -> list[str]:
    """What of :data:`DELEGATION_ASKS` request ``after`` asks differently from ``before``."""
    asked = before if isinstance(before, Mapping) else {}
    return [key for key in DELEGATION_ASKS if asked.get(key) != after.get(key)]


__all__ = [
    "DELEGATION_ASKS",
    "AgentProfile",
    "ByIdentity",
    "CompiledWorkflow",
    "DefinitionError",
    "Documents",
    "EvaluationError",
    "StateSpec",
    "Transition",
    "delegation_request",
    "evaluate_json",
    "same_request",
    "version_key",
]
