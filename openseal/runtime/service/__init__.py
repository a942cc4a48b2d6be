"""The runtime's one face: what the HTTP API, the CLI, authoring and the quickstart call.

Every mutation takes one frozen request object (:mod:`openseal.runtime.requests`) and a
:class:`Caller` — the principal it is done for, and whether it comes from this machine. The
API decides ``local`` from where it listens; the runtime never sees an address. Reads take
plain arguments. Refusals are :class:`~openseal.errors.OpenSealError` subclasses with stable
codes (``openseal/error_codes.py``).

- runs and objectives: :mod:`.runs`; a run's turns and their calls: :mod:`.turns`;
- objectives started from a prompt, a model picking the workflow: :mod:`.asks`;
- approvals and actions: :mod:`.actions` and ``decide_approval``;
- definitions by digest and posted deployments: :mod:`.definitions`;
- governance (change proposals, deployments): :mod:`.governance`;
- replay of recorded runs (a change proposal's, or each run's own version): :mod:`.replay`;
- triggers (list, pause, resume, retire): :mod:`.triggers`;
- flow control (pause and resume agents and teams, what they do now, scopes' caps):
  :mod:`.capacity`;
- capabilities: :mod:`.availability`;
- engines, workers and model providers: :mod:`.workers`;
- retention, archiving ended runs and restoring them, backups, restores and recovery
  mode: :mod:`openseal.runtime.lifecycle`.

The store itself is opened with :func:`openseal.runtime.store.open_store`.

The face is lazy: a name's module is imported when the name is first used, so a command that
only reads (``openseal runs list``) never imports the engine, the model clients or the
compiler behind it. The imports under ``TYPE_CHECKING`` below are the face's one list (each
``X as X``, under the name it has where it is defined): type checkers read them, and
:func:`__getattr__` resolves each name from them at run time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openseal.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from openseal.runtime.access import ANY_SCOPE as ANY_SCOPE
    from openseal.runtime.access import FULL as FULL
    from openseal.runtime.access import PERMISSIONS as PERMISSIONS
    from openseal.runtime.access import PRINCIPAL_PATTERN as PRINCIPAL_PATTERN
    from openseal.runtime.access import ROLES as ROLES
    from openseal.runtime.access import SCOPE_PATTERN as SCOPE_PATTERN
    from openseal.runtime.access import Grant as Grant
    from openseal.runtime.access import approver_grant as approver_grant
    from openseal.runtime.access import is_principal as is_principal
    from openseal.runtime.access import roles_for as roles_for
    from openseal.runtime.actions.approvals import ApprovalAuthority as ApprovalAuthority
    from openseal.runtime.actions.approvals import ApprovalError as ApprovalError
    from openseal.runtime.actions.approvals import Decided as Decided
    from openseal.runtime.actions.approvals import decide_approval as decide_approval
    from openseal.runtime.actions.approvals import load_authority as load_authority
    from openseal.runtime.actions.approvals import seen_hash_prefix as seen_hash_prefix
    from openseal.runtime.actions.authority_location import AUTHORITY_ENV as AUTHORITY_ENV
    from openseal.runtime.caller import CLI as CLI
    from openseal.runtime.caller import LOCAL_OPERATOR as LOCAL_OPERATOR
    from openseal.runtime.caller import Caller as Caller
    from openseal.runtime.engine.objectives import create_objective as create_objective
    from openseal.runtime.event_summary import summarize as summarize
    from openseal.runtime.id_prefix import HASH_PREFIX as HASH_PREFIX
    from openseal.runtime.id_prefix import MIN_HASH_PREFIX as MIN_HASH_PREFIX
    from openseal.runtime.id_prefix import choose_id as choose_id
    from openseal.runtime.id_prefix import complete_id as complete_id
    from openseal.runtime.id_prefix import handle as handle
    from openseal.runtime.id_prefix import handle_suffix as handle_suffix
    from openseal.runtime.id_prefix import id_prefix as id_prefix
    from openseal.runtime.id_prefix import matching as matching
    from openseal.runtime.lifecycle import backup as backup
    from openseal.runtime.lifecycle import recovery as recovery
    from openseal.runtime.lifecycle.archive import ArchiveReport as ArchiveReport
    from openseal.runtime.lifecycle.archive import ArchiveRequest as ArchiveRequest
    from openseal.runtime.lifecycle.archive import archive as archive
    from openseal.runtime.lifecycle.archive_location import locate_archive as locate_archive
    from openseal.runtime.lifecycle.restore import find_archived_run as find_archived_run
    from openseal.runtime.lifecycle.restore import restore_archive as restore_archive
    from openseal.runtime.lifecycle.retention import Retention as Retention
    from openseal.runtime.lifecycle.retention import parse_period as parse_period
    from openseal.runtime.lifecycle.retention import scope_periods as scope_periods
    from openseal.runtime.lifecycle.schedule import ArchiveSchedule as ArchiveSchedule
    from openseal.runtime.listing import API_AGE as API_AGE
    from openseal.runtime.listing import parse_since as parse_since
    from openseal.runtime.listing import since_for_api as since_for_api
    from openseal.runtime.pricing import format_cost as format_cost
    from openseal.runtime.providers import OpenAIProvider as OpenAIProvider
    from openseal.runtime.providers import check_profile as check_profile
    from openseal.runtime.requests import ActivateObjective as ActivateObjective
    from openseal.runtime.requests import AgentRequestStep as AgentRequestStep
    from openseal.runtime.requests import ApprovalDecision as ApprovalDecision
    from openseal.runtime.requests import Ask as Ask
    from openseal.runtime.requests import EventDelivery as EventDelivery
    from openseal.runtime.requests import Intervention as Intervention
    from openseal.runtime.requests import NewToken as NewToken
    from openseal.runtime.requests import ObjectiveCommand as ObjectiveCommand
    from openseal.runtime.requests import Reconciliation as Reconciliation
    from openseal.runtime.requests import Resolution as Resolution
    from openseal.runtime.requests import RunCommand as RunCommand
    from openseal.runtime.requests import StartObjective as StartObjective
    from openseal.runtime.requests import TriggerCommand as TriggerCommand
    from openseal.runtime.service import governance as governance
    from openseal.runtime.service import replay as replay
    from openseal.runtime.service import tokens as tokens
    from openseal.runtime.service import workers as workers
    from openseal.runtime.service.actions import ActionView as ActionView
    from openseal.runtime.service.actions import ApprovalView as ApprovalView
    from openseal.runtime.service.actions import ProposalView as ProposalView
    from openseal.runtime.service.actions import approval_glances as approval_glances
    from openseal.runtime.service.actions import list_actions as list_actions
    from openseal.runtime.service.actions import list_approvals as list_approvals
    from openseal.runtime.service.actions import reconcile_action as reconcile_action
    from openseal.runtime.service.actions import resolve_action as resolve_action
    from openseal.runtime.service.actions import show_action as show_action
    from openseal.runtime.service.actions import show_approval as show_approval
    from openseal.runtime.service.agent_requests import list_agent_requests as list_agent_requests
    from openseal.runtime.service.agent_requests import named_principal as named_principal
    from openseal.runtime.service.agent_requests import show_agent_request as show_agent_request
    from openseal.runtime.service.agent_requests import step_agent_request as step_agent_request
    from openseal.runtime.service.asks import AskPlan as AskPlan
    from openseal.runtime.service.asks import NoFittingWorkflow as NoFittingWorkflow
    from openseal.runtime.service.asks import plan_ask as plan_ask
    from openseal.runtime.service.asks import start_ask as start_ask
    from openseal.runtime.service.availability import Capability as Capability
    from openseal.runtime.service.availability import CapabilityConfig as CapabilityConfig
    from openseal.runtime.service.availability import capabilities as capabilities
    from openseal.runtime.service.availability import capability_of as capability_of
    from openseal.runtime.service.capacity import ActorView as ActorView
    from openseal.runtime.service.capacity import RunNow as RunNow
    from openseal.runtime.service.capacity import ScopeLimit as ScopeLimit
    from openseal.runtime.service.capacity import ScopeQueue as ScopeQueue
    from openseal.runtime.service.capacity import ScopeQuota as ScopeQuota
    from openseal.runtime.service.capacity import scope_limits as scope_limits
    from openseal.runtime.service.capacity import scope_quotas as scope_quotas
    from openseal.runtime.service.capacity import set_actor_paused as set_actor_paused
    from openseal.runtime.service.capacity import set_scope_limit as set_scope_limit
    from openseal.runtime.service.capacity import set_scope_queue as set_scope_queue
    from openseal.runtime.service.capacity import set_scope_quota as set_scope_quota
    from openseal.runtime.service.capacity import show_actor as show_actor
    from openseal.runtime.service.definitions import deploy_documents as deploy_documents
    from openseal.runtime.service.retention import ScopeRetention as ScopeRetention
    from openseal.runtime.service.retention import scope_retentions as scope_retentions
    from openseal.runtime.service.retention import set_scope_retention as set_scope_retention
    from openseal.runtime.service.runs import LOCAL_ACTOR as LOCAL_ACTOR
    from openseal.runtime.service.runs import Canceled as Canceled
    from openseal.runtime.service.runs import ChildRun as ChildRun
    from openseal.runtime.service.runs import Registered as Registered
    from openseal.runtime.service.runs import RunView as RunView
    from openseal.runtime.service.runs import activate_objective as activate_objective
    from openseal.runtime.service.runs import cancel_run as cancel_run
    from openseal.runtime.service.runs import cancellation as cancellation
    from openseal.runtime.service.runs import child_runs as child_runs
    from openseal.runtime.service.runs import follow_events as follow_events
    from openseal.runtime.service.runs import intervene as intervene
    from openseal.runtime.service.runs import list_objectives as list_objectives
    from openseal.runtime.service.runs import list_runs as list_runs
    from openseal.runtime.service.runs import pause_run as pause_run
    from openseal.runtime.service.runs import receive_event as receive_event
    from openseal.runtime.service.runs import register_documents as register_documents
    from openseal.runtime.service.runs import resume_run as resume_run
    from openseal.runtime.service.runs import run_events as run_events
    from openseal.runtime.service.runs import show_objective as show_objective
    from openseal.runtime.service.runs import show_run as show_run
    from openseal.runtime.service.runs import steer_objective as steer_objective
    from openseal.runtime.service.runs import waiting_reason as waiting_reason
    from openseal.runtime.service.triggers import TriggerView as TriggerView
    from openseal.runtime.service.triggers import list_triggers as list_triggers
    from openseal.runtime.service.triggers import set_trigger_status as set_trigger_status
    from openseal.runtime.service.triggers import show_trigger as show_trigger
    from openseal.runtime.service.turns import Call as Call
    from openseal.runtime.service.turns import TurnView as TurnView
    from openseal.runtime.service.turns import run_turns as run_turns
    from openseal.runtime.service.versions import get_version as get_version
    from openseal.runtime.statuses import (
        OPEN_CHANGE_PROPOSAL_STATUSES as OPEN_CHANGE_PROPOSAL_STATUSES,
    )
    from openseal.runtime.statuses import TERMINAL_RUN_STATUSES as TERMINAL_RUN_STATUSES
    from openseal.runtime.statuses import ActionStatus as ActionStatus
    from openseal.runtime.statuses import AgentRequestStatus as AgentRequestStatus
    from openseal.runtime.statuses import ApprovalStatus as ApprovalStatus
    from openseal.runtime.statuses import ChangeProposalStatus as ChangeProposalStatus
    from openseal.runtime.statuses import ObjectiveStatus as ObjectiveStatus
    from openseal.runtime.statuses import RunStatus as RunStatus

__getattr__ = lazy_exports(__name__, __file__)
