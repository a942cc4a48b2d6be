"""The runtime's one face: what the HTTP API, the CLI, authoring and the quickstart call.

Every mutation takes one frozen request object (:mod:`openseal.runtime.requests`) and a
:class:`Caller` — the principal it is done for, and whether it comes from this machine. The
API decides ``local`` from where it listens; the runtime never sees an address. Reads take
plain arguments. Refusals are :class:`~openseal.errors.OpenSealError` subclasses with stable
codes (``openseal/error_codes.py``).

- runs and objectives: :mod:`.runs`; a run's turns and their calls: :mod:`.turns`;
- approvals and actions: :mod:`.actions` and ``decide_approval``;
- definitions by digest and posted deployments: :mod:`.definitions`;
- governance (change proposals, deployments): :mod:`.governance`;
- triggers (list, pause, resume, retire): :mod:`.triggers`;
- capabilities: :mod:`.availability`;
- engines, workers and model providers: :mod:`.workers`.

The store itself is opened with :func:`openseal.runtime.store.open_store`.

The face is lazy: a name's module is imported when the name is first used, so a command that
only reads (``openseal runs list``) never imports the engine, the model clients or the
compiler behind it. The imports under ``TYPE_CHECKING`` below are the face's one list: type
checkers read them, and :func:`__getattr__` resolves each name from them at run time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openseal.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from openseal.runtime.access import (
        ANY_SCOPE,
        FULL,
        PERMISSIONS,
        ROLES,
        Grant,
        approver_grant,
        is_principal,
        roles_for,
    )
    from openseal.runtime.actions.approvals import (
        ApprovalAuthority,
        ApprovalError,
        Decided,
        load_authority,
    )
    from openseal.runtime.actions.approvals import decide as decide_approval
    from openseal.runtime.actions.authority_location import AUTHORITY_ENV
    from openseal.runtime.caller import CLI, LOCAL_OPERATOR, Caller
    from openseal.runtime.engine.objectives import create_objective
    from openseal.runtime.event_summary import summarize
    from openseal.runtime.id_prefix import choose_id, complete_id, id_prefix
    from openseal.runtime.pricing import format_cost
    from openseal.runtime.providers import OpenAIProvider, check_profile
    from openseal.runtime.requests import (
        ActivateObjective,
        AgentRequestStep,
        ApprovalDecision,
        EventDelivery,
        Intervention,
        NewToken,
        ObjectiveCommand,
        Reconciliation,
        Resolution,
        RunCommand,
        StartObjective,
        TriggerCommand,
    )
    from openseal.runtime.service import governance, tokens, workers
    from openseal.runtime.service.actions import (
        ActionView,
        ApprovalView,
        ProposalView,
        list_actions,
        list_approvals,
        reconcile_action,
        resolve_action,
        show_action,
        show_approval,
    )
    from openseal.runtime.service.agent_requests import (
        list_agent_requests,
        named_principal,
        show_agent_request,
        step_agent_request,
    )
    from openseal.runtime.service.availability import (
        Capability,
        CapabilityConfig,
        capabilities,
        capability_of,
    )
    from openseal.runtime.service.definitions import deploy_documents
    from openseal.runtime.service.runs import (
        LOCAL_ACTOR,
        Canceled,
        ChildRun,
        Registered,
        RunView,
        activate_objective,
        cancel_run,
        cancellation,
        follow_events,
        intervene,
        list_objectives,
        list_runs,
        pause_run,
        receive_event,
        register_documents,
        resume_run,
        run_events,
        show_objective,
        show_run,
        steer_objective,
        waiting_reason,
    )
    from openseal.runtime.service.triggers import (
        TriggerView,
        list_triggers,
        set_trigger_status,
        show_trigger,
    )
    from openseal.runtime.service.turns import Call, TurnView, run_turns
    from openseal.runtime.service.versions import get_version
    from openseal.runtime.statuses import (
        OPEN_CHANGE_PROPOSAL_STATUSES,
        TERMINAL_RUN_STATUSES,
        ActionStatus,
        AgentRequestStatus,
        ApprovalStatus,
        ChangeProposalStatus,
        ObjectiveStatus,
        RunStatus,
    )


__getattr__ = lazy_exports(__name__, __file__)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "ANY_SCOPE",
    "AUTHORITY_ENV",
    "CLI",
    "FULL",
    "LOCAL_ACTOR",
    "LOCAL_OPERATOR",
    "OPEN_CHANGE_PROPOSAL_STATUSES",
    "PERMISSIONS",
    "ROLES",
    "TERMINAL_RUN_STATUSES",
    "ActionStatus",
    "ActionView",
    "ActivateObjective",
    "AgentRequestStatus",
    "AgentRequestStep",
    "ApprovalAuthority",
    "ApprovalDecision",
    "ApprovalError",
    "ApprovalStatus",
    "ApprovalView",
    "Call",
    "Caller",
    "Canceled",
    "Capability",
    "CapabilityConfig",
    "ChangeProposalStatus",
    "ChildRun",
    "Decided",
    "EventDelivery",
    "Grant",
    "Intervention",
    "NewToken",
    "ObjectiveCommand",
    "ObjectiveStatus",
    "OpenAIProvider",
    "ProposalView",
    "Reconciliation",
    "Registered",
    "Resolution",
    "RunCommand",
    "RunStatus",
    "RunView",
    "StartObjective",
    "TriggerCommand",
    "TriggerView",
    "TurnView",
    "activate_objective",
    "approver_grant",
    "cancel_run",
    "cancellation",
    "capabilities",
    "capability_of",
    "check_profile",
    "choose_id",
    "complete_id",
    "create_objective",
    "decide_approval",
    "deploy_documents",
    "follow_events",
    "format_cost",
    "get_version",
    "governance",
    "id_prefix",
    "intervene",
    "is_principal",
    "list_actions",
    "list_agent_requests",
    "list_approvals",
    "list_objectives",
    "list_runs",
    "list_triggers",
    "load_authority",
    "named_principal",
    "pause_run",
    "receive_event",
    "reconcile_action",
    "register_documents",
    "resolve_action",
    "resume_run",
    "roles_for",
    "run_events",
    "run_turns",
    "set_trigger_status",
    "show_action",
    "show_agent_request",
    "show_approval",
    "show_objective",
    "show_run",
    "show_trigger",
    "steer_objective",
    "step_agent_request",
    "summarize",
    "tokens",
    "waiting_reason",
    "workers",
]
