"""Every stable error code openseal answers with, declared once.

An error's ``code`` (``OpenSealError.code``, the API's ``error.code``) is part of the
interface: scripts branch on it. Each one is declared here with the HTTP status the API
answers it with, the exit code the CLI ends with, and one line saying what it means; the
API's status table and the CLI's exit codes are read from :data:`REGISTRY`, and
``docs/errors.md`` is rendered from it (``make errors``; a test fails when it drifts).

Example::

    >>> from openseal.error_codes import http_status, exit_code
    >>> http_status("stale_revision"), exit_code("usage_error")
    (409, 2)

A code that is not registered is a bug (a test scans ``openseal/`` for code literals);
should one reach a user anyway it is answered as an internal error (500, exit 1).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

#: exit codes of the CLI: 0 success, 1 failure (or error diagnostics), 2 usage error
FAILURE = 1
USAGE = 2


@dataclass(frozen=True)
class ErrorCode:
    """One stable error code: what the API and the CLI answer it with, and what it means."""

    code: str
    http: int
    exit: int
    meaning: str
    #: where it comes from, for the rendered table's sections
    area: str

    @property
    def control_flow(self) -> bool:
        """A signal that steers the engine rather than an error a user meets."""
        return self.code in CONTROL_FLOW


_AREAS: dict[str, str] = {
    "general": "General",
    "request": "Requests and access (HTTP API)",
    "store": "Store",
    "runs": "Runs and leases",
    "governance": "Governance (deploy, change proposals, deployments)",
    "approvals": "Approvals and actions",
    "models": "Model endpoints",
    "skills": "Skills and credentials",
    "compiler": "Compiling and expressions",
    "runbooks": "Runbooks",
    "authoring": "Authoring from a prompt",
    "asks": "Starting work from a prompt",
    "tools": "Tools around the runtime",
}


#: codes of signals that steer the engine (a lost claim on a run), not errors a user meets
CONTROL_FLOW = frozenset({"claim_lost", "stale_epoch", "lease_lost"})


def _codes(area: str, *rows: tuple[str, int, int, str]) -> list[ErrorCode]:
    return [ErrorCode(code, http, exit, meaning, area) for code, http, exit, meaning in rows]


_ALL: list[ErrorCode] = [
    *_codes(
        "general",
        ("openseal_error", 400, FAILURE, "A refusal with no more specific code."),
        ("usage_error", 422, USAGE, "The caller asked for something malformed."),
        (
            "invalid_input",
            422,
            FAILURE,
            "Well-formed input that does not fit: a workflow's input types, a state it lacks.",
        ),
        ("internal_error", 500, FAILURE, "An unexpected error; the server log has a reference."),
        (
            "file_error",
            500,
            FAILURE,
            "A file or directory could not be read or written (missing, not a directory, "
            "no permission).",
        ),
    ),
    *_codes(
        "request",
        ("invalid_request", 422, USAGE, "A body, parameter or header failed validation."),
        ("unauthorized", 401, FAILURE, "No bearer token, or one the server does not know."),
        ("forbidden", 403, FAILURE, "The caller may not use this endpoint."),
        (
            "misdirected_request",
            421,
            FAILURE,
            "The local operator's secret came addressed to a Host that is not loopback.",
        ),
        (
            "foreign_origin",
            403,
            FAILURE,
            "The local operator's secret came from a page whose Origin is not loopback.",
        ),
        (
            "cross_site_request",
            403,
            FAILURE,
            "A browser sent a state-changing request from another site; nothing was done.",
        ),
        ("not_found", 404, FAILURE, "No such endpoint or entity."),
        ("method_not_allowed", 405, USAGE, "The endpoint does not take this HTTP method."),
        ("not_served", 501, FAILURE, "The operation's capability is not configured here."),
        (
            "queue_full",
            429,
            FAILURE,
            "The ready queue of the workflow (its `max_queued`) or of the scope (`openseal "
            "scopes queue`) is full: nothing was created; send again after `Retry-After`.",
        ),
        (
            "quota_exceeded",
            429,
            FAILURE,
            "A quota of the scope whose policy is `refuse` is used up for its day or month: "
            "nothing was created; send again after `Retry-After` (when the window resets).",
        ),
        ("unavailable", 503, FAILURE, "The server or its database cannot be reached; retry."),
        ("body_too_large", 413, USAGE, "The request body is larger than the server accepts."),
        (
            "non_finite_number",
            422,
            USAGE,
            "A JSON number is NaN, Infinity or too large for a double (1e400).",
        ),
        ("too_deep", 422, USAGE, "A JSON body nests lists and objects deeper than allowed."),
        (
            "inputs_too_large",
            422,
            USAGE,
            "An objective's inputs are larger than the server accepts.",
        ),
        (
            "idempotency_conflict",
            409,
            FAILURE,
            "An idempotency key, event id, digest or activity id was reused for other content.",
        ),
    ),
    *_codes(
        "store",
        ("store_error", 500, FAILURE, "The store failed an operation (no more specific code)."),
        (
            "database_url",
            500,
            FAILURE,
            "The database URL is malformed or names a database openseal does not support.",
        ),
        (
            "store_damaged",
            500,
            FAILURE,
            "The embedded SQLite store is damaged (left as it was); restore it from a backup.",
        ),
        ("invalid_status", 409, FAILURE, "The entity's status does not allow the operation."),
        (
            "recovery_mode",
            409,
            FAILURE,
            "The store is in recovery mode after a restore: nothing is sent until its actions "
            "are reconciled (`openseal db recovery status`).",
        ),
        (
            "not_backed_up",
            500,
            FAILURE,
            "A backup could not be made or checked (its destination exists, or the copy is "
            "incomplete).",
        ),
        (
            "objective_draft",
            409,
            FAILURE,
            "The objective is a draft: it is activated (`openseal objectives activate`), not "
            "resumed.",
        ),
        (
            "stale_revision",
            409,
            FAILURE,
            "The entity is no longer at the expected revision; reload it and try again.",
        ),
        (
            "conflict",
            409,
            FAILURE,
            "The entity changed under the request (a change proposal's expected revision, an "
            "action resolved meanwhile); reload it and try again.",
        ),
        ("artifact_corrupt", 500, FAILURE, "A stored artefact no longer hashes to its digest."),
        ("busy", 503, FAILURE, "The store kept changing under the operation; retry."),
        ("internal", 500, FAILURE, "A row changed under its own lock: a bug, never expected."),
        ("name_mismatch", 409, FAILURE, "A version id names a definition of another name."),
        ("not_deployed", 404, FAILURE, "No version of that workflow is deployed."),
        (
            "schema_outdated",
            503,
            FAILURE,
            "The database schema is older than this openseal; run `openseal db upgrade`.",
        ),
        ("schema_newer", 503, FAILURE, "The database was migrated by a newer openseal."),
    ),
    *_codes(
        "runs",
        ("runtime_error", 500, FAILURE, "The runtime failed an operation (no more specific code)."),
        (
            "definition_error",
            500,
            FAILURE,
            "A stored compiled definition lacks what the run needs (a state, a pinned version).",
        ),
        ("run_ended", 409, FAILURE, "The run has ended; nothing more can be decided for it."),
        (
            "delegation_failed",
            409,
            FAILURE,
            "A delegated request's work cannot start (its callee or the workflow it names is "
            "not deployed, or the request's inputs do not fit it).",
        ),
        (
            "completion_mismatch",
            422,
            USAGE,
            "A completion does not match the output type the agent request expects.",
        ),
        (
            "claim_lost",
            409,
            FAILURE,
            "A worker no longer holds the run it works on; the turn is dropped.",
        ),
        (
            "stale_epoch",
            409,
            FAILURE,
            "A worker's write was fenced off: another claim or an operator took the run over.",
        ),
        (
            "lease_lost",
            409,
            FAILURE,
            "A worker's heartbeat found its claim on a run gone; the turn is dropped.",
        ),
    ),
    *_codes(
        "governance",
        ("governance_error", 409, FAILURE, "A governance operation was refused."),
        ("stale_proposal", 409, FAILURE, "The active versions changed since the diff; re-plan."),
        ("not_allowed", 403, FAILURE, "The policy does not let this actor do this."),
        ("self_review", 403, FAILURE, "The author of a change proposal may not review it."),
        ("self_approval", 403, FAILURE, "The author may not approve their own change."),
        ("changes_requested", 409, FAILURE, "A reviewer asked for changes; it cannot be approved."),
        ("reviews_required", 409, FAILURE, "Too few approving reviews for the decision."),
        ("kind_mismatch", 409, FAILURE, "The proposal is of another kind than the operation."),
        ("ambiguous_id", 400, FAILURE, "A handle or id prefix names more than one record."),
        ("no_previous_version", 409, FAILURE, "There is no earlier version to roll back to."),
        ("unknown_version", 409, FAILURE, "The version was never deployed under this name."),
        ("nothing_to_roll_back", 409, FAILURE, "The requested version is already active."),
        (
            "migration_invalid",
            422,
            FAILURE,
            "A workflow's migrate block does not check against the earlier version it names.",
        ),
        ("no_migration", 409, FAILURE, "The change proposal carries no migration of runs."),
        ("migration_refused", 409, FAILURE, "A run could not be migrated (the reason says why)."),
    ),
    *_codes(
        "approvals",
        ("approval_refused", 403, FAILURE, "An approval decision was refused."),
        (
            "approvals_unavailable",
            403,
            FAILURE,
            "No approval authority is configured, so no approval can be decided.",
        ),
        (
            "local_operator_refused",
            403,
            FAILURE,
            "The local operator (user:local) is served only to this machine, when enabled.",
        ),
        ("not_an_approver", 403, FAILURE, "The actor is not one of the approval's approvers."),
        (
            "separation_of_duties",
            403,
            FAILURE,
            "The run's creator may not approve its proposal (separation of duties).",
        ),
        ("reason_required", 422, FAILURE, "A rejection or a change request needs a reason."),
        ("hash_mismatch", 409, FAILURE, "The decision names another proposal hash than shown."),
        ("proposal_unverified", 409, FAILURE, "The stored proposal does not match its hash."),
        ("already_decided", 409, FAILURE, "The approval was decided meanwhile."),
        ("approval_expired", 409, FAILURE, "The approval expired before the decision."),
        ("approval_canceled", 409, FAILURE, "The approval was canceled before the decision."),
        ("action_in_flight", 409, FAILURE, "The action is being dispatched right now."),
        (
            "no_decision",
            400,
            FAILURE,
            "Asked for a decision on a terminal, the input ended: nothing was decided.",
        ),
    ),
    *_codes(
        "models",
        ("model_error", 502, FAILURE, "The model endpoint failed; retrying will not help."),
        ("model_unavailable", 503, FAILURE, "The model endpoint failed for now (5xx); retried."),
        ("model_timeout", 504, FAILURE, "The model endpoint did not answer in time; retried."),
        ("model_unreachable", 503, FAILURE, "The model endpoint cannot be reached; retried."),
        ("reply_lost", 502, FAILURE, "The model's reply was lost after sending; retried."),
        ("rate_limited", 503, FAILURE, "The model endpoint is rate limiting (429); retried."),
        (
            "over_rate_limit",
            503,
            FAILURE,
            "The model profile's shared rate limit has no room within a turn's wait; the run "
            "sleeps until it has.",
        ),
        ("model_unauthorized", 502, FAILURE, "The model endpoint refused the credential."),
        ("model_rejected", 502, FAILURE, "The model endpoint rejected the request (4xx)."),
        ("malformed_response", 502, FAILURE, "The model's answer is not a chat completion."),
        ("stream_interrupted", 502, FAILURE, "A streamed answer was cut off; retried."),
        ("model_refused", 502, FAILURE, "The model refused to answer."),
        ("model_misconfigured", 500, FAILURE, "The model profile cannot be used as configured."),
    ),
    *_codes(
        "skills",
        (
            "credential_unavailable",
            500,
            FAILURE,
            "A credential reference cannot be resolved (unset variable, unsafe file).",
        ),
        ("runtime_context_invalid", 500, FAILURE, "The runtime context file is not valid."),
    ),
    *_codes(
        "compiler",
        ("compile_error", 422, FAILURE, "Definitions do not compile; diagnostics say why."),
        ("bundle_error", 422, FAILURE, "A bundle is malformed or does not match its manifest."),
        ("invalid_type_json", 422, FAILURE, "A compiled type is not in the compiled form."),
        (
            "invalid_expression_json",
            422,
            FAILURE,
            "A compiled expression is not in the compiled form.",
        ),
        ("evaluation_error", 422, FAILURE, "An expression could not be evaluated."),
        ("unknown_reference", 422, FAILURE, "An expression reads a name that is not in scope."),
        ("missing_key", 422, FAILURE, "An expression reads a key the value does not have."),
        ("index_out_of_range", 422, FAILURE, "An expression indexes past a list's end."),
        ("unknown_function", 422, FAILURE, "An expression calls a function that does not exist."),
        ("division_by_zero", 422, FAILURE, "An expression divides by zero."),
        ("number_out_of_range", 422, FAILURE, "An expression's number is too large."),
        ("type_error", 422, FAILURE, "An expression applies an operation to the wrong type."),
        ("draw_error", 422, FAILURE, "The graph cannot be drawn in the requested format."),
        ("graphviz_not_found", 500, FAILURE, "SVG output needs Graphviz's `dot` on PATH."),
    ),
    *_codes(
        "runbooks",
        ("runbook_error", 500, FAILURE, "The runbook executor failed (no more specific code)."),
        ("input_usage", 422, USAGE, "A runbook input was given malformed (`--input k=v`)."),
        ("input_type", 422, FAILURE, "A runbook input or output does not fit its type."),
        ("step_failed", 500, FAILURE, "A runbook step failed."),
    ),
    *_codes(
        "authoring",
        (
            "authoring_unavailable",
            501,
            FAILURE,
            "No complete model profile (base URL, model, credential reference) is configured.",
        ),
        ("draft_failed", 422, FAILURE, "The draft still does not compile; nothing was written."),
    ),
    *_codes(
        "asks",
        (
            "no_fitting_workflow",
            422,
            FAILURE,
            "The prompt fits no workflow the team or agent may start; nothing was started.",
        ),
        (
            "ask_inputs_invalid",
            422,
            FAILURE,
            "The inputs the model chose still do not fit the workflow; nothing was started.",
        ),
    ),
    *_codes(
        "tools",
        ("simulator_error", 500, FAILURE, "The procurement simulator could not start or run."),
        (
            "archive_corrupt",
            500,
            FAILURE,
            "An archive batch whose files do not match its manifest's row counts and sha256.",
        ),
        (
            "archive_busy",
            409,
            FAILURE,
            "Another process is archiving into the same directory or URL; try again when it is "
            "done.",
        ),
        (
            "archive_url_invalid",
            400,
            USAGE,
            "An archive URL openseal cannot use: malformed, of a protocol no filesystem speaks, "
            "or of one whose package is not installed (the message names it).",
        ),
        (
            "archive_unavailable",
            503,
            FAILURE,
            "The object store behind an archive URL refused or did not answer; nothing was "
            "lost: rows leave the live store only after their batch is written and verified.",
        ),
    ),
]

#: code → its declaration
REGISTRY: Mapping[str, ErrorCode] = {entry.code: entry for entry in _ALL}

#: what an unregistered code is answered with: it is a bug, not the caller's fault
UNREGISTERED = ErrorCode("internal_error", 500, FAILURE, "unregistered", "general")


def lookup(code: str) -> ErrorCode:
    """The declaration of ``code``; an unregistered code is answered as an internal error."""
    return REGISTRY.get(code, UNREGISTERED)


def http_status(code: str) -> int:
    """The HTTP status the API answers ``code`` with."""
    return lookup(code).http


def exit_code(code: str) -> int:
    """The exit code the CLI ends with for ``code``."""
    return lookup(code).exit


# -- docs/errors.md ---------------------------------------------------------------------

BEGIN = "<!-- BEGIN error codes: generated by `make errors`, do not edit -->"
END = "<!-- END error codes -->"


def render_table() -> str:
    """The registry as Markdown: one table per area, codes in declaration order."""
    lines: list[str] = []
    for area, title in _AREAS.items():
        entries = [entry for entry in _ALL if entry.area == area]
        if not entries:
            continue
        lines += [
            f"### {title}",
            "",
            "| code | HTTP | exit | meaning |",
            "| --- | --- | --- | --- |",
        ]
        for entry in entries:
            meaning = entry.meaning + (" *Control flow.*" if entry.control_flow else "")
            lines.append(f"| `{entry.code}` | {entry.http} | {entry.exit} | {meaning} |")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def render_document(current: str) -> str:
    """``current`` (the text of docs/errors.md) with its generated section rendered anew."""
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.DOTALL)
    if pattern.search(current) is None:
        raise ValueError(f"the document has no section between {BEGIN!r} and {END!r}")
    return pattern.sub(lambda _: f"{BEGIN}\n\n{render_table()}\n{END}", current, count=1)


def main(argv: list[str] | None = None) -> int:
    """``python -m openseal.error_codes FILE``: render the registry into FILE's section."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m openseal.error_codes docs/errors.md", file=sys.stderr)
        return USAGE
    path = Path(args[0])
    path.write_text(render_document(path.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
