"""What the CLI and the API call: is authoring available, draft, write, propose.

Example::

    setup = AuthoringSetup(Path("definitions/procurement/hcl"), "authoring", context)
    result = draft(setup, AuthoringRequest("add a release-note workflow", setup.definitions))
    if result.ok:
        propose(store, result, "user:alice", "add a release-note workflow")

Authoring never activates anything: :func:`propose` files a change proposal through the same
path as ``openseal deploy``, authored by the principal who asked, with the prompt and the
model in its message; it is reviewed, decided and activated like any other change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from openseal.authoring.drafts import CompiledDraft, compile_existing
from openseal.authoring.profile import ProfileCheck, find_profile
from openseal.authoring.session import AuthoringRequest, AuthoringResult, author
from openseal.errors import CompileError, OpenSealError, UsageError
from openseal.runtime.service import OpenAIProvider
from openseal.skills.credentials import RuntimeContext

if TYPE_CHECKING:
    from openseal.runtime.service import Caller as ServiceCaller
    from openseal.runtime.service.governance import DeployResult
    from openseal.runtime.store import Store


class AuthoringUnavailable(OpenSealError):
    """No complete model profile is configured; the message says what is missing."""

    code = "authoring_unavailable"


class DraftFailed(OpenSealError):
    """The model's draft still does not compile after the repair rounds; nothing was written."""

    code = "draft_failed"

    def __init__(self, message: str, result: AuthoringResult) -> None:
        super().__init__(message)
        self.result = result


class DefinitionsDoNotCompile(CompileError):
    """The definitions a draft would join do not compile themselves; ``compiled`` says why."""

    def __init__(self, message: str, compiled: CompiledDraft) -> None:
        super().__init__(message, tuple(compiled.diagnostics))
        self.compiled = compiled


@dataclass(frozen=True)
class AuthoringSetup:
    """Where authoring takes its definitions and model profile from.

    ``definitions`` is the directory drafts join and the model profile is defined in;
    ``profile`` names that profile; ``context`` resolves its credential reference.
    """

    definitions: Path | None
    profile: str | None
    context: RuntimeContext


def existing_definitions(setup: AuthoringSetup) -> CompiledDraft:
    """The definitions a draft joins, compiled; :class:`DefinitionsDoNotCompile` if they do not."""
    existing = compile_existing(setup.definitions)
    if not existing.ok:
        raise DefinitionsDoNotCompile(
            f"the definitions in {setup.definitions} do not compile; fix them before authoring",
            existing,
        )
    return existing


def availability(setup: AuthoringSetup) -> ProfileCheck:
    """Whether ``setup`` has a complete model profile, and if not, what is missing."""
    try:
        existing = existing_definitions(setup)
    except DefinitionsDoNotCompile as exc:
        return ProfileCheck(setup.profile, None, str(exc))
    documents = {key: doc.document for key, doc in existing.documents.items()}
    return find_profile(documents, setup.profile, setup.context)


def draft(
    setup: AuthoringSetup,
    request: AuthoringRequest,
    progress: Callable[[str], None] | None = None,
) -> AuthoringResult:
    """Author from ``request.prompt``; :class:`AuthoringUnavailable` without a complete profile.

    The result is returned whether or not the draft compiled (``result.ok``); nothing is
    written and nothing is filed.
    """
    if not request.prompt.strip():
        raise UsageError("the prompt is empty: say what to author")
    existing = existing_definitions(setup)
    documents = {key: doc.document for key, doc in existing.documents.items()}
    check = find_profile(documents, setup.profile, setup.context)
    if check.profile is None:
        raise AuthoringUnavailable(f"authoring is not available: {check.missing}")
    provider = OpenAIProvider.from_profile(check.profile, credentials=setup.context.credentials)
    return author(request, check.profile, provider, existing, progress)


def write(result: AuthoringResult, into: Path, *, overwrite: bool = False) -> list[Path]:
    """Write a compiled draft's files under ``into``; an existing file only with ``overwrite``.

    Every file is checked before the first is written, so a refusal writes nothing.
    """
    if not result.ok:
        raise DraftFailed("the draft does not compile; nothing is written", result)
    targets = [(into / Path(*PurePosixPath(f.path).parts), f.content) for f in result.files]
    if not overwrite:
        present = [str(path) for path, _ in targets if path.exists()]
        if present:
            raise UsageError(
                f"{', '.join(present)} already exist{'s' if len(present) == 1 else ''}; "
                "nothing written (--force replaces existing files)"
            )
    for path, content in targets:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w" if overwrite else "x", encoding="utf-8", newline="") as handle:
            handle.write(content)
    return [path for path, _ in targets]


def propose(
    store: Store,
    result: AuthoringResult,
    actor: str,
    prompt: str,
    *,
    caller: ServiceCaller | None = None,
) -> DeployResult:
    """File the compiled draft (with the definitions it joins) as a change proposal by ``actor``
    (or by ``caller``, a service ``Caller``, whose scope the proposal then lives in).

    Nothing is activated: the proposal is reviewed, decided and activated like any change.
    """
    from openseal.runtime.service import Caller
    from openseal.runtime.service import governance as gov

    if not result.ok:
        raise DraftFailed("the draft does not compile; nothing is filed", result)
    message = proposal_message(result, prompt)
    request = gov.Deployment(result.compiled.documents, message)
    return gov.deploy(store, request, caller or Caller(actor, local=True))


def outcome(result: AuthoringResult, filed: DeployResult | None) -> dict[str, Any]:
    """The one document the API answers and ``author -o json`` prints (the CLI adds the files
    it ``written``): the ``draft``, and the change ``proposal`` filed from it (None when none
    was) with ``created``, ``unchanged`` and ``note`` beside it, as ``deploy -o json`` prints a
    filing."""
    from openseal.runtime.service.governance import DeployResult
    from openseal.wire import jsonable

    filing: dict[str, Any] = jsonable(DeployResult(None, False) if filed is None else filed)
    return {"draft": result.to_dict(), **filing}


def active_governance(store: Store) -> dict[str, Mapping[str, Any]]:
    """The governance documents the store's deployments run: the policy a filed change is
    reviewed under (``governance.<name>`` → compiled document)."""
    from openseal.runtime.service import get_version
    from openseal.runtime.service import governance as gov

    return {
        f"governance.{d.name}": get_version(store, d.active_digest).document
        for d in gov.list_deployments(store)
        if d.kind == "governance"
    }


def proposal_message(result: AuthoringResult, prompt: str) -> str:
    """The proposal's message: the prompt, the model and what the calls cost."""
    widening = len(result.widening)
    lines = [
        f"authored from a prompt by model profile `{result.profile}` (model {result.model})",
        f"prompt ({result.prompt_digest}): {prompt.strip()}",
        f"model calls: {len(result.calls)}, tokens: {result.tokens}",
        *(
            f"  call {c.round}: {c.prompt_digest}, {c.input_tokens} in, {c.output_tokens} out"
            for c in result.calls
        ),
        f"files: {', '.join(f.path for f in result.files)}",
        f"risk widening: {f'yes ({widening} change(s) widen authority)' if widening else 'no'}",
    ]
    return "\n".join(lines)
