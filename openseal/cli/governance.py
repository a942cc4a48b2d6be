"""``openseal proposals ...``: governed definition changes (and what ``openseal deploy`` and
``openseal deployments`` share with them).

A change proposal is reviewed, decided and then — a separate step — activated; see
``docs/governance.md``. Every command takes the store options of the other runtime commands
and ``--server``; a command that changes something acts as ``--actor`` (or ``OPENSEAL_ACTOR``;
default ``user:local``) on the store, and as the token's principal on a server.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from openseal.cli.client import (
    Connection,
    connected,
    listed,
    one,
    record,
    records,
    server_options,
)
from openseal.cli.output import echo_data, echo_table, handle, when
from openseal.cli.replay import proposals_replay
from openseal.cli.runtime import complete_ids, more_hint, status_option, store_options
from openseal.runtime import service
from openseal.runtime.service import ChangeProposalStatus
from openseal.wire import jsonable

if TYPE_CHECKING:
    from openseal.compiler import DiffReport
    from openseal.runtime.service import governance as gov
    from openseal.runtime.store import ChangeProposal, ProposalEvent, Review, Store

F = TypeVar("F", bound=Callable[..., Any])
#: what ``proposals show`` reads: the proposal, its reviews, its events, what live runs still use
Shown = tuple[
    "ChangeProposal",
    tuple["Review", ...],
    tuple["ProposalEvent", ...],
    tuple["gov.CapabilityInUse", ...],
]

LOCAL_ACTOR = "user:local"


def actor_option(command: F) -> F:
    return click.option(
        "--actor", envvar="OPENSEAL_ACTOR", default=LOCAL_ACTOR, show_default=True,
        help="Who is acting, e.g. user:alice (env OPENSEAL_ACTOR).",
    )(command)  # fmt: skip


def revision_option(command: F) -> F:
    return click.option(
        "--expected-revision", type=int, default=None,
        help="Refuse (conflict) if the proposal changed since this revision.",
    )(command)  # fmt: skip


# --------------------------------------------------------------------------- rendering


def short(digest: str | None) -> str:
    return "-" if digest is None else digest[:12]


def proposal_row(proposal: ChangeProposal) -> list[str]:
    """A proposal's cells in ``proposals list``."""
    risk = "widening" if proposal.risk_widening else "-"
    return [
        handle(proposal.id), str(proposal.status), str(proposal.kind), risk, proposal.author,
        when(proposal.created_at), ",".join(proposal.deployments),
    ]  # fmt: skip


def report_from_dict(diff: Mapping[str, Any]) -> DiffReport:
    """The stored diff (``DiffReport.to_dict()``) as a report again, for the shared renderer."""
    from openseal.compiler import Change, DiffReport

    definitions = diff.get("definitions") or {}
    return DiffReport(
        changes=tuple(Change(**change) for change in diff.get("changes") or ()),
        added=tuple(definitions.get("added") or ()),
        removed=tuple(definitions.get("removed") or ()),
        changed=tuple(definitions.get("changed") or ()),
        unchanged=int(definitions.get("unchanged") or 0),
    )


def render_proposal(
    proposal: ChangeProposal,
    reviews: tuple[Review, ...],
    *,
    color: bool,
    in_use: tuple[gov.CapabilityInUse, ...] = (),
) -> str:
    from openseal.cli.diff import render_report

    def paint(text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if color else text

    risk = paint("yes", "1;31") if proposal.risk_widening else "no"
    lines = [
        f"change proposal {proposal.id}  ({proposal.kind})",
        f"  status       {proposal.status}  (revision {proposal.revision}, "
        f"review round {proposal.round})",
        f"  author       {proposal.author}",
        f"  created      {when(proposal.created_at)}",
    ]
    if proposal.message:
        lines.append(f"  message      {proposal.message}")
    lines.append(f"  widens risk  {risk}")
    lines.append("  deployments")
    for target in proposal.targets:
        base = proposal.base.get(target.name)
        lines.append(f"    {target.name} ({target.kind}): {short(base)} -> {short(target.digest)}")
    lines.append(f"  policy       {policy_summary(proposal.policy)}")
    for line in in_use_lines(in_use):
        lines.append(f"  in use       {line}")
    current = [r for r in reviews if r.round == proposal.round]
    for review in current:
        comment = f": {review.comment}" if review.comment else ""
        lines.append(f"  review       {review.reviewer} {review.verdict}{comment}")
    if proposal.decision is not None:
        decision = proposal.decision
        auto = " (auto)" if decision.get("auto") else ""
        comment = f": {decision['comment']}" if decision.get("comment") else ""
        lines.append(f"  decision     {decision['decision']} by {decision['by']}{auto}{comment}")
    if proposal.superseded_by:
        lines.append(f"  superseded   by {proposal.superseded_by}")
    lines.append("")
    lines.append(render_report(report_from_dict(proposal.diff), color=color).rstrip("\n"))
    return "\n".join(lines) + "\n"


def in_use_lines(found: Iterable[gov.CapabilityInUse]) -> list[str]:
    """One line per capability a change removes that live runs still pin, with how many runs
    of which version."""
    lines = []
    for item in found:
        per = ", ".join(f"{short(v.digest)}: {v.runs}" for v in item.versions)
        runs = "run" if item.runs == 1 else "runs"
        lines.append(
            f"{item.workflow}: removes {item.capability}, still pinned by {item.runs} live "
            f"{runs} ({per})"
        )
    return lines


def policy_summary(policy: Mapping[str, Any]) -> str:
    rules = policy.get("rules") or []
    if not rules:
        return "default (anyone reviews and decides; no review required)"
    names = ", ".join(f"governance.{r['governance']}" for r in rules)
    auto = "; narrowing auto-approves" if policy.get("auto_approve_narrowing") else ""
    return (
        f"{names} from the {policy.get('source')} governance; "
        f"{policy.get('required_reviews')} review(s) required{auto}"
    )


def echo_proposal_result(proposal: ChangeProposal, verb: str, output: str) -> None:
    if output != "text":
        echo_data(proposal, output)
    else:
        click.echo(f"change proposal {proposal.id} {verb}; status {proposal.status}")


def proposal_change(
    at: Connection[Store], actor: str, step: str, proposal_id: str, body: Mapping[str, Any],
    change: Callable[[Store, Any, service.Caller], ChangeProposal], request: Any,
) -> ChangeProposal:  # fmt: skip
    """``change(store, request, actor)`` on the store, or ``POST /proposals/{id}/{step}`` with
    ``body`` on a server (as the token's principal)."""
    from openseal.runtime.store import ChangeProposal

    caller = at.acting(actor)
    return at.ask(
        lambda store: change(store, request, caller), f"proposals.{step}", "proposals",
        proposal_id, step, method="POST", body=dict(body), read=one(ChangeProposal, "proposal"),
    )  # fmt: skip


def governed(command: F) -> F:
    """The options of a governance command: the store or a server, and who acts on the store."""
    return store_options(server_options(actor_option(command)))


# --------------------------------------------------------------------------- proposals


@click.group()
def proposals() -> None:
    """Review, decide and activate change proposals filed by `openseal deploy`.

    Without --server they act on the store under --home as --actor (default the local
    operator); with --server (or OPENSEAL_SERVER) they ask that server as the token's principal.
    """


proposals.add_command(proposals_replay)


@proposals.command("list")
@store_options
@server_options
@status_option(ChangeProposalStatus, "change proposals", multiple=True)
@click.option(
    "--workflow", "--deployment", "deployment", default=None,
    help="Only proposals that change this deployment (a workflow's name).",
)  # fmt: skip
@click.option(
    "--since", default=None, metavar="WHEN",
    help="Only those filed since WHEN: an age (30m, 2h, 7d) or an ISO 8601 time.",
)  # fmt: skip
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True)
@click.option(
    "--after", default=None, metavar="ID",
    help="The next page: only those older than ID (the last one a page showed).",
)  # fmt: skip
def list_command(
    home: Path, output: str, server: str | None, token_file: Path | None,
    statuses: tuple[str, ...], deployment: str | None, since: str | None, limit: int,
    after: str | None,
) -> None:  # fmt: skip
    """List change proposals, newest first.

    \b
    Examples:
        openseal proposals list --status proposed --status in_review
        openseal proposals list --workflow procure_laptops --since 7d
    """
    from openseal.runtime.store import ChangeProposal

    with connected(home, server, token_file, read_only=True) as at:
        found = listed(
            at, ChangeProposal, "proposals", service.governance.list_proposals,
            statuses=list(statuses), deployment=deployment, since=since, limit=limit, after=after,
        )  # fmt: skip
    if output != "text":
        echo_data(found, output)
        return
    rows = [proposal_row(p) for p in found]
    headers = ["handle", "status", "kind", "risk", "author", "created", "deployments"]
    echo_table(headers, rows, shrink=["deployments"], empty="no change proposals")
    more_hint(found, limit)


@proposals.command("show")
@store_options
@server_options
@click.argument("proposal_id", shell_complete=complete_ids("change proposal"))
@click.option("--events", "with_events", is_flag=True, help="Also print the proposal's events.")
def show_command(
    home: Path, output: str, server: str | None, token_file: Path | None, proposal_id: str,
    with_events: bool,
) -> None:  # fmt: skip
    """Show a proposal: targets, policy, reviews, decision and the semantic diff.

    Risk-widening changes are marked `!` and `[risk-widening]` (red on a terminal).

    \b
    Examples:
        openseal proposals show 01a22bba --events
    """
    from openseal.compiler import use_color
    from openseal.runtime.store import ChangeProposal, ProposalEvent, Review

    gov = service.governance

    def local(store: Store) -> Shown:
        proposal = gov.get_proposal(store, proposal_id)
        return (proposal, gov.proposal_reviews(store, proposal.id),
                gov.proposal_events(store, proposal.id),
                gov.proposal_in_use(store, proposal.id))  # fmt: skip

    def read(answer: Any) -> Shown:
        return (record(ChangeProposal, answer["proposal"]), records(Review, answer["reviews"]),
                records(ProposalEvent, answer["events"]),
                records(gov.CapabilityInUse, answer["in_use"]))  # fmt: skip

    with connected(home, server, token_file, read_only=True) as at:
        proposal, reviews, events, in_use = at.ask(
            local, "proposals.show", "proposals", proposal_id, read=read
        )
    events = events if with_events else ()
    if output != "text":
        echo_data(
            {
                **jsonable(proposal),
                "reviews": reviews,
                "in_use": in_use,
                **({"events": events} if with_events else {}),
            },
            output,
        )
        return
    color = use_color(sys.stdout)
    # click strips ANSI codes from non-terminals unless told; use_color already decided.
    text = render_proposal(proposal, reviews, color=color, in_use=in_use)
    click.echo(text, nl=False, color=color)
    for event in events:
        click.echo(f"{event.seq:>4}  {when(event.at)}  {event.type:<28} {event.actor}")


@proposals.command("review")
@governed
@revision_option
@click.argument("proposal_id", shell_complete=complete_ids("change proposal"))
@click.option("--approve", "verdict", flag_value="approve", help="Approve the change.")
@click.option("--request-changes", "verdict", flag_value="request_changes", help="Ask for changes.")
@click.option("--comment", default=None, help="Why.")
def review_command(
    home: Path, output: str, server: str | None, token_file: Path | None, actor: str,
    expected_revision: int | None, proposal_id: str, verdict: str | None, comment: str | None,
) -> None:  # fmt: skip
    """Review a proposal: --approve or --request-changes.

    \b
    Examples:
        openseal proposals review 01a22bba --approve --comment "checked" --actor user:bob
    """
    if verdict is None:
        raise click.UsageError("give --approve or --request-changes")
    request = service.governance.ProposalReview(proposal_id, verdict, comment, expected_revision)
    body = {"verdict": verdict, "comment": comment, "expectedRevision": expected_revision}
    with connected(home, server, token_file) as at:
        proposal = proposal_change(
            at, actor, "review", proposal_id, body, service.governance.review, request
        )
    echo_proposal_result(proposal, f"reviewed ({verdict.replace('_', ' ')})", output)


@proposals.command("decide")
@governed
@revision_option
@click.argument("proposal_id", shell_complete=complete_ids("change proposal"))
@click.option("--approve", "decision", flag_value="approve", help="Approve the change.")
@click.option("--reject", "decision", flag_value="reject", help="Reject the change.")
@click.option("--comment", default=None, help="Why.")
def decide_command(
    home: Path, output: str, server: str | None, token_file: Path | None, actor: str,
    expected_revision: int | None, proposal_id: str, decision: str | None, comment: str | None,
) -> None:  # fmt: skip
    """Decide a proposal: --approve or --reject. This does not activate it.

    \b
    Examples:
        openseal proposals decide 01a22bba --approve --actor user:carol
    """
    if decision is None:
        raise click.UsageError("give --approve or --reject")
    request = service.governance.ProposalDecision(proposal_id, decision, comment, expected_revision)
    body = {"decision": decision, "comment": comment, "expectedRevision": expected_revision}
    with connected(home, server, token_file) as at:
        proposal = proposal_change(
            at, actor, "decide", proposal_id, body, service.governance.decide, request
        )
    verb = "approved (not active until `openseal proposals activate`)"
    echo_proposal_result(proposal, verb if decision == "approve" else "rejected", output)


@proposals.command("activate")
@governed
@revision_option
@click.argument("proposal_id", shell_complete=complete_ids("change proposal"))
def activate_command(
    home: Path, output: str, server: str | None, token_file: Path | None, actor: str,
    expected_revision: int | None, proposal_id: str,
) -> None:  # fmt: skip
    """Activate an approved proposal: new runs use its versions from now on.

    \b
    Examples:
        openseal proposals activate 01a22bba --actor user:carol
    """
    request = service.governance.ProposalCommand(proposal_id, expected_revision)
    body = {"expectedRevision": expected_revision}
    with connected(home, server, token_file) as at:
        proposal = proposal_change(
            at, actor, "activate", proposal_id, body, service.governance.activate, request
        )
    echo_proposal_result(proposal, "activated", output)


@proposals.command("refresh")
@governed
@revision_option
@click.argument("proposal_id", shell_complete=complete_ids("change proposal"))
def refresh_command(
    home: Path, output: str, server: str | None, token_file: Path | None, actor: str,
    expected_revision: int | None, proposal_id: str,
) -> None:  # fmt: skip
    """Re-diff a stale proposal against the versions active now (may reset its reviews).

    \b
    Examples:
        openseal proposals refresh 01a22bba
    """
    from openseal.runtime.store import ChangeProposal

    request = service.governance.ProposalCommand(proposal_id, expected_revision)
    with connected(home, server, token_file) as at:
        at.acting(actor)
        before = at.ask(
            lambda store: service.governance.get_proposal(store, proposal_id),
            "proposals.show", "proposals", proposal_id, read=one(ChangeProposal, "proposal"),
        )  # fmt: skip
        body = {"expectedRevision": expected_revision}
        proposal = proposal_change(
            at, actor, "refresh", proposal_id, body, service.governance.refresh, request
        )
    if output != "text":
        echo_data(proposal, output)
    elif proposal.round != before.round:
        click.echo(
            f"change proposal {proposal.id} refreshed: the diff changed, reviews and decision "
            f"were reset (round {proposal.round}); status {proposal.status}"
        )
    else:
        click.echo(f"change proposal {proposal.id} refreshed; status {proposal.status}")


def filing(answer: Any) -> gov.DeployResult:
    """A filed (or found, or unneeded) change proposal, as the server answered it."""
    return record(service.governance.DeployResult, answer)
