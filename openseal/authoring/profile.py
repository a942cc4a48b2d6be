"""The model profile authoring talks to, and whether it is complete.

Authoring is served only with a complete model profile: a ``model`` definition among the
definitions being authored against, with ``provider = "openai"``, a ``base_url``, a ``model``
and a ``credential`` reference that the runtime context defines. :func:`find_profile` answers
with the profile or with one sentence saying what is missing, which the CLI prints and the
API's capability list (501) carries.

>>> found = find_profile(documents, "authoring", context)   # doctest: +SKIP
>>> found.missing                                           # doctest: +SKIP
'model profile `authoring` has no `base_url`'
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from openseal.compiler import did_you_mean
from openseal.skills.credentials import RuntimeContext

#: the environment variable that names the authoring profile when ``--model`` is not given
PROFILE_ENV = "OPENSEAL_AUTHORING_MODEL"


@dataclass(frozen=True)
class ProfileCheck:
    """A complete profile (``profile`` set) or the reason there is none (``missing``)."""

    name: str | None
    profile: Mapping[str, Any] | None
    missing: str | None

    @property
    def complete(self) -> bool:
        return self.profile is not None


def profile_name(given: str | None) -> str | None:
    """``--model`` when given, else :data:`PROFILE_ENV`, else None."""
    return given or os.environ.get(PROFILE_ENV) or None


def find_profile(
    documents: Mapping[str, Mapping[str, Any]], name: str | None, context: RuntimeContext
) -> ProfileCheck:
    """Check model profile ``name`` among compiled ``documents`` (``kind.name`` → document).

    The profile is returned as the model provider reads it: its compiled spec plus its name.
    """
    models = sorted(key.removeprefix("model.") for key in documents if key.startswith("model."))
    if not name:
        known = ", ".join(f"`{m}`" for m in models) or "none"
        return ProfileCheck(
            None, None,
            "no model profile is named for authoring: pass --model PROFILE or set "
            f"{PROFILE_ENV} (model profiles in the definitions: {known})",
        )  # fmt: skip
    document = documents.get(f"model.{name}")
    if document is None:
        hint = did_you_mean(name, models)
        where = "the definitions" if documents else "the definitions (none were given: --into DIR)"
        message = f"model profile `{name}` is not defined in {where}"
        return ProfileCheck(name, None, f"{message}; {hint}" if hint else message)
    spec = dict(document.get("spec") or {})
    lacks = _lacks(spec)
    if lacks:
        return ProfileCheck(name, None, f"model profile `{name}` {lacks}")
    credential = str(spec["credential"])
    if credential not in context.credentials.references:
        origin = context.path or "the runtime context (no context file was found)"
        return ProfileCheck(
            name, None,
            f"model profile `{name}` names credential `{credential}`, which {origin} does not "
            "define (add it under `credentials:` with an `env` or `file` source)",
        )  # fmt: skip
    return ProfileCheck(name, {**spec, "name": name}, None)


def _lacks(spec: Mapping[str, Any]) -> str | None:
    if spec.get("provider", "openai") != "openai":
        return (
            f"uses provider `{spec.get('provider')}`; authoring needs an OpenAI-compatible "
            'endpoint (provider = "openai")'
        )
    absent = [f"`{key}`" for key in ("base_url", "model", "credential") if not spec.get(key)]
    if absent:
        needs = "authoring needs a base URL, a model and a credential reference"
        return f"has no {' and no '.join(absent)} ({needs})"
    return None
