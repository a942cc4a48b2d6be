"""The running API's state: the store, the settings, who may call, what is served."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request

from openseal.api.auth import StoredTokens, TokenTable
from openseal.api.settings import ApiSettings
from openseal.runtime.service import Capability, capabilities
from openseal.runtime.store import Store


@dataclass(frozen=True)
class ApiState:
    settings: ApiSettings
    store: Store
    tokens: TokenTable
    capabilities: tuple[Capability, ...]
    #: whether the store holds tokens (remembered once it does)
    stored_tokens: StoredTokens

    @classmethod
    def build(cls, settings: ApiSettings, store: Store) -> ApiState:
        stored = StoredTokens(store)
        config = settings.capability_config(stored_tokens=stored.configured())
        return cls(settings, store, settings.all_tokens(), capabilities(config), stored)


def state_of(request: Request) -> ApiState:
    state = getattr(request.app.state, "openseal", None)
    if state is None:  # only before start-up finished
        from openseal.api.errors import ApiError

        raise ApiError(503, "unavailable", "the server is starting")
    assert isinstance(state, ApiState)
    return state
