"""Where an approval authority is configured: the environment variable naming its file, and
the file's name under a home. Kept apart from :mod:`.approvals` so a command's options can
name them without importing the store."""

from __future__ import annotations

AUTHORITY_ENV = "OPENSEAL_APPROVAL_AUTHORITY"
AUTHORITY_FILE = "approvals.yaml"
