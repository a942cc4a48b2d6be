"""Credential references → values, resolved inside an adapter at call time only.

Definitions name a credential (``credential = "mail_relay"``); the value comes
from the configuration: ``credential.mail_relay = "env:RELAY_TOKEN"`` or
``"file:/run/secrets/relay"``; without an entry, from the environment variable
``OPENSEAL_CREDENTIAL_MAIL_RELAY``. Values are returned to the adapter and
never stored, logged or put in an error message.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from openseal.errors import OpenSealError


class CredentialError(OpenSealError):
    code = "credential_unavailable"


def default_variable(reference: str) -> str:
    return "OPENSEAL_CREDENTIAL_" + re.sub(r"\W", "_", reference).upper()


def resolve_credential(reference: str, config: Mapping[str, str]) -> str:
    """The value of ``reference``; raises :class:`CredentialError` naming where it looked."""
    source = config.get(f"credential.{reference}", f"env:{default_variable(reference)}")
    kind, _, where = source.partition(":")
    if kind == "env":
        value = os.environ.get(where)
        if value:
            return value
        raise CredentialError(f"credential `{reference}` is not set (environment variable {where})")
    if kind == "file":
        try:
            return Path(where).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise CredentialError(
                f"credential `{reference}` cannot be read from {where}: {exc.strerror}"
            ) from None
    raise CredentialError(
        f"credential `{reference}` is configured as `{kind}:...`; use `env:NAME` or `file:PATH`"
    )
