"""The HTTP API (``/api/v1``): the CLI's operations as JSON endpoints, served by
``openseal serve``. See ``docs/api.md``."""

from __future__ import annotations

from openseal.api.app import create_app
from openseal.api.settings import ApiSettings

__all__ = ["ApiSettings", "create_app"]
