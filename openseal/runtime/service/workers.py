"""Workers as the API and the CLI start them: engines in the server process, ``openseal
worker`` processes, and the model providers they call."""

from __future__ import annotations

from openseal.runtime.engine import Engine, default_worker_id
from openseal.runtime.models import (
    ModelProvider,
    ModelRequest,
    ModelResponse,
    ModelUnavailable,
    OpenAIProvider,
    Usage,
    default_provider_factory,
    retry,
)
from openseal.runtime.worker import TurnLog, Worker

__all__ = [
    "Engine",
    "ModelProvider",
    "ModelRequest",
    "ModelResponse",
    "ModelUnavailable",
    "OpenAIProvider",
    "TurnLog",
    "Usage",
    "Worker",
    "default_provider_factory",
    "default_worker_id",
    "retry",
]
