"""Authoring from a prompt: a model drafts definitions, the compiler checks them, the model
repairs them, and the result is written for git or filed as a change proposal — never activated.

The parts, in the order a session uses them:

- :mod:`.profile` — the model profile authoring talks to, and what it lacks when incomplete;
- :mod:`.reference` — the language reference, generated from the definition model and the guide;
- :mod:`.catalogue` — the existing definitions and governance policy, summarised for the model;
- :mod:`.drafts` — the model's answer read as files, compiled over the existing definitions;
- :mod:`.session` — the bounded draft–compile–repair loop;
- :mod:`.service` — what the CLI (``openseal author``) and the API
  (``POST /api/v1/authoring/drafts``) call.
"""

from openseal.authoring.drafts import DraftFile
from openseal.authoring.profile import PROFILE_ENV, ProfileCheck
from openseal.authoring.service import (
    AuthoringSetup,
    AuthoringUnavailable,
    DraftFailed,
    active_governance,
    availability,
    draft,
    outcome,
    propose,
    write,
)
from openseal.authoring.session import (
    DEFAULT_MAX_REPAIRS,
    DEFAULT_TOKEN_BUDGET,
    MAX_REPAIRS_LIMIT,
    AuthoringRequest,
    AuthoringResult,
)

__all__ = [
    "DEFAULT_MAX_REPAIRS",
    "DEFAULT_TOKEN_BUDGET",
    "MAX_REPAIRS_LIMIT",
    "PROFILE_ENV",
    "AuthoringRequest",
    "AuthoringResult",
    "AuthoringSetup",
    "AuthoringUnavailable",
    "DraftFailed",
    "DraftFile",
    "ProfileCheck",
    "active_governance",
    "availability",
    "draft",
    "outcome",
    "propose",
    "write",
]
