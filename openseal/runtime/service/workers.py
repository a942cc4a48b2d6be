"""Workers as the API and the CLI start them: engines in the server process, ``openseal
worker`` processes, the model providers they call (and ``openseal models check``), and the
store's gauges they expose on ``/metrics``."""

from __future__ import annotations

from openseal.runtime.engine import Engine, default_worker_id
from openseal.runtime.health import StoreCollector
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
from openseal.runtime.models.check import check_profile
from openseal.runtime.worker import TurnLog, Worker

__all__ = [
    "Engine",
    "ModelProvider",
    "ModelRequest",
    "ModelResponse",
    "ModelUnavailable",
    "OpenAIProvider",
    "StoreCollector",
    "TurnLog",
    "Usage",
    "Worker",
    "check_profile",
    "default_provider_factory",
    "default_worker_id",
    "retry",
]
