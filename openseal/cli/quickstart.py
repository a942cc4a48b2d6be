"""``openseal quickstart``: the procurement example end to end, rendered for a person or as JSON.

The work is in :mod:`openseal.quickstart`; this module parses options, shows progress and the
exact order, asks for the decision with ``--interactive``, and prints the outcome.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from openseal import __version__
from openseal.cli.output import handle, output_option, render
from openseal.errors import UsageError

if TYPE_CHECKING:  # imported when the command runs, so `openseal --help` stays quick
    from openseal.quickstart import Decision, DefinitionsInvalid, Order, Outcome

INTRO = (
    "openseal quickstart: compiles the procurement example, runs it on the embedded store "
    "against a local procurement simulator with a scripted model, shows the exact order it "
    "drafts, approves it as the local operator, and submits it once."
)
DECISIONS = {"approve": "approve", "reject": "reject", "request-changes": "request_changes"}
PAST = {"approve": "approved", "reject": "rejected", "request_changes": "changes requested"}


@click.command()
@click.option(
    "--home", type=click.Path(path_type=Path, file_okay=False), default=Path(".openseal"),
    show_default=True, envvar="OPENSEAL_HOME",
    help="Where the embedded SQLite store (and the quickstart's context file) live.",
)  # fmt: skip
@click.option(
    "--definitions", type=click.Path(path_type=Path), default=Path("definitions/procurement/hcl"),
    show_default=True, help="The procurement definitions to compile (HCL or YAML).",
)  # fmt: skip
@click.option(
    "--script", type=click.Path(path_type=Path, dir_okay=False), default=None,
    help="Scripted model responses [default: DEFINITIONS/../scripts/procurement.json].",
)  # fmt: skip
@click.option(
    "--interactive", is_flag=True,
    help="Ask on the terminal: approve, reject or request changes (with a reason). No "
    "default: only a typed answer decides; the end of input decides nothing (exit 1).",
)  # fmt: skip
@output_option("`json` or `yaml`: one document (run, status, order, hash, purchase order, events).")
@click.option(
    "--context", "context_path", type=click.Path(path_type=Path, dir_okay=False, exists=True),
    default=None, envvar="OPENSEAL_CONTEXT",
    help="Runtime context with the model's credential, for definitions whose model profile "
    "is a keyed endpoint (the simulator's own entries are added).",
)  # fmt: skip
def quickstart(
    home: Path,
    definitions: Path,
    script: Path | None,
    interactive: bool,
    output: str,
    context_path: Path | None,
) -> None:
    """Run the procurement example end to end on this machine, with nothing to configure.

    Compiles DEFINITIONS, registers and activates them in the store under HOME, starts the
    procurement simulator on a free loopback port (with a bearer token made up for this run),
    and starts one run of `procure_laptops` for 10 laptops. The scripted model searches the
    vendors; the run drafts an exact order and waits for approval. The order and its hash are
    printed, the local operator approves it (or you decide, with --interactive), the order is
    submitted once and the confirmed purchase-order id is printed with the run's events.

    Needs no API key and no network beyond 127.0.0.1. Running it again in the same HOME starts
    a new run; the compiled versions are stored once. The example team's spend budget counts
    every order made in HOME, so a second order there is refused before it is sent.

    \b
    Examples:
        openseal quickstart
        openseal quickstart --home /tmp/demo --interactive
    """
    from openseal.quickstart import DefinitionsInvalid, Options, run_quickstart

    if interactive and not sys.stdin.isatty():
        raise UsageError("--interactive needs a terminal to ask on (stdin is not a TTY)")
    as_json = output != "text"
    progress = sys.stderr.isatty()
    if as_json:
        if progress:
            click.echo(INTRO, err=True)
    else:
        click.echo(INTRO)
    options = Options(home=home, definitions=definitions, script=script, context=context_path)
    try:
        outcome = run_quickstart(
            options,
            decide=_Decider(interactive=interactive, show=not as_json),
            reporter=_Steps(enabled=progress),
        )
    except DefinitionsInvalid as exc:
        _diagnostics(exc)
        raise
    if as_json:
        click.echo(render(outcome.as_json(), output), nl=False)
    else:
        click.echo(render_outcome(outcome))
    if not outcome.ok:
        click.echo(f"error: {_hint(outcome.reason or outcome.status)}", err=True)
        sys.exit(1)


class _Steps:
    """Step lines on stderr, only on a terminal (stdout stays the result)."""

    def __init__(self, *, enabled: bool) -> None:
        self.enabled = enabled

    def step(self, text: str) -> None:
        if self.enabled:
            click.echo(f"  … {text}", err=True)


class _Decider:
    def __init__(self, *, interactive: bool, show: bool) -> None:
        self.interactive = interactive
        self.show = show

    def __call__(self, order: Order) -> Decision:
        from openseal.quickstart import Decision

        if self.show or self.interactive:
            click.echo(render_order(order), err=not self.show)
        if not self.interactive:
            if self.show:
                click.echo("approving it as the local operator (user:local, loopback)")
            return Decision("approve")
        # No default: this decision sends a purchase order, so only a typed answer decides
        # (a bare Enter asks again) and the end of input decides nothing.
        choice = _ask(order, "Decision", type=click.Choice(sorted(DECISIONS)))
        verb = DECISIONS[choice]
        if verb == "approve":
            return Decision(verb)
        reason = _ask(order, "Reason").strip()
        return Decision(verb, reason)


def _ask(order: Order, text: str, **options: Any) -> str:
    from openseal.quickstart import NoDecision

    try:
        return str(click.prompt(text, err=True, **options))
    except click.exceptions.Abort:
        click.echo("", err=True)
        raise NoDecision(
            f"no decision was made (the input ended): nothing was approved or sent; "
            f"approval {order.approval_id} is still pending"
        ) from None


def _diagnostics(exc: DefinitionsInvalid) -> None:
    from openseal.cli.output import emit_diagnostics

    loaded = exc.result.loaded
    emit_diagnostics(exc.diagnostics, loaded.sources, len(loaded.files), "human", __version__)


def _hint(reason: str) -> str:
    if "spend budget exceeded" in reason:
        # The example team's spend budget counts every run in this store, quickstarts included.
        return f"{reason} (the team budget counts every order in this home; try --home DIR)"
    return reason


# -- rendering -------------------------------------------------------------------------


def render_order(order: Order) -> str:
    total = f"{float(order.total):.2f} {order.currency}"
    checked = "" if order.verified else "  (the stored artefact did NOT match its hash)"
    return "\n".join(
        [
            f"\norder waiting for approval {order.approval_id} (proposal `{order.proposal}`):",
            f"  vendor       {order.vendor}",
            f"  quantity     {_number(order.quantity)}",
            f"  total        {total}",
            f"  destination  {order.destination}",
            f"  skill        {order.skill} as {order.actor}",
            f"  hash         sha256:{order.hash}{checked}",
        ]
    )


def render_outcome(outcome: Outcome) -> str:
    lines = [""]
    for decided in outcome.decisions:
        reason = f": {decided.decision.reason}" if decided.decision.reason else ""
        verb = PAST.get(decided.decision.verb, decided.decision.verb)
        lines.append(f"{verb} by {decided.approver} (hash {decided.order.hash[:16]}…){reason}")
    if outcome.purchase_order_id:
        lines.append(
            f"purchase order {outcome.purchase_order_id} confirmed by the procurement service"
        )
    elif outcome.status == "canceled" and outcome.reason is None:
        lines.append("the order was rejected: nothing was submitted")
    else:
        lines.append("no purchase order was confirmed")
    lines += ["", f"run {outcome.run_id} {outcome.status} — {len(outcome.events)} events:"]
    lines.append(f"  {'seq':>4}  {'offset':>8}  {'event':<18}  summary")
    for entry in outcome.events:
        offset = f"+{entry.offset:.3f}s"
        lines.append(f"  {entry.seq:>4}  {offset:>8}  {entry.type:<18}  {entry.summary}")
    home = shlex.quote(str(outcome.home))
    run = handle(outcome.run_id)  # what a person types next
    lines += [
        "",
        f"next: openseal runs show {run} --home {home}  ·  openseal runs events {run} --home "
        f"{home}  ·  openseal actions list --home {home}  ·  openseal graph "
        f"{shlex.quote(str(outcome.definitions))}",
    ]
    return "\n".join(lines)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)
