"""One authoring session: ask the model, compile its draft, send diagnostics back, repeat.

:func:`author` runs the bounded loop. Each round sends the model the system instructions (the
generated language reference, the existing definitions, the governance policy), the prompt,
and — from the second round on — its previous answer with what was wrong with it: the answer's
problems (not the required JSON shape, a path outside the definitions) or the compiler's error
diagnostics (code, file, line, column, message, suggestion). The draft is compiled with the full
pipeline, laid over the existing definitions in memory. Every model call is recorded (a digest
of what was sent, the model, the tokens) and counts against the session's token budget.

Nothing here writes a file or touches a store: the result says what the draft is, whether it
compiled, and how it changes authority (:attr:`AuthoringResult.diff`, the same semantic diff
``openseal diff`` shows, so a widening is flagged exactly as there).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openseal.authoring.catalogue import governance_policy, render_catalogue
from openseal.authoring.drafts import (
    ANSWER_SCHEMA,
    CompiledDraft,
    DraftFile,
    compile_draft,
    feedback,
    read_answer,
)
from openseal.authoring.reference import language_reference
from openseal.compiler import Change, DiffReport, diff_documents
from openseal.runtime.service.workers import (
    ModelProvider,
    ModelRequest,
    ModelResponse,
    ModelUnavailable,
    Usage,
    retry,
)

log = logging.getLogger("openseal.authoring")

DEFAULT_MAX_REPAIRS = 2
MAX_REPAIRS_LIMIT = 10
#: tokens (sent and received, over every call of one session) before authoring stops
DEFAULT_TOKEN_BUDGET = 200_000


@dataclass(frozen=True)
class AuthoringRequest:
    """What to author and against what.

    ``definitions`` is the directory the draft joins (its definitions may be referenced and
    its files are never replaced unless ``overwrite``); None: the draft stands alone.
    ``active_governance`` holds the governance documents a store's deployments run, when the
    draft will be filed there (``kind.name`` → compiled document).
    """

    prompt: str
    definitions: Path | None = None
    syntax: str = "hcl"
    max_repairs: int = DEFAULT_MAX_REPAIRS
    overwrite: bool = False
    token_budget: int = DEFAULT_TOKEN_BUDGET
    active_governance: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelCall:
    """One recorded model call: never the prompt itself, its digest."""

    round: int
    prompt_digest: str
    model: str
    input_tokens: int
    output_tokens: int
    estimated: bool
    #: the error code of an attempt that failed (and was tried again)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "prompt_digest": self.prompt_digest,
            "model": self.model,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "estimated": self.estimated,
            "error": self.error,
        }


@dataclass
class Round:
    """One round: what the model answered and what was wrong with it (nothing: it compiled)."""

    number: int
    files: tuple[DraftFile, ...]
    problems: tuple[str, ...] = ()
    diagnostics: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "round": self.number,
            "files": [f.path for f in self.files],
            "problems": list(self.problems),
            "diagnostics": self.diagnostics,
        }


@dataclass
class AuthoringResult:
    """The outcome: ``ok`` when the last draft compiled; then ``diff`` is set."""

    ok: bool
    profile: str
    model: str
    prompt_digest: str
    files: tuple[DraftFile, ...] = ()
    compiled: CompiledDraft = field(default_factory=CompiledDraft)
    rounds: list[Round] = field(default_factory=list)
    calls: list[ModelCall] = field(default_factory=list)
    diff: DiffReport | None = None
    #: why the session stopped without a draft that compiles
    reason: str | None = None

    @property
    def widening(self) -> tuple[Change, ...]:
        return tuple(c for c in self.diff.changes if c.widening) if self.diff else ()

    @property
    def tokens(self) -> int:
        return sum(c.input_tokens + c.output_tokens for c in self.calls)

    @property
    def problems(self) -> tuple[str, ...]:
        return self.rounds[-1].problems if self.rounds else ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "reason": self.reason,
            "profile": self.profile,
            "model": self.model,
            "prompt_digest": self.prompt_digest,
            "files": [f.to_dict() for f in self.files],
            "widening": [c.to_dict() for c in self.widening],
            "diff": self.diff.to_dict() if self.diff else None,
            "diagnostics": [d.to_dict() for d in self.compiled.diagnostics],
            "problems": list(self.problems),
            "rounds": [r.to_dict() for r in self.rounds],
            "calls": [c.to_dict() for c in self.calls],
            "tokens": self.tokens,
        }


def author(
    request: AuthoringRequest,
    profile: Mapping[str, Any],
    provider: ModelProvider,
    existing: CompiledDraft,
    progress: Callable[[str], None] | None = None,
) -> AuthoringResult:
    """Run the draft–compile–repair loop for ``request`` with the model behind ``provider``.

    ``existing`` is the definitions the draft joins, compiled (it must have compiled).
    At most ``1 + request.max_repairs`` model calls are made, fewer when the token budget
    runs out. Model failures raise :class:`~openseal.runtime.providers.ModelError`.
    ``progress`` hears one line as each round starts and ends (a model call takes a while).
    """
    say = progress or (lambda _line: None)
    prompt_digest = _digest(request.prompt)
    result = AuthoringResult(False, str(profile.get("name")), str(profile["model"]), prompt_digest)
    before = {key: doc.document for key, doc in existing.documents.items()}
    instructions = system_instructions(request, existing)
    messages: list[dict[str, Any]] = []
    for number in range(1, request.max_repairs + 2):
        if result.tokens >= request.token_budget:
            result.reason = (
                f"the authoring budget of {request.token_budget} tokens is spent "
                f"({result.tokens} used)"
            )
            break
        model_request = ModelRequest(
            agent="authoring", model=dict(profile), instructions=instructions,
            goal=request.prompt, messages=tuple(messages), tools=(),
            output_schema=ANSWER_SCHEMA, state="author", visit=1, call=number,
        )  # fmt: skip
        say(f"round {number}: asking model {result.model}")
        response = _complete(provider, model_request, result)
        _record(result, _recorded(number, model_request, response.usage, result.model))
        answer = read_answer(
            response.output,
            syntax=request.syntax,
            existing=request.definitions,
            overwrite=request.overwrite,
        )
        this = Round(number, answer.files, answer.problems)
        result.rounds.append(this)
        result.files = answer.files
        if not answer.problems:
            result.compiled = compile_draft(request.definitions, answer.files)
            this.diagnostics = feedback(result.compiled.diagnostics)
            if result.compiled.ok:
                result.ok = True
                after = {key: doc.document for key, doc in result.compiled.documents.items()}
                result.diff = diff_documents(before, after)
                return result
        wrong = len(this.problems) or len(this.diagnostics)
        say(f"round {number}: {wrong} problem{'s' if wrong != 1 else ''} to repair")
        messages += [
            {"role": "assistant", "content": _as_text(response.output)},
            {"role": "user", "content": repair_message(this)},
        ]
    if result.reason is None:
        rounds = len(result.rounds)
        result.reason = (
            f"the draft still does not compile after {rounds} round{'s' if rounds != 1 else ''}"
        )
    return result


def system_instructions(request: AuthoringRequest, existing: CompiledDraft) -> str:
    """Everything the model is told before the prompt."""
    documents = {key: doc.document for key, doc in existing.documents.items()}
    policy = {
        "in the definitions": governance_policy(documents),
        "active where the change is filed": governance_policy(request.active_governance),
    }
    stated = any(policy.values())
    files = sorted(existing.sources)
    return "\n\n".join(
        [
            _RULES.format(syntax=request.syntax),
            "# Existing files (do not replace them)\n\n"
            + ("\n".join(files) if files else "(none)"),
            "# Existing definitions you may reference by `kind.name` (one JSON object each; "
            "a skill's `effect` is its risk level, lowest first: read, write, external, "
            "production, destructive)\n\n" + render_catalogue(documents),
            "# The governance policy a filed change is reviewed under\n\n"
            + (json.dumps(policy, sort_keys=True) if stated else "(no governance definitions)"),
            language_reference(),
        ]
    )


_RULES = """You write openseal definition files: models, skills, agents, teams, bindings, \
workflows and runbooks, in the openseal definition language described below.

Rules:
- Answer with a JSON object {{"files": [{{"path", "syntax", "content"}}]}} and nothing else.
  Each path is relative to the definitions directory, uses `/`, and names a new file ending in \
`.hcl` (syntax "hcl") or `.yaml` (syntax "yaml"). Write {syntax}. Each content is a whole file.
- Add new definitions, or narrow existing ones. Do not grant a skill, raise a risk ceiling, \
remove an approval or raise a budget unless the request asks for exactly that.
- Reference existing definitions by `kind.name` instead of defining them again; never define \
a name that already exists.
- Never write a secret: a credential is a reference to a name the runtime context defines.
- When the compiler reports errors, answer with the whole corrected set of files."""


def repair_message(this: Round) -> str:
    """What the model is told about its previous answer."""
    if this.problems:
        listed = "\n".join(f"- {p}" for p in this.problems)
        return f"Your answer cannot be used:\n{listed}\nAnswer again with the whole set of files."
    return (
        "The compiler reported these errors (JSON, one per line); fix them and answer again "
        "with the whole set of files:\n"
        + "\n".join(json.dumps(d, sort_keys=True) for d in this.diagnostics)
    )


def _complete(
    provider: ModelProvider, request: ModelRequest, result: AuthoringResult
) -> ModelResponse:
    """One model call, tried again (as a turn would) while it fails for a passing reason and
    the wait the endpoint asks for is short; each failed attempt is recorded with its cost."""
    for attempt in itertools.count(1):
        try:
            return provider.complete(request)
        except ModelUnavailable as exc:
            spent = exc.spent or Usage()
            _record(result, _recorded(request.call, request, spent, result.model, exc.code))
            wait = retry.delay(attempt, exc.retry_after)
            if attempt > retry.retries_in_turn(request.model) or wait > retry.IN_TURN_WAIT:
                raise
            time.sleep(wait)
    raise AssertionError("unreachable")


def _record(result: AuthoringResult, call: ModelCall) -> None:
    """Keep the call with the result and log it (never the prompt: its digest)."""
    result.calls.append(call)
    log.info(
        "authoring model call: profile %s, model %s, round %d, prompt %s, %d tokens in, "
        "%d out%s%s",
        result.profile, call.model, call.round, call.prompt_digest, call.input_tokens,
        call.output_tokens, " (estimated)" if call.estimated else "",
        f", failed: {call.error}" if call.error else "",
    )  # fmt: skip


def _recorded(
    number: int, request: ModelRequest, usage: Usage, model: str, error: str | None = None
) -> ModelCall:
    sent = json.dumps([request.instructions, request.goal, list(request.messages)], sort_keys=True)
    return ModelCall(
        number, _digest(sent), model, usage.input_tokens, usage.output_tokens, usage.estimated,
        error,
    )  # fmt: skip


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _as_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)
