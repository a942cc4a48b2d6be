"""Workers as the API and the CLI start them: engines in the server process, ``openseal
worker`` processes, the model providers they call, and the store's gauges they expose on
``/metrics``. The OpenAI provider and ``openseal models check``, which bring the OpenAI
client, are the service face's own names (``service.OpenAIProvider``,
``service.check_profile``), imported on first use."""

from __future__ import annotations

from openseal.runtime.engine.engine import Engine, backoff, default_worker_id
from openseal.runtime.engine.worker import TurnLog, Worker
from openseal.runtime.health import StoreCollector
from openseal.runtime.providers import (
    ModelProvider,
    ModelRequest,
    ModelResponse,
    ModelUnavailable,
    ProviderFactory,
    Usage,
    default_provider_factory,
    retry,
)

__all__ = [
    "Engine",
    "ModelProvider",
    "ModelRequest",
    "ModelResponse",
    "ModelUnavailable",
    "ProviderFactory",
    "StoreCollector",
    "TurnLog",
    "Usage",
    "Worker",
    "backoff",
    "default_provider_factory",
    "default_worker_id",
    "retry",
]
