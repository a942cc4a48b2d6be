"""How a turn's model profile is mapped to a provider.

``ProviderFactory`` maps a turn's agent profile (its model profile inside) to a provider. The
default factory serves ``provider = "scripted"`` profiles from a responses file (the worker's
``--scripted-responses``, ``OPENSEAL_SCRIPTED_RESPONSES`` or the profile's ``script``) and
``provider = "openai"`` profiles with :class:`~openseal.runtime.providers.OpenAIProvider`,
whose credential reference is resolved at every call from the runtime context's resolver. One
provider is made per profile and reused (a scripted file is read once; an OpenAI provider
remembers its output mode).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path

from openseal.runtime.compiled import AgentProfile
from openseal.runtime.providers.base import ModelError, ModelProvider
from openseal.runtime.providers.scripted import CALLS_ENV, RESPONSES_ENV, ScriptedProvider
from openseal.skills.credentials import CredentialResolver

ProviderFactory = Callable[[AgentProfile], ModelProvider]


def fixed(provider: ModelProvider) -> ProviderFactory:
    """A factory that answers every agent with ``provider`` (tests, embedding)."""
    return lambda _profile: provider


def default_provider_factory(
    responses: Path | None = None,
    calls_file: Path | None = None,
    *,
    credentials: CredentialResolver | None = None,
) -> ProviderFactory:
    """Scripted profiles from ``responses`` (or the environment, or the profile's script);
    ``openai`` profiles with their credential resolved through ``credentials``."""
    responses = responses or _env_path(RESPONSES_ENV)
    calls_file = calls_file or _env_path(CALLS_ENV)
    resolver = credentials or CredentialResolver()
    scripts: dict[Path, ScriptedProvider] = {}
    endpoints: dict[str, ModelProvider] = {}
    lock = threading.Lock()  # a worker's threads share one factory

    def scripted(profile: AgentProfile) -> ModelProvider:
        script = responses or (
            Path(profile.model["script"]) if profile.model.get("script") else None
        )
        if script is None:
            raise ModelError("the scripted provider needs a responses file (--scripted-responses)")
        with lock:
            if script not in scripts:
                scripts[script] = ScriptedProvider.from_file(script, calls_file=calls_file)
            return scripts[script]

    def openai(profile: AgentProfile) -> ModelProvider:
        key = json.dumps(profile.model, sort_keys=True, default=str)
        with lock:
            if key not in endpoints:
                # through the package's face, which imports the OpenAI client on first use
                from openseal.runtime.providers import OpenAIProvider

                endpoints[key] = OpenAIProvider.from_profile(profile.model, credentials=resolver)
            return endpoints[key]

    def factory(profile: AgentProfile) -> ModelProvider:
        provider = profile.model.get("provider", "openai")
        if provider == "scripted":
            return scripted(profile)
        if provider == "openai":
            return openai(profile)
        raise ModelError(
            f"model provider {provider!r} of {profile.model.get('name')!r} is not available "
            "in this worker"
        )

    return factory


def _env_path(name: str) -> Path | None:
    value = os.environ.get(name)
    return Path(value) if value else None
